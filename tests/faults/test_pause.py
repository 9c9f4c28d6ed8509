"""The ``pause`` kind: a paused coordinator stops for the entry's ``duration_ms`` and the job's
commits wait for it; the scenario format takes it with its one option."""

from __future__ import annotations

import pytest

from faults.base import HistoryContext
from faults.pause import KIND
from scenarios.schema import ScenarioError, parse_scenario
from sim.world import World
from testbed.explore_draw import fault_plan
from tests.sim.test_nemesis import SERVICES_JOB, entry, faults_of, run
from tests.sim.test_world import scenario_toml


def _commit_times_ms(outcome) -> list[int]:
    return [
        e.time
        for e in outcome.history.events
        if e.process == "ingest/coordinator" and e.f == "commit" and e.type == "ok"
    ]


def test_a_paused_coordinator_commits_nothing_until_the_pause_ends():
    before = run()
    outcome = run((entry(5.0, "pause", "ingest/coordinator", duration_ms=4000),))
    (pause,) = faults_of(outcome)
    assert (pause.f, pause.time, pause.value) == (
        "pause",
        5000,
        {"process": "ingest/coordinator", "duration_ms": 4000, "schedule": 0},
    )
    unpaused = [t for t in _commit_times_ms(before) if 5000 <= t < 9000]
    paused = [t for t in _commit_times_ms(outcome) if 5000 <= t < 9000]
    assert unpaused and not paused  # commits would have happened in the window; none did
    assert len(_commit_times_ms(outcome)) >= 1


def test_a_pause_needs_its_duration_and_a_process_that_drives_protocol_steps():
    def scenario(**options) -> None:
        schedule = [{"at_s": 1, "kind": "pause", **options}]
        parse_scenario(
            scenario_toml(duration_s=10, jobs=(SERVICES_JOB,), faults={"schedule": schedule})
        )

    with pytest.raises(ScenarioError, match="needs duration_ms"):
        scenario(target="ingest/coordinator")
    with pytest.raises(ScenarioError, match='unknown target "ingest/task-9" for kind "pause"'):
        scenario(target="ingest/task-9", duration_ms=5)
    with pytest.raises(ScenarioError, match='unknown target "ingest/source" for kind "pause"'):
        scenario(target="ingest/source", duration_ms=5)
    scenario(target="ingest/coordinator", duration_ms=5)
    scenario(target="ingest/task-0", duration_ms=5)


def _flush_times_ms(outcome, task: str) -> list[int]:
    return [
        e.time
        for e in outcome.history.events
        if e.process == task and e.f == "flush" and e.type == "ok"
    ]


def test_a_paused_write_task_sends_no_write_event_until_the_pause_ends():
    before = run()
    outcome = run((entry(5.0, "pause", "ingest/task-0", duration_ms=2500),))
    (pause,) = faults_of(outcome)
    assert pause.value == {"process": "ingest/task-0", "duration_ms": 2500, "schedule": 0}
    unpaused = [t for t in _flush_times_ms(before, "ingest/task-0") if 5000 <= t < 7500]
    paused = _flush_times_ms(outcome, "ingest/task-0")
    assert unpaused and not [t for t in paused if 5000 <= t < 7500]
    assert [t for t in paused if t < 5000] and [t for t in paused if t >= 7500]
    other = [t for t in _flush_times_ms(outcome, "ingest/task-1") if 5000 <= t < 7500]
    assert other  # the other task flushed at the barrier meanwhile


def test_a_pause_shows_in_the_scenario_file_written_back():
    text = scenario_toml(
        duration_s=10,
        jobs=(SERVICES_JOB,),
        faults={
            "schedule": [
                {"at_s": 1, "kind": "pause", "target": "ingest/coordinator", "duration_ms": 7}
            ]
        },
    )
    (entry_,) = World(parse_scenario(text)).scenario.faults.schedule
    assert entry_.option("duration_ms") == 7
    assert entry_.model_dump(mode="json")["duration_ms"] == 7


@pytest.mark.parametrize(
    ("rate", "targets"),
    [
        ("pause_per_hour", ("ingest/coordinator", "ingest/compactor")),
        ("writer_pause_per_hour", ("ingest/task-0", "ingest/task-1")),
    ],
)
def test_random_pauses_hit_their_processes_within_the_bound(rate, targets):
    outcome = run(**{rate: 900}, pause_max_ms=700)
    pauses = faults_of(outcome, "pause")
    assert len(pauses) >= 2
    for pause in pauses:
        assert pause.value["process"] in targets
        assert 1 <= pause.value["duration_ms"] <= 700 and "schedule" not in pause.value


def test_a_random_pause_reads_back_as_the_entry_that_replays_it():
    context = HistoryContext(jobs=("ingest",), last_checkpoint={})
    value = {"process": "ingest/coordinator", "duration_ms": 300}
    assert KIND.from_event(value, 4.5, context) == {
        "at_s": 4.5,
        "kind": "pause",
        "target": "ingest/coordinator",
        "duration_ms": 300,
    }


@pytest.mark.parametrize(
    ("rate", "targets"),
    [
        ("pause_per_hour", {"ingest/coordinator", "ingest/compactor"}),
        ("writer_pause_per_hour", {"ingest/task-0", "ingest/task-1"}),
    ],
)
def test_explore_draws_pauses_from_their_rate(rate, targets):
    scenario = parse_scenario(
        scenario_toml(duration_s=60, jobs=(SERVICES_JOB,), faults={rate: 120, "pause_max_ms": 900})
    )
    (plan,) = [p for p in fault_plan(scenario) if p.kind == "pause"]
    assert (plan.max_entries, plan.bound) == (4, 900)
    assert set(plan.targets) == targets
