"""Tests for reports/suite_plots.py: which runs get per-run plots."""

from __future__ import annotations

from reports.suite_plots import MAX_PLOTTED_RUNS, plotted_runs


def test_plotted_runs_are_the_first_seed_and_the_failures():
    runs = [
        {"seed": 3, "ok": False},
        {"seed": 1, "ok": True},
        {"seed": 2, "ok": True},
        {"seed": 4, "ok": False, "error": "boom"},
        {"seed": 5, "ok": False},
        {"seed": 6, "ok": False},
        {"seed": 7, "ok": False},
    ]
    assert [r["seed"] for r in plotted_runs(runs)] == [1, 3, 5][:MAX_PLOTTED_RUNS]
    assert plotted_runs([{"seed": 1, "ok": False, "error": "x"}]) == []
