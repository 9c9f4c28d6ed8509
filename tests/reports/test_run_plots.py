"""Tests for reports/run_plots.py and the per-run plots it draws (swimlane, timeline, slices,
throughput, happens-before chains), on short real runs of catalog scenarios."""

from __future__ import annotations

import json

import pytest

from models.storage import LocalStorage
from models.view.table import HudiTable
from reports.run_data import RunFolderError, load_run
from reports.run_plots import plot_run
from reports.slices import layout_from_history, layout_from_table
from reports.swimlane import lanes_of
from reports.throughput import blocked_share, rates
from reports.timeline import spans_from_history
from reports.violations import violations_of


def test_clean_run_gets_every_plot_but_no_violation_chain(runs, tmp_path):
    figures = plot_run(runs["blocking"], tmp_path)
    assert [f.name for f in figures] == ["swimlane", "timeline", "slices", "throughput"]
    for figure in figures:
        assert figure.png.stat().st_size > 5000 and figure.svg.stat().st_size > 5000
        assert figure.caption and any(c.isdigit() for c in figure.caption)
    run = load_run(runs["blocking"])
    writers = run.metrics["writers"].values()
    blocked = sum(w["blocked_ms"] for w in writers) / (run.end_ms * len(writers))
    assert f"blocked {100 * blocked:.1f}% of the time" in figures[0].caption
    checkpoints = run.metrics["jobs"]["ingest"]["checkpoints_completed"]
    assert f"{checkpoints} checkpoints completed" in figures[0].caption


@pytest.fixture(scope="module")
def skew_figures(runs, tmp_path_factory):
    return plot_run(runs["skew"], tmp_path_factory.mktemp("skew-plots"))


def test_a_violating_run_gets_one_chain_per_violated_invariant(runs, skew_figures):
    run = load_run(runs["skew"])
    violated = [name for name, _ in violations_of(run)]
    assert violated == run.violated and violated  # the fixture run breaks instant ordering
    figures = skew_figures
    chains = {f.name: f for f in figures if f.name.startswith("hb_")}
    assert sorted(chains) == [f"hb_{name}" for name in violated]
    result = json.loads((runs["skew"] / "result.json").read_text())
    for name in violated:
        why = result["invariants"][name]["violations"][0]["why"]
        assert chains[f"hb_{name}"].caption.startswith(why)


@pytest.mark.slow
def test_plots_are_byte_identical_when_drawn_twice(runs, skew_figures, tmp_path):
    first = skew_figures
    second = plot_run(runs["skew"], tmp_path)
    for a, b in zip(first, second, strict=True):
        assert a.svg.read_bytes() == b.svg.read_bytes(), a.name
        assert a.png.read_bytes() == b.png.read_bytes(), a.name


def test_local_run_slices_come_from_the_table_and_match_the_history(runs, tmp_path):
    run = load_run(runs["local"])
    assert run.table_root is not None
    figures = {f.name: f for f in plot_run(runs["local"], tmp_path)}
    assert "Rebuilt from the history" not in figures["slices"].caption
    table = layout_from_table(
        HudiTable(LocalStorage(run.table_root)), origin_ms=run.epoch_ms, origin="t0"
    )
    history = layout_from_history(run)
    assert [g.label for g in history.groups] == [g.label for g in table.groups]
    for from_history, from_table in zip(history.groups, table.groups, strict=True):
        assert [s.start_s for s in from_history.slices] == [s.start_s for s in from_table.slices]
        assert sorted(from_history.logs, key=_log_key) == sorted(from_table.logs, key=_log_key)


def _log_key(log):
    return (log.requested_s, log.completed_s or 0.0, log.slice_index)


def test_swimlane_blocked_time_adds_up_to_the_metrics(runs):
    run = load_run(runs["blocking"])
    lanes = lanes_of(run)
    for writer, metrics in run.metrics["writers"].items():
        states = lanes.intervals[writer]
        drawn_ms = sum(w for _, w in states.get("blocked", []) + states.get("commit_wait", []))
        commit_ms = sum(w for _, w in states.get("commit_wait", []))
        assert round(drawn_ms * 1000) == metrics["blocked_ms"]
        assert round(commit_ms * 1000) == metrics["commit_wait_ms"]
    assert {job for job, _, _ in lanes.checkpoints} == {"ingest"}
    assert sum(1 for *_, kind in lanes.marks if kind == "commit") == sum(
        j["commits"] for j in run.metrics["jobs"].values()
    )


def test_timeline_has_every_commit_and_marks_time_collisions(runs):
    clean = load_run(runs["async"])
    data = spans_from_history(clean)
    completed = [s for s in data.spans if s.action == "deltacommit" and not s.pending]
    assert len(completed) == clean.metrics["jobs"]["ingest"]["commits"]
    assert all(s.completed_s > s.requested_s for s in completed)
    assert not data.collisions
    skewed = spans_from_history(load_run(runs["skew"]))
    if "instant_unique" in load_run(runs["skew"]).violated:
        assert skewed.collisions


def test_throughput_rates_account_for_every_committed_record(runs):
    run = load_run(runs["async"])
    series = rates(run, 1000)["ingest"]
    assert round(series.committed.sum()) == run.metrics["jobs"]["ingest"]["records_committed"]
    _, share = blocked_share(run, 1000)
    writers_ms = sum(w["blocked_ms"] for w in run.metrics["writers"].values())
    assert share.sum() * 1000 * len(run.writers) == pytest.approx(writers_ms)


def test_a_folder_that_is_not_a_run_is_refused_by_name(tmp_path):
    with pytest.raises(RunFolderError, match=r"no scenario\.toml"):
        plot_run(tmp_path, tmp_path / "out")
