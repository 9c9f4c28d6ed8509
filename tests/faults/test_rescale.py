"""The ``rescale`` kind: the job restarts from its last checkpoint with the entry's ``writers``
(a new coordinator, the tasks at attempt 0, their state split over the new parallelism)."""

from __future__ import annotations

import pytest

from faults.base import HistoryContext
from faults.rescale import KIND
from scenarios.schema import ScenarioError, parse_scenario
from testbed.explore_draw import fault_plan
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


def test_random_rescales_pick_a_job_and_writers_within_the_bound():
    outcome = run(rescale_per_hour=900, rescale_max_writers=3)
    rescales = faults_of(outcome, "rescale")
    assert len(rescales) >= 2
    for rescale in rescales:
        assert rescale.value["job"] == "ingest" and "schedule" not in rescale.value
        assert 1 <= rescale.value["writers"] <= 3
    starts = [e for e in outcome.history.events if e.process == "ingest" and e.f == "start"]
    done = [r for r in rescales if not r.value.get("job_restarting")]
    assert [s.value["writers"] for s in starts[1:]][: len(done)] == [
        r.value["writers"] for r in done
    ]


def test_a_random_rescale_reads_back_as_the_entry_that_replays_it():
    context = HistoryContext(jobs=("ingest",), last_checkpoint={})
    value = {"job": "ingest", "writers": 5}
    assert KIND.from_event(value, 2.5, context) == {
        "at_s": 2.5,
        "kind": "rescale",
        "target": "ingest",
        "writers": 5,
    }
    assert KIND.from_event({**value, "job_restarting": True}, 2.5, context) is None


def test_explore_draws_rescales_from_the_rate():
    scenario = parse_scenario(
        scenario_toml(
            duration_s=60,
            jobs=(SERVICES_JOB,),
            faults={"rescale_per_hour": 240, "rescale_max_writers": 6},
        )
    )
    (plan,) = [p for p in fault_plan(scenario) if p.kind == "rescale"]
    assert (plan.targets, plan.max_entries, plan.bound) == (("ingest",), 8, 6)
    assert not [p for p in fault_plan(parse_scenario(scenario_toml())) if p.kind == "rescale"]
