"""The small interfaces through which the outside world reaches the protocol code.

``models/`` never reads the wall clock, never sleeps and never blocks on a lock by itself. Code that
needs to wait (TrueTime holds a lock and waits out the clock skew) is written as a generator that
*yields effects* (:class:`Acquire`, :class:`Release`, :class:`Sleep`) and receives their results.
A driver carries the effects out: :func:`run` does it synchronously over a :class:`Clock` and
:class:`Lock`; the simulator (``sim/``) does it with simpy events. That way the exact same protocol
code runs in a unit test with a fake clock, on a real table on disk, and inside the discrete-event
simulation, which is the point of the testbed.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class Clock(Protocol):
    """A process's local clock: its reading may be skewed against other processes' clocks."""

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch as this process sees them."""
        ...


@runtime_checkable
class Sleeper(Protocol):
    """Something that can let time pass (a real sleep, a fake clock advancing, a simpy timeout)."""

    def sleep_ms(self, duration_ms: int) -> None: ...


@runtime_checkable
class Lock(Protocol):
    """A (possibly distributed) mutual-exclusion lock, e.g. Hudi's ZooKeeper or DynamoDB lock."""

    def acquire(self) -> None: ...

    def release(self) -> None: ...


@dataclass(frozen=True)
class Acquire:
    """Effect: block until ``lock`` is held."""

    lock: Lock


@dataclass(frozen=True)
class Release:
    """Effect: release ``lock``."""

    lock: Lock


@dataclass(frozen=True)
class Sleep:
    """Effect: let ``duration_ms`` of real time pass on this process."""

    duration_ms: int


Effect = Acquire | Release | Sleep
Steps = Generator[Effect, Any, T]
"""A protocol step that may wait: yields effects, returns its result."""


def run(steps: Steps[T], sleeper: Sleeper) -> T:
    """Carry out a step's effects synchronously and return its result.

    Locks are acquired and released directly; sleeps go to ``sleeper``. Used by tests, by the
    table writer on local storage, and by anything that is not the simulator.
    """
    try:
        effect = next(steps)
        while True:
            if isinstance(effect, Acquire):
                effect.lock.acquire()
            elif isinstance(effect, Release):
                effect.lock.release()
            elif isinstance(effect, Sleep):
                if effect.duration_ms > 0:
                    sleeper.sleep_ms(effect.duration_ms)
            else:  # pragma: no cover - the Effect union is closed
                raise TypeError(f"unknown effect {effect!r}")
            effect = steps.send(None)
    except StopIteration as stop:
        return stop.value


class FakeClock:
    """A manually advanced clock: a fixed offset (skew) on top of a shared notion of real time.

    ``FakeClock(world, skew_ms)`` reads ``world.now_ms + skew_ms``; several FakeClocks over one
    :class:`FakeWorld` model several machines with different skews. Sleeping advances the world.
    """

    def __init__(self, world: FakeWorld, skew_ms: int = 0) -> None:
        self.world = world
        self.skew_ms = skew_ms

    def now_ms(self) -> int:
        return self.world.now_ms + self.skew_ms

    def sleep_ms(self, duration_ms: int) -> None:
        self.world.advance(duration_ms)


class FakeWorld:
    """Real time for fake clocks: starts at ``start_ms`` and moves only when told to."""

    def __init__(self, start_ms: int) -> None:
        self.now_ms = start_ms

    def advance(self, duration_ms: int) -> None:
        if duration_ms < 0:
            raise ValueError("time does not go backwards")
        self.now_ms += duration_ms


class LocalLock:
    """A non-reentrant in-process lock that fails loudly instead of deadlocking.

    Synchronous drivers are single-threaded, so acquiring a lock that is already held is a
    protocol bug (or a missing release), not contention; raising shows it at once.
    """

    def __init__(self, name: str = "lock") -> None:
        self.name = name
        self.held = False
        self.acquisitions = 0

    def acquire(self) -> None:
        if self.held:
            raise RuntimeError(f"{self.name} is already held (a single-threaded driver would hang)")
        self.held = True
        self.acquisitions += 1

    def release(self) -> None:
        if not self.held:
            raise RuntimeError(f"{self.name} released while not held")
        self.held = False
