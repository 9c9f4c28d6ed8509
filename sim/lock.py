"""A distributed lock (ZooKeeper-like) in simulated time: latency, FIFO waiting, session expiry.

TrueTime and Hudi's transactions serialize on a table-wide lock, and how long writers queue on it
is one of the things the testbed measures, so the lock is a real simpy resource rather than a flag:
each acquire and release pays a round trip (``latency_ms``), waiters are served first come first
served (a ZooKeeper lock recipe's sequential nodes), and a process that dies while waiting or
holding loses its place or the lock at once (its session expires) instead of blocking everyone
forever.

Protocol code in ``models/`` only yields ``Acquire(lock)`` / ``Release(lock)`` effects;
:func:`sim.driver.drive` turns them into :meth:`SimLock.sim_acquire` / :meth:`SimLock.sim_release`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy
from simpy.resources.resource import Request


class LockNotHeldError(RuntimeError):
    """A process released a lock it does not hold (a protocol or driver bug)."""


class SimLock:
    """A mutual-exclusion lock shared by simulated processes, identified by owner names.

    Satisfies ``models.ports.Lock`` structurally so it can be handed to protocol code, but its
    synchronous :meth:`acquire` / :meth:`release` refuse to work: in a simulation, waiting has to
    be a simpy event, which only the driver can yield.

    Statistics: :attr:`acquisitions`, :attr:`wait_ms_total` (from asking to holding, latency
    included), :attr:`hold_ms_total` (from holding to released) and :attr:`expirations`.
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        *,
        latency_ms: Callable[[], int] = lambda: 0,
    ) -> None:
        self.env = env
        self.name = name
        self._latency_ms = latency_ms
        self._resource = simpy.Resource(env, capacity=1)
        self._requests: dict[str, Request] = {}
        """Owner -> its request, waiting or granted (an owner has at most one)."""
        self._held_since: int | float = 0
        self.holder: str | None = None
        """The owner holding the lock, or None."""
        self.acquisitions = 0
        self.wait_ms_total: int | float = 0
        self.hold_ms_total: int | float = 0
        self.expirations = 0
        """How often :meth:`release_if_held` took the lock away from a holder."""

    def __repr__(self) -> str:
        return f"SimLock({self.name!r}, holder={self.holder!r})"

    def acquire(self) -> None:
        raise RuntimeError(
            f"lock {self.name!r} is a simulated lock: drive the steps with sim.driver.drive "
            "instead of models.ports.run"
        )

    def release(self) -> None:
        raise RuntimeError(
            f"lock {self.name!r} is a simulated lock: drive the steps with sim.driver.drive "
            "instead of models.ports.run"
        )

    @property
    def waiting(self) -> int:
        """How many requests are queued behind the holder."""
        return len(self._resource.queue)

    def _latency(self) -> int:
        latency = self._latency_ms()
        if type(latency) is not int or latency < 0:
            raise ValueError(f"lock {self.name!r}: latency must be an int >= 0 ms, got {latency!r}")
        return latency

    def sim_acquire(self, owner: str) -> Generator[simpy.Event, Any, None]:
        """Wait a round trip, then queue (FIFO) until the lock is ``owner``'s.

        The lock is not reentrant: asking again while waiting or holding is a RuntimeError, since in
        a real lock service it would wait for itself forever. If the calling process is interrupted
        (or closed) while queued, its request is withdrawn and, if it was granted in the meantime,
        released, so the lock never stays held by a dead process.
        """
        if owner in self._requests:
            state = "holds" if self.holder == owner else "is already waiting for"
            raise RuntimeError(f"{owner!r} {state} lock {self.name!r}; it is not reentrant")
        start = self.env.now
        latency = self._latency()
        if latency > 0:
            yield self.env.timeout(latency)
        request = self._resource.request()
        self._requests[owner] = request
        try:
            yield request
        except BaseException:
            self.release_if_held(owner)
            raise
        self.holder = owner
        self._held_since = self.env.now
        self.acquisitions += 1
        self.wait_ms_total += self.env.now - start

    def sim_release(self, owner: str) -> Generator[simpy.Event, Any, None]:
        """Wait a round trip (still holding), then release; LockNotHeldError if ``owner`` is not
        the holder when it asks.

        If the lock is taken away (:meth:`release_if_held`) during the round trip there is nothing
        left to release; that is not an error, as deleting an expired ZooKeeper node is not.
        """
        if self.holder != owner:
            raise LockNotHeldError(
                f"{owner!r} released lock {self.name!r}, which is held by {self.holder!r}"
            )
        latency = self._latency()
        if latency > 0:
            yield self.env.timeout(latency)
        request = self._requests.get(owner)
        if request is not None and self.holder == owner:
            self._free(owner, request)

    def release_if_held(self, owner: str) -> bool:
        """Drop ``owner``'s hold or place in the queue at once (its session expired).

        Used by the driver when a process is interrupted and by fault injection. Returns True if
        ``owner`` held (or had just been granted) the lock.
        """
        request = self._requests.get(owner)
        if request is None:
            return False
        if not request.triggered:  # still queued
            request.cancel()
            del self._requests[owner]
            return False
        if self.holder != owner:  # granted, but the owner never resumed to take it
            self.holder = owner
            self._held_since = self.env.now
        self.expirations += 1
        self._free(owner, request)
        return True

    def _free(self, owner: str, request: Request) -> None:
        del self._requests[owner]
        self.hold_ms_total += self.env.now - self._held_since
        self.holder = None
        self._resource.release(request)
