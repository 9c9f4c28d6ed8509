"""The ``restore_crash`` kind: a write task fails at its next restore, before its bootstrap
event, and Flink fails it over once more; random ones are armed on a task and fire at its next
restore."""

from __future__ import annotations

import pytest

from faults.base import HistoryContext
from faults.restore_crash import KIND
from scenarios.schema import ScenarioError, parse_scenario
from testbed.explore_draw import fault_plan
from tests.sim.test_nemesis import SERVICES_JOB, entry, events, faults_of, run
from tests.sim.test_world import scenario_toml


def _starts_ms(outcome) -> list[int]:
    return [e.time for e in events(outcome, "ingest", "start")]


def test_a_restore_crash_waits_for_the_next_restore_and_fails_it_before_its_bootstrap():
    outcome = run(
        (entry(5.0, "restore_crash", "ingest/task-0"), entry(6.0, "crash", "ingest/task-1"))
    )
    (fault,) = faults_of(outcome, "restore_crash")
    assert fault.value == {"process": "ingest/task-0", "schedule": 0}
    starts = _starts_ms(outcome)
    assert fault.time in starts and fault.time > 6000  # the restart after the crash, not 5 s
    failovers = events(outcome, "ingest", "failover")
    assert [f.value["cause"] for f in failovers] == [
        "ingest/task-1 crashed",
        "ingest/task-0 crashed at restore",
    ]
    restarted = events(outcome, "ingest", "start")[-1]
    assert restarted.value["task_attempt"] == 2  # the tasks came back once more
    bootstraps = events(outcome, "ingest/coordinator", "bootstrap")
    failed_attempt = [b for b in bootstraps if fault.time <= b.time < restarted.time]
    assert all(b.value["task"] != 0 for b in failed_attempt)
    assert {b.value["task"] for b in bootstraps if b.time >= restarted.time} == {0, 1}


def test_a_restore_crash_at_the_start_fails_the_first_attempt():
    outcome = run((entry(0.0, "restore_crash", "ingest/task-1"),))
    (fault,) = faults_of(outcome, "restore_crash")
    assert fault.time == 0
    assert len(_starts_ms(outcome)) == 2


def test_random_restore_crashes_fire_only_at_restores():
    outcome = run(writer_crash_per_hour=900, restore_crash_per_hour=900)
    crashes = faults_of(outcome, "restore_crash")
    assert crashes
    starts = set(_starts_ms(outcome))
    for crash in crashes:
        assert crash.time in starts and "schedule" not in crash.value
        assert crash.value["process"] in ("ingest/task-0", "ingest/task-1")


def test_a_restore_crash_targets_a_write_task():
    def scenario(target: str) -> None:
        schedule = [{"at_s": 1, "kind": "restore_crash", "target": target}]
        parse_scenario(
            scenario_toml(duration_s=10, jobs=(SERVICES_JOB,), faults={"schedule": schedule})
        )

    with pytest.raises(ScenarioError, match='unknown target "ingest/coordinator"'):
        scenario("ingest/coordinator")
    scenario("ingest/task-1")


def test_a_random_restore_crash_reads_back_as_its_entry_and_explore_draws_it():
    context = HistoryContext(jobs=("ingest",), last_checkpoint={})
    assert KIND.from_event({"process": "ingest/task-1"}, 7.0, context) == {
        "at_s": 7.0,
        "kind": "restore_crash",
        "target": "ingest/task-1",
    }
    scenario = parse_scenario(
        scenario_toml(duration_s=60, jobs=(SERVICES_JOB,), faults={"restore_crash_per_hour": 120})
    )
    (plan,) = [p for p in fault_plan(scenario) if p.kind == "restore_crash"]
    assert plan.max_entries == 4 and set(plan.targets) == {"ingest/task-0", "ingest/task-1"}
