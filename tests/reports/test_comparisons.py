"""Tests for reports/comparisons.py: blocking vs async, OCC vs NBCC, TrueTime's bound vs skew."""

from __future__ import annotations

import json
import shutil

import pytest

from models.history import read_history
from reports.comparisons import (
    TrueTimePoint,
    plot_blocking_vs_async,
    plot_occ_vs_nbcc,
    plot_truetime,
    truetime_point,
)
from reports.run_data import load_run
from reports.throughput import blocked_fractions


@pytest.mark.parametrize(
    ("blocking", "async_", "stalls"),
    [
        ("blocking", "async", False),
        ("blocking_heavy", "async_heavy", True),
    ],
)
def test_blocking_vs_async_puts_the_stall_numbers_in_the_caption(
    runs, tmp_path, blocking, async_, stalls
):
    """Light load (buffers flush at the barriers): a blocking writer never waits for a commit;
    heavy load (buffers fill between barriers): it does after every checkpoint."""
    figure = plot_blocking_vs_async(runs[blocking], runs[async_], tmp_path, name=blocking)
    assert figure.png.is_file() and figure.svg.is_file() and figure.png.stem == blocking
    slow = blocked_fractions(load_run(runs[blocking]))
    fast = blocked_fractions(load_run(runs[async_]))
    mean_blocking = sum(b for b, _ in slow.values()) / len(slow)
    mean_async = sum(b for b, _ in fast.values()) / len(fast)
    assert all(c == 0 for _, c in fast.values())  # async never waits for a commit
    assert any(c > 0 for _, c in slow.values()) == stalls
    assert ("async removes the commit stalls" in figure.caption) == stalls
    assert f"{100 * mean_blocking:.1f}%" in figure.caption
    assert f"{100 * mean_async:.1f}%" in figure.caption


def test_occ_vs_nbcc_uses_the_waste_metrics_and_says_when_they_are_missing(runs, tmp_path):
    figure = plot_occ_vs_nbcc(runs["occ"], runs["nbcc"], tmp_path / "measured")
    occ = json.loads((runs["occ"] / "result.json").read_text())["metrics"]["jobs"]
    aborted = sum(j["commits_aborted"] for j in occ.values())
    assert f"{aborted} aborted" in figure.caption
    assert "not measured" not in figure.caption
    # A run folder from before the waste metrics existed: said so, not drawn as zero.
    old = tmp_path / "old-occ"
    shutil.copytree(runs["occ"], old)
    result = json.loads((old / "result.json").read_text())
    for job in result["metrics"]["jobs"].values():
        for key in ("commits_aborted", "records_aborted", "retries"):
            job.pop(key, None)
    (old / "result.json").write_text(json.dumps(result))
    figure = plot_occ_vs_nbcc(old, runs["nbcc"], tmp_path / "old")
    assert "OCC (occ_contention" in figure.caption
    assert figure.caption.count("not measured") >= 2  # failovers were always measured


def test_occ_vs_nbcc_draws_early_detection_as_its_middle_column(runs, tmp_path):
    figure = plot_occ_vs_nbcc(runs["occ"], runs["nbcc"], tmp_path, occ_early=runs["occ_early"])
    caption = figure.caption
    assert (
        caption.index("OCC (") < caption.index("OCC + early detection (") < caption.index("NBCC (")
    )
    jobs = json.loads((runs["occ_early"] / "result.json").read_text())["metrics"]["jobs"]
    early = sum(j.get("early_conflicts", 0) for j in jobs.values())
    assert early > 0 and f"{early} early conflicts" in caption
    assert "median time to abort" in caption


def test_truetime_wait_is_recorded_and_grows_with_the_bound(runs):
    safe, unsafe = truetime_point(runs["tt_safe"]), truetime_point(runs["tt_unsafe"])
    assert (safe.bound_ms, safe.skew_ms) == (100, 20)
    assert (unsafe.bound_ms, unsafe.skew_ms) == (20, 500)
    # Every TrueTime time waits out the bound under the lock (sim/time_recording.py wait_ms).
    for event in read_history(runs["tt_safe"] / "history.jsonl"):
        if event.f == "instant_time":
            assert event.value["wait_ms"] >= 100
    assert safe.wait_ms_per_instant >= 2 * 100  # a requested and a completion time
    assert unsafe.wait_ms_per_instant < safe.wait_ms_per_instant
    assert safe.violations == 0 and unsafe.violations > 0


def test_local_clock_records_no_wait(runs):
    point = truetime_point(runs["skew"])  # local_clock generator: no lock, no skew wait
    assert point.wait_ms_per_instant < 5


def test_plot_truetime_over_a_grid(tmp_path):
    points = [
        TrueTimePoint(bound, skew, 2.3 * bound, 0 if bound >= 2 * skew else 4)
        for bound in (20, 100, 300)
        for skew in (0, 50, 200)
    ]
    figure = plot_truetime([*points, points[0]], tmp_path)
    assert figure.png.stat().st_size > 10_000
    assert "10 runs" in figure.caption
    # unsafe (bound < 2 x skew): 20/50, 20/200, 100/200, 300/200; the rest (one twice) is safe
    assert "4 of 4 violated" in figure.caption and "0 of 6" in figure.caption
