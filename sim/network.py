"""One-way message channels with delay, loss, duplication and optional FIFO order.

Flink's checkpoint barriers, the writers' ``WriteStatus`` reports to the coordinator and the
coordinator's commit ACKs travel over channels like these; a lost or late ACK is exactly the fault
that makes a commit's outcome unknown, so the channel's faults are first-class and reported
(``on_fault``) to the history as nemesis events.

Every send draws exactly three values from the channel's own stream, always in the same order
(delay, then loss, then duplicate), whatever the outcome, so changing one probability or one
message's fate never shifts the draws of later messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import simpy

from sim.rng import Rng

FaultHook = Callable[[str, dict[str, Any]], None]
"""``on_fault(kind, details)``: called for each injected fault (``"drop"``, ``"duplicate"``)
with :func:`describe_fault`'s details."""

_DESCRIBE_BY_REPR = (str, int, float, bool, type(None))
_MAX_DESCRIPTION_CHARS = 80


def describe_message(message: Any) -> str:
    """A short deterministic description for fault reports: the class name of structured
    messages, the (truncated) repr of plain values.

    Never the object itself: its repr may contain ``id()`` addresses, which differ between runs.
    """
    if type(message) in _DESCRIBE_BY_REPR:
        text = repr(message)
        if len(text) > _MAX_DESCRIPTION_CHARS:
            text = text[: _MAX_DESCRIPTION_CHARS - 3] + "..."
        return text
    return message.__class__.__name__


def describe_fault(channel: str, message: Any) -> dict[str, Any]:
    """What a fault event says about the message it hit: the channel, the message
    (:func:`describe_message`) and, for a message about one checkpoint (it has an int
    ``checkpoint_id``: a checkpoint-complete notification, a task's ACK...), that
    ``checkpoint``, so the history says *which* checkpoint's ACK was lost or duplicated, as the
    nemesis' scheduled ACK faults do (``sim/nemesis.py``)."""
    value: dict[str, Any] = {"channel": channel, "message": describe_message(message)}
    checkpoint = getattr(message, "checkpoint_id", None)
    if type(checkpoint) is int:
        value["checkpoint"] = checkpoint
    return value


@dataclass(eq=False)
class _InFlight:
    """One scheduled delivery (a duplicated message has two)."""

    seq: int
    message: Any
    deliver: Callable[[Any], None]
    cancelled: bool = False


class Channel:
    """A one-way link from one process to another.

    Counters count message *copies*: ``sent`` (send calls), ``duplicated`` (extra copies),
    ``delivered``, ``dropped`` (lost in the network or cancelled by :meth:`cancel_pending`;
    ``cancelled`` is the latter part). At any time
    ``sent + duplicated == delivered + dropped + in_flight``.
    """

    def __init__(
        self,
        env: simpy.Environment,
        name: str,
        rng: Rng,
        *,
        delay_ms: tuple[int, int] = (0, 0),
        loss: float = 0.0,
        duplicate: float = 0.0,
        fifo: bool = True,
        on_fault: FaultHook | None = None,
    ) -> None:
        low, high = delay_ms
        if type(low) is not int or type(high) is not int or not 0 <= low <= high:
            raise ValueError(
                f"channel {name!r}: delay_ms must be whole ms (low, high) with 0 <= low <= high, "
                f"got {delay_ms!r}"
            )
        for label, p in (("loss", loss), ("duplicate", duplicate)):
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"channel {name!r}: {label} must be in [0, 1], got {p!r}")
        self.env = env
        self.name = name
        self.rng = rng
        self.delay_ms = (low, high)
        self.loss = loss
        self.duplicate = duplicate
        self.fifo = fifo
        self.on_fault = on_fault
        self.sent = 0
        self.duplicated = 0
        self.delivered = 0
        self.dropped = 0
        self.cancelled = 0
        self._pending: dict[int, _InFlight] = {}  # by copy number, in scheduling order
        self._next_seq = 0
        self._last_delivery_ms: int | float = 0

    def __repr__(self) -> str:
        return f"Channel({self.name!r}, in_flight={self.in_flight})"

    @property
    def in_flight(self) -> int:
        """Copies scheduled and neither delivered nor cancelled yet."""
        return len(self._pending)

    def _fault(self, kind: str, message: Any) -> None:
        if self.on_fault is not None:
            self.on_fault(kind, describe_fault(self.name, message))

    def send(
        self, message: Any, deliver: Callable[[Any], None], *, extra_delay_ms: int = 0
    ) -> None:
        """Schedule ``deliver(message)`` after a random delay (plus ``extra_delay_ms``), unless the
        network loses it; a duplicated message is delivered twice, back to back.

        With ``fifo`` a message is never delivered before one sent earlier on this channel (it
        waits behind it, like TCP); without it, later messages may overtake earlier ones.
        """
        if type(extra_delay_ms) is not int or extra_delay_ms < 0:
            raise ValueError(
                f"channel {self.name!r}: extra_delay_ms must be an int >= 0, got {extra_delay_ms!r}"
            )
        self.sent += 1
        delay = self.rng.randint(*self.delay_ms) + extra_delay_ms
        lost = self.rng.bernoulli(self.loss)
        doubled = self.rng.bernoulli(self.duplicate)
        if lost:
            self.dropped += 1
            self._fault("drop", message)
            return
        deliver_at = self.env.now + delay
        if self.fifo:
            deliver_at = max(deliver_at, self._last_delivery_ms)
            self._last_delivery_ms = deliver_at
        copies = 1
        if doubled:
            copies = 2
            self.duplicated += 1
            self._fault("duplicate", message)
        for _ in range(copies):
            entry = _InFlight(self._next_seq, message, deliver)
            self._next_seq += 1
            self._pending[entry.seq] = entry
            # Equal times are processed in scheduling order, which keeps FIFO ties in send order.
            timer = self.env.timeout(deliver_at - self.env.now)
            timer.callbacks.append(lambda _event, entry=entry: self._arrive(entry))

    def _arrive(self, entry: _InFlight) -> None:
        if entry.cancelled:
            return
        del self._pending[entry.seq]
        self.delivered += 1
        entry.deliver(entry.message)

    def cancel_pending(self) -> int:
        """Drop every copy not yet delivered (the receiver failed over); return how many.

        ``deliver`` is not called for them and no fault is reported: the failover that makes them
        moot is the fault, and it is recorded by whoever caused it.
        """
        count = len(self._pending)
        for entry in self._pending.values():
            entry.cancelled = True
        self._pending.clear()
        self.dropped += count
        self.cancelled += count
        self._last_delivery_ms = self.env.now
        return count
