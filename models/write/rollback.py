"""Rolling back a failed write from its markers (docs/protocol.md section 3).

A writer that dies leaves a pending instant and data files nobody committed. Readers already ignore
them (their instant is not completed), but they must go before anything else can safely reuse the
file groups, and the pending instant blocks archiving. Hudi's rollback, as its source does it:

1. **Plan** (``BaseRollbackPlanActionExecutor`` with ``MarkerBasedRollbackStrategy``): every marker
   under ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<TYPE>`` names a file the failed
   write created. A base file's marker (``CREATE``/``MERGE``) gives one request per file, with
   empty file id and base instant (as in the fixture
   ``sample_table_mor_avro_v9_nonpartitioned_rollback``). A log file's marker, for table
   version 8+, names the log file itself, which carries the failed instant in its name and holds
   only its blocks, so the file is deleted too (one request with the file id and the instant;
   ``TestMarkerBasedRollbackStrategy``). Hudi 1.x marks a new log file ``CREATE``
   (``WriteMarkers.createLogMarkerIfNotExists``); ``APPEND`` log markers come from table
   version 6 writers (``AppendMarkerHandler``), whose rollback appended command blocks instead
   (not modeled). Requests are told apart by the file's name, whatever the marker type. The
   markers are all the plan reads (Hudi's default ``hoodie.rollback.using.markers``; the
   strategy lists no partition), either kind of them (:func:`models.write.markers.list_markers`),
   and only for an instant past ``requested`` (``requestRollback``): a data file whose marker is
   missing stays behind. The plan is written as ``<r>.rollback.requested`` (Avro ``HoodieRollbackPlan``), then
   ``<r>.rollback.inflight`` (empty, as in the fixture).
2. **Execute** (``BaseRollbackHelper``): delete the files; a file already gone counts as deleted
   (a retried rollback finds some files deleted).
3. **Finish** (``BaseRollbackActionExecutor.finishRollback``, under the table lock): delete the
   failed instant's timeline files, inflight first then requested (``deleteInflightAndRequested
   Instant``), then complete the rollback with ``HoodieRollbackMetadata``. A pending compaction or
   clustering keeps its plan: only its inflight file goes, so it is re-run from the plan (Hudi's
   ``rollbackInflightCompaction``/``rollbackInflightClustering`` roll back without deleting the
   instant, then revert it to requested).
4. **Markers** of the failed instant are deleted last (``runRollback``), then its heartbeat file
   (``rollbackFailedWrites`` deletes it after each rollback).

The order differs from "complete the rollback, delete markers, then the failed instant's files":
Hudi deletes the failed instant's files *before* publishing the completed rollback, so a crash
leaves a pending rollback (re-run from its plan), never a completed rollback next to a still
pending instant. Paths in the plan and metadata are table-relative (Hudi writes absolute URIs).

Only pending instants are rolled back; undoing a completed commit is a restore, not modeled here.
Nothing stops a rollback of an instant whose writer is still alive: that is what the ``EAGER``
failed-writes policy does to concurrent writers, and why NBCC requires ``LAZY`` (see
:mod:`models.write.heartbeat`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from models.format.rollback_metadata import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    write_rollback_metadata,
    write_rollback_plan,
)
from models.ports import Steps
from models.storage import join
from models.table_errors import HoodieException
from models.timeline.active import ActiveTimeline
from models.timeline.instant import COMPLETED_ACTION, Instant, State
from models.view.filenames import FileNameError, parse_base_file_name, parse_log_file_name
from models.write.heartbeat import instants_to_roll_back
from models.write.heartbeat import stop as stop_heartbeat
from models.write.markers import delete_markers, list_markers

if TYPE_CHECKING:
    from models.view.table import HudiTable
    from models.write.writer import TableWriter

TABLE_SERVICE_ACTIONS = ("compaction", "logcompaction", "clustering")
"""Pending actions whose plan survives a rollback (re-executed, not abandoned)."""


class RollbackError(HoodieException, RuntimeError):
    """A rollback the protocol does not allow (a completed instant, an unknown one)."""


def _request_for(partition: str, file_name: str, instant_time: str) -> RollbackRequest | None:
    """A plan entry for a data file: base files without file id (as Hudi's CREATE/MERGE
    requests), log files with file id and instant; None for anything else."""
    path = join(partition, file_name)
    try:
        parse_base_file_name(file_name)
        return RollbackRequest(partition, "", "", (path,))
    except FileNameError:
        pass
    try:
        log = parse_log_file_name(file_name)
    except FileNameError:
        return None
    return RollbackRequest(partition, log.file_id, instant_time, (path,))


def plan_rollback(table: HudiTable, failed: Instant) -> RollbackPlan:
    """The rollback plan of ``failed``: a request per marker (none for a requested instant,
    which wrote nothing; ``MarkerBasedRollbackStrategy#getRollbackRequests``)."""
    time = failed.requested_time
    requests: dict[str, RollbackRequest] = {}
    if failed.state is not State.REQUESTED:
        for marker in list_markers(table.storage, time):
            request = _request_for(marker.partition, marker.file_name, time)
            if request is not None:
                requests[marker.data_path] = request
    return RollbackPlan(InstantInfo(time, failed.action), tuple(requests.values()))


def _as_active_timeline(writer_or_timeline: ActiveTimeline | TableWriter) -> ActiveTimeline:
    if isinstance(writer_or_timeline, ActiveTimeline):
        return writer_or_timeline
    timeline = getattr(writer_or_timeline, "timeline", None)
    if isinstance(timeline, ActiveTimeline):
        return timeline
    raise TypeError(f"need an ActiveTimeline or a TableWriter, got {writer_or_timeline!r}")


def _current(active: ActiveTimeline, failed: Instant) -> list[Instant]:
    """The states of ``failed`` on storage now (a compaction and its ``commit`` are one)."""
    action = COMPLETED_ACTION.get(failed.action, failed.action)
    return [
        i
        for i in active.load()
        if i.requested_time == failed.requested_time
        and COMPLETED_ACTION.get(i.action, i.action) == action
    ]


def rollback(
    table: HudiTable,
    writer_or_timeline: ActiveTimeline | TableWriter,
    failed: Instant,
    time_generator: object,
    *,
    time_taken_ms: int = 0,
) -> Steps[Instant]:
    """Roll back the pending instant ``failed``; returns the completed ``rollback`` instant.

    ``writer_or_timeline`` gives the active timeline to write through (a
    :class:`~models.write.writer.TableWriter` or its :class:`~models.timeline.active.ActiveTimeline`);
    ``time_generator`` makes the rollback's requested and completion times. ``time_taken_ms`` goes
    into the metadata (``models`` reads no clock). Raises :class:`RollbackError` for a completed
    or unknown instant. See the module docstring for the steps and their order.
    """
    active = _as_active_timeline(writer_or_timeline)
    states = _current(active, failed)
    if not states:
        raise RollbackError(f"{failed} is not on the active timeline: nothing to roll back")
    if any(s.is_completed for s in states):
        raise RollbackError(
            f"{failed} is completed; only pending instants are rolled back (a completed commit "
            "is undone by a restore, which the testbed does not model)"
        )
    pending = max(states, key=lambda s: s.state.value)
    plan = plan_rollback(table, pending)

    time = yield from time_generator.generate_time()  # type: ignore[attr-defined]
    requested = active.create_requested(time, "rollback", write_rollback_plan(plan))
    inflight = active.transition_to_inflight(requested)

    deleted: dict[str, list[str]] = {}
    for request in plan.requests:
        for path in request.files_to_be_deleted:
            table.storage.delete(path)  # already gone counts as deleted
            deleted.setdefault(request.partition_path, []).append(path)
    metadata = RollbackMetadata(
        start_rollback_time=time,
        commits_rollback=(pending.requested_time,),
        partition_metadata={
            p: RollbackPartitionMetadata(p, success_delete_files=tuple(files))
            for p, files in sorted(deleted.items())
        },
        instants_rollback=(InstantInfo(pending.requested_time, pending.action),),
        time_taken_ms=time_taken_ms,
    )

    inflight_state = Instant(pending.requested_time, State.INFLIGHT, pending.action)
    table.storage.delete(active.path_of(inflight_state))
    if pending.action not in TABLE_SERVICE_ACTIONS:
        table.storage.delete(active.path_of(pending.requested()))
    done = yield from active.complete(inflight, write_rollback_metadata(metadata), time_generator)
    delete_markers(table.storage, pending.requested_time)
    stop_heartbeat(table.storage, pending.requested_time)
    return done


class RollbackListener(Protocol):
    """Told about each rollback :func:`rollback_failed_writes` runs (for a history)."""

    def rolling_back(self, instant_time: str) -> None: ...

    def rolled_back(self, instant_time: str, rollback: Instant) -> None: ...


def rollback_failed_writes(
    writer: TableWriter, listener: RollbackListener | None = None
) -> Steps[list[Instant]]:
    """EAGER failed-writes cleaning as a write client's ``startCommit`` runs it (Hudi's
    ``CleanerUtils.rollbackFailedWrites`` -> ``BaseHoodieTableServiceClient#rollbackFailedWrites``):
    every pending write instant on the timeline (commits, delta commits, replace commits; not
    compactions or clustering), newest first, whoever started it; no heartbeat is read. Returns
    the instants rolled back."""
    table = writer.table
    failed = instants_to_roll_back(table.timeline(), table.storage, "EAGER", 0)
    for instant in failed:
        if listener is not None:
            listener.rolling_back(instant.requested_time)
        done = yield from rollback(table, writer, instant, writer.time_generator)
        if listener is not None:
            listener.rolled_back(instant.requested_time, done)
    return failed
