"""Stop-the-world pauses of one process (a long garbage collection, a frozen VM or container):
the simpy environment the world runs in remembers, per process, until when it is paused.

A paused process stops at its next protocol step that waits (a lock, a sleep; see
:func:`sim.driver.drive`) or at the next message it takes (:func:`sit_out_pause`) and resumes
when the pause ends; what it holds stays held, so a coordinator paused inside TrueTime's lock or a
commit stalls every process waiting on that lock.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

THREAD_MARK = "#"
"""Separates a process's history name from one of its threads in a lock owner's name."""


class PausableEnvironment(simpy.Environment):
    """A :class:`simpy.Environment` whose processes (by history name) can be paused."""

    def __init__(self) -> None:
        super().__init__()
        self.paused_until_ms: dict[str, int] = {}

    def pause(self, process: str, duration_ms: int) -> None:
        """Pause ``process`` for ``duration_ms`` from now (a pause already running is extended
        if this one ends later)."""
        if type(duration_ms) is not int or duration_ms <= 0:
            raise ValueError(f"a pause lasts a positive whole number of ms, got {duration_ms!r}")
        until_ms = int(self.now) + duration_ms
        self.paused_until_ms[process] = max(until_ms, self.paused_until_ms.get(process, 0))

    def pause_left_ms(self, process: str) -> int:
        """How much longer ``process`` is paused (0: it is not). A thread of a process,
        ``<process>#<thread>`` (the coordinator's instant-request executor), stops with it."""
        until_ms = self.paused_until_ms.get(process.partition(THREAD_MARK)[0], 0)
        return max(0, until_ms - int(self.now))


def sit_out_pause(env: simpy.Environment, process: str) -> Generator[simpy.Event, Any, None]:
    """Wait while ``process`` is paused (nothing in an environment without pauses): a role's
    loop calls it after taking a message, so a paused process handles nothing until it ends."""
    if isinstance(env, PausableEnvironment):
        while (left_ms := env.pause_left_ms(process)) > 0:
            yield env.timeout(left_ms)


__all__ = ["THREAD_MARK", "PausableEnvironment", "sit_out_pause"]
