"""``[faults]``: the random fault rates and the ``[[faults.schedule]]`` entries, and which
processes each kind of scheduled fault may target (docs/scenarios.md, "Fault schedules")."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import Field, model_serializer, model_validator

from scenarios.errors import RuleViolation, show
from scenarios.fields import (
    MS_PER_HOUR,
    SECONDS_PER_DAY,
    Milliseconds,
    PerHour,
    Probability,
    Spec,
    integer_in,
    number_in,
)

if TYPE_CHECKING:
    from scenarios.schema import Scenario


FaultKind = Literal[
    "crash",
    "lose_ack",
    "delay_ack",
    "duplicate_ack",
    "fail_checkpoint",
    "clock_jump",
    "storage_failure",
]
FAULT_KINDS: tuple[str, ...] = get_args(FaultKind)
"""Kinds of ``[[faults.schedule]]`` entries (docs/scenarios.md, "Fault schedules")."""

_JOB_TARGETED = ("lose_ack", "delay_ack", "duplicate_ack", "fail_checkpoint")
"""Kinds aimed at a whole job (its checkpoint coordinator); they may name a ``checkpoint``."""
_KIND_OPTIONS: dict[str, tuple[str, ...]] = {
    "crash": (),
    "lose_ack": ("checkpoint",),
    "delay_ack": ("checkpoint", "delay_ms"),
    "duplicate_ack": ("checkpoint",),
    "fail_checkpoint": ("checkpoint",),
    "clock_jump": ("delta_ms",),
    "storage_failure": (),
}
"""The optional keys each kind takes besides ``at_s``, ``kind``, ``target``."""
_KIND_REQUIRES: dict[str, str] = {"delay_ack": "delay_ms", "clock_jump": "delta_ms"}


class ScheduledFault(Spec):
    """One ``[[faults.schedule]]`` entry: a fault at a fixed simulated time, replayed exactly.

    Hand-placed schedules reproduce a known failure (lose the ACK of checkpoint 3, crash one
    writer), and ``testbed explore`` writes the schedules it shrinks in this form, so a
    counterexample is an ordinary scenario file. Options that do not apply to a kind stay unset
    (``None``) and are left out of the resolved TOML.
    """

    toml_array: ClassVar[str] = "[[faults.schedule]]"
    """How this table is written in TOML, for error messages."""

    at_s: number_in(0, SECONDS_PER_DAY)
    """Simulated seconds from the start of the run; below ``[scenario] duration_s``."""
    kind: FaultKind
    """What happens (see :data:`FAULT_KINDS`)."""
    target: Annotated[str, Field(min_length=1)]
    """Whom it happens to: a job name or a process ``<job>/task-<i>``, ``<job>/coordinator``,
    ``<job>/compactor``; which ones a kind accepts is checked against the scenario's jobs."""
    checkpoint: Annotated[int | None, Field(ge=1, le=1_000_000_000)] = None
    """ACK and checkpoint kinds: only the checkpoint with this id (default: the first one)."""
    delay_ms: Annotated[int | None, Field(ge=1, le=MS_PER_HOUR)] = None
    """``delay_ack``: how much later the notification arrives."""
    delta_ms: Annotated[int | None, Field(ge=-MS_PER_HOUR * 24, le=MS_PER_HOUR * 24)] = None
    """``clock_jump``: the step of the target's clock (negative: back in time); not 0."""

    @model_serializer(mode="wrap")
    def _leave_out_unset_options(self, handler: Any) -> dict[str, Any]:
        # TOML has no null: an option a kind does not take is simply absent
        return {key: value for key, value in handler(self).items() if value is not None}


