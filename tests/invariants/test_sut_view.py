"""Tests for invariants/sut_view.py: the table as the run's own protocol variants read it."""

from __future__ import annotations

from invariants.sut_view import system_view
from tests.invariants.test_committed import SimTable


def test_system_view_follows_the_runs_protocol_variants():
    t = SimTable(
        protocol={
            "file_slicing": "base_instant",
            "slice_anchor": "earliest_log",
            "archived_completion_lookup": False,
        }
    )
    view = system_view(t.events, t.table)
    assert (view.options.rule, view.options.anchor) == ("base_instant", "earliest_log")
    assert view.table.archive_lookup is False and view.table.storage is t.storage
    real = system_view(SimTable().events, t.table)
    assert real.table is t.table and real.options.anchor == "earliest_completed"
