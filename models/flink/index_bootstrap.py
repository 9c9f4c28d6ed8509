"""The Flink state index's bootstrap: the record keys of the table's latest file slices loaded
into the bucket assigners' keyed state (``index.bootstrap.enabled``, default false).

Hudi's ``BootstrapOperator`` (``sink/bootstrap``) runs at every start and restore of the job
(``initializeState`` -> ``preLoadIndexRecords``), before any record passes:

- ``loadRecords``: the latest completed instant of the commits timeline, counting only instants
  requested after ``lastInstantTime`` when the operator restored one (its operator state, saved
  at each barrier when there is one: the table's last completed instant,
  ``StreamerUtil#getLastCompletedInstant``, Hudi 1.1 and master; the coordinator's last pending
  instant, ``CkpMetadata#lastPendingInstant``, Hudi 1.0); with none, nothing is loaded and the
  restored keyed state stands;
- otherwise every partition (matching ``index.partition.regex``, ``.*``) and every latest merged
  file slice before or on that instant (``getLatestMergedFileSlicesBeforeOrOn``): each record key
  of its base file (``getHoodieKeyIterator``) and of its logs (``HoodieMergedLogRecordScanner``
  over committed blocks, deletes included) is sent as an ``IndexRecord`` with the slice's location;
- the records are keyed by record key into the ``BucketAssignFunction`` subtasks, which put each
  location into their keyed state (``processElement``: ``indexState.update``), over what the
  checkpoint restored.

Which bootstrap subtask reads a file slice (``shouldLoadFile``: the file id's key group) decides
only who does the work, not the state: every key ends with the assigner subtask of its key group.
The bloom filters in the base files' footers are not read: Hudi's bootstrap reads every key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from models.flink.state_index import Location
from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock
from models.storage import join
from models.timeline.active import Timeline
from models.view.fsview import FileSlice
from models.view.reader import decoded_log_blocks, decoded_parquet, record_key_column
from models.view.table import HudiTable

COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")
"""``HoodieTableMetaClient#getCommitsTimeline``'s actions (completed compactions are commits)."""


@dataclass(frozen=True)
class IndexBootstrap:
    """What one bootstrap loaded: the latest completed instant it read up to (None: nothing
    loaded) and each record key's location, in the order the index records were sent."""

    loaded_instant: str | None
    locations: dict[str, Location]


def latest_commit_after(timeline: Timeline, last_instant_time: str | None) -> str | None:
    """``loadRecords``' ``latestCommitTime``: the latest completed commits-timeline instant,
    among those requested after ``last_instant_time`` when one was restored."""
    done = [
        i.requested_time
        for i in timeline.completed().with_actions(*COMMIT_ACTIONS)
        if last_instant_time is None or i.requested_time > last_instant_time
    ]
    return max(done) if done else None


INDEX_BOOTSTRAP_DELETES = ("loaded", "skipped")
"""``[protocol] index_bootstrap_deletes``: a key whose last log entry in a slice is a delete is
sent like any key (every release: the log scanner's records, and master's file group reader with
``emitDelete``), or left out (a bootstrap that reads only the slice's live keys)."""


def bootstrap_index(
    table: HudiTable,
    timeline: Timeline,
    slices: Sequence[FileSlice],
    last_instant_time: str | None,
    deletes: str = "loaded",
) -> IndexBootstrap:
    """``BootstrapOperator#preLoadIndexRecords`` over the committed latest ``slices`` of
    ``timeline``: every key each slice holds, with the slice's (partition, file id), in the
    order the slices are read (the assigner keeps the last location it gets for a key); a key
    deleted in the slice's logs too, unless ``deletes`` is ``"skipped"``."""
    loaded = latest_commit_after(timeline, last_instant_time)
    if loaded is None:
        return IndexBootstrap(None, {})
    locations: dict[str, Location] = {}
    for file_slice in sorted(slices, key=lambda s: (s.partition, s.file_id)):
        if file_slice.base_instant > loaded:
            continue
        location = (file_slice.partition, file_slice.file_id)
        keys = _slice_keys(table, timeline, file_slice, loaded, skip_deleted=deletes == "skipped")
        locations.update(dict.fromkeys(keys, location))
    return IndexBootstrap(loaded, locations)


def _slice_keys(
    table: HudiTable, timeline: Timeline, file_slice: FileSlice, loaded: str, *, skip_deleted: bool
) -> list[str]:
    """The record keys of a slice's base file, then of its logs' committed data and delete
    blocks up to ``loaded`` (a rolled-back block is skipped, as the log scanner skips it), in
    that order; ``skip_deleted``: without the keys whose last entry is a delete."""
    config = table.config
    live: dict[str, bool] = {}
    if file_slice.base_file is not None:
        data = table.storage.read(join(file_slice.partition, file_slice.base_file.name))
        live.update(
            dict.fromkeys(record_key_column(decoded_parquet(data), config).to_pylist(), True)
        )
    for log in file_slice.log_files:
        blocks = decoded_log_blocks(table.storage.read(join(file_slice.partition, log.name)))
        rolled_back = {b.target_instant_time for b in blocks if isinstance(b, CommandBlock)}
        for block in blocks:
            instant = block.instant_time
            if instant in rolled_back or instant > loaded or not timeline.is_completed(instant):
                continue
            if isinstance(block, DataBlock):
                live.update(
                    dict.fromkeys(record_key_column(block.records, config).to_pylist(), True)
                )
            elif isinstance(block, DeleteBlock):
                live.update(dict.fromkeys(block.keys.column("record_key").to_pylist(), False))
    return [key for key, alive in live.items() if alive or not skip_deleted]


__all__ = [
    "COMMIT_ACTIONS",
    "INDEX_BOOTSTRAP_DELETES",
    "IndexBootstrap",
    "bootstrap_index",
    "latest_commit_after",
]
