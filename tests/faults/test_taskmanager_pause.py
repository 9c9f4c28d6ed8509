"""The ``taskmanager_pause`` kind: every write task of a job stops for ``duration_ms`` from the
next instant its coordinator starts, so the instant's buffer stays empty while the coordinator
runs on; random ones are armed on a job and fire at its next instant."""

from __future__ import annotations

import pytest

from faults.base import HistoryContext
from faults.taskmanager_pause import KIND
from scenarios.schema import ScenarioError, parse_scenario
from testbed.explore_draw import fault_plan
from tests.sim.test_nemesis import SERVICES_JOB, entry, events, faults_of, run
from tests.sim.test_world import scenario_toml

TASKS = ("ingest/task-0", "ingest/task-1")


def _instant_starts_ms(outcome) -> list[int]:
    return [e.time for e in events(outcome, "ingest/coordinator", "start_instant")]


def _flushes_ms(outcome, task: str) -> list[int]:
    return [e.time for e in events(outcome, task, "flush", "ok")]


def test_the_pause_starts_with_the_next_instant_and_holds_every_write_task():
    outcome = run((entry(5.0, "taskmanager_pause", "ingest", duration_ms=3000),))
    (fault,) = faults_of(outcome, "taskmanager_pause")
    assert fault.value == {"job": "ingest", "duration_ms": 3000, "schedule": 0}
    first = min(t for t in _instant_starts_ms(outcome) if t >= 5000)
    assert fault.time == first
    for task in TASKS:
        flushes = _flushes_ms(outcome, task)
        assert not [t for t in flushes if first < t < first + 3000]
        assert [t for t in flushes if t >= first + 3000]
    # the instant just granted got no write event while the pause lasted
    instant = next(
        e.value["instant"]
        for e in events(outcome, "ingest/coordinator", "start_instant")
        if e.time == first
    )
    arrived = [
        e.time
        for e in events(outcome, "ingest/coordinator", "event")
        if e.value["instant"] == instant
    ]
    assert arrived and min(arrived) >= first + 3000


def test_random_taskmanager_pauses_fire_at_instants_within_the_bound():
    outcome = run(taskmanager_pause_per_hour=900, pause_max_ms=700)
    pauses = faults_of(outcome, "taskmanager_pause")
    assert len(pauses) >= 2
    starts = set(_instant_starts_ms(outcome))
    for pause in pauses:
        assert pause.time in starts and "schedule" not in pause.value
        assert pause.value["job"] == "ingest" and 1 <= pause.value["duration_ms"] <= 700


def test_a_taskmanager_pause_names_a_job_and_its_length():
    def scenario(**options) -> None:
        schedule = [{"at_s": 1, "kind": "taskmanager_pause", **options}]
        parse_scenario(
            scenario_toml(duration_s=10, jobs=(SERVICES_JOB,), faults={"schedule": schedule})
        )

    with pytest.raises(ScenarioError, match="needs duration_ms"):
        scenario(target="ingest")
    with pytest.raises(ScenarioError, match='unknown target "ingest/task-0"'):
        scenario(target="ingest/task-0", duration_ms=5)
    scenario(target="ingest", duration_ms=5)


def test_a_random_taskmanager_pause_reads_back_as_its_entry_and_explore_draws_it():
    context = HistoryContext(jobs=("ingest",), last_checkpoint={})
    value = {"job": "ingest", "duration_ms": 400}
    assert KIND.from_event(value, 3.5, context) == {
        "at_s": 3.5,
        "kind": "taskmanager_pause",
        "target": "ingest",
        "duration_ms": 400,
    }
    scenario = parse_scenario(
        scenario_toml(
            duration_s=60,
            jobs=(SERVICES_JOB,),
            faults={"taskmanager_pause_per_hour": 120, "pause_max_ms": 900},
        )
    )
    (plan,) = [p for p in fault_plan(scenario) if p.kind == "taskmanager_pause"]
    assert (plan.max_entries, plan.bound, plan.targets) == (4, 900, ("ingest",))
