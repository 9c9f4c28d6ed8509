"""Counterexample minimization of a caught known-bad run (testbed/minimize.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from models.history import Event, read_history
from scenarios import catalog_dir, load_scenario, parse_scenario
from scenarios.schema import scenario_from_dict
from testbed.cli import main
from testbed.explore import Outcome, run_candidate
from testbed.history_faults import faults_from_history
from testbed.minimize import _cut_s, _evidence_s, _ladder, minimize_run
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
        event(
            11,
            7100,
            "nemesis",
            "info",
            "duplicate",  # random, with the checkpoint the channel recorded (sim/network.py)
            {"channel": "ingest/notify", "message": "CheckpointComplete", "checkpoint": 7},
        ),
        # task 3 of a two-writer job exists only after a rescale up: no entry can name it
        event(12, 7200, "nemesis", "info", "crash", {"process": "ingest/task-3"}),
        event(
            13, 7300, "nemesis", "info", "write_error", {"process": "ingest/task-2", "records": 1}
        ),
        event(
            14, 7400, "nemesis", "info", "write_error", {"process": "ingest/task-1", "records": 1}
        ),
    ]
    assert faults_from_history(events, scenario) == [
        {"at_s": 0.0, "kind": "lose_ack", "target": "ingest", "checkpoint": 2},
        {"at_s": 0.0, "kind": "duplicate_ack", "target": "ingest", "checkpoint": 2},
        {"at_s": 5.123, "kind": "crash", "target": "ingest/task-1"},
        {"at_s": 0.0, "kind": "fail_checkpoint", "target": "ingest", "checkpoint": 3},
        {"at_s": 6.5, "kind": "clock_jump", "target": "ingest/coordinator", "delta_ms": -300},
        {"at_s": 7.0, "kind": "storage_failure", "target": "ingest"},
        {"at_s": 0.0, "kind": "duplicate_ack", "target": "ingest", "checkpoint": 7},
        {"at_s": 7.4, "kind": "write_error", "target": "ingest/task-1", "records": 1},
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
    # the second run deleted the one entry and passed: 1-minimal, though perhaps not shortest
    assert found.minimal
    assert load_scenario(found.path).expect.violations
    # the first candidate is a run of two checkpoints (4 s): room for it and not for a second
    budget_s = 6.0
    bounded = minimize_run(scenario, events, run_dir, max_simulated_s=budget_s)
    assert bounded is not None and bounded.budget_spent and not bounded.minimal
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


def test_the_hand_placed_schedule_alone_is_tried_first(tmp_path):
    """The first candidate drops every random fault at once: the file's own schedule in a run of
    two checkpoints (the caught run's evidence is at its end)."""
    scenario, events, run_dir = caught(tmp_path)
    seen = []

    def recording(candidate):
        seen.append(candidate)
        return run_candidate(candidate)

    found = minimize_run(scenario, events, run_dir, run=recording)
    first = seen[0]
    assert first.faults.ack_loss == 0 and first.faults.writer_crash_per_hour == 0
    assert first.faults.schedule == scenario.faults.schedule
    assert first.scenario.duration_s == 4
    assert found is not None and found.minimal and found.runs <= 6
    assert (run_dir / "counterexample.txt").read_text().startswith("minimal counterexample")
    record = json.loads((run_dir / "counterexample.json").read_text())
    assert record["minimize"]["minimal"] is True


def test_every_entry_of_a_minimal_counterexample_is_necessary(tmp_path):
    scenario, events, run_dir = caught(tmp_path)
    found = minimize_run(scenario, events, run_dir)
    assert found is not None and found.minimal
    counterexample = load_scenario(found.path)
    schedule = list(counterexample.faults.schedule)
    for index in range(len(schedule)):
        data = counterexample.model_dump(mode="json")
        data["faults"]["schedule"] = [
            e.model_dump(mode="json") for i, e in enumerate(schedule) if i != index
        ]
        outcome = run_candidate(scenario_from_dict(data, "without one entry"))
        assert not outcome.violated & {"exactly_once", "no_data_loss"}, index


def ev(index: int, time_ms: int) -> Event:
    return event(index, time_ms, "ingest/coordinator", "ok", "commit", {})


def test_the_evidence_is_the_earliest_complete_violation():
    events = [ev(0, 1000), ev(1, 3000), ev(2, 9000), ev(3, 60_000)]
    verdicts = {
        "no_data_loss": {"violations": [{"events": [3]}, {"events": [0, 1]}]},
        "slicing": {"violations": [{"events": [2]}]},
        "exactly_once": {"violations": [{"events": [0]}]},  # not expected: not evidence
    }
    assert _evidence_s(events, verdicts, {"no_data_loss", "slicing"}) == 3.0
    assert _evidence_s(events, None, {"no_data_loss"}) is None
    assert _evidence_s(events, {"no_data_loss": {"violations": []}}, {"no_data_loss"}) is None


def test_lengths_start_past_the_evidence_and_double_up_to_the_full_run():
    assert _cut_s(3.0, 4, 60.0) == 4  # at least two checkpoints
    assert _cut_s(16.3, 10, 60.0) == 17
    assert _cut_s(61.5, 10, 60.0) == 10  # evidence at the end: from the shortest run
    assert _cut_s(None, 10, 60.0) == 10
    assert _cut_s(None, 10, 8.0) is None
    assert _ladder(4, 60.0) == [4.0, 8.0, 16.0, 32.0, 60.0]
    assert _ladder(17, 60.0) == [17.0, 34.0, 60.0]
    assert _ladder(None, 8.0) == [8.0]


@pytest.mark.parametrize(
    "name",
    [
        "partial_buffer_snapshot",
        "release_1_1_partial_buffers",
        pytest.param("minibatch_insert", marks=pytest.mark.slow),
        pytest.param("minibatch_upsert", marks=pytest.mark.slow),
    ],
)
def test_a_catalog_variant_with_a_hand_placed_schedule_ends_minimal(name, tmp_path):
    """Every known-bad variant appears with its minimal counterexample. These
    catalog scenarios reproduce their bug with hand-placed faults, each necessary (two for the
    mini-batch variants; three for apache/hudi#19215: the TaskManager stall, the lost
    notification, the declined checkpoint), so the default budget ends with them, 1-minimal, in
    a short run."""
    source = catalog_dir() / f"{name}.toml"
    data = load_scenario(source).model_dump(mode="json")
    data["table"]["storage"] = "memory"
    scenario = scenario_from_dict(data, name)
    run_dir = tmp_path / "run"
    outcome = run_scenario(scenario, source, run_dir)
    assert outcome.ok
    found = minimize_run(
        scenario,
        read_history(run_dir / "history.jsonl"),
        run_dir,
        verdicts=outcome.result["invariants"],
    )
    assert found is not None and found.minimal and not found.budget_spent
    assert len(found.candidate.schedule) == len(scenario.faults.schedule) in (2, 3)
    assert found.candidate.duration_s <= 20
    assert found.runs <= 12
    assert set(found.outcome.violated) <= set(scenario.expect.violations)
