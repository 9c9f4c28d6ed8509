"""Tests for sim/flink/source.py: the source reads what the topic holds every tick, routes every
record to exactly one task, stalls under backpressure and catches up, and stops at the end of
the input."""

from __future__ import annotations

import pyarrow as pa

from models.format.records import RecordSource
from sim.flink.source import CATCH_UP_FACTOR, SOURCE_TICK_MS, SourcePosition, SourceReader
from tests.sim.flink.harness import RoleHarness

RATE = 1000  # records per s: 100 per tick


class FakeInput:
    def __init__(self) -> None:
        self.batches: list[pa.Table] = []
        self.backpressured = False

    def receive(self, rows: pa.Table) -> None:
        self.batches.append(rows)

    def offsets(self) -> list[int]:
        return [o for b in self.batches for o in b.column("offset").to_pylist()]


def reader(h: RoleHarness, position: SourcePosition, outputs: list[FakeInput]) -> SourceReader:
    records = RecordSource(
        seed=1, job_index=0, key_space=500, partitions=2, records_per_s=RATE, operation="upsert"
    )
    return SourceReader(
        h.attempt,
        records,
        position,
        records_per_s=RATE,
        buckets_per_partition=2,
        outputs=outputs,
    )


def emits(h: RoleHarness) -> list[tuple[int, int]]:
    return [(e.value["from"], e.value["to"]) for e in h.events("emit")]


def test_every_record_reaches_one_task_in_offset_order():
    h, position, outputs = RoleHarness(), SourcePosition(), [FakeInput(), FakeInput()]
    h.env.process(reader(h, position, outputs).run())
    h.env.run(until=5 * SOURCE_TICK_MS + 1)
    assert emits(h) == [(0, 100), (100, 200), (200, 300), (300, 400), (400, 500)]
    assert position.offset == position.emitted == 500
    assert sorted(outputs[0].offsets() + outputs[1].offsets()) == list(range(500))
    for output in outputs:
        assert output.offsets() == sorted(output.offsets()) and output.offsets()
    assert h.named == ["job0/source"]


def test_backpressure_stalls_the_source_which_then_catches_up():
    h, position, outputs = RoleHarness(), SourcePosition(), [FakeInput()]
    h.env.process(reader(h, position, outputs).run())
    h.env.run(until=SOURCE_TICK_MS + 1)
    outputs[0].backpressured = True
    h.env.run(until=6 * SOURCE_TICK_MS + 1)
    assert emits(h) == [(0, 100)]  # five ticks stalled
    outputs[0].backpressured = False
    h.env.run(until=8 * SOURCE_TICK_MS + 1)
    caught_up = 100 + CATCH_UP_FACTOR * 100
    assert emits(h) == [(0, 100), (100, caught_up), (caught_up, 800)]


def test_a_restarted_source_replays_from_its_offset_and_stops_at_the_end():
    h, outputs = RoleHarness(), [FakeInput()]
    position = SourcePosition(offset=200, emitted=600, end=450)
    h.env.process(reader(h, position, outputs).run())
    h.env.run(until=20 * SOURCE_TICK_MS)
    assert emits(h) == [(200, 450)]  # caught up at once (the topic holds more), then the end
    assert position.offset == 450 and position.emitted == 600
    assert outputs[0].offsets() == list(range(200, 450))
