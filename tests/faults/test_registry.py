"""The fault-kind registry: one name per kind, older names read as it, and every kind's module
answers what the scenario format, the nemesis, explore, minimize and the plots ask of it."""

from __future__ import annotations

from typing import get_args

import pytest

from faults import FAULT_KINDS, KINDS, RANDOM_RATES, canonical_name, fault_kind, kind_of_event
from faults.base import HistoryContext, Hook, NotificationFate, NotificationKind
from scenarios.schema import FaultSpec, parse_scenario
from tests.sim.test_nemesis import SERVICES_JOB
from tests.sim.test_world import scenario_toml


def test_names_events_and_older_names_are_unique():
    names = [kind.name for kind in KINDS]
    aliases = [alias for kind in KINDS for alias in kind.aliases]
    assert len(set(names)) == len(names) and not set(names) & set(aliases)
    assert len(set(aliases)) == len(aliases)
    assert len({kind.event for kind in KINDS}) == len(KINDS)
    assert tuple(names) == FAULT_KINDS


@pytest.mark.parametrize(
    ("older", "name"),
    [
        ("lost_ack", "lose_ack"),
        ("delayed_ack", "delay_ack"),
        ("storage_write_failure", "storage_failure"),
    ],
)
def test_older_names_are_read_as_the_kinds_one_name(older, name):
    assert canonical_name(older) == name and fault_kind(older).name == name
    options = {"delay_ms": 5} if name == "delay_ack" else {}
    schedule = [{"at_s": 1, "kind": older, "target": "ingest", **options}]
    scenario = parse_scenario(
        scenario_toml(duration_s=10, jobs=(SERVICES_JOB,), faults={"schedule": schedule})
    )
    assert scenario.faults.schedule[0].kind == name


def test_every_random_rate_belongs_to_one_kind_and_is_a_faults_key():
    assert len(set(RANDOM_RATES)) == len(RANDOM_RATES)
    assert set(RANDOM_RATES) <= set(FaultSpec.model_fields)


def test_every_kind_has_targets_in_a_scenario_and_a_known_hook():
    scenario = parse_scenario(scenario_toml(duration_s=10, jobs=(SERVICES_JOB,)))
    for kind in KINDS:
        targets = kind.targets(scenario, scenario.jobs[0])
        assert targets.before or targets.writers, kind.name
        assert kind.hook in get_args(Hook)
        assert kind_of_event(kind.event) is kind


def test_notification_kinds_shape_the_fate_in_order():
    lose, delay, duplicate = (fault_kind(n) for n in ("lose_ack", "delay_ack", "duplicate_ack"))
    assert all(isinstance(k, NotificationKind) for k in (lose, delay, duplicate))
    fate, more = delay.shape(NotificationFate(), {"delay_ms": 40})
    assert (fate, more) == (NotificationFate(1, 40), {"delay_ms": 40})
    fate, _ = duplicate.shape(fate, {})
    assert fate == NotificationFate(2, 40)
    assert lose.shape(fate, {})[0].copies == 0


def test_random_faults_are_read_back_as_entries_and_uncertain_ones_are_not():
    context = HistoryContext(("ingest",), {"ingest": 4})
    drop = {"channel": "ingest/notify", "message": "CheckpointComplete"}
    assert fault_kind("lose_ack").from_event(drop, 3.0, context) == {
        "at_s": 0.0,
        "kind": "lose_ack",
        "target": "ingest",
        "checkpoint": 4,
    }
    other = {"channel": "ingest/task-0->coordinator", "message": "WriteMetadataEvent"}
    assert fault_kind("lose_ack").from_event(other, 3.0, context) is None
    crash = fault_kind("crash")
    assert (
        crash.from_event({"process": "ingest/task-1", "job_restarting": True}, 2, context) is None
    )
    two_jobs = HistoryContext(("a", "b"), {})
    assert fault_kind("storage_failure").from_event({"path": "x"}, 1.0, two_jobs) is None
