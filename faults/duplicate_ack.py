"""``duplicate_ack``: a checkpoint-complete notification is delivered twice, back to back (a
retried RPC). Hudi's coordinator must commit an instant once however often it is told."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from faults.base import Mark, NotificationFate, NotificationKind, Wanted, per_job
from faults.lose_ack import CHECKPOINT


class DuplicateAck(NotificationKind):
    def shape(
        self, fate: NotificationFate, options: Mapping[str, Any]
    ) -> tuple[NotificationFate, dict[str, Any]]:
        return replace(fate, copies=2), {}

    def wanted(self, scenario: Any) -> list[Wanted]:
        return per_job(scenario, scenario.faults.ack_duplicate)


KIND = DuplicateAck(
    name="duplicate_ack",
    summary="the target job's next checkpoint-complete notification is delivered twice",
    hook="notification",
    event="duplicate",
    mark=Mark("P", "#ff9f1c", "duplicated ACK / message"),
    options=(CHECKPOINT,),
    aliases=("duplicated_ack",),
    rates=("ack_duplicate",),
    per_checkpoint=True,
)
