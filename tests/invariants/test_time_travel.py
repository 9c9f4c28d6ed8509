"""Tests for invariants/time_travel.py: the sample of time-travel bounds the checkers read."""

from __future__ import annotations

from invariants.committed import CommittedTable, load_committed
from invariants.time_travel import travel_points
from models.ports import run
from tests.invariants.test_committed import SimTable


def test_travel_points_are_deterministic_bounded_and_include_compactions():
    t = SimTable()
    for i in range(12):
        t.write(t.records(i * 10, i * 10 + 10))
        if i in (4, 9):
            t.compact()
    committed = load_committed(t.table)
    points = travel_points(committed, limit=8)
    assert len(points) == 8
    assert [p.bound for p in points] == sorted({p.bound for p in points})
    assert points == travel_points(CommittedTable(t.table), limit=8)
    compactions = {c.completion for c in committed.compactions()}
    assert compactions <= {p.bound for p in points}
    everything = travel_points(committed, limit=100)
    assert len(everything) == len(committed.completed())
    # a small read budget keeps few (cheap, early) points
    cheap = travel_points(committed, limit=100, budget_files=6)
    assert 0 < len(cheap) < len(everything)


def test_a_write_completed_while_a_compaction_was_pending_is_a_point():
    """Compactions still pending at the end count too: their window lasts to the end."""
    t = SimTable()
    for i in range(3):
        t.write(t.records(i * 10, i * 10 + 10))
    scheduled = run(t.writer.schedule_compaction(), t.clock)
    inside = t.write(t.records(30, 40))  # completes while the compaction is pending
    run(t.writer.run_compaction(scheduled), t.clock)
    t.write(t.records(40, 50))
    pending = run(t.writer.schedule_compaction(), t.clock)
    last = t.write(t.records(50, 60))  # the compaction never completes
    points = travel_points(load_committed(t.table), limit=100)
    within = {p.bound: p.why for p in points if "was pending" in p.why}
    assert within == {
        inside.completion_time: f"a write completed while compaction {scheduled.requested_time} "
        "was pending",
        last.completion_time: f"a write completed while compaction {pending.requested_time} "
        "was pending",
    }
