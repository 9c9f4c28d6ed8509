"""Tests for reports/distributions.py: violation counts and metric histograms across seeds, from
hand-made rows (known counts) and from real runs (the suite's rows match the sweep's)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reports.distributions import (
    CRASHED,
    METRICS,
    bin_edges,
    draw_histogram,
    draw_violation_counts,
    metric_values,
    percentile,
    plot_distributions,
    rows_from_suite_runs,
    violation_counts,
)
from reports.figures import new_figure, styled
from scenarios.schema import INVARIANTS
from testbed.sweep import METRIC_COLUMNS, SeedTask, evaluate_seed


def row(seed: int, violated=(), error=None, **metrics) -> dict:
    base = {
        "seed": seed,
        "ok": not violated and error is None,
        "violated": list(violated),
        "error": error,
        "expected_violations": [],
    }
    if error is None:
        base |= {
            "commits": 10 + seed % 3,
            "records_committed": 1000 * seed,
            "sim_end_ms": 10_000,
            "blocked_ms_total": 500 * seed,
            "commit_latency_p99_ms": 100 + seed,
            "failovers": seed % 2,
            "faults": seed,
        }
    return base | metrics


ROWS = [
    row(1),
    row(2, ["no_data_loss"]),
    row(3, ["no_data_loss", "exactly_once"]),
    row(4),
    row(5, error="RuntimeError: boom"),
    row(6, ["made_up_check"]),
]


def test_violation_counts_list_every_invariant_zeros_included():
    counts = violation_counts(ROWS)
    assert list(counts)[: len(INVARIANTS)] == list(INVARIANTS)
    assert counts["no_data_loss"] == 2 and counts["exactly_once"] == 1
    assert counts["slicing"] == 0 and counts["liveness"] == 0
    assert list(counts)[len(INVARIANTS) :] == ["made_up_check", CRASHED]
    assert counts["made_up_check"] == 1 and counts[CRASHED] == 1
    assert CRASHED not in violation_counts(ROWS[:4])


def test_violation_bars_are_the_counts_and_zeros_are_drawn():
    counts = violation_counts(ROWS)
    with styled():
        ax = new_figure(6, 4).add_subplot()
        draw_violation_counts(ax, counts, len(ROWS), expected=["exactly_once"])
    widths = [patch.get_width() for patch in ax.patches]
    assert widths == list(counts.values())  # one bar per name, in order, as tall as its count
    labels = [text.get_text().strip() for text in ax.texts]
    assert "2/6 unexpected" in labels  # no_data_loss
    assert "1/6 expected in all 6" in labels  # exactly_once, expected but missed in 5 seeds
    assert "1/6 crashed" in labels
    assert labels.count("0/6") == len(INVARIANTS) - 2  # each clean invariant says so
    dots = [line for line in ax.lines if line.get_marker() == "o"]
    assert len(dots) == len(INVARIANTS) - 2  # and is marked at zero
    assert ax.get_yticklabels()[0].get_text() == INVARIANTS[0]


def test_a_clean_sweep_reads_as_clean(tmp_path):
    clean = [row(seed) for seed in range(1, 9)]
    figures = plot_distributions(clean, tmp_path, scenario="clean")
    assert [f.name for f in figures] == ["violations", "metrics"]
    assert "no invariant violated in any seed" in figures[0].caption
    assert figures[0].png.is_file() and figures[0].svg.is_file()
    assert figures[0].preview[:8] == b"\x89PNG\r\n\x1a\n"


def test_histograms_count_every_seed_with_a_value():
    values = metric_values(ROWS, writers=2)
    assert set(values) == {m.key for m in METRICS} - {"commit_latency_p50_ms"}  # sweep rows
    assert values["commits"] == [11.0, 12.0, 10.0, 11.0, 10.0]  # the crashed seed has none
    assert values["throughput"] == [100.0, 200.0, 300.0, 400.0, 600.0]
    assert values["blocked_fraction"] == pytest.approx([0.025, 0.05, 0.075, 0.1, 0.15])
    commits = next(m for m in METRICS if m.key == "commits")
    with styled():
        ax = new_figure(4, 3).add_subplot()
        draw_histogram(ax, commits, values["commits"])
    heights = [patch.get_height() for patch in ax.patches]
    assert heights == [2, 2, 1]  # one bar per value: 10, 11, 12
    assert [line.get_xdata()[0] for line in ax.lines] == [11.0, 12.0]  # median, p90
    assert "median 11" in ax.get_title()


def test_bin_edges_one_bar_per_small_integer_else_even_bins():
    assert list(bin_edges([3, 3, 5])) == [2.5, 3.5, 4.5, 5.5]
    assert list(bin_edges([7.0])) == pytest.approx([6.5, 7.5])
    wide = bin_edges(list(np.linspace(0, 1000, 100)))
    assert len(wide) == 11 and wide[0] == 0 and wide[-1] == 1000
    flat = bin_edges([0.25, 0.25])
    assert flat[0] < 0.25 < flat[1]


def test_percentile_is_nearest_rank():
    assert percentile([5, 1, 3, 2, 4], 50) == 3
    assert percentile(list(range(1, 11)), 90) == 9
    assert percentile([7], 99) == 7


def test_every_seed_crashed_gives_only_the_violation_chart(tmp_path):
    crashed = [row(1, error="x"), row(2, error="y")]
    figures = plot_distributions(crashed, tmp_path, scenario="crashy")
    assert [f.name for f in figures] == ["violations"]
    assert "2 seeds crashed before a verdict" in figures[0].caption


def suite_run(folder) -> dict:
    result = json.loads((folder / "result.json").read_text())
    return {
        "scenario": result["scenario"],
        "seed": result["seed"],
        "ok": result["ok"],
        "expected_violations": result["expected_violations"],
        "violated": sorted(n for n, v in result["invariants"].items() if not v["ok"]),
        "error": None,
        "metrics": result["metrics"],
    }


def test_suite_rows_match_the_sweeps_row_for_the_same_run(runs):
    """The suite report's distributions read the same numbers a sweep of that seed records."""
    folder = runs["blocking"]
    (suite_row,) = rows_from_suite_runs([suite_run(folder)])
    source = folder.parent / "blocking.toml"  # the scenario the fixture ran (tests/conftest.py)
    sweep_row = evaluate_seed(SeedTask(source.read_text(), str(source), suite_row["seed"]))
    for name in ("violated", *(c for c in METRIC_COLUMNS if c != "wall_s")):
        assert suite_row[name] == sweep_row[name], name
    assert suite_row["writers"] == 4 and suite_row["commit_latency_p50_ms"] > 0


def test_real_runs_give_their_violations_and_metrics(runs, tmp_path):
    rows = rows_from_suite_runs(suite_run(runs[k]) for k in ("skew", "tt_unsafe", "async"))
    counts = violation_counts(rows)
    for name in INVARIANTS:
        assert counts[name] == sum(name in r["violated"] for r in rows)
    assert counts["instant_monotonic"] >= 1  # the known-bad skew runs are caught
    figures = plot_distributions(rows, tmp_path, scenario="mixed", expected=["instant_monotonic"])
    assert "instant_monotonic in" in figures[0].caption
    assert "commit latency p50" in figures[1].caption  # suite rows carry the median too
