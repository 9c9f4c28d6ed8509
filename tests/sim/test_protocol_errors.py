"""No protocol error ends a run: an error Hudi's code would raise fails the job (Flink restarts
it) and is a history event, and every run ends with a verdict. Generated multi-job OCC scenarios,
where a lost conflict check fails a job over and its restart recommits the same instant, are the
path that once let a ``RollbackError`` escape the simulator."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from invariants.checks import check_all
from models.view.table import HudiTable
from scenarios.schema import scenario_from_dict
from sim.world import World

TWO_OCC_JOBS: dict[str, Any] = {
    "scenario": {"name": "occ_retry_failover_rollback_crash", "duration_s": 10, "seed": 18},
    "table": {"type": "MERGE_ON_READ", "partitions": 1, "buckets_per_partition": 1},
    "jobs": [
        {
            "name": "ingest_a",
            "writers": 1,
            "checkpoint_interval_s": 2,
            "records_per_s": 500,
            "key_space": 1000,
            "concurrency": "occ",
        },
        {
            "name": "ingest_b",
            "writers": 1,
            "checkpoint_interval_s": 3,
            "records_per_s": 500,
            "key_space": 1000,
            "concurrency": "occ",
        },
    ],
    "faults": {
        "schedule": [
            {"at_s": 2.5, "kind": "crash", "target": "ingest_b/coordinator"},
            {"at_s": 8, "kind": "crash", "target": "ingest_a/coordinator"},
        ]
    },
}
"""The reported case: after a conflict and a coordinator crash, the recommit once tried to roll
back an instant a retry had already rolled back. The first crash makes the jobs share bucket file
ids (ingest_b's restarted writers load ingest_a's committed ones), as the case's run did when
every bucket had one fixed id."""


def _run(data: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    outcome = World(scenario_from_dict(data, "<generated>")).run()
    events = outcome.history.events
    return events, check_all(events, HudiTable(outcome.storage))


def test_the_reported_case_fails_the_job_over_and_ends_with_a_verdict():
    events, verdicts = _run(TWO_OCC_JOBS)
    errors = [e for e in events if e.f == "error" and e.process.endswith("/coordinator")]
    assert errors and all("CommitConflictError" in e.value["error"] for e in errors)
    assert any(e.f == "failover" and "CommitConflictError" in e.value["cause"] for e in events)
    assert any(e.f == "failover" and e.process == "ingest_a" for e in events)  # the crash at 8 s
    assert events[-1].f == "end"
    assert not verdicts["liveness"].ok  # the conflict stands: the job restarts forever


GENERATED = {
    "seed": st.integers(min_value=0, max_value=10_000),
    "buckets": st.integers(min_value=1, max_value=3),
    "interval_a": st.integers(min_value=1, max_value=3),
    "interval_b": st.integers(min_value=1, max_value=3),
    "crash_s": st.floats(min_value=0, max_value=9.9),
}


def _generated_run_ends_with_a_verdict(
    seed: int, buckets: int, interval_a: int, interval_b: int, crash_s: float
) -> None:
    data: dict[str, Any] = {
        **TWO_OCC_JOBS,
        "scenario": {**TWO_OCC_JOBS["scenario"], "seed": seed},
        "table": {**TWO_OCC_JOBS["table"], "buckets_per_partition": buckets},
        "jobs": [
            {**TWO_OCC_JOBS["jobs"][0], "checkpoint_interval_s": interval_a},
            {**TWO_OCC_JOBS["jobs"][1], "checkpoint_interval_s": interval_b},
        ],
        "faults": {
            "schedule": [{"at_s": crash_s, "kind": "crash", "target": "ingest_a/coordinator"}]
        },
    }
    events, verdicts = _run(data)
    assert events[-1].f == "end"
    assert set(verdicts) >= {"liveness", "exactly_once"}


@settings(max_examples=12, deadline=None)
@example(seed=18, buckets=1, interval_a=2, interval_b=3, crash_s=8.0)
@given(**GENERATED)
def test_generated_occ_runs_end_with_a_verdict(seed, buckets, interval_a, interval_b, crash_s):
    _generated_run_ends_with_a_verdict(seed, buckets, interval_a, interval_b, crash_s)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(**GENERATED)
def test_hundreds_of_generated_occ_runs_end_with_a_verdict(
    seed, buckets, interval_a, interval_b, crash_s
):
    _generated_run_ends_with_a_verdict(seed, buckets, interval_a, interval_b, crash_s)
