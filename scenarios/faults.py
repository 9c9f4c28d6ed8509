"""``[faults]``: the random fault rates and the ``[[faults.schedule]]`` entries, and which
processes each kind of scheduled fault may target (docs/scenarios.md, "Fault schedules")."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import ConfigDict, Field, model_serializer, model_validator

from faults import FAULT_KINDS, KINDS, canonical_name, fault_kind
from faults.rescale import MAX_WRITERS as MAX_RESCALE_WRITERS
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


FaultKind = Literal[FAULT_KINDS]  # type: ignore[valid-type]
"""A ``[[faults.schedule]]`` entry's ``kind``: one of :data:`faults.FAULT_KINDS` (older names of a
kind are read as its one name)."""

_DECLARED_OPTIONS = ("checkpoint", "delay_ms", "delta_ms")
"""Kind options declared as fields below (documented in the schema); other kinds' options are
checked against their :class:`faults.base.Option` alone."""


class ScheduledFault(Spec):
    """One ``[[faults.schedule]]`` entry: a fault at a fixed simulated time, replayed exactly.

    Hand-placed schedules reproduce a known failure (lose the ACK of checkpoint 3, crash one
    writer), and ``testbed explore`` writes the schedules it shrinks in this form, so a
    counterexample is an ordinary scenario file. Options that do not apply to a kind stay unset
    (``None``) and are left out of the resolved TOML. What each kind does and takes is its module
    in ``faults/``.
    """

    model_config = ConfigDict(extra="allow")

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

    @model_validator(mode="before")
    @classmethod
    def _one_name_per_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("kind"), str):
            canonical = canonical_name(data["kind"])
            if canonical is not None and canonical != data["kind"]:
                return {**data, "kind": canonical}
        return data

    def options(self) -> dict[str, Any]:
        """The kind options this entry sets (declared or not)."""
        declared = {name: getattr(self, name) for name in _DECLARED_OPTIONS}
        given = {**declared, **(self.model_extra or {})}
        return {name: value for name, value in given.items() if value is not None}

    def option(self, name: str) -> Any:
        """One option's value (None when unset)."""
        return self.options().get(name)

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
    rescale_per_hour: PerHour = 0.0
    """Rate of rescales per hour: a random job restarts from its last checkpoint with a random
    number of write tasks."""
    rescale_max_writers: integer_in(1, MAX_RESCALE_WRITERS) = 8
    """Upper bound of a random rescale's write tasks: uniform in [1, rescale_max_writers]."""
    pause_per_hour: PerHour = 0.0
    """Rate of process pauses per hour (a long GC), each on one coordinator or compactor."""
    writer_pause_per_hour: PerHour = 0.0
    """Rate of write-task pauses per hour (a long GC of a TaskManager), each on one write task of
    a random job."""
    pause_max_ms: integer_in(1, MS_PER_HOUR) = 2000
    """Upper bound of a random pause (any pause rate): uniform in [1, pause_max_ms]."""
    write_error_per_hour: PerHour = 0.0
    """Rate of record write errors per hour: each arms one random write task of a random job,
    whose next flush with records then fails its first record (kind ``write_error``)."""
    restore_crash_per_hour: PerHour = 0.0
    """Rate of crashes at restore per hour: each arms one random write task of a random job,
    which fails at its next restore, before its bootstrap event (kind ``restore_crash``)."""
    taskmanager_pause_per_hour: PerHour = 0.0
    """Rate of TaskManager pauses per hour: each arms a random job, whose write tasks all stop
    for a random time in [1, pause_max_ms] from the next instant its coordinator starts (kind
    ``taskmanager_pause``)."""
    schedule: Annotated[tuple[ScheduledFault, ...], Field(strict=False)] = ()
    """Explicit faults at fixed times (``[[faults.schedule]]``), replayed exactly."""

    @model_validator(mode="after")
    def _options_fit_their_kind(self) -> Self:
        for index, entry in enumerate(self.schedule):
            _check_options(entry, f"faults.schedule[{index}]")
        return self


def _check_options(entry: ScheduledFault, where: str) -> None:
    """Each option of ``entry`` is one its kind takes, in range; each required one is set."""
    kind = fault_kind(entry.kind)
    for option in kind.options:
        value = entry.option(option.name)
        if option.required and not value:
            raise RuleViolation(
                f"kind {show(entry.kind)} needs {option.name}"
                + (" other than 0" if value == 0 else ""),
                key=f"{where}.{option.name}",
                allowed=option.allowed(),
            )
    allowed_keys = ", ".join(("at_s", "kind", "target", *(o.name for o in kind.options)))
    for name, value in entry.options().items():
        option = kind.option(name)
        if option is None:
            known = name in _DECLARED_OPTIONS or any(k.option(name) for k in KINDS)
            problem = f"kind {show(entry.kind)} takes no {name}" if known else None
            raise RuleViolation(
                problem or f"unknown key {show(name)}", key=f"{where}.{name}", allowed=allowed_keys
            )
        if not option.fits(value):
            what = "is out of range" if type(value) is int else "is not an integer"
            raise RuleViolation(
                f"{show(value)} {what}", key=f"{where}.{name}", allowed=option.allowed()
            )


def fault_targets(scenario: Scenario, kind: str) -> tuple[str, ...]:
    """The targets a ``[[faults.schedule]]`` entry of ``kind`` may name in ``scenario`` (each
    kind's ``targets`` in ``faults/``), ordered by job as the scenario lists them."""
    targets: list[str] = []
    for job, before, writers, after in _targets_by_job(scenario, kind):
        targets += [*before, *(f"{job}/task-{i}" for i in range(writers)), *after]
    return tuple(targets)


def _targets_by_job(
    scenario: Scenario, kind: str
) -> list[tuple[str, tuple[str, ...], int, tuple[str, ...]]]:
    """Per job: the named targets, how many write tasks are targets, more named targets.

    Tasks are counted rather than listed, so checking a target costs nothing even for a job
    with a million writers.
    """
    try:
        fault = fault_kind(kind)
    except KeyError:
        raise ValueError(f"unknown fault kind {kind!r}") from None
    rows = []
    for job in scenario.jobs:
        targets = fault.targets(scenario, job)
        rows.append((job.name, targets.before, targets.writers, targets.after))
    return rows


_TASK_TARGET = re.compile(r"(.+)/task-(0|[1-9][0-9]*)", re.DOTALL)
"""A write task's target (a job name may hold any character, a newline too)."""


def is_fault_target(scenario: Scenario, kind: str, target: str) -> bool:
    task = _TASK_TARGET.fullmatch(target)
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
