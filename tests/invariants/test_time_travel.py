"""Tests for invariants/time_travel.py: the sample of time-travel bounds the checkers read."""

from __future__ import annotations

from invariants.committed import CommittedTable, load_committed
from invariants.time_travel import travel_points
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
