"""Compaction of merge-on-read file groups: scheduling the plan and running it.

Follows docs/protocol.md section 4 and Hudi's ``ScheduleCompactionActionExecutor`` /
``RunCompactionActionExecutor``: :func:`schedule_compaction` plans, for each file group, the latest
slice's base file plus the logs committed by then (all of which completed before the new
compaction's requested time, since TrueTime times increase), and writes the plan as
``<t>.compaction.requested``; logs that complete later land in the slice the compaction opens.
:func:`run_compaction` merges each planned slice into a base file at the compaction's time; a base
file an earlier attempt already wrote is taken as it is.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import pyarrow.parquet as pq

from models.format.commit_metadata import WriteStat
from models.format.compaction_plan import (
    CompactionOperation,
    CompactionPlan,
    read_compaction_plan,
    write_compaction_plan,
)
from models.ports import Sleep, Steps
from models.storage import join
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.view.filenames import BaseFileName, parse_log_file_name
from models.view.fsview import BaseFile, FileSlice, LogFile, latest_file_slices
from models.view.reader import merge_file_slice
from models.write.write_handles import WriteError

if TYPE_CHECKING:
    from models.write.writer import TableWriter


def schedule_compaction(
    writer: TableWriter, file_groups: Iterable[tuple[str, str]] | None = None
) -> Steps[Instant | None]:
    """Plan a compaction of the latest slices (all file groups, or the given ones) that have
    committed logs; None if there is nothing to compact."""
    time = yield from writer.time_generator.generate_time()  # type: ignore[attr-defined]
    wanted = set(file_groups) if file_groups is not None else None
    _, groups = writer.table.file_groups(options=writer.view_options)
    busy = {(g.partition, g.file_id) for g in groups if g.pending_compactions}
    operations = []
    for s in latest_file_slices(groups):
        group = (s.partition, s.file_id)
        if not s.log_files or group in busy or (wanted is not None and group not in wanted):
            continue  # Hudi plans at most one pending compaction per file group
        if any((lf.completion_time or "") >= time for lf in s.log_files):
            raise WriteError(f"log completed after compaction time {time}: times not monotonic")
        operations.append(
            CompactionOperation(
                base_instant_time=s.base_instant,
                partition_path=s.partition,
                file_id=s.file_id,
                data_file_path=s.base_file.name if s.base_file else None,
                delta_file_paths=tuple(lf.name for lf in s.log_files),
            )
        )
    if not operations:
        return None
    plan = write_compaction_plan(CompactionPlan(tuple(operations)))
    return writer.timeline.create_requested(time, "compaction", plan)


def run_compaction(
    writer: TableWriter, scheduled: Instant, write_time_ms: Callable[[], int] | None = None
) -> Steps[Instant]:
    """Execute a scheduled compaction: merge each planned slice into a new base file, then
    commit. ``write_time_ms``: how long writing those base files took (a storage's cost model),
    which passes (a ``Sleep``) before the commit: the compaction stays pending meanwhile, as
    Hudi's ``CompactOperator`` writes every file before ``CompactionCommitSink`` commits."""
    if scheduled.action != "compaction" or scheduled.is_completed:
        raise WriteError(f"{scheduled} is not a pending compaction")
    plan = read_compaction_plan(writer.timeline.read_content(scheduled.requested()))
    inflight = (
        scheduled
        if scheduled.state is State.INFLIGHT
        else writer.timeline.transition_to_inflight(scheduled)
    )
    timeline = writer.table.timeline()
    stats = []
    for task_id, op in enumerate(plan.operations):
        planned = FileSlice(
            op.partition_path,
            op.file_id,
            op.base_instant_time or "",
            _planned_base(op),
            tuple(_planned_log(name, timeline) for name in op.delta_file_paths),
        )
        existing = _existing_base_stat(writer, inflight, op, task_id)
        if existing is not None:  # written by an earlier attempt of this compaction
            stats.append(existing)
            continue
        merged = merge_file_slice(writer.table, timeline, planned)
        stats.append(
            writer.write_base_file(
                inflight,
                op.partition_path,
                op.file_id,
                merged,
                task_id=task_id,
                prev_commit=op.base_instant_time,
                keep_meta=True,
            )
        )
    if write_time_ms is not None:
        yield Sleep(write_time_ms())
    return (yield from writer.commit(inflight, stats, operation_type="COMPACT", compacted=True))


def _existing_base_stat(
    writer: TableWriter, instant: Instant, op: CompactionOperation, task_id: int
) -> WriteStat | None:
    """The stat of a base file a failed attempt of ``instant`` already wrote (files are
    created whole, so an existing one is complete); None if there is none."""
    name = str(BaseFileName(op.file_id, writer.write_token(task_id), instant.requested_time))
    path = join(op.partition_path, name)
    if not writer.storage.exists(path):
        return None
    data = writer.storage.read(path)
    rows = pq.read_metadata(io.BytesIO(data)).num_rows
    return WriteStat(
        file_id=op.file_id,
        path=path,
        partition_path=op.partition_path,
        prev_commit=op.base_instant_time,
        num_writes=rows,
        num_update_writes=rows,
        total_write_bytes=len(data),
        file_size_in_bytes=len(data),
    )


def _planned_base(op: CompactionOperation) -> BaseFile | None:
    if not op.data_file_path:
        return None
    return BaseFile(op.data_file_path, op.file_id, op.base_instant_time or "")


def _planned_log(name: str, timeline: Timeline) -> LogFile:
    parsed = parse_log_file_name(name)
    return LogFile(name, parsed, timeline.completion_time(parsed.instant_time))
