"""Counterexample minimization of a caught known-bad run (testbed/minimize.py)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from models.history import Event
from scenarios import load_scenario, parse_scenario
from testbed.cli import main
from testbed.explore import Outcome, run_candidate
from testbed.minimize import faults_from_history, minimize_run
from testbed.run import run_scenario

BAD = """\
[scenario]
name = "tiny_bad"
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
writer_crash_per_hour = 400

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


def event(index: int, time: int, process: str, type_: str, f: str, value) -> Event:
    return Event(index, time, process, type_, f, value)


def test_random_faults_become_schedule_entries():
    scenario = parse_scenario(BAD)
    events = [
        event(
            0, 2000, "ingest/checkpoint", "ok", "checkpoint", {"checkpoint": 1, "source_offset": 5}
        ),
        event(
            1,
            2000,
            "nemesis",
            "info",
            "drop",
            {
                "channel": "ingest/notify",
                "message": "CheckpointComplete",
                "checkpoint": 1,
                "schedule": 0,
            },
        ),
        event(
            2, 4000, "ingest/checkpoint", "ok", "checkpoint", {"checkpoint": 2, "source_offset": 9}
        ),
        event(
            3,
            4000,
            "nemesis",
            "info",
            "drop",
            {"channel": "ingest/notify", "message": "CheckpointComplete"},
        ),
        event(
            4,
            4100,
            "nemesis",
            "info",
            "duplicate",
            {"channel": "ingest/notify", "message": "CheckpointComplete"},
        ),
        event(
            5,
            4200,
            "nemesis",
            "info",
            "drop",
            {"channel": "ingest/task-0->jm", "message": "WriteMetadataEvent"},
        ),
        event(6, 5123, "nemesis", "info", "crash", {"process": "ingest/task-1"}),
        event(
            7,
            5200,
            "nemesis",
            "info",
            "crash",
            {"process": "ingest/task-0", "job_restarting": True},
        ),
        event(8, 6000, "nemesis", "info", "checkpoint_failure", {"job": "ingest", "checkpoint": 3}),
        event(
            9,
            6500,
            "nemesis",
            "info",
            "clock_jump",
            {"process": "ingest/coordinator", "delta_ms": -300, "skew_ms": 10},
        ),
        event(10, 7000, "nemesis", "info", "storage_write_failure", {"path": "p0/x.log"}),
    ]
    assert faults_from_history(events, scenario) == [
        {"at_s": 0.0, "kind": "lose_ack", "target": "ingest", "checkpoint": 2},
        {"at_s": 0.0, "kind": "duplicate_ack", "target": "ingest", "checkpoint": 2},
        {"at_s": 5.123, "kind": "crash", "target": "ingest/task-1"},
        {"at_s": 0.0, "kind": "fail_checkpoint", "target": "ingest", "checkpoint": 3},
        {"at_s": 6.5, "kind": "clock_jump", "target": "ingest/coordinator", "delta_ms": -300},
        {"at_s": 7.0, "kind": "storage_failure", "target": "ingest"},
    ]


def caught(tmp_path: Path):
    source = tmp_path / "bad.toml"
    source.write_text(BAD)
    scenario = load_scenario(source)
    run_dir = tmp_path / "run"
    outcome = run_scenario(scenario, source, run_dir)
    assert outcome.ok
    from models.history import read_history

    return scenario, read_history(run_dir / "history.jsonl"), run_dir


def test_a_caught_run_shrinks_to_one_fault_that_replays(tmp_path):
    scenario, events, run_dir = caught(tmp_path)
    assert sum(e.process == "nemesis" for e in events) > 1  # random faults to get rid of
    found = minimize_run(scenario, events, run_dir)
    assert found is not None and not found.budget_spent
    assert found.path == run_dir / "counterexample.toml"
    assert len(found.candidate.schedule) == 1
    assert found.kept_rates == {}
    assert found.candidate.duration_s < scenario.scenario.duration_s
    assert found.outcome.violated & {"exactly_once", "no_data_loss"}
    counterexample = load_scenario(found.path)
    assert counterexample.faults.ack_loss == 0 and counterexample.faults.writer_crash_per_hour == 0
    assert counterexample.expect.violations == tuple(sorted(found.outcome.violated))
    record = json.loads((run_dir / "counterexample.json").read_text())
    assert record["found"] and record["schedule"] == found.candidate.entries()
    assert record["minimize"]["runs"] == found.runs
    assert record["replay"] == f"testbed run {found.path.resolve()}"
    text = (run_dir / "counterexample.txt").read_text()
    assert "lose_ack ingest" in text and text.rstrip().endswith(str(found.path.resolve()))
    # an ordinary scenario file: testbed run replays it as expected
    result = CliRunner().invoke(
        main, ["run", str(found.path), "--out", str(tmp_path / "replay"), "-q"]
    )
    assert result.exit_code == 0, result.output


def test_the_budget_keeps_the_smallest_failure_so_far(tmp_path):
    scenario, events, run_dir = caught(tmp_path)
    found = minimize_run(scenario, events, run_dir, max_runs=2)
    assert found is not None and found.budget_spent and found.runs == 2
    assert load_scenario(found.path).expect.violations
    budget_s = 2.5 * scenario.scenario.duration_s
    bounded = minimize_run(scenario, events, run_dir, max_simulated_s=budget_s)
    assert bounded is not None and bounded.budget_spent
    record = json.loads((run_dir / "counterexample.json").read_text())
    assert record["minimize"]["simulated_s"] <= budget_s
    assert "within the run budget" in (run_dir / "counterexample.txt").read_text()


def test_nothing_is_written_when_no_candidate_fails(tmp_path):
    scenario, events, run_dir = caught(tmp_path)
    calls: list[str] = []

    def never_fails(candidate) -> Outcome:
        calls.append(candidate.scenario.name)
        return Outcome(frozenset(), {}, "sha256:0")

    assert minimize_run(scenario, events, run_dir, run=never_fails) is None
    assert calls and all(name == "tiny_bad_counterexample" for name in calls)
    assert not (run_dir / "counterexample.toml").exists()


def test_minimization_is_deterministic(tmp_path):
    scenario, events, run_dir = caught(tmp_path)
    first = minimize_run(scenario, events, run_dir)
    text = first.path.read_text()
    second = minimize_run(scenario, events, run_dir, run=run_candidate)
    assert second.path.read_text() == text
    assert second.outcome.digest == first.outcome.digest
