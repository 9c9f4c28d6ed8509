"""Tests for sim/driver.py: protocol steps run in simulated time, and crashes never leak locks.

The main customer is TrueTime (models/timeline/truetime.py): several processes with skewed SimClocks
contend for one SimLock; with the skew below the bound every issued time is unique and increasing,
and the wait happens while the lock is held.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator
from itertools import pairwise

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from models.ports import Acquire, LocalLock, Release, Sleep, Steps
from models.timeline.instant_time import parse_epoch_ms
from models.timeline.truetime import LocalClockGenerator, TrueTimeGenerator
from sim.clock import SimClock
from sim.driver import drive
from sim.lock import SimLock
from sim.rng import Rng

EPOCH_MS = 1_700_000_000_000


def run_process(env: simpy.Environment, body: Generator) -> simpy.Process:
    process = env.process(body)
    env.run()
    return process


# ---------------------------------------------------------------------------------------------
# plain effects


def test_sleeps_take_simulated_time_and_the_result_is_returned():
    env = simpy.Environment()
    sent: list = []

    def steps() -> Steps[str]:
        sent.append((yield Sleep(5)))
        yield Sleep(0)
        yield Sleep(-3)
        sent.append((yield Sleep(7)))
        return "done"

    process = run_process(env, drive(env, steps(), owner="w"))
    assert process.value == "done"
    assert env.now == 12
    assert sent == [None, None]


def test_steps_without_effects():
    env = simpy.Environment()

    def steps() -> Steps[int]:
        return 42
        yield  # pragma: no cover

    assert run_process(env, drive(env, steps(), owner="w")).value == 42
    assert env.now == 0


def test_only_sim_locks_can_be_driven():
    env = simpy.Environment()

    def steps() -> Steps[None]:
        yield Acquire(LocalLock())

    env.process(drive(env, steps(), owner="w"))
    with pytest.raises(TypeError, match="SimLock, got a LocalLock"):
        env.run()


def test_unknown_effects_are_refused():
    env = simpy.Environment()

    def steps() -> Generator:
        yield "sleep please"

    env.process(drive(env, steps(), owner="w"))
    with pytest.raises(TypeError, match="unknown effect"):
        env.run()


def test_acquire_and_release_go_through_the_sim_lock_with_latency():
    env = simpy.Environment()
    lock = SimLock(env, "table", latency_ms=lambda: 2)
    seen: list = []

    def steps() -> Steps[None]:
        yield Acquire(lock)
        seen.append((lock.holder, env.now))
        yield Sleep(10)
        yield Release(lock)
        seen.append((lock.holder, env.now))

    run_process(env, drive(env, steps(), owner="w"))
    assert seen == [("w", 2), (None, 14)]


def test_a_lock_taken_in_one_drive_call_can_be_released_in_another():
    # Hudi's transactions: begin (acquire) and end (release) are separate steps.
    env = simpy.Environment()
    lock = SimLock(env, "table")

    def begin() -> Steps[None]:
        yield Acquire(lock)

    def end() -> Steps[None]:
        yield Release(lock)

    def process() -> Generator:
        yield from drive(env, begin(), owner="w")
        assert lock.holder == "w"
        yield env.timeout(3)
        yield from drive(env, end(), owner="w")

    run_process(env, process())
    assert lock.holder is None and lock.hold_ms_total == 3


# ---------------------------------------------------------------------------------------------
# TrueTime over skewed SimClocks


def contend(
    skews_ms: list[int],
    *,
    bound_ms: int,
    rounds: int,
    latency_ms: int = 0,
    starts_ms: list[int] | None = None,
) -> list[tuple[int, str, str]]:
    """Processes with the given clock offsets generate ``rounds`` times each through one lock.

    Returns (true time issued, owner, instant time) in the order the times were issued.
    """
    env = simpy.Environment()
    lock = SimLock(env, "table", latency_ms=lambda: latency_ms)
    issued: list[tuple[int, str, str]] = []

    def process(name: str, clock: SimClock, start_ms: int) -> Generator:
        generator = TrueTimeGenerator(clock, lock, bound_ms)
        yield env.timeout(start_ms)
        for _ in range(rounds):
            time = yield from drive(env, generator.generate_time(), owner=name)
            issued.append((env.now, name, time))

    for i, skew in enumerate(skews_ms):
        clock = SimClock(env, epoch_ms=EPOCH_MS, offset_ms=skew)
        start = starts_ms[i] if starts_ms else 0
        env.process(process(f"w{i}", clock, start))
    env.run()
    return issued


def test_truetime_two_processes_contending_issue_unique_increasing_times():
    issued = contend([0, 150], bound_ms=200, rounds=5)
    times = [time for _, _, time in issued]
    assert len(issued) == 10
    assert {owner for _, owner, _ in issued} == {"w0", "w1"}
    assert all(a < b for a, b in pairwise(times))


def test_truetime_waits_out_the_skew_while_holding_the_lock():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    clock = SimClock(env, epoch_ms=EPOCH_MS)
    holds: list[tuple] = []

    def observer() -> Generator:
        # samples the lock every ms: it must be held for the whole sleep
        for _ in range(250):
            holds.append((env.now, lock.holder))
            yield env.timeout(1)

    def writer() -> Generator:
        generator = TrueTimeGenerator(clock, lock, 200)
        time = yield from drive(env, generator.generate_time(), owner="w")
        assert parse_epoch_ms(time) == EPOCH_MS  # read before the sleep
        assert env.now == 200

    env.process(writer())
    env.process(observer())
    env.run()
    # (at 0 the grant is not processed yet, at 200 the release comes first)
    assert all(holder == "w" for now, holder in holds if 0 < now < 200)
    assert all(holder is None for now, holder in holds if now >= 200)
    assert lock.hold_ms_total == 200


def test_truetime_with_skew_at_least_the_bound_can_go_backwards():
    # The same setup with the bound too small: the driver does not hide the violation.
    issued = contend([300, 0], bound_ms=200, rounds=1)
    times = [time for _, _, time in issued]
    assert times[0] > times[1]


def test_local_clock_generator_needs_no_lock_and_collides_across_processes():
    env = simpy.Environment()
    issued: list[str] = []

    def process(name: str) -> Generator:
        generator = LocalClockGenerator(SimClock(env, epoch_ms=EPOCH_MS))
        issued.append((yield from drive(env, generator.generate_time(), owner=name)))

    env.process(process("a"))
    env.process(process("b"))
    env.run()
    assert issued[0] == issued[1]


@given(
    skews=st.lists(st.integers(-49, 50), min_size=2, max_size=4).filter(
        lambda s: max(s) - min(s) < 100
    ),
    latency_ms=st.integers(0, 5),
    starts=st.lists(st.integers(0, 300), min_size=4, max_size=4),
)
def test_truetime_unique_and_increasing_whenever_relative_skew_is_below_the_bound(
    skews, latency_ms, starts
):
    issued = contend(skews, bound_ms=100, rounds=3, latency_ms=latency_ms, starts_ms=starts)
    times = [time for _, _, time in issued]
    assert len(times) == 3 * len(skews)
    assert all(a < b for a, b in pairwise(times))


def test_contention_is_deterministic_for_a_seed():
    def run(seed: int) -> list[tuple[int, str, str]]:
        rng = Rng(seed).child("skews")
        skews = [rng.randint(-40, 40) for _ in range(4)]
        starts = [rng.randint(0, 500) for _ in range(4)]
        return contend(skews, bound_ms=100, rounds=3, latency_ms=1, starts_ms=starts)

    assert run(7) == run(7)
    assert run(7) != run(8)


# ---------------------------------------------------------------------------------------------
# failures: interrupts and raising steps release the locks


def test_interrupt_while_holding_releases_the_lock_and_runs_finally_blocks():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list = []

    def steps() -> Steps[None]:
        try:
            yield Acquire(lock)
            log.append(("holding", env.now))
            yield Sleep(100)
            log.append("never")
        finally:
            log.append(("finally", env.now))

    def victim() -> Generator:
        try:
            yield from drive(env, steps(), owner="victim")
        except simpy.Interrupt as interrupt:
            log.append(("interrupted", interrupt.cause, lock.holder))

    def other() -> Generator:
        yield env.timeout(1)
        generator = TrueTimeGenerator(SimClock(env, epoch_ms=EPOCH_MS), lock, 10)
        yield from drive(env, generator.generate_time(), owner="other")
        log.append(("other done", env.now))

    process = env.process(victim())
    env.process(other())

    def kill() -> Generator:
        yield env.timeout(30)
        process.interrupt("crash")

    env.process(kill())
    env.run()
    assert log == [
        ("holding", 0),
        ("finally", 30),
        ("interrupted", "crash", None),  # released at once...
        ("other done", 40),  # ...so the waiter got it at 30 and waited out its 10 ms
    ]
    assert lock.holder is None


def test_interrupt_while_waiting_for_the_lock_leaves_the_queue():
    env = simpy.Environment()
    lock = SimLock(env, "table")

    def holder() -> Generator:
        yield from drive(
            env, TrueTimeGenerator(SimClock(env, epoch_ms=0), lock, 50).generate_time(), owner="h"
        )

    def waiter() -> Steps[None]:
        yield Acquire(lock)
        yield Release(lock)

    def victim() -> Generator:
        with contextlib.suppress(simpy.Interrupt):
            yield from drive(env, waiter(), owner="v")

    env.process(holder())
    process = env.process(victim())

    def kill() -> Generator:
        yield env.timeout(10)
        process.interrupt()

    env.process(kill())
    env.run()
    assert lock.holder is None and lock.waiting == 0
    assert lock.acquisitions == 1


def test_steps_raising_propagate_and_release_their_locks():
    env = simpy.Environment()
    a, b = SimLock(env, "a"), SimLock(env, "b")

    def steps() -> Steps[None]:
        yield Acquire(a)
        yield Acquire(b)
        yield Sleep(5)
        raise ValueError("collision")

    def process() -> Generator:
        with pytest.raises(ValueError, match="collision"):
            yield from drive(env, steps(), owner="w")
        assert a.holder is None and b.holder is None

    run_process(env, process())
    assert a.expirations == 1 and b.expirations == 1


def test_truetime_consume_time_action_failing_releases_through_the_steps():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    generator = TrueTimeGenerator(SimClock(env, epoch_ms=EPOCH_MS), lock, 20)

    def action(_time: str) -> None:
        raise FileExistsError("completed file exists")

    def process() -> Generator:
        with pytest.raises(FileExistsError):
            yield from drive(env, generator.consume_time(action), owner="w")

    run_process(env, process())
    # consume_time released the lock itself (its except clause) before re-raising
    assert lock.holder is None and lock.expirations == 0 and env.now == 20


def test_effects_yielded_while_closing_are_not_carried_out():
    env = simpy.Environment()
    lock = SimLock(env, "table")

    def stubborn() -> Steps[None]:
        yield Acquire(lock)
        try:
            yield Sleep(100)
        finally:
            yield Release(lock)  # a finally that yields: not driven on a crash

    def victim() -> Generator:
        yield from drive(env, stubborn(), owner="w")

    process = env.process(victim())

    def kill() -> Generator:
        yield env.timeout(5)
        process.interrupt("crash")

    env.process(kill())
    with pytest.raises(simpy.Interrupt) as raised:
        env.run()
    original = raised.value.__cause__  # simpy re-raises a copy of the process's exception
    assert any("closing the steps of 'w'" in note for note in original.__notes__)
    assert lock.holder is None and env.now == 5
