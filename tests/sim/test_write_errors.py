"""Record write errors in whole runs (the ``write_error`` fault, ``[protocol]
record_write_failure``, ``[[jobs]] write_ignore_failed``; docs/protocol.md section 6.8): the
write handle throws and the batch is replayed (latest), or marks the records and the coordinator
rolls the instant back and fails the job after its checkpoint (Hudi 1.1, apache/hudi#18051), or
commits without them (``write.ignore.failed``)."""

from __future__ import annotations

from functools import cache
from typing import Any

from faults import fault_kind
from faults.base import HistoryContext
from invariants.checks import check_all
from models.view.table import HudiTable
from scenarios.schema import parse_scenario
from sim.world import RunOutcome, World
from tests.sim.test_nemesis import SERVICES_JOB, entry, events, faults_of
from tests.sim.test_world import scenario_toml

DURATION_S = 16
ERROR = entry(5.0, "write_error", "ingest/task-1")


@cache
def run(
    schedule: tuple[tuple[tuple[str, Any], ...], ...] = (ERROR,),
    *,
    record_write_failure: str = "throw",
    ignore_failed: bool = False,
    per_hour: float = 0.0,
) -> RunOutcome:
    job = {**SERVICES_JOB, "write_ignore_failed": ignore_failed}
    text = scenario_toml(
        seed=5,
        duration_s=DURATION_S,
        jobs=(job,),
        faults={"write_error_per_hour": per_hour, "schedule": [dict(e) for e in schedule]},
        protocol={"record_write_failure": record_write_failure},
    )
    return World(parse_scenario(text)).run()


def violated(outcome: RunOutcome) -> set[str]:
    verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    return {name for name, verdict in verdicts.items() if not verdict.ok}


def flush_errors(outcome: RunOutcome) -> list[int]:
    flushes = events(outcome, "ingest/task-1", "flush", "ok")
    return [e.value["error_records"] for e in flushes if "error_records" in e.value]


def test_a_throwing_handle_fails_the_task_and_the_batch_is_replayed():
    outcome = run()
    (fault,) = faults_of(outcome, "write_error")
    assert fault.value == {"process": "ingest/task-1", "records": 1, "schedule": 0}
    assert fault.time >= 5000
    (error,) = events(outcome, "ingest/task-1", "error", "fail")
    assert error.value["error"].startswith("HoodieException: Error writing record k")
    assert events(outcome, "ingest", "failover")
    assert flush_errors(outcome) == []
    assert violated(outcome) == set()


def test_a_marked_record_rolls_the_instant_back_after_its_checkpoint_and_loses_data():
    outcome = run(record_write_failure="mark")
    assert flush_errors(outcome) == [1]
    (rolled,) = events(outcome, "ingest/coordinator", "rollback", "ok")
    errors = events(outcome, "ingest/coordinator", "error", "fail")
    assert errors and all("CommitRolledBackError" in e.value["error"] for e in errors)
    assert rolled.value["instant"] in errors[0].value["error"]
    assert len(errors) > 1  # the kept buffer fails every restart again
    assert {"no_data_loss", "liveness"} <= violated(outcome)


def test_write_ignore_failed_commits_without_the_record():
    outcome = run(record_write_failure="mark", ignore_failed=True)
    assert flush_errors(outcome) == [1]
    assert events(outcome, "ingest", "failover") == []
    assert events(outcome, "ingest/coordinator", "rollback") == []
    # the lost version was overwritten by a later one of its key: no_data_loss, which judges
    # the latest version per key, may hold, but the covered offset is in no completed instant
    assert "exactly_once" in violated(outcome)


def test_write_ignore_failed_also_keeps_a_throwing_handle_from_throwing():
    outcome = run(ignore_failed=True)
    assert flush_errors(outcome) == [1]
    assert events(outcome, "ingest", "failover") == []


def test_random_write_errors_replay_as_schedule_entries():
    outcome = run((), per_hour=900.0)
    random = faults_of(outcome, "write_error")
    assert random and all("schedule" not in e.value for e in random)
    context = HistoryContext(jobs=("ingest",), last_checkpoint={})
    kind = fault_kind("write_error")
    replay = tuple(
        entry(e.time / 1000, "write_error", e.value["process"], records=e.value["records"])
        for e in random
    )
    assert [kind.from_event(e.value, e.time / 1000, context) for e in random] == [
        dict(x) for x in replay
    ]
    again = run(replay)
    assert [(e.time, e.value["process"]) for e in faults_of(again, "write_error")] == [
        (e.time, e.value["process"]) for e in random
    ]
