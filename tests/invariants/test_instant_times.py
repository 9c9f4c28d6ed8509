"""Tests for invariants/instant_times.py: reading the generated times, the registry of the four
instant-ordering checkers, histories without recorded times, and the four checkers together on
real runs.

Each checker is shown three ways (here and in tests/invariants/test_instant_unique.py,
test_instant_monotonic.py, test_completion_after_request.py, test_commit_order.py): a
hand-written known-bad history (the violation names the right events and says why),
real-protocol runs with faults, skew within the TrueTime bound and two NBCC jobs (no violation),
and known-bad variant runs (``local_clock`` with skew, TrueTime with a bound below the real skew)
that really break it.
"""

from __future__ import annotations

from typing import Any

import pytest

from invariants.checks import CHECKERS
from invariants.commit_order import check_commit_order
from invariants.completion_after_request import check_completion_after_request
from invariants.instant_monotonic import check_instant_monotonic
from invariants.instant_times import generated_times
from invariants.instant_unique import check_instant_unique
from models.history import Event
from models.storage import InMemoryStorage
from models.timeline.instant import Instant, State
from models.timeline.instant_time import format_epoch_ms
from models.view.table import HudiTable
from models.write.table_init import create_table
from scenarios import catalog_dir, load_scenario
from sim.world import RunOutcome, World
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml

EPOCH_MS = 1_767_225_600_000


def t(ms: int) -> str:
    """The instant time ``ms`` after 2026-01-01T00:00:00Z."""
    return format_epoch_ms(EPOCH_MS + ms)


def history(*rows: tuple[str, str, str, Any]) -> list[Event]:
    """Events from ``(process, type, f, value)`` rows; index = position, time = 10 ms apart."""
    return [Event(i, i * 10, p, kind, f, v) for i, (p, kind, f, v) in enumerate(rows)]


def gen(process: str, ms: int, use: str = "requested", **extra: Any) -> tuple[str, str, str, Any]:
    """An ``instant_time`` row: ``process`` generated ``t(ms)``."""
    return (process, "info", "instant_time", {"time": t(ms), "use": use, **extra})


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


def empty_table() -> HudiTable:
    return create_table(InMemoryStorage(), name="t", record_key_field="id", ordering_field="ts")


def add_completed(table: HudiTable, requested: str, completion: str, action: str) -> None:
    """A completed instant file written straight to storage, past the timeline's own checks."""
    instant = Instant(requested, State.COMPLETED, action, completion)
    table.storage.create_if_absent(table.active_timeline.path_of(instant), b"")


# --- history parsing and the registry ----------------------------------------------------------


def test_generated_times_reads_instant_time_events_and_skips_malformed_ones():
    events = history(
        gen("a/coordinator", 100, locked=True),
        gen("a/coordinator", 200, "completion", instant=t(100), action="deltacommit"),
        ("a/coordinator", "info", "instant_time", {"use": "requested"}),  # no time
        ("a/coordinator", "info", "instant_time", None),
        ("a/coordinator", "ok", "commit", {"instant": t(100), "completion": t(200)}),
    )
    times = generated_times(events)
    assert [(g.index, g.time, g.use, g.locked, g.instant) for g in times] == [
        (0, t(100), "requested", True, None),
        (1, t(200), "completion", False, t(100)),
    ]


def test_the_four_checkers_are_registered_under_their_public_names():
    assert CHECKERS["instant_unique"] is check_instant_unique
    assert CHECKERS["instant_monotonic"] is check_instant_monotonic
    assert CHECKERS["completion_after_request"] is check_completion_after_request
    assert CHECKERS["commit_order"] is check_commit_order


@pytest.mark.parametrize(
    "check",
    [
        check_instant_unique,
        check_instant_monotonic,
        check_completion_after_request,
        check_commit_order,
    ],
)
def test_a_history_creating_instants_without_recorded_times_is_not_passed(check):
    events = history(
        ("a/coordinator", "ok", "start_instant", {"instant": t(100), "checkpoint": -1}),
        ("a/coordinator", "ok", "commit", {"instant": t(100), "completion": t(200)}),
    )
    (violation,) = check(events, None).violations
    assert violation.events == (0,)
    assert "records no instant_time event" in violation.why
    assert check([], None).ok  # nothing created, nothing to check


# --- real runs -------------------------------------------------------------------------------------

CHECKS = {
    "instant_unique": check_instant_unique,
    "instant_monotonic": check_instant_monotonic,
    "completion_after_request": check_completion_after_request,
    "commit_order": check_commit_order,
}

TWO_JOBS = ({**JOB, "compaction_every_commits": 2}, {**JOB, "checkpoint_interval_s": 3})

REAL_RUNS = {
    # the same text as one of test_world's fault runs, so the run is shared within a session
    "one-job-all-faults": scenario_toml(seed=7, duration_s=40, faults=ALL_FAULTS),
    # relative skew up to 180 ms with drift, below TrueTime's 200 ms; crashes and lost ACKs
    "two-nbcc-jobs-skew-within-bound": scenario_toml(
        seed=47,  # clocks 174 ms apart; the compactor's 61 ms behind the scheduling coordinator
        duration_s=25,
        jobs=TWO_JOBS,
        time={"clock_skew_ms": 90, "clock_drift_ppm": 50},
        faults={**ALL_FAULTS, "writer_crash_per_hour": 400},
    ),
    # one central oracle: unique and increasing with 500 ms skew and no lock
    "two-jobs-time-service": scenario_toml(
        seed=2,
        duration_s=20,
        jobs=TWO_JOBS,
        time={"generator": "time_service", "clock_skew_ms": 500},
        faults={"ack_loss": 0.3, "writer_crash_per_hour": 120},
    ),
}