class FaultSpec(Spec):
    """``[faults]``: what the nemesis does; all off by default. Faults stop after duration_s.

    Random faults (the rates) and the explicit ``schedule`` run side by side; each draws from its
    own random stream, so adding a schedule entry never changes the random faults.
    """

    ack_loss: Probability = 0.0
    """Probability that a checkpoint-complete notification (the ACK) is never delivered."""
    ack_delay_ms: Milliseconds = 0
    """Extra delay of every delivered checkpoint-complete notification."""
    ack_duplicate: Probability = 0.0
    """Probability that a checkpoint-complete notification is delivered twice."""
    checkpoint_failure: Probability = 0.0
    """Probability that a checkpoint fails (no notification; the next one subsumes it)."""
    writer_crash_per_hour: PerHour = 0.0
    """Rate of write-task crashes per hour (each crash restores the job from its last checkpoint)."""
    coordinator_crash_per_hour: PerHour = 0.0
    """Rate of job-manager (coordinator) crashes per hour (global failover)."""
    storage_write_failure: Probability = 0.0
    """Probability that one storage write fails."""
    clock_jump_per_hour: PerHour = 0.0
    """Rate of clock steps (NTP corrections) per hour, each on one clock that takes instant times."""
    clock_jump_ms: integer_in(0, MS_PER_HOUR * 24) = 1000
    """Size bound of a random clock step: uniform in [-clock_jump_ms, clock_jump_ms], never 0."""
    schedule: Annotated[tuple[ScheduledFault, ...], Field(strict=False)] = ()
    """Explicit faults at fixed times (``[[faults.schedule]]``), replayed exactly."""

    @model_validator(mode="after")
    def _options_fit_their_kind(self) -> Self:
        for index, entry in enumerate(self.schedule):
            options = _KIND_OPTIONS[entry.kind]
            allowed_keys = ", ".join(("at_s", "kind", "target", *options))
            for option in ("checkpoint", "delay_ms", "delta_ms"):
                if getattr(entry, option) is not None and option not in options:
                    raise RuleViolation(
                        f"kind {show(entry.kind)} takes no {option}",
                        key=f"faults.schedule[{index}].{option}",
                        allowed=allowed_keys,
                    )
            required = _KIND_REQUIRES.get(entry.kind)
            if required is not None and not getattr(entry, required):
                allowed = (
                    "an integer in [1, 3600000]" if required == "delay_ms" else "a non-zero integer"
                )
                raise RuleViolation(
                    f"kind {show(entry.kind)} needs {required}"
                    + (" other than 0" if getattr(entry, required) == 0 else ""),
                    key=f"faults.schedule[{index}].{required}",
                    allowed=allowed,
                )
        return self


def fault_targets(scenario: Scenario, kind: str) -> tuple[str, ...]:
    """The targets a ``[[faults.schedule]]`` entry of ``kind`` may name in ``scenario``.

    ACK and checkpoint faults hit a job; crashes a write task or the coordinator; clock jumps a
    clock that instant times are taken from (each job's coordinator, and the compactor of the
    job running table services on a MERGE_ON_READ table); storage failures a job (any of its
    processes) or one of those processes. Ordered by job, as the scenario lists them.
    """
    targets: list[str] = []
    for job, before, writers, after in _targets_by_job(scenario, kind):
        targets += [*before, *(f"{job}/task-{i}" for i in range(writers)), *after]
    return tuple(targets)


def _targets_by_job(scenario: Scenario, kind: str) -> list[tuple[str, list[str], int, list[str]]]:
    """Per job: the named targets, how many write tasks are targets, more named targets.

    Tasks are counted rather than listed, so checking a target costs nothing even for a job
    with a million writers.
    """
    if kind not in FAULT_KINDS:
        raise ValueError(f"unknown fault kind {kind!r}")
    rows = []
    for job in scenario.jobs:
        name, coordinator = job.name, f"{job.name}/coordinator"
        compactor = (
            [f"{name}/compactor"]
            if job.table_services and scenario.table.type == "MERGE_ON_READ"
            else []
        )
        if kind in _JOB_TARGETED:
            rows.append((name, [name], 0, []))
        elif kind == "crash":
            rows.append((name, [coordinator], job.writers, []))
        elif kind == "clock_jump":
            rows.append((name, [coordinator, *compactor], 0, []))
        else:  # storage_failure
            rows.append((name, [name, coordinator], job.writers, compactor))
    return rows


_TASK_TARGET = re.compile(r"^(.+)/task-(0|[1-9][0-9]*)$")


def is_fault_target(scenario: Scenario, kind: str, target: str) -> bool:
    task = _TASK_TARGET.match(target)
    for job, before, writers, after in _targets_by_job(scenario, kind):
        if target in before or target in after:
            return True
        if task and task.group(1) == job and int(task.group(2)) < writers:
            return True
    return False


def describe_targets(scenario: Scenario, kind: str) -> str:
    """The targets of ``kind`` for an error message, each job's write tasks as one range."""
    parts: list[str] = []
    for job, before, writers, after in _targets_by_job(scenario, kind):
        tasks = [f"{job}/task-0"] if writers == 1 else []
        if writers > 1:
            tasks = [f"{job}/task-0 to {job}/task-{writers - 1}"]
        parts += [*before, *tasks, *after]
    return ", ".join(parts)
