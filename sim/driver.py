"""Carry out protocol steps (``models.ports.Steps``) inside a simpy process.

Protocol code never waits by itself: it yields ``Acquire`` / ``Release`` / ``Sleep`` effects
(see ``models/ports.py``). ``ports.run`` carries them out synchronously for tests and local tables;
:func:`drive` is the simulator's counterpart, so the very same TrueTime or commit code runs with
simulated lock latency, contention and sleeps.

Failure handling is the point of having a driver here rather than inline loops: when a process is
killed (``simpy.Interrupt``) or a step raises, every lock taken by that step is released at once,
as a ZooKeeper session expiring would, so one crashed writer cannot hang the whole table.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, TypeVar

import simpy

from models.ports import Acquire, Lock, Release, Sleep, Steps
from sim.lock import SimLock
from sim.pauses import PausableEnvironment

T = TypeVar("T")


def _sim_lock(lock: Lock) -> SimLock:
    if not isinstance(lock, SimLock):
        raise TypeError(
            f"the simulator can only wait on a SimLock, got a {type(lock).__name__} ({lock!r})"
        )
    return lock


def drive(env: simpy.Environment, steps: Steps[T], *, owner: str) -> Generator[simpy.Event, Any, T]:
    """Run ``steps`` as ``owner`` inside a simpy process: ``result = yield from drive(...)``.

    ``Acquire`` / ``Release`` go to the SimLock's ``sim_acquire`` / ``sim_release`` (any other lock
    type is a TypeError), ``Sleep(d)`` waits ``d`` ms (nothing for ``d <= 0``), and each effect's
    result sent back into the steps is None. The steps' return value is returned. In a
    :class:`PausableEnvironment`, an ``owner`` that is paused sits the pause out before its next
    effect.

    On any exception (the process interrupted, the steps raising, an effect failing) the steps are
    closed so their ``finally`` blocks run (effects they would yield there are not carried out),
    every lock acquired through this call and not yet released is released with
    ``release_if_held``, and the exception propagates. Locks the steps release that were acquired by
    an earlier ``drive`` call (a transaction begun in one step and ended in another) are released
    normally, but cleaning them up after a crash is the calling process's job.
    """
    held: list[SimLock] = []  # acquired through this call and not released, in acquisition order
    try:
        effect = next(steps)
        while True:
            if isinstance(env, PausableEnvironment) and env.paused_until_ms:
                while (left_ms := env.pause_left_ms(owner)) > 0:  # paused: sit it out first
                    yield env.timeout(left_ms)
            if isinstance(effect, Acquire):
                lock = _sim_lock(effect.lock)
                yield from lock.sim_acquire(owner)
                held.append(lock)
            elif isinstance(effect, Release):
                lock = _sim_lock(effect.lock)
                yield from lock.sim_release(owner)
                if lock in held:
                    held.remove(lock)
            elif isinstance(effect, Sleep):
                if effect.duration_ms > 0:
                    yield env.timeout(effect.duration_ms)
            else:
                raise TypeError(f"unknown effect {effect!r} yielded by the steps of {owner!r}")
            effect = steps.send(None)
    except StopIteration as stop:
        return stop.value
    except BaseException as error:
        try:
            steps.close()
        except Exception as close_error:  # e.g. a finally block that yields another effect
            error.add_note(f"closing the steps of {owner!r} also failed: {close_error!r}")
        for lock in reversed(held):
            lock.release_if_held(owner)
        raise
