"""Table writer: create a Hudi 1.x table and write commits, log appends and compactions.

This is how tests (and later the simulator) build real tables through our own protocol code, in
Hudi's on-disk format (table version 8, timeline layout 2), so that the independent reader ``hudi``
(hudi-rs) can open them. The steps are the ones a Hudi write client takes:

1. ``start_commit``: new instant time from the time generator; ``requested`` then ``inflight``.
2. ``write_base_file`` / ``append_log_file``: a marker under ``.hoodie/.temp/<instant>/`` first
   (so a rollback can find the file), then the data file named with the instant's requested time.
3. ``commit``: commit metadata (write stats + the Avro schema in ``extraMetadata``), completion time
   generated and, under the generator's lock, the write finalized (:mod:`models.write.finalize`)
   and the completed file created; markers removed.

Finalizing a write is :mod:`models.write.finalize`. Compaction
(:meth:`TableWriter.schedule_compaction`, :meth:`TableWriter.run_compaction`) is in
:mod:`models.write.compaction`; creating a table in :mod:`models.write.table_init`; the meta
columns, markers and partition files of each data file in :mod:`models.write.write_handles`.

Every method that waits (time generation) returns :data:`models.ports.Steps`; drive it with
:func:`models.ports.run` or from the simulator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

import pyarrow as pa

from models.format.arrow_to_avro import avro_schema_for
from models.format.commit_metadata import CommitMetadata, WriteStat, write_commit_metadata
from models.format.log_blocks import DataBlock, DeleteBlock, LogBlock
from models.format.log_writer import write_log_blocks
from models.format.parquet_files import base_file_parquet
from models.ports import Steps
from models.storage import join
from models.timeline.instant import Instant, State
from models.view.filenames import (
    BaseFileName,
    LogFileName,
    WriteToken,
    check_file_id,
)
from models.view.fsview import latest_file_slices
from models.view.reader import decoded_parquet, merge_file_slice
from models.view.table import HudiTable, ViewOptions
from models.write.compaction import run_compaction, schedule_compaction
from models.write.finalize import finalize_write
from models.write.heartbeat import HeartbeatClient
from models.write.markers import DirectWriteMarkers, WriteMarkers, delete_markers
from models.write.merge_handle import MissingBaseFileError, merge_handle_rows, removed_keys
from models.write.mini_batch import merge_into_previous
from models.write.write_handles import (
    META_COLUMNS,
    WriteError,
    next_log_version,
    with_file_name,
    with_meta_columns,
    write_data_file,
)


class TableWriter:
    """Writes instants and files of one table through its storage and a time generator."""

    def __init__(
        self,
        table: HudiTable,
        time_generator: object,
        *,
        data_schema: pa.Schema | None = None,
        log_block_format: str = "avro",
        view_options: ViewOptions | None = None,
        stage_id: int = 1,
        attempt_id: int = 0,
        heartbeat: HeartbeatClient | None = None,
    ) -> None:
        """``data_schema``: the data columns every commit carries in its metadata when it wrote no
        records itself (a coordinator commits files that write tasks wrote, so it never saw their
        records). ``log_block_format``: ``avro`` (Hudi's default) or ``parquet`` data blocks.
        ``view_options``: the file-slicing rule this writer plans with (a protocol variant).
        ``stage_id``: the middle part of write tokens (Spark stage / Flink job): two jobs writing
        the same file group name their files apart even at the same task and log version.
        ``attempt_id``: the last part, the Flink attempt number of the writing task
        (``FlinkTaskContextSupplier#getAttemptIdSupplier``): a restarted task writing into the
        same instant names its files apart from the failed attempt's. ``heartbeat``: the client's
        heartbeats under LAZY cleaning, checked before a commit takes the lock (Hudi's
        ``abortIfHeartbeatExpired``)."""
        self.table = table
        self.storage = table.storage
        self.timeline = table.active_timeline
        self.time_generator = time_generator
        self.log_block_format = log_block_format
        self.view_options = view_options
        self.stage_id = stage_id
        self.attempt_id = attempt_id
        self.heartbeat = heartbeat
        self.markers: WriteMarkers = DirectWriteMarkers(self.storage)
        """How the write handles create markers (direct unless the simulator sends them to a
        timeline server)."""
        self.marked_data_paths: Callable[[str], list[str]] | None = None
        """Where finalizing reads an instant's marked data files (None: from storage; the
        simulator's timeline server answers from memory)."""
        self._schemas: dict[str, str] = {}  # instant -> Avro schema of its data columns
        self._default_schema = (
            avro_schema_for(data_schema, *self._avro_names()) if data_schema is not None else None
        )

    # --- instants -------------------------------------------------------------------------------

    @property
    def default_action(self) -> str:
        """The action of a regular write: ``deltacommit`` on MERGE_ON_READ, else ``commit``."""
        return "deltacommit" if self.table.config.is_mor else "commit"

    def start_commit(self, action: str | None = None) -> Steps[Instant]:
        """A new instant: time from the generator, the heartbeat (LAZY), then ``requested`` and
        ``inflight`` files. As ``BaseHoodieWriteClient#startCommit``, the heartbeat starts
        before the requested file, so a heartbeat that cannot be written fails the call with no
        instant on the timeline."""
        action = action or self.default_action
        time = yield from self.time_generator.generate_time()  # type: ignore[attr-defined]
        if self.heartbeat is not None:
            self.heartbeat.start(time)
        requested = self.timeline.create_requested(time, action)
        return self.timeline.transition_to_inflight(requested)

    def commit(
        self,
        instant: Instant,
        stats: Iterable[WriteStat],
        operation_type: str = "UPSERT",
        *,
        compacted: bool = False,
        precommit: Callable[[], None] | None = None,
        extra_metadata: Mapping[str, str] | None = None,
    ) -> Steps[Instant]:
        """Complete ``instant`` with the given write stats; markers are removed afterwards.

        Under the table lock, right before the completed file is created: ``precommit`` (the OCC
        conflict check; raising aborts the commit), then :meth:`finalize_write`.
        ``extra_metadata`` joins the schema in the commit's ``extraMetadata``."""
        if self.heartbeat is not None:  # commitStats: before the transaction's lock
            self.heartbeat.abort_if_expired(instant.requested_time)
        stats = tuple(stats)
        by_partition: dict[str, list[WriteStat]] = {}
        for stat in stats:
            by_partition.setdefault(stat.partition_path, []).append(stat)
        schema = (
            self._schemas.get(instant.requested_time)
            or self._default_schema
            or self._latest_schema()
        )
        extra = {**(extra_metadata or {}), **({"schema": schema} if schema else {})}
        meta = CommitMetadata(
            partition_to_write_stats={p: tuple(s) for p, s in by_partition.items()},
            compacted=compacted,
            operation_type=operation_type,
            extra_metadata=extra,
        )

        def finalize() -> None:
            if precommit is not None:
                precommit()
            self.finalize_write(instant.requested_time, stats)

        done = yield from self.timeline.complete(
            instant, write_commit_metadata(meta), self.time_generator, precommit=finalize
        )
        delete_markers(self.storage, instant.requested_time)
        return done

    def finalize_write(self, instant_time: str, stats: Iterable[WriteStat]) -> list[str]:
        """Delete the data files ``instant_time`` created that ``stats`` do not list; return them
        (:func:`models.write.finalize.finalize_write`)."""
        return finalize_write(self.storage, instant_time, stats, self.marked_data_paths)

    # --- data files -----------------------------------------------------------------------------

    def write_base_file(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table,
        *,
        task_id: int = 0,
        prev_commit: str | None = None,
        keep_meta: bool = False,
    ) -> WriteStat:
        """Write ``records`` as the base file of ``file_id`` at ``instant``.

        ``records`` holds the data columns; the meta columns are added unless ``keep_meta`` (a
        compaction keeps each record's original commit time).
        """
        self._check_writable(instant)
        check_file_id(file_id)
        name = str(BaseFileName(file_id, self.write_token(task_id), instant.requested_time))
        rows = records if keep_meta else self.with_meta(instant, partition, name, records, task_id)
        if keep_meta:
            rows = with_file_name(rows, name)
        self.remember_schema(instant, records)
        data = base_file_parquet(rows)
        self._write_data_file(instant, partition, name, data, "CREATE")
        return WriteStat(
            file_id=file_id,
            path=join(partition, name),
            partition_path=partition,
            prev_commit=prev_commit,
            num_writes=rows.num_rows,
            num_inserts=rows.num_rows if prev_commit is None else 0,
            num_update_writes=0 if prev_commit is None else rows.num_rows,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
        )

    def upsert_base_file(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table,
        *,
        task_id: int = 0,
        previous_path: str | None = None,
        require_base: bool = False,
        delete_keys: pa.Table | None = None,
    ) -> WriteStat:
        """Copy-on-write upsert: merge ``records`` (and the delete records ``delete_keys``,
        columns as :meth:`append_log_file` takes them) into the file group's latest committed
        slice and write the result as a new base file at ``instant`` (a new file group if none).

        ``previous_path``: the base file the same task wrote for ``file_id`` since its last
        checkpoint; the records merge into that file instead (a mini-batch,
        :mod:`models.write.mini_batch`). ``require_base``: a merge handle's upsert, which fails
        without a committed base file (``HoodieMergeHandle#getLatestBaseFile``:
        :class:`MissingBaseFileError`)."""
        if previous_path is not None:
            return merge_into_previous(
                self,
                instant,
                partition,
                file_id,
                records,
                previous_path,
                task_id=task_id,
                delete_keys=delete_keys,
            )
        timeline, groups = self.table.file_groups(
            options=self.view_options, only=(partition, file_id)
        )
        current = next(iter(latest_file_slices(groups)), None)
        if require_base and (current is None or current.base_file is None):
            raise MissingBaseFileError(
                f"FileID {file_id} of partition path {partition} does not exist."
            )
        if current is None:
            return self.write_base_file(instant, partition, file_id, records, task_id=task_id)
        if current.log_files or current.base_file is None:
            old = merge_file_slice(self.table, timeline, current)
        else:  # the merge handle streams the base file's records as they are, duplicates too
            old = decoded_parquet(self.storage.read(join(partition, current.base_file.name)))
        new = self.with_meta(instant, partition, "", records, task_id)
        merged = merge_handle_rows(old, new, self.table.config, delete_keys)
        stat = self.write_base_file(
            instant,
            partition,
            file_id,
            merged,
            task_id=task_id,
            prev_commit=current.base_instant,
            keep_meta=True,
        )
        if delete_keys is None:
            return stat
        return replace(stat, num_deletes=removed_keys(old, merged))

    def append_log_file(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table | None = None,
        *,
        delete_keys: pa.Table | None = None,
        task_id: int = 0,
        version: int | None = None,
        name_instant: str | None = None,
    ) -> WriteStat:
        """Write a new log file ``.<file_id>_<instant>.log.<n>_<token>`` with a data block and/or
        a delete block (``delete_keys``: columns ``record_key``, ``partition_path``,
        ``ordering_value``). The name carries the deltacommit's own requested time (1.x).

        ``version``: the log version when the caller tracks it (saves listing the partition).
        ``name_instant``: put this instant in the name instead, the 0.x rule where a log is named
        after the base instant of the slice it targets (variant ``base_instant``); the blocks still
        carry the deltacommit's time in their headers."""
        self._check_writable(instant)
        if not self.table.config.is_mor:
            raise WriteError("log files belong to MERGE_ON_READ tables")
        check_file_id(file_id)
        in_name = name_instant or instant.requested_time
        if version is None:
            version = next_log_version(self.storage, partition, file_id, in_name)
        name = str(LogFileName(file_id, in_name, version, self.write_token(task_id)))
        blocks, written = self._log_blocks(
            instant, partition, file_id, records, delete_keys, task_id
        )
        data = write_log_blocks(blocks)
        # 1.x marks each new log file CREATE; table version 6 appended to shared logs (APPEND)
        marker_type = "CREATE" if self.table.config.version >= 8 else "APPEND"
        self._write_data_file(instant, partition, name, data, marker_type)
        return WriteStat(
            file_id=file_id,
            path=join(partition, name),
            partition_path=partition,
            prev_commit=instant.requested_time,
            num_writes=written,
            num_update_writes=written,
            num_deletes=0 if delete_keys is None else delete_keys.num_rows,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
            base_file="",
            log_files=(name,),
            log_version=version,
            log_offset=0,
            total_log_records=written,
            total_log_blocks=len(blocks),
        )

    def _log_blocks(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table | None,
        delete_keys: pa.Table | None,
        task_id: int,
    ) -> tuple[list[LogBlock], int]:
        """The data and/or delete block of a log append, and how many records it writes."""
        blocks: list[LogBlock] = []
        written = 0
        if records is not None and records.num_rows:
            rows = self.with_meta(instant, partition, file_id, records, task_id)
            schema = avro_schema_for(rows.schema, *self._avro_names())
            blocks.append(DataBlock(instant.requested_time, schema, rows, self.log_block_format))
            self.remember_schema(instant, records)
            written = rows.num_rows
        if delete_keys is not None and delete_keys.num_rows:
            blocks.append(DeleteBlock(instant.requested_time, delete_keys))
        if not blocks:
            raise WriteError("a log append needs records or delete keys")
        return blocks, written

    # --- compaction -----------------------------------------------------------------------------

    def schedule_compaction(
        self, file_groups: Iterable[tuple[str, str]] | None = None
    ) -> Steps[Instant | None]:
        """Plan a compaction of the latest slices (all file groups, or the given ones) that have
        committed logs; None if there is nothing to compact (:mod:`models.write.compaction`)."""
        return (yield from schedule_compaction(self, file_groups))

    def run_compaction(
        self, scheduled: Instant, write_time_ms: Callable[[], int] | None = None
    ) -> Steps[Instant]:
        """Execute a scheduled compaction: merge each planned slice into a new base file
        (:func:`models.write.compaction.run_compaction`)."""
        return (yield from run_compaction(self, scheduled, write_time_ms))

    def write_token(self, task_id: int) -> WriteToken:
        """The write token of this writer's files written by task ``task_id``:
        ``<task>-<stage>-<attempt>``, Hudi's ``FSUtils.makeWriteToken``."""
        return WriteToken(task_id, self.stage_id, self.attempt_id)

    # --- helpers --------------------------------------------------------------------------------

    def _check_writable(self, instant: Instant) -> None:
        if instant.state is not State.INFLIGHT:
            raise WriteError(f"files are written for an inflight instant, not {instant}")

    def with_meta(
        self, instant: Instant, partition: str, file_name: str, records: pa.Table, task_id: int
    ) -> pa.Table:
        """``records`` with Hudi's meta columns for a file of ``instant`` named ``file_name``."""
        return with_meta_columns(self.table.config, instant, partition, file_name, records, task_id)

    def _latest_schema(self) -> str | None:
        """The schema of the latest completed commit that has one: a commit that wrote no records
        (only deletes) must still carry it, readers such as hudi-rs take the table schema from the
        latest commit."""
        for instant in reversed(self.table.timeline().by_completion_time()):
            if instant.action in ("commit", "deltacommit", "replacecommit"):
                schema = self.table.commit_metadata(instant).schema
                if schema:
                    return schema
        return None

    def _avro_names(self) -> tuple[str, str]:
        name = self.table.config.name
        return f"{name}_record", f"hoodie.{name}"

    def remember_schema(self, instant: Instant, records: pa.Table) -> None:
        """Keep the Avro schema of ``records``' data columns for ``instant``'s commit metadata."""
        data = records.drop_columns([c for c in META_COLUMNS if c in records.column_names])
        self._schemas.setdefault(
            instant.requested_time, avro_schema_for(data.schema, *self._avro_names())
        )

    def _write_data_file(
        self, instant: Instant, partition: str, name: str, data: bytes, marker_type: str
    ) -> None:
        write_data_file(self.storage, instant, partition, name, data, marker_type, self.markers)
