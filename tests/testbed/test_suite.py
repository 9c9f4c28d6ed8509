"""``testbed suite`` (testbed/suite.py + testbed/cli.py): resolving suites and files, seeds,
summary.json / summary.parquet, determinism across worker counts, errors and Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from scenarios import ScenarioError, catalog
from scenarios.schema import load_scenario
from scenarios.suites import load_suites
from testbed import run as run_module
from testbed import suite as suite_module
from testbed.cli import main
from testbed.suite import execute, plan_runs, resolve, run_suite
from testbed.suite_summary import report_lines

REAL = """\
[scenario]
name = "tiny_real"
description = "a short real-protocol run"
duration_s = 6
seed = 1

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 200
key_space = 1000
"""

BAD = """\
[scenario]
name = "tiny_bad"
description = "commit_scope = latest_only with lost ACKs: caught, then minimized"
duration_s = 8
seed = 2

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 200
key_space = 1000

[faults]
ack_loss = 0.5

[[faults.schedule]]
at_s = 0
kind = "lose_ack"
target = "ingest"
checkpoint = 1

[protocol]
commit_scope = "latest_only"

[expect]
violations = ["exactly_once", "no_data_loss"]
"""

RUN_FIELDS = {
    "scenario",
    "description",
    "seed",
    "run_dir",
    "ok",
    "expected_violations",
    "violated",
    "error",
    "replay",
    "wall_s",
    "metrics",
    "grid",
    "params",
}
SCENARIO_FIELDS = {"scenario", "description", "runs", "ok", "expected_violations", "violated_in"}


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    real, bad = tmp_path / "real.toml", tmp_path / "bad.toml"
    real.write_text(REAL)
    bad.write_text(BAD)
    return [real, bad]


@pytest.fixture
def fake_report(monkeypatch) -> list[Path]:
    """The report is reports/html.py's job (tested there); here it only has to be called."""
    calls: list[Path] = []

    def write_report(suite_dir: Path) -> Path:
        calls.append(suite_dir)
        summary = json.loads((suite_dir / "summary.json").read_text())
        target = suite_dir / "report.html"
        target.write_text(f"<html>{len(summary['runs'])} runs</html>")
        return target

    monkeypatch.setattr("reports.html.write_report", write_report)
    return calls


def invoke(*args: str):
    return CliRunner().invoke(main, ["suite", *args, "-q"])


def without_wall_time(summary: dict[str, Any], out: Path) -> str:
    for row in summary["runs"]:
        row["wall_s"] = 0.0
    return json.dumps(summary, sort_keys=True).replace(str(out.resolve()), "<out>")


# --- resolving what to run ---------------------------------------------------------------------------


def test_no_argument_is_the_default_suite():
    book = load_suites()
    assert resolve([]).name == book.default
    assert resolve(["smoke"]).name == "smoke"


def test_files_become_a_suite_of_their_own(files):
    suite = resolve([str(p) for p in files])
    assert suite.name == "files"
    assert [e.name for e in suite.scenarios] == ["tiny_real", "tiny_bad"]


@pytest.mark.parametrize(
    ("targets", "fragment"),
    [
        (["nightly"], "unknown suite 'nightly'"),
        (["smoke", "full"], "give one suite name"),
        (["missing.toml"], "no such file"),
    ],
)
def test_bad_targets(targets, fragment):
    with pytest.raises(ScenarioError, match=fragment):
        resolve(targets)


def test_bad_suite_name_is_one_line_with_exit_code_2():
    result = invoke("nightly")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: ") and "unknown suite 'nightly'" in lines[0]
    assert "smoke" in lines[0]


def test_a_suite_name_cannot_be_mixed_with_files(files):
    result = invoke("smoke", str(files[0]))
    assert result.exit_code == 2
    assert "cannot be mixed" in result.output


def test_seeds_start_at_each_scenarios_own_seed(files, tmp_path):
    suite = resolve([str(p) for p in files])
    tasks = plan_runs(suite, tmp_path / "out", seeds=3)
    assert [(t.name, t.scenario.scenario.seed) for t in tasks] == [
        ("tiny_real", 1),
        ("tiny_real", 2),
        ("tiny_real", 3),
        ("tiny_bad", 2),
        ("tiny_bad", 3),
        ("tiny_bad", 4),
    ]
    assert [t.index for t in tasks] == list(range(6))
    assert tasks[1].rel_dir == "runs/tiny_real-seed2"
    assert tasks[1].run_dir == (tmp_path / "out" / "runs" / "tiny_real-seed2").resolve()
    assert [t.scenario.scenario.seed for t in plan_runs(suite, tmp_path / "out")] == [1, 2]


