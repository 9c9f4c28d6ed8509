"""A writer on a real local table with a fake clock: what the writer, archive and rollback tests
share. Subclass it for the helpers one test module needs."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from models.format.properties import MERGE_ON_READ
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import LocalStorage
from models.timeline.instant import Instant
from models.timeline.truetime import make_time_generator
from models.write.table_init import create_table
from models.write.writer import TableWriter

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def rows(ids, ts, value, part="p=1") -> pa.Table:
    """Records ``id, ts, value, part`` with one ts and value for all ``ids`` in partition ``part``."""
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "ts": pa.array([ts] * n, pa.int64()),
            "value": pa.array([value] * n, pa.int64()),
            "part": pa.array([part.split("=")[1]] * n, pa.string()),
        }
    )


class TableHarness:
    """Table ``t`` (key ``id``, ordering ``ts``, partitioned by ``part``) under ``path``."""

    def __init__(self, path: Path, table_type: str = MERGE_ON_READ, merge_mode: str | None = None):
        self.path = path
        self.clock = FakeClock(FakeWorld(START_MS))
        self.generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock())
        self.table = create_table(
            LocalStorage(path),
            name="t",
            table_type=table_type,
            record_key_field="id",
            ordering_field="ts",
            partition_fields=("part",),
            merge_mode=merge_mode,
        )
        self.writer = TableWriter(self.table, self.generator)
        self.storage = self.table.storage

    def start(self) -> Instant:
        return run(self.writer.start_commit(), self.clock)

    def commit(self, instant: Instant, stats, op: str = "UPSERT") -> Instant:
        return run(self.writer.commit(instant, stats, op), self.clock)

    def schedule(self, writer: TableWriter | None = None) -> Instant | None:
        return run((writer or self.writer).schedule_compaction(), self.clock)

    def compact(self, scheduled: Instant, writer: TableWriter | None = None) -> Instant:
        return run((writer or self.writer).run_compaction(scheduled), self.clock)
