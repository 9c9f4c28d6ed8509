"""The ``rescale`` kind: the job restarts from its last checkpoint with the entry's ``writers``
(a new coordinator, the tasks at attempt 0, their state split over the new parallelism)."""

from __future__ import annotations

import pytest

from scenarios.schema import ScenarioError, parse_scenario
from tests.sim.test_nemesis import SERVICES_JOB, entry, faults_of, run
from tests.sim.test_world import scenario_toml


def test_a_rescale_restarts_the_job_with_the_new_number_of_writers():
    outcome = run((entry(5.0, "rescale", "ingest", writers=3),))
    (rescale,) = faults_of(outcome)
    assert (rescale.f, rescale.time, rescale.value) == (
        "rescale",
        5000,
        {"job": "ingest", "writers": 3, "schedule": 0},
    )
    (failover,) = [e for e in outcome.history.events if e.f == "failover"]
    assert failover.value["path"] == "rescale"
    start = [e for e in outcome.history.events if e.process == "ingest" and e.f == "start"][-1]
    assert (start.value["writers"], start.value["task_attempt"]) == (3, 0)
    assert {e.process for e in outcome.history.events if e.time > start.time} >= {
        f"ingest/task-{i}" for i in range(3)
    }


def test_a_rescale_needs_its_writers_and_names_a_job():
    def scenario(**options) -> None:
        schedule = [{"at_s": 1, "kind": "rescale", **options}]
        parse_scenario(
            scenario_toml(duration_s=10, jobs=(SERVICES_JOB,), faults={"schedule": schedule})
        )

    with pytest.raises(ScenarioError, match="needs writers"):
        scenario(target="ingest")
    with pytest.raises(ScenarioError, match='unknown target "ingest/task-0" for kind "rescale"'):
        scenario(target="ingest/task-0", writers=2)
    with pytest.raises(ScenarioError, match="writers"):
        scenario(target="ingest", writers=0)
    scenario(target="ingest", writers=4)