def test_grid_points_get_a_scenario_file_to_replay(tmp_path):
    tasks = plan_runs(resolve(["concurrency"]), tmp_path)
    assert len(tasks) == 6
    for task in tasks:
        assert task.source == (tmp_path / "scenarios" / f"{task.name}.toml").resolve()
        assert task.source.is_file()
        assert task.grid == "concurrency" and task.params


# --- running ---------------------------------------------------------------------------------------------


def test_two_scenarios_with_one_and_two_workers_give_the_same_summary(files, tmp_path, fake_report):
    targets = [str(p) for p in files]
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = invoke(*targets, "--out", str(out), "--workers", str(workers))
        assert result.exit_code == 0, result.output
        assert "2/2 runs as expected" in result.output
        outs.append(out)
    summaries = [json.loads((out / "summary.json").read_text()) for out in outs]
    one, two = (without_wall_time(s, out) for s, out in zip(summaries, outs, strict=True))
    assert one == two
    summary = summaries[0]
    assert summary["suite"] == "files" and summary["seeds"] == 1
    assert summary["ok"] is True and summary["interrupted"] is False
    assert [(r["scenario"], r["seed"]) for r in summary["runs"]] == [
        ("tiny_real", 1),
        ("tiny_bad", 2),
    ]
    for row in summary["runs"]:
        assert set(row) >= RUN_FIELDS
        assert row["ok"] and row["error"] is None
        assert row["grid"] is None and row["params"] == {}
        assert row["replay"].startswith("testbed run ")
        result = json.loads((outs[0] / row["run_dir"] / "result.json").read_text())
        assert row["metrics"] == result["metrics"]
        assert row["digest"] == result["digest"]
    real, bad = summary["runs"]
    assert real["violated"] == [] and real["counterexample"] is None
    assert bad["violated"] == ["exactly_once", "no_data_loss"]
    assert bad["expected_violations"] == ["exactly_once", "no_data_loss"]
    for scenario in summary["scenarios"]:
        assert set(scenario) >= SCENARIO_FIELDS
        assert scenario["runs"] == 1 and scenario["ok"]
    assert summary["scenarios"][1]["violated_in"] == {"exactly_once": 1, "no_data_loss": 1}
    # the caught known-bad run carries its minimal counterexample, the same for both worker counts
    assert bad["counterexample"] == "runs/tiny_bad-seed2/counterexample.toml"
    texts = [(out / bad["counterexample"]).read_text() for out in outs]
    assert texts[0] == texts[1]
    explanation = (outs[0] / "runs/tiny_bad-seed2/counterexample.txt").read_text()
    assert "lose_ack" in explanation and "replay: testbed run" in explanation
    assert len(fake_report) == 2 and (outs[0] / "report.html").is_file()
    assert (
        f"report: {outs[0] / 'report.html'}"
        in invoke(*targets, "--out", str(outs[0]), "--no-minimize").output
    )


