"""``testbed demo``: write a small real Hudi 1.x MOR table that shows completion-time slicing.

The story (docs/protocol.md section 4): a base file, an update that commits, then deltacommit ``d2``
starts writing, a compaction is *scheduled while d2 is in flight*, and d2 completes after it. Under
Hudi 1.x's rule d2's log lands in the slice the compaction opened, so nothing is lost; under the
0.x rule it would have been attached to the old slice the compaction had already planned.

Time comes from a fake world clock starting at a fixed epoch: the same code always writes the same
table (no wall clock in the models, ever).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import LocalStorage
from models.timeline.truetime import make_time_generator
from models.write.table_init import create_table
from models.write.writer import TableWriter
from testbed.atomic import staged_folder

DEMO_START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
PARTITION = "city=sf"
FILE_ID = "5f3b1c2e-0000-4000-8000-000000000001-0"


def write_demo_table(target: Path) -> Path:
    """Write the demo table into ``target`` (replaced if it exists) and return it."""
    with staged_folder(target, "demo") as staging:
        _write(staging)
    return target


def _write(root: Path) -> None:
    """The demo's commits, written into ``root``."""
    world = FakeWorld(DEMO_START_MS)
    clock = FakeClock(world)
    generator = make_time_generator("truetime", clock=clock, lock=LocalLock("demo"))
    table = create_table(
        LocalStorage(root),
        name="demo_trips",
        record_key_field="uuid",
        ordering_field="ts",
        partition_fields=("city",),
    )
    writer = TableWriter(table, generator)

    def rows(uuids: list[str], ts: int, fare: float) -> pa.Table:
        n = len(uuids)
        return pa.table(
            {
                "uuid": pa.array(uuids, pa.string()),
                "ts": pa.array([ts] * n, pa.int64()),
                "fare": pa.array([fare + i for i in range(n)], pa.float64()),
                "city": pa.array(["sf"] * n, pa.string()),
            }
        )

    first = run(writer.start_commit(), clock)
    stat = writer.write_base_file(first, PARTITION, FILE_ID, rows(["a", "b", "c"], 1, 10.0))
    run(writer.commit(first, [stat], "INSERT"), clock)

    d1 = run(writer.start_commit(), clock)
    stat = writer.append_log_file(d1, PARTITION, FILE_ID, rows(["a"], 2, 20.0))
    run(writer.commit(d1, [stat]), clock)

    d2 = run(writer.start_commit(), clock)  # in flight while the compaction is scheduled
    stat_d2 = writer.append_log_file(d2, PARTITION, FILE_ID, rows(["b"], 3, 30.0))
    compaction = run(writer.schedule_compaction(), clock)
    run(writer.commit(d2, [stat_d2]), clock)  # completes after the compaction's requested time
    assert compaction is not None
    run(writer.run_compaction(compaction), clock)
