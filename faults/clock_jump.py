"""``clock_jump``: a clock that instant times are taken from is stepped by ``delta_ms`` (an NTP
correction; negative: back in time). Hudi's TrueTime (``HoodieInstantTimeGenerator`` with
``hoodie.write.instant.time.skew.max.ms``) is what keeps instant times monotonic through it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from faults.base import (
    MS_PER_HOUR,
    FaultKind,
    Mark,
    NemesisPort,
    Option,
    Targets,
    Wanted,
    coordinator_and_compactor,
    named_targets,
    per_hour,
)


class ClockJump(FaultKind):
    def targets(self, scenario: Any, job: Any) -> Targets:
        return coordinator_and_compactor(scenario, job)

    def fire(
        self, port: NemesisPort, target: str, options: Mapping[str, Any], index: int | None
    ) -> None:
        delta_ms = int(options["delta_ms"])
        skew_ms = port.jump_clock(target, delta_ms)
        port.record(
            self.event, {"process": target, "delta_ms": delta_ms, "skew_ms": skew_ms}, index
        )

    def wanted(self, scenario: Any) -> list[Wanted]:
        faults = scenario.faults
        if not faults.clock_jump_ms:
            return []
        targets = named_targets(self, scenario)
        return per_hour(scenario, targets, faults.clock_jump_per_hour, faults.clock_jump_ms)


KIND = ClockJump(
    name="clock_jump",
    event_target="process",
    summary="the target clock steps by delta_ms",
    hook="timed",
    event="clock_jump",
    mark=Mark("^", "#9b5de5", "clock jump"),
    options=(
        Option(
            "delta_ms",
            -MS_PER_HOUR * 24,
            MS_PER_HOUR * 24,
            "the step of the target's clock (negative: back in time)",
            required=True,
            nonzero=True,
        ),
    ),
    rates=("clock_jump_per_hour",),
    size_option="delta_ms",
    signed_size=True,
)
