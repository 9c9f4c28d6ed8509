"""The simulator's side of the history contract (``models/history.py``): record events as they
happen, stamped with true simulated time.

Everything a checker later judges goes through :meth:`HistoryRecorder.record`, which is why it
validates and copies each value at once: a set slipping into one event would make the run's digest
depend on the process it ran in, and a caller mutating a dict after recording it would silently
rewrite the past.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from models.history import (
    NEMESIS,
    Event,
    history_digest,
    history_jsonl,
    recorded_event,
)


class HistoryRecorder:
    """An append-only list of :class:`models.history.Event` s.

    ``now`` gives true simulated time in ms (typically ``lambda: env.now``); an event's ``index``
    is its position in :attr:`events`.
    """

    def __init__(self, now: Callable[[], int]) -> None:
        self._now = now
        self.events: list[Event] = []
        """All events so far, in order; append-only (only :meth:`record` adds to it)."""

    def record(self, process: str, type: str, f: str, value: Any = None) -> Event:
        """Append one event; TypeError if ``value`` is not plain JSON (see ``check_value``).

        Tuples are stored as lists and the value is deep-copied, so the recorded event equals the
        one read back from the written history.
        """
        time = int(self._now())
        if self.events and time < self.events[-1].time:
            raise ValueError(
                f"history time went backwards: {time} after {self.events[-1].time} "
                "(record true simulated time, not a process's clock)"
            )
        event = recorded_event(len(self.events), time, process, type, f, value)
        self.events.append(event)
        return event

    def invoke(self, process: str, f: str, value: Any = None) -> Event:
        """``process`` starts operation ``f``."""
        return self.record(process, "invoke", f, value)

    def ok(self, process: str, f: str, value: Any = None) -> Event:
        """Operation ``f`` of ``process`` certainly happened."""
        return self.record(process, "ok", f, value)

    def fail(self, process: str, f: str, value: Any = None) -> Event:
        """Operation ``f`` of ``process`` certainly did not happen."""
        return self.record(process, "fail", f, value)

    def info(self, process: str, f: str, value: Any = None) -> Event:
        """The outcome of ``f`` is unknown (e.g. the ACK was lost): it may or may not have happened."""
        return self.record(process, "info", f, value)

    def nemesis(self, f: str, value: Any = None) -> Event:
        """A fault was injected (process ``"nemesis"``, type ``info``)."""
        return self.record(NEMESIS, "info", f, value)

    def jsonl_bytes(self) -> bytes:
        """The history as canonical JSON Lines (what ``models.history.write_history`` writes)."""
        return history_jsonl(self.events)

    def digest(self) -> str:
        """``"sha256:<hex>"`` of :meth:`jsonl_bytes`: the identity of a run."""
        return history_digest(self.events)