def test_summary_parquet_has_one_flat_row_per_run(files, tmp_path, fake_report):
    out = tmp_path / "out"
    result = invoke(str(files[0]), "--out", str(out), "--seeds", "2", "--workers", "1")
    assert result.exit_code == 0, result.output
    table = pq.read_table(out / "summary.parquet")
    assert table.num_rows == 2
    rows = table.to_pylist()
    assert [(r["scenario"], r["seed"]) for r in rows] == [("tiny_real", 1), ("tiny_real", 2)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["seeds"] == 2
    for row, run in zip(rows, summary["runs"], strict=True):
        assert row["ok"] is True and row["error"] is None
        assert row["violated"] == "" and row["violations"] == 0
        assert json.loads(row["params"]) == {}
        assert row["blocked_ms_total"] == run["metrics"]["blocked_ms_total"]
        jobs = run["metrics"]["jobs"].values()
        assert row["commits"] == sum(job["commits"] for job in jobs) > 0
        assert row["wall_s"] == run["wall_s"]


def test_a_run_that_raises_is_recorded_as_its_error_and_the_rest_go_on(
    files, tmp_path, fake_report, monkeypatch
):
    real_run = run_module.run_scenario

    def flaky(scenario, source, out, **kwargs):
        if scenario.scenario.name == "tiny_real":
            raise RuntimeError("simulator exploded")
        return real_run(scenario, source, out, **kwargs)

    monkeypatch.setattr(run_module, "run_scenario", flaky)
    out = tmp_path / "out"
    result = invoke(*(str(p) for p in files), "--out", str(out), "--workers", "1", "--no-minimize")
    assert result.exit_code == 1, result.output
    assert "ERROR tiny_real seed 1: RuntimeError: simulator exploded" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ok"] is False and summary["interrupted"] is False
    broken, fine = summary["runs"]
    assert broken["ok"] is False and broken["error"] == "RuntimeError: simulator exploded"
    assert broken["metrics"] == {} and broken["violated"] == []
    assert "Traceback" in (out / broken["run_dir"] / "error.txt").read_text()
    assert fine["ok"] is True and fine["error"] is None and fine["counterexample"] is None
    assert pq.read_table(out / "summary.parquet").column("error").to_pylist() == [
        "RuntimeError: simulator exploded",
        None,
    ]
    assert fake_report == [out]


def test_ctrl_c_keeps_the_finished_runs(files, tmp_path, fake_report, monkeypatch):
    real_run = run_module.run_scenario

    def interrupted_at_the_second(scenario, source, out, **kwargs):
        if scenario.scenario.name == "tiny_bad":
            raise KeyboardInterrupt
        return real_run(scenario, source, out, **kwargs)

    monkeypatch.setattr(run_module, "run_scenario", interrupted_at_the_second)
    out = tmp_path / "out"
    result = invoke(*(str(p) for p in files), "--out", str(out), "--workers", "1")
    assert result.exit_code == 130, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert [r["scenario"] for r in summary["runs"]] == ["tiny_real"]
    assert summary["runs"][0]["ok"] is True
    assert pq.read_table(out / "summary.parquet").num_rows == 1
    assert fake_report == [out] and (out / "report.html").is_file()
    assert not (out / "runs" / "tiny_bad-seed2").exists()


def test_interrupting_a_stubbed_runner_keeps_rows_in_suite_order(files, tmp_path, fake_report):
    suite = resolve([str(p) for p in files])
    seen: list[str] = []

    def runner(task):
        seen.append(task.name)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return suite_module._row(task) | {"ok": True, "wall_s": 0.1}

    outcome = run_suite(suite, tmp_path / "out", seeds=2, workers=1, runner=runner)
    assert outcome.exit_code == 130
    assert [(r["scenario"], r["seed"]) for r in outcome.summary["runs"]] == [
        ("tiny_real", 1),
        ("tiny_real", 2),
    ]


def test_a_missing_report_fails_the_suite_but_keeps_the_summary(files, tmp_path, monkeypatch):
    def broken(suite_dir: Path) -> Path:
        raise RuntimeError("no plots today")

    monkeypatch.setattr("reports.html.write_report", broken)
    suite = resolve([str(files[0])])
    outcome = run_suite(suite, tmp_path / "out", workers=1)
    assert outcome.summary["ok"] is True
    assert outcome.exit_code == 1
    assert outcome.report is None and "no plots today" in outcome.report_error
    assert (tmp_path / "out" / "summary.json").is_file()
    assert any("report.html not written" in line for line in report_lines(outcome))


def test_execute_writes_the_run_folder_like_testbed_run(files, tmp_path):
    (task,) = plan_runs(resolve([str(files[0])]), tmp_path)
    stale = task.run_dir / "error.txt"
    stale.parent.mkdir(parents=True)
    stale.write_text("from an earlier suite run")
    row = execute(task)
    assert row["ok"] and not stale.exists()
    assert sorted(p.name for p in task.run_dir.iterdir()) == [
        ".testbed-output.json",
        "history.jsonl",
        "result.json",
        "scenario.toml",
    ]
    assert row["replay"] == run_module.replay_command(task.source, task.scenario, task.run_dir)


def test_the_catalog_is_in_the_default_suite_in_catalog_order():
    names = [e.name for e in resolve([]).scenarios if e.grid is None]
    # scenarios tagged "large" run only when named (the `large` suite)
    assert names == [p.stem for p in catalog() if "large" not in load_scenario(p).scenario.tags]
