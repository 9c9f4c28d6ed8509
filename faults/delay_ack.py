"""``delay_ack``: a checkpoint-complete notification arrives ``delay_ms`` later than it would.
A late notification can overtake nothing on the FIFO channel but lets the next checkpoint's
barriers, flushes and instant requests happen first."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from faults.base import (
    MS_PER_HOUR,
    HistoryContext,
    Mark,
    NotificationFate,
    NotificationKind,
    Option,
    Wanted,
    per_job,
)
from faults.lose_ack import CHECKPOINT


class DelayAck(NotificationKind):
    def shape(
        self, fate: NotificationFate, options: Mapping[str, Any]
    ) -> tuple[NotificationFate, dict[str, Any]]:
        delay_ms = int(options["delay_ms"])
        return replace(fate, extra_delay_ms=delay_ms), {"delay_ms": delay_ms}

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        return None  # random delays (ack_delay_ms) hit every notification and record nothing

    def wanted(self, scenario: Any) -> list[Wanted]:
        bound = scenario.faults.ack_delay_ms
        return [replace(w, bound=bound) for w in per_job(scenario, 1.0 if bound else 0.0)]


KIND = DelayAck(
    name="delay_ack",
    summary="the target job's next checkpoint-complete notification arrives delay_ms later",
    hook="notification",
    event="delay",
    mark=Mark("d", "#ff9f1c", "delayed ACK"),
    options=(
        CHECKPOINT,
        Option("delay_ms", 1, MS_PER_HOUR, "how much later it arrives", required=True),
    ),
    aliases=("delayed_ack",),
    rates=("ack_delay_ms",),
    per_checkpoint=True,
    size_option="delay_ms",
)
