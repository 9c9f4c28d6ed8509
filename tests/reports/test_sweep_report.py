"""Tests for reports/sweep_report.py: a sweep's report.html from real sweeps of a short scenario
(its counts, distributions, failing seeds; nothing finished; an interrupted sweep)."""

from __future__ import annotations

import re

from reports.sweep_report import write_sweep_report
from scenarios.schema import load_scenario
from testbed.sweep import read_rows, run_here, run_sweep
from tests.reports.test_html import embedded


def test_sweep_report_shows_counts_distributions_and_failing_seeds(runs, tmp_path):
    source = runs["tt_unsafe"].parent / "tt_unsafe.toml"  # short known-bad scenario (conftest)
    result = run_sweep(
        load_scenario(source), source, (1, 3), tmp_path / "sweep", run_here, engine="none"
    )
    out = result.out
    html = (out / "report.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and "<script" not in html and "<svg" not in html
    assert len(embedded(html)) == 2
    for name in ("violations", "metrics"):
        assert (out / "plots" / f"{name}.png").is_file() and (
            out / "plots" / f"{name}.svg"
        ).is_file()
    rows = read_rows(out).to_pylist()
    for name, count in result.summary["violations"].items():
        assert f"{name} in {count}/3" in html  # the chart's caption, from the same rows
    assert "without Spark" in html
    text = re.sub(r"<[^>]+>", "", html)  # a replay command is one span per argument
    for failure in result.summary["failing"]:
        assert failure["replay"] in text
    assert len(rows) == 3 and "Metric percentiles" in html


def test_sweep_report_of_nothing_finished(tmp_path):
    summary = {"scenario": "s", "seeds": {"first": 1, "last": 9, "count": 9}, "interrupted": True}
    html = write_sweep_report(tmp_path, [], summary).read_text()
    assert "Interrupted" in html and "No metrics" in html


def test_an_interrupted_sweep_reports_what_finished(runs, tmp_path):
    source = runs["tt_safe"].parent / "tt_safe.toml"
    chunks_run = []

    def runner(tasks, on_progress):
        if chunks_run:
            raise KeyboardInterrupt
        chunks_run.append(tasks)
        return run_here(tasks, on_progress)

    result = run_sweep(
        load_scenario(source), source, (1, 3), tmp_path / "s", runner, engine="none", chunk_seeds=1
    )
    assert result.interrupted
    html = (tmp_path / "s" / "report.html").read_text()
    assert "Interrupted" in html and "(1 of 3 ran)" in html
    assert "interrupted, 2 seed(s) not run" in html
    assert (tmp_path / "s" / "plots" / "violations.svg").is_file()