def violated(outcome: RunOutcome) -> dict[str, list[str]]:
    events = outcome.history.events
    table = HudiTable(outcome.storage)
    verdicts = {name: check(events, table) for name, check in CHECKS.items()}
    return {name: whys(v) for name, v in verdicts.items() if not v.ok}


@pytest.mark.parametrize("case", sorted(REAL_RUNS))
def test_the_real_protocol_never_violates_the_ordering_invariants(case):
    outcome = cached_run(REAL_RUNS[case])
    events = outcome.history.events
    assert len(generated_times(events)) > 20
    assert any(e.f == "commit" and e.type == "ok" for e in events)
    assert violated(outcome) == {}


def test_the_real_runs_above_really_had_faults_compactions_and_two_jobs():
    events = cached_run(REAL_RUNS["two-nbcc-jobs-skew-within-bound"]).history.events
    assert {e.f for e in events if e.process == "nemesis"} >= {"drop", "crash"}
    assert any(e.f == "compaction" and e.type == "ok" for e in events)
    assert {e.process for e in events if e.f == "commit"} == {
        "job0/coordinator",
        "job1/coordinator",
    }
    offsets = [e.value["offset_ms"] for e in events if e.f == "clock"]
    assert max(offsets) - min(offsets) > 150  # the clocks really are far apart


LOCAL_CLOCK = scenario_toml(
    seed=3,
    duration_s=30,
    jobs=({**JOB, "name": "ingest_a"}, {**JOB, "name": "ingest_b"}),
    time={"generator": "local_clock", "clock_skew_ms": 500},
)


def test_local_clock_with_skew_collides_goes_backwards_and_creates_files_out_of_order():
    found = violated(cached_run(LOCAL_CLOCK))
    assert {"instant_unique", "instant_monotonic", "commit_order"} <= set(found)
    assert set(found) <= {
        "instant_unique",
        "instant_monotonic",
        "commit_order",
        "completion_after_request",
    }
    # a coordinator's completion time and the compaction it schedules right after share a
    # millisecond: no lock, no wait, and completion times do not take part in tie breaking
    assert any(
        "(the completion time of deltacommit" in why and "(a requested time)" in why
        for why in found["instant_unique"]
    )
    # across the jobs only the clocks order the times
    assert any(
        "ingest_a/coordinator" in why and "ingest_b/coordinator" in why and "concurrent" in why
        for why in found["instant_monotonic"]
    )
    assert all("completion-time order" in why for why in found["commit_order"])


def bound_too_small(seed: int) -> str:
    return scenario_toml(
        seed=seed,
        duration_s=20,
        jobs=TWO_JOBS,
        time={"max_expected_skew_ms": 20, "clock_skew_ms": 500},
    )


def test_a_truetime_bound_below_the_real_skew_lets_times_go_backwards_under_the_lock():
    found = violated(cached_run(bound_too_small(1)))
    assert "instant_monotonic" in found
    assert any(
        "happens-before" in why and "table lock" in why for why in found["instant_monotonic"]
    )
    assert "commit_order" in found  # the lock orders completed files, the clocks disagree


def test_a_compactor_clock_behind_the_scheduler_completes_before_the_requested_time():
    """Seed 5: the compactor's clock is further behind the coordinator's than the bound plus
    the time the compaction's base files take to write."""
    found = violated(cached_run(bound_too_small(5)))
    assert {"instant_monotonic", "completion_after_request"} <= set(found)
    why = found["completion_after_request"][0]
    assert " of compaction " in why
    assert "(generated by job0/compactor" in why
    assert "(requested by job0/coordinator" in why
    assert "happens-before" in why
    assert "the timeline refused the completed file (TimelineError" in why


# --- the catalog's time variants (slow: two minutes of simulated time each) -----------------------

CATALOG_SEEDS = {
    "local_clock_skew": (5, 1, 2, 3),
    "truetime_bound_too_small": (3, 15, 36, 37, 47),
}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "seed"), [(name, seed) for name, seeds in CATALOG_SEEDS.items() for seed in seeds]
)
def test_catalog_time_variants_break_what_they_expect_on_their_seed_and_others(name, seed):
    """The ordering part of ``[expect] violations`` holds on the file's own seed (first) and on a
    few others, so the scenario shows its point rather than one lucky draw."""
    scenario = load_scenario(catalog_dir() / f"{name}.toml")
    assert scenario.scenario.seed == CATALOG_SEEDS[name][0]
    scenario = scenario.model_copy(
        update={"scenario": scenario.scenario.model_copy(update={"seed": seed})}
    )
    expected = {v for v in scenario.expect.violations if v in CHECKS}
    assert set(violated(World(scenario).run())) == expected
