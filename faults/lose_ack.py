"""``lose_ack``: a checkpoint-complete notification (the ACK Flink's checkpoint coordinator sends
to the operator coordinator, ``notifyCheckpointComplete``) is never delivered. Flink delivers it
best effort; Hudi's ``StreamWriteOperatorCoordinator`` must commit the instant later (at the next
notification, or by recommitting on restore)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from faults.base import Mark, NotificationFate, NotificationKind, Option, Wanted, per_job


class LoseAck(NotificationKind):
    def shape(
        self, fate: NotificationFate, options: Mapping[str, Any]
    ) -> tuple[NotificationFate, dict[str, Any]]:
        return replace(fate, copies=0), {}

    def wanted(self, scenario: Any) -> list[Wanted]:
        return per_job(scenario, scenario.faults.ack_loss)


CHECKPOINT = Option("checkpoint", 1, 1_000_000_000, "only the notification of this checkpoint")

KIND = LoseAck(
    name="lose_ack",
    summary="the target job's next checkpoint-complete notification is lost",
    hook="notification",
    event="drop",
    mark=Mark("X", "#c1121f", "lost ACK / message"),
    options=(CHECKPOINT,),
    aliases=("lost_ack",),
    rates=("ack_loss",),
    per_checkpoint=True,
)
