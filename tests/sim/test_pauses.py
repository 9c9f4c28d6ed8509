"""Stop-the-world pauses: a paused process sits its pause out at its next effect, keeping what
it holds."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from models.ports import Acquire, Release, Sleep
from sim.driver import drive
from sim.lock import SimLock
from sim.pauses import PausableEnvironment


def _holder(lock: SimLock) -> Generator[Any, Any, str]:
    yield Acquire(lock)
    yield Sleep(10)
    yield Release(lock)
    return "done"


def test_a_paused_process_resumes_after_the_pause_and_keeps_its_lock():
    env = PausableEnvironment()
    lock = SimLock(env, "table-lock")
    times: dict[str, int] = {}

    def holder() -> Generator[Any, Any, None]:
        yield from drive(env, _holder(lock), owner="a/coordinator")
        times["a"] = int(env.now)

    def waiter() -> Generator[Any, Any, None]:
        yield env.timeout(1)
        yield from drive(env, _holder(lock), owner="b/coordinator")
        times["b"] = int(env.now)

    def pauser() -> Generator[Any, Any, None]:
        yield env.timeout(5)  # inside a's 10 ms under the lock
        env.pause("a/coordinator", 100)

    for body in (holder(), waiter(), pauser()):
        env.process(body)
    env.run()
    assert times == {"a": 105, "b": 115}  # a resumes at 105 to release; b waited on the lock


def test_a_process_that_is_not_paused_runs_as_before():
    env = PausableEnvironment()
    env.pause("other", 50)
    lock = SimLock(env, "table-lock")
    result: list[Any] = []

    def body() -> Generator[Any, Any, None]:
        result.append((yield from drive(env, _holder(lock), owner="me")))

    env.process(body())
    env.run()
    assert (result, env.now) == (["done"], 10)


def test_a_later_pause_extends_one_in_progress_and_bad_lengths_are_refused():
    env = PausableEnvironment()
    env.pause("p", 30)
    env.pause("p", 10)
    assert env.pause_left_ms("p") == 30
    with pytest.raises(ValueError, match="positive"):
        env.pause("p", 0)
