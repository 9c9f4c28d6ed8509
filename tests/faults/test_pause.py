"""The ``pause`` kind: a paused coordinator stops for the entry's ``duration_ms`` and the job's
commits wait for it; the scenario format takes it with its one option."""

from __future__ import annotations

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from sim.world import World
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
    with pytest.raises(ScenarioError, match='unknown target "ingest/task-0" for kind "pause"'):
        scenario(target="ingest/task-0", duration_ms=5)
    scenario(target="ingest/coordinator", duration_ms=5)


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
