"""The write clients of a job's roles on the run's table (Hudi's ``FlinkWriteClients``).

Every role that touches the table gets its own :class:`models.write.writer.TableWriter`: the
operator coordinator's starts, commits and rolls back instants with the coordinator's
instant-time generator; a write task's only writes data files (no generator: it never takes an
instant time); the compactor's has the compactor's own generator. All share the table, its
storage, the file-slicing rule of the run's protocol variant and the parquet log blocks the
simulator writes. ``stage_id`` (the job's index + 1) is the middle of the files' write tokens, so
two jobs writing one file group name their files apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from models.timeline.truetime import TimeGenerator
from models.view.table import HudiTable, ViewOptions
from models.write.heartbeat import HeartbeatClient
from models.write.writer import TableWriter
from sim.storage import SimStorage


@dataclass(frozen=True)
class FlinkWriteClients:
    """Builds the roles' write clients on one table.

    ``time_generator(process)`` is the instant-time generator of that process's clock (every
    time it hands out is recorded); ``data_schema`` the data columns every commit's metadata
    carries."""

    table: HudiTable
    storage: SimStorage
    view_options: ViewOptions
    log_block_format: str
    data_schema: pa.Schema
    time_generator: Callable[[str], TimeGenerator]
    clock_ms: Callable[[str], Callable[[], int]]
    """``clock_ms(process)`` reads that process's clock (epoch ms)."""
    heartbeat: HeartbeatClient | None = None
    """The coordinator's write client's heartbeats (LAZY)."""

    def coordinator_writer(self, process: str) -> TableWriter:
        """The operator coordinator's client, taking instant times on ``process``'s clock."""
        return TableWriter(
            self.table,
            self.time_generator(process),
            data_schema=self.data_schema,
            log_block_format=self.log_block_format,
            view_options=self.view_options,
            heartbeat=self.heartbeat,
        )

    def task_writer(self, stage_id: int, attempt_id: int = 0) -> TableWriter:
        """A write task's client (attempt ``attempt_id``): data files only."""
        return TableWriter(
            self.table,
            None,
            data_schema=self.data_schema,
            log_block_format=self.log_block_format,
            view_options=self.view_options,
            stage_id=stage_id,
            attempt_id=attempt_id,
        )

    def compactor_writer(self, process: str, stage_id: int) -> TableWriter:
        """The compactor's client, taking instant times on ``process``'s clock."""
        return TableWriter(
            self.table,
            self.time_generator(process),
            view_options=self.view_options,
            stage_id=stage_id,
        )

    def latest_base_instants(self) -> dict[tuple[str, str], str]:
        """Variant ``base_instant``: the base instant of each file group's latest slice, as a
        0.x writer reads it when its write starts."""
        _, groups = self.table.file_groups(options=self.view_options)
        out = {}
        for group in groups:
            latest = group.slices[-1] if group.slices else None
            if latest is not None:
                out[(group.partition, group.file_id)] = latest.base_instant
        return out


__all__ = ["FlinkWriteClients"]
