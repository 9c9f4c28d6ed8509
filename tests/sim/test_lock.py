"""Tests for sim/lock.py: mutual exclusion, FIFO waiting, latency and session expiry."""

from __future__ import annotations

from collections.abc import Callable, Generator

import pytest
import simpy

from models.ports import Lock
from sim.lock import LockNotHeldError, SimLock
from sim.rng import Rng


def worker(
    env: simpy.Environment,
    lock: SimLock,
    owner: str,
    hold_ms: int,
    log: list[tuple],
    start_ms: int = 0,
) -> Generator:
    if start_ms:
        yield env.timeout(start_ms)
    yield from lock.sim_acquire(owner)
    log.append(("acquired", owner, env.now))
    yield env.timeout(hold_ms)
    log.append(("releasing", owner, env.now))
    yield from lock.sim_release(owner)


def test_satisfies_the_lock_port_but_refuses_synchronous_use():
    lock = SimLock(simpy.Environment(), "table")
    assert isinstance(lock, Lock)
    with pytest.raises(RuntimeError, match=r"sim\.driver\.drive"):
        lock.acquire()
    with pytest.raises(RuntimeError, match=r"sim\.driver\.drive"):
        lock.release()


def test_mutual_exclusion_and_fifo_order():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list[tuple] = []
    for i, owner in enumerate(["a", "b", "c", "d"]):
        env.process(worker(env, lock, owner, hold_ms=10, log=log, start_ms=i))
    env.run()
    acquired = [(owner, t) for kind, owner, t in log if kind == "acquired"]
    assert acquired == [("a", 0), ("b", 10), ("c", 20), ("d", 30)]
    holders = 0
    for kind, _, _ in log:  # never two holders at once
        holders += 1 if kind == "acquired" else -1
        assert holders in (0, 1)
    assert lock.holder is None
    assert lock.acquisitions == 4
    assert lock.wait_ms_total == (10 - 1) + (20 - 2) + (30 - 3)
    assert lock.hold_ms_total == 40


def test_latency_is_paid_on_acquire_and_release_while_still_holding():
    env = simpy.Environment()
    lock = SimLock(env, "zk", latency_ms=lambda: 3)
    log: list[tuple] = []
    env.process(worker(env, lock, "a", hold_ms=10, log=log))
    env.process(worker(env, lock, "b", hold_ms=10, log=log))
    env.run()
    # a: asks at 0, holds at 3, releases at 13 + 3 = 16; b queued at 3 gets it at 16.
    assert [e for e in log if e[0] == "acquired"] == [("acquired", "a", 3), ("acquired", "b", 16)]
    assert lock.wait_ms_total == 3 + 16
    assert env.now == 16 + 10 + 3


def test_random_latency_from_a_stream_is_deterministic():
    def run(seed: int) -> list[tuple]:
        env = simpy.Environment()
        stream = Rng(seed).child("lock")
        lock = SimLock(env, "zk", latency_ms=lambda: stream.randint(1, 20))
        log: list[tuple] = []
        for owner in ("a", "b", "c"):
            env.process(worker(env, lock, owner, hold_ms=5, log=log))
        env.run()
        return log

    assert run(1) == run(1)
    assert run(1) != run(2)


def test_bad_latency_is_refused():
    env = simpy.Environment()
    lock = SimLock(env, "zk", latency_ms=lambda: -1)
    env.process(lock.sim_acquire("a"))
    with pytest.raises(ValueError, match="latency"):
        env.run()


def test_not_reentrant():
    env = simpy.Environment()
    lock = SimLock(env, "table")

    def twice() -> Generator:
        yield from lock.sim_acquire("a")
        yield from lock.sim_acquire("a")

    env.process(twice())
    with pytest.raises(RuntimeError, match="not reentrant"):
        env.run()


def test_releasing_a_lock_you_do_not_hold_is_an_error():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list[tuple] = []
    env.process(worker(env, lock, "a", hold_ms=10, log=log))

    def intruder() -> Generator:
        yield env.timeout(1)
        yield from lock.sim_release("b")

    env.process(intruder())
    with pytest.raises(LockNotHeldError, match="held by 'a'"):
        env.run()


def interrupt_at(env: simpy.Environment, process: simpy.Process, at_ms: int) -> None:
    def go() -> Generator:
        yield env.timeout(at_ms)
        process.interrupt("killed")

    env.process(go())


def guarded(body: Callable[[], Generator], log: list[tuple], owner: str, env) -> Generator:
    try:
        yield from body()
    except simpy.Interrupt:
        log.append(("interrupted", owner, env.now))


def test_interrupted_while_waiting_leaves_the_queue():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list[tuple] = []
    env.process(worker(env, lock, "a", hold_ms=10, log=log))
    b = env.process(
        guarded(lambda: worker(env, lock, "b", hold_ms=10, log=log, start_ms=1), log, "b", env)
    )
    env.process(worker(env, lock, "c", hold_ms=10, log=log, start_ms=2))
    interrupt_at(env, b, 5)
    env.run()
    assert ("interrupted", "b", 5) in log
    assert [e for e in log if e[0] == "acquired"] == [("acquired", "a", 0), ("acquired", "c", 10)]
    assert lock.holder is None and lock.waiting == 0


def test_interrupted_while_holding_needs_release_if_held():
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list[tuple] = []

    def holder() -> Generator:
        try:
            yield from worker(env, lock, "a", hold_ms=100, log=log)
        except simpy.Interrupt:
            assert lock.release_if_held("a") is True  # what the driver does
            assert lock.release_if_held("a") is False

    a = env.process(holder())
    env.process(worker(env, lock, "b", hold_ms=10, log=log, start_ms=1))
    interrupt_at(env, a, 7)
    env.run()
    assert ("acquired", "b", 7) in log
    assert lock.expirations == 1
    assert lock.hold_ms_total == 7 + 10


def test_granted_but_not_yet_resumed_is_still_released():
    # b's request is granted at 10 (a releases) and b is interrupted at the same instant, before
    # it resumes: the grant must not leak.
    env = simpy.Environment()
    lock = SimLock(env, "table")
    log: list[tuple] = []
    env.process(worker(env, lock, "a", hold_ms=10, log=log))
    b = env.process(
        guarded(lambda: worker(env, lock, "b", hold_ms=10, log=log, start_ms=1), log, "b", env)
    )

    def kill_on_grant() -> Generator:
        yield env.timeout(1)  # from here on, a's end of hold (10) is scheduled before ours
        yield env.timeout(9)  # runs right after a released...
        yield env.timeout(0)  # ...and after processing that release granted b's request
        assert lock.waiting == 1 and lock.holder is None  # b granted but not resumed; c queued
        b.interrupt("killed")

    env.process(kill_on_grant())
    env.process(worker(env, lock, "c", hold_ms=10, log=log, start_ms=2))
    env.run()
    assert ("interrupted", "b", 10) in log
    assert ("acquired", "c", 10) in log
    assert lock.holder is None


def test_expiry_during_the_release_round_trip_is_not_an_error():
    env = simpy.Environment()
    lock = SimLock(env, "zk", latency_ms=lambda: 5)
    log: list[tuple] = []
    env.process(worker(env, lock, "a", hold_ms=10, log=log))

    def expire() -> Generator:
        yield env.timeout(17)  # a holds from 5, asks to release at 15, round trip until 20
        assert lock.release_if_held("a") is True

    env.process(expire())
    env.run()
    assert lock.holder is None and lock.expirations == 1


def test_release_if_held_for_a_stranger_is_false():
    lock = SimLock(simpy.Environment(), "table")
    assert lock.release_if_held("nobody") is False
