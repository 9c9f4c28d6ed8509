"""Tests for sim/time_recording.py: every time a generator hands out lands in the history, at the
moment it is taken (completion times under the lock, right after the completed file), and
recording changes nothing else."""

from __future__ import annotations

from itertools import pairwise

import pytest

from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import FileAlreadyExistsError
from models.timeline.instant import Instant, State
from models.timeline.instant_time import parse_epoch_ms
from models.timeline.truetime import (
    LocalClockGenerator,
    TimeService,
    TimeServiceGenerator,
    TrueTimeGenerator,
)
from sim.history import HistoryRecorder
from sim.time_recording import INSTANT_TIME, RecordingTimeGenerator, record_times
from sim.world import World
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, make_scenario, scenario_toml

START_MS = 1_767_225_600_000


def truetime(skew_ms: int = 0) -> tuple[FakeClock, LocalLock, TrueTimeGenerator]:
    clock = FakeClock(FakeWorld(START_MS), skew_ms)
    lock = LocalLock("table")
    return clock, lock, TrueTimeGenerator(clock, lock, 20)


def time_events(history: HistoryRecorder) -> list:
    return [e for e in history.events if e.f == INSTANT_TIME]


def test_generate_time_records_the_requested_time_after_the_lock_is_released():
    clock, lock, inner = truetime()
    held_when_recorded: list[bool] = []
    history = HistoryRecorder(lambda: held_when_recorded.append(lock.held) or 0)
    generator = record_times(inner, "job/coordinator", history)
    time = run(generator.generate_time(), clock)
    assert time == "20260101000000000"
    (event,) = time_events(history)
    assert (event.process, event.type) == ("job/coordinator", "info")
    assert event.value == {"time": time, "use": "requested", "locked": True}
    assert held_when_recorded == [False]  # returned: TrueTime released the lock already
    assert inner.last_time == time  # the wrapped generator's own tie breaking still works


def test_consume_time_records_the_completion_inside_the_action_under_the_lock():
    clock, lock, inner = truetime()
    held_when_recorded: list[bool] = []
    history = HistoryRecorder(lambda: held_when_recorded.append(lock.held) or 0)
    generator = RecordingTimeGenerator(inner, "job/coordinator", history)
    created: list[str] = []

    def create(completion: str) -> Instant:
        assert not time_events(history)  # recorded once the file exists, not before
        created.append(completion)
        return Instant("20251231235959000", State.COMPLETED, "deltacommit", completion)

    done = run(generator.consume_time(create), clock)
    assert done.completion_time == created[0]
    (event,) = time_events(history)
    assert event.value == {
        "time": created[0],
        "use": "completion",
        "locked": True,
        "instant": "20251231235959000",
        "action": "deltacommit",
    }
    assert held_when_recorded == [True]
    assert not lock.held


def test_a_failed_action_is_recorded_with_its_error_and_the_error_propagates():
    clock, lock, inner = truetime()
    history = HistoryRecorder(lambda: 0)
    generator = record_times(inner, "job/compactor", history)

    def refuse(completion: str) -> None:
        raise FileAlreadyExistsError(f"{completion}.commit exists")

    with pytest.raises(FileAlreadyExistsError):
        run(generator.consume_time(refuse), clock)
    (event,) = time_events(history)
    assert event.value["use"] == "completion"
    assert event.value["error"].startswith("FileAlreadyExistsError: ")
    assert "instant" not in event.value
    assert not lock.held  # TrueTime's finally still ran


def test_an_action_returning_no_instant_records_just_the_time():
    clock, _, inner = truetime()
    history = HistoryRecorder(lambda: 0)
    assert run(record_times(inner, "p", history).consume_time(len), clock) == 17
    (event,) = time_events(history)
    assert set(event.value) == {"time", "use", "locked"}


@pytest.mark.parametrize(
    "make",
    [
        lambda clock: LocalClockGenerator(clock),
        lambda clock: TimeServiceGenerator(TimeService(clock)),
    ],
    ids=["local_clock", "time_service"],
)
def test_generators_without_a_lock_record_locked_false(make):
    clock = FakeClock(FakeWorld(START_MS))
    history = HistoryRecorder(lambda: 0)
    generator = record_times(make(clock), "p", history)
    first = run(generator.generate_time(), clock)
    clock.world.advance(1)
    second = run(generator.consume_time(lambda t: t), clock)
    assert [e.value for e in time_events(history)] == [
        {"time": first, "use": "requested", "locked": False},
        {"time": second, "use": "completion", "locked": False},
    ]


def test_the_world_hands_out_recording_generators():
    world = World(make_scenario(duration_s=5))
    generator = world.time_generator("job0/coordinator")
    assert isinstance(generator, RecordingTimeGenerator)
    assert generator.process == "job0/coordinator"
    assert generator.history is world.history
    assert generator.locked  # truetime by default


# --- in a whole run --------------------------------------------------------------------------

FAULTY_TWO_JOBS = scenario_toml(
    seed=11,
    duration_s=30,
    jobs=(
        {**JOB, "compaction_every_commits": 2},
        {**JOB, "checkpoint_interval_s": 3},
    ),
    faults=ALL_FAULTS,
)


def test_every_time_on_the_timeline_and_in_commit_events_was_recorded_by_its_process():
    events = cached_run(FAULTY_TWO_JOBS).history.events
    recorded: dict[tuple[str, str, str], int] = {}
    for e in events:
        if e.f == INSTANT_TIME:
            recorded.setdefault((e.process, e.value["use"], e.value["time"]), e.index)
    checked = 0
    for e in events:
        if e.type != "ok":
            continue
        value = e.value or {}
        wanted = []
        if e.f in ("start_instant", "schedule_compaction"):
            wanted.append(("requested", value["instant"]))
        elif e.f in ("commit", "compaction"):
            wanted.append(("completion", value["completion"]))
        elif e.f == "rollback":
            wanted.append(("requested", value["rollback"]))
        for use, time in wanted:
            index = recorded.get((e.process, use, time))
            assert index is not None and index < e.index, (e, use)
            checked += 1
    assert checked > 30
    kinds = {e.f for e in events if e.type == "ok"}
    assert {"commit", "compaction", "schedule_compaction"} <= kinds


def test_under_truetime_the_recorded_times_increase_in_history_order():
    """Within the bound (default skew 50 ms, bound 200 ms) and with crashes and lost ACKs."""
    events = cached_run(FAULTY_TWO_JOBS).history.events
    times = [e.value["time"] for e in events if e.f == INSTANT_TIME]
    assert len(times) > 40
    assert all(a < b for a, b in pairwise(times))
    assert all(e.value["locked"] for e in events if e.f == INSTANT_TIME)
    # taken under one lock with a 200 ms wait: consecutive times at least that far apart
    gaps = [parse_epoch_ms(b) - parse_epoch_ms(a) for a, b in pairwise(times)]
    assert min(gaps) > 200 - 2 * 50


def test_recording_is_deterministic():
    text = scenario_toml(seed=4, duration_s=10, faults=ALL_FAULTS)
    first = World(make_scenario(seed=4, duration_s=10, faults=ALL_FAULTS)).run().history
    assert first.jsonl_bytes() == cached_run(text).history.jsonl_bytes()
