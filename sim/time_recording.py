"""Record every instant time a process's time generator hands out (history event ``instant_time``).

The ordering invariants (docs/protocol.md section 9, invariants 1 and 2) are about *when* times are
generated: unique across all processes, strictly increasing in real time, completed files created
in completion-time order. Commit and compaction events carry times too, but only some of them
(a collision aborts before anything is committed; a completion refused by the timeline never shows
up as a commit), and long after the time was taken. So the generator itself is wrapped: the history
gets one ``info`` event per time, at the moment the time is taken, by the process that took it.

Where exactly each event lands in the history is the point:

- ``generate_time`` (a requested time): right when the generator returns. TrueTime has just
  released the table lock at that moment, and nothing else runs in between, so these events are in
  lock order; the other variants take no lock and return at once after reading their clock.
- ``consume_time`` (a completion time): *inside* the action, i.e. under TrueTime's lock, right
  after the completed file was created. History order of completion events is therefore the order
  in which completed files appeared on storage (invariant 2). If the action fails (the file
  already exists, the timeline refuses a completion time not after the requested time), the time
  was still handed out: it is recorded with the error, and the error propagates unchanged.

Value: ``{"time": <17 digits>, "use": "requested" | "completion", "locked": bool}`` plus, for a
completion, ``"instant"`` and ``"action"`` of the completed instant (or ``"error"`` when the action
failed). ``locked`` says the time was taken under the table lock (TrueTime), which is what orders
such events against each other in the happens-before graph. ``wait_ms`` (present when not 0) is the
simulated time the caller spent getting the time: waiting for the lock, TrueTime's skew wait and
tie-breaking retries (for a completion: up to the moment the action ran, not the action itself).
It is what TrueTime costs each instant, the overhead a skew bound buys its safety with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from models.ports import Steps
from models.timeline.truetime import TimeGenerator, TrueTimeGenerator
from sim.clock import SimClock
from sim.history import HistoryRecorder

T = TypeVar("T")

INSTANT_TIME = "instant_time"
"""The history ``f`` of the events recorded here."""


class RecordingTimeGenerator:
    """A :class:`~models.timeline.truetime.TimeGenerator` that records each time it hands out.

    Wraps one process's generator; the protocol code sees the same interface and the same times,
    so recording changes nothing but the history.
    """

    def __init__(self, inner: TimeGenerator, process: str, history: HistoryRecorder) -> None:
        self.inner = inner
        self.process = process
        self.history = history
        self.locked = isinstance(inner, TrueTimeGenerator)
        """True if every time comes from under the table lock (only TrueTime takes it)."""

    def _now(self) -> int | None:
        """True simulated time, read from the simpy environment behind the process's clock (the
        time the history records in); None when the generator has no simulated clock (a time
        service, or a fake clock in a unit test): then no ``wait_ms`` is recorded."""
        clock = getattr(self.inner, "clock", None)
        return int(clock.env.now) if isinstance(clock, SimClock) else None

    def _waited(self, started_ms: int | None) -> int:
        now = self._now()
        return 0 if now is None or started_ms is None else now - started_ms

    def _record(self, time: str, use: str, wait_ms: int, **extra: Any) -> None:
        value = {"time": time, "use": use, "locked": self.locked, **extra}
        if wait_ms:
            value["wait_ms"] = wait_ms
        self.history.info(self.process, INSTANT_TIME, value)

    def generate_time(self, *, skip_locking: bool = False) -> Steps[str]:
        started_ms = self._now()
        time = yield from self.inner.generate_time(skip_locking=skip_locking)
        self._record(time, "requested", self._waited(started_ms))
        return time

    def consume_time(self, action: Callable[[str], T], *, skip_locking: bool = False) -> Steps[T]:
        started_ms = self._now()

        def recorded(time: str) -> T:
            wait_ms = self._waited(started_ms)
            try:
                result = action(time)
            except Exception as error:
                self._record(time, "completion", wait_ms, error=f"{type(error).__name__}: {error}")
                raise
            instant = getattr(result, "requested_time", None)
            action_name = getattr(result, "action", None)
            if isinstance(instant, str) and isinstance(action_name, str):
                self._record(time, "completion", wait_ms, instant=instant, action=action_name)
            else:
                self._record(time, "completion", wait_ms)
            return result

        return (yield from self.inner.consume_time(recorded, skip_locking=skip_locking))


def record_times(
    inner: TimeGenerator, process: str, history: HistoryRecorder
) -> RecordingTimeGenerator:
    """``inner`` wrapped so every time it hands out to ``process`` lands in ``history``."""
    return RecordingTimeGenerator(inner, process, history)


__all__ = ["INSTANT_TIME", "RecordingTimeGenerator", "record_times"]
