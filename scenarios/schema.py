"""The scenario file format: its schema, its validation and its error messages.

A scenario is a TOML file that users write by hand and keep in scripts, so the format is a public
contract (documented key by key in ``docs/scenarios.md``) and the error for a bad file must be
ONE line naming the file, the dotted key and what is allowed: a user fixing a typo should never
have to read a pydantic traceback. That is why validation runs through pydantic (frozen, strict,
``extra="forbid"`` models, so a misspelt key is an error instead of a silently ignored default)
but every failure leaves this module as a :class:`ScenarioError`.

Some defaults depend on the whole file rather than on one key (a job's name is ``job<i>`` by its
position, only the first job runs table services, ``failed_writes_cleaning = "auto"`` means EAGER
for one job and LAZY for several). They are filled in *before* field validation, so a validated
:class:`Scenario` holds only concrete values: the simulator never re-derives a default, and
:func:`resolved_toml` writes exactly what ran, which reads back to an equal scenario.

This layer imports nothing of ours (docs/design.md): the simulator, the CLI and the Spark sweeps all
depend on it, never the other way round.
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Self, get_args, get_origin

import tomli_w
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

__all__ = [
    "FAULT_KINDS",
    "INVARIANTS",
    "LARGE_TAG",
    "PROTOCOL_VARIANTS",
    "SCENARIO_TAGS",
    "ExpectSpec",
    "FaultSpec",
    "JobSpec",
    "ProtocolSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioInfo",
    "ScheduledFault",
    "SimSpec",
    "TableSpec",
    "TimeSpec",
    "fault_targets",
    "load_scenario",
    "parse_scenario",
    "resolved_toml",
    "scenario_from_dict",
]

INVARIANTS: tuple[str, ...] = (
    "instant_unique",
    "instant_monotonic",
    "completion_after_request",
    "commit_order",
    "exactly_once",
    "no_data_loss",
    "slicing",
    "no_uncommitted_read",
    "merge_convergence",
    "liveness",
)
"""Invariant names an ``[expect] violations`` list may use (docs/protocol.md section 9; the names are
a public contract). The one list of them: a checker added later appends its name here.
"""


class ScenarioError(Exception):
    """A scenario that cannot be used, explained in one line for the person who wrote it.

    ``source`` is the file (or ``<string>``), ``key`` the dotted path of the offending key
    (``jobs[1].instant_generation``; empty for file-level problems such as TOML syntax),
    ``message`` the problem and ``allowed`` the allowed values or range. ``line`` and ``column``
    are set for TOML syntax errors. The CLI prints ``str(error)`` and exits with code 2.
    """

    def __init__(
        self,
        source: str,
        key: str,
        message: str,
        allowed: str = "",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        # every argument goes to Exception.args so the error pickles (Spark ships exceptions)
        super().__init__(source, key, message, allowed, line, column)
        self.source = source
        self.key = key
        self.message = message
        self.allowed = allowed
        self.line = line
        self.column = column

    def __str__(self) -> str:
        parts = [self.source]
        if self.key:
            parts.append(self.key)
        elif self.line is not None:
            parts.append(f"line {self.line}, column {self.column}")
        text = ": ".join([*parts, self.message])
        if self.allowed:
            text += f" (allowed: {self.allowed})"
        return " ".join(text.split())  # one line, whatever the message holds


class _RuleViolation(ValueError):
    """A rule across keys (or a custom check) broken; carries the key to blame and what is allowed.

    Raised inside validators, where pydantic wraps it; the converter unwraps it so the one-line
    error names the key the user has to change instead of the whole scenario.
    """

    def __init__(self, message: str, *, key: str | None = None, allowed: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.allowed = allowed


# ---------------------------------------------------------------------------------------------
# value types: the constraint lives in the type, so the error text can be derived from it


def _check_invariant(name: str) -> str:
    if name not in INVARIANTS:
        raise _RuleViolation(f"unknown invariant {_show(name)}", allowed=", ".join(INVARIANTS))
    return name


Probability = Annotated[float, Field(ge=0, le=1)]
InvariantName = Annotated[str, AfterValidator(_check_invariant)]

SECONDS_PER_DAY = 86_400
MS_PER_HOUR = 3_600_000
MAX_SEED = 2**63 - 1
"""Seeds are unsigned 63-bit integers: what Spark's and parquet's int64 columns hold."""
MAX_RECORDS = 100_000_000
"""At most this many source records per run (every job's ``records_per_s`` x ``duration_s``):
a run's records live in memory."""


def _number(low: float, high: float, *, open_low: bool = False) -> Any:
    """A number in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    if open_low:
        return Annotated[float, Field(gt=low, le=high)]
    return Annotated[float, Field(ge=low, le=high)]


def _integer(low: int, high: int) -> Any:
    """An integer in ``[low, high]``."""
    return Annotated[int, Field(ge=low, le=high)]


Seconds = _number(0, SECONDS_PER_DAY, open_low=True)
"""A positive duration of at most a simulated day."""
Milliseconds = _integer(0, MS_PER_HOUR)
"""A delay or latency of at most an hour."""
PerHour = _number(0, 3600)
"""A fault rate: at most one a second."""
_SCENARIO_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.+=-]{0,199}")
_SCENARIO_NAME_RULE = (
    "letters, digits, '_', '-', and (not first) '.', '+', '=' (as grid points use them); "
    "at most 200 characters"
)


def _check_scenario_name(name: str) -> str:
    # run folders are named after the scenario: a name is never a path
    if not _SCENARIO_NAME.fullmatch(name):
        raise _RuleViolation(f"bad scenario name {_show(name)}", allowed=_SCENARIO_NAME_RULE)
    return name


ScenarioName = Annotated[str, AfterValidator(_check_scenario_name)]

RESERVED_PROCESS_NAMES = ("nemesis", "world")
"""History processes that are not jobs (faults; the world itself): no job may take these names."""
_JOB_NAME_RULE = f"a non-empty name without '/', not {' or '.join(RESERVED_PROCESS_NAMES)}"


def _check_job_name(name: str) -> str:
    # History processes are "<job>/<role>" (checkers split on the first "/"), and a job's own
    # events use the bare job name, which must not be mistaken for the nemesis or the world.
    if not name or "/" in name:
        raise _RuleViolation(
            f"job name {_show(name)} is empty or has a '/'", allowed=_JOB_NAME_RULE
        )
    if name in RESERVED_PROCESS_NAMES:
        raise _RuleViolation(f"job name {_show(name)} is reserved", allowed=_JOB_NAME_RULE)
    return name


JobName = Annotated[str, AfterValidator(_check_job_name)]

RESERVED_COLUMNS = ("key", "part", "ts", "offset", "job", "value")
"""Columns of every record (and the whole-record payload): no column group may take them."""
_COLUMN_RULE = "a lower-case identifier ([a-z][a-z0-9_]*), not " + ", ".join(RESERVED_COLUMNS)
_COLUMN_PATTERN = re.compile(r"^[a-z][a-z0-9_]*\Z")


def _check_column_name(name: str) -> str:
    if not _COLUMN_PATTERN.match(name) or name in RESERVED_COLUMNS:
        raise _RuleViolation(f"bad column name {_show(name)}", allowed=_COLUMN_RULE)
    return name


ColumnName = Annotated[str, AfterValidator(_check_column_name)]


class _Spec(BaseModel):
    """Common configuration: frozen, strict (no ``"5"`` -> 5), unknown keys and NaN rejected.

    Attribute docstrings become field descriptions, so the schema documents itself.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )


# ---------------------------------------------------------------------------------------------
# the tables


ScenarioTag = Literal["large"]
SCENARIO_TAGS: tuple[str, ...] = get_args(ScenarioTag)
"""Tags a ``[scenario] tags`` list may use (docs/scenarios.md)."""
LARGE_TAG = "large"
"""A scenario too big for the default suites and test runs (it is run by name)."""


class ScenarioInfo(_Spec):
    """``[scenario]``: what the scenario is and how long it runs."""

    name: ScenarioName
    """Identifies the scenario in reports and run folders (so it is never a path); catalog files
    use their file stem."""
    description: str = ""
    """One or two sentences on what the scenario shows, printed in the report."""
    duration_s: Seconds = 60.0
    """Simulated seconds of load and faults; then the source stops and the run drains."""
    seed: _integer(0, MAX_SEED) = 0
    """Seed of every random draw; same scenario + seed + code = the same history."""
    tags: Annotated[tuple[ScenarioTag, ...], Field(strict=False)] = ()
    """Labels that change where the scenario runs, not what it does: ``large`` (millions of
    records, minutes of CPU) keeps a catalog scenario out of the ``"*"`` suite patterns and the
    default test runs; it runs only where named (the ``large`` suite)."""


class TableSpec(_Spec):
    """``[table]``: the Hudi table all jobs write to."""

    type: Literal["MERGE_ON_READ", "COPY_ON_WRITE"] = "MERGE_ON_READ"
    """Hudi table type; NBCC between several jobs needs MERGE_ON_READ."""
    storage: Literal["memory", "local"] = "memory"
    """Where the table's files go: in memory (fast) or a real folder (readable by hudi-rs)."""
    partitions: _integer(1, 1000) = 2
    """Number of partitions records are spread over."""
    buckets_per_partition: _integer(1, 1000) = 4
    """Bucket-index buckets (file groups) per partition; a key always maps to the same bucket."""
    merge_mode: Literal["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"] = "EVENT_TIME_ORDERING"
    """Which version of a key wins when merging: highest event time, or latest commit."""


class TimeSpec(_Spec):
    """``[time]``: how instant times are generated and how wrong the clocks are."""

    generator: Literal["truetime", "local_clock", "time_service"] = "truetime"
    """Instant-time generator: Hudi's TrueTime (lock + wait out skew), a bare local clock, or a
    central time service."""
    max_expected_skew_ms: Milliseconds = 200
    """TrueTime's assumed bound on clock skew (Hudi's max expected clock skew); it waits this out."""
    clock_skew_ms: Milliseconds = 50
    """Each process's clock offset is drawn uniformly from [-clock_skew_ms, clock_skew_ms]."""
    clock_drift_ppm: _number(0, 100_000) = 0.0
    """Each process's clock rate error is drawn uniformly from [-x, x] parts per million."""
    lock_latency_ms: _integer(0, 60_000) = 5
    """Time to acquire the timeline lock that TrueTime takes."""


class JobSpec(_Spec):
    """``[[jobs]]``: one Flink job writing to the table (one coordinator, several writers).

    ``name`` and ``table_services`` default by position inside a :class:`Scenario` (``job<i>``;
    true only for the first job). Standalone, a ``JobSpec`` has the first job's defaults.
    """

    name: JobName = "job0"
    """Unique name of the job; default ``job<i>`` by position (job0, job1, ...)."""
    writers: _integer(1, 256) = 4
    """Parallelism of the write operator (number of write tasks)."""
    instant_generation: Literal["async", "blocking", "minibatch"] = "async"
    """Coordinator mode: async (Hudi 1.1), blocking (one instant at a time), minibatch (proposal)."""
    checkpoint_interval_s: _number(0.01, 3600) = 5.0
    """Flink checkpoint interval."""
    checkpoint_timeout_s: _number(0.01, SECONDS_PER_DAY) = 60.0
    """A checkpoint not complete after this long fails."""
    records_per_s: _number(0, 1_000_000, open_low=True) = 1000.0
    """Source rate of the whole job, spread over its writers by key."""
    buffer_records: _integer(1, MAX_RECORDS) = 10000
    """Records a writer buffers before an eager flush (mini-batch) between checkpoints."""
    operation: Literal["upsert", "insert"] = "upsert"
    """Write operation; insert never deduplicates, so a re-written batch shows up twice."""
    key_space: _integer(1, 1_000_000_000) = 10000
    """Number of distinct record keys the source draws from."""
    table_services: bool = True
    """Whether this job schedules and runs compaction, clean and archive; default true for the
    first job, false for the others; at most one job may run them."""
    compaction_every_commits: _integer(1, 100_000) = 5
    """Schedule a compaction after this many delta commits (MERGE_ON_READ)."""
    concurrency: Literal["nbcc", "occ"] = "nbcc"
    """Concurrency control between jobs: non-blocking (NBCC) or optimistic (OCC)."""
    columns: Annotated[tuple[ColumnName, ...], Field(strict=False)] = ()
    """Multi-stream partial updates (docs/protocol.md section 5.3): the column group this job writes (its records
    carry only these columns besides key, part, ts, offset, job); empty: whole records. When one
    job has columns every job must, and no two jobs may write the same column."""
    ordering_field: str = ""
    """The column holding this job's column-group ordering value; default ``<name>_ts`` for a job
    with ``columns``, empty (the table's ``ts``) for whole records."""


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


class ScheduledFault(_Spec):
    """One ``[[faults.schedule]]`` entry: a fault at a fixed simulated time, replayed exactly.

    Hand-placed schedules reproduce a known failure (lose the ACK of checkpoint 3, crash one
    writer), and ``testbed explore`` writes the schedules it shrinks in this form, so a
    counterexample is an ordinary scenario file. Options that do not apply to a kind stay unset
    (``None``) and are left out of the resolved TOML.
    """

    toml_array: ClassVar[str] = "[[faults.schedule]]"
    """How this table is written in TOML, for error messages."""

    at_s: _number(0, SECONDS_PER_DAY)
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


class FaultSpec(_Spec):
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
    clock_jump_ms: _integer(0, MS_PER_HOUR * 24) = 1000
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
                    raise _RuleViolation(
                        f"kind {_show(entry.kind)} takes no {option}",
                        key=f"faults.schedule[{index}].{option}",
                        allowed=allowed_keys,
                    )
            required = _KIND_REQUIRES.get(entry.kind)
            if required is not None and not getattr(entry, required):
                allowed = (
                    "an integer in [1, 3600000]" if required == "delay_ms" else "a non-zero integer"
                )
                raise _RuleViolation(
                    f"kind {_show(entry.kind)} needs {required}"
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


def _is_fault_target(scenario: Scenario, kind: str, target: str) -> bool:
    task = _TASK_TARGET.match(target)
    for job, before, writers, after in _targets_by_job(scenario, kind):
        if target in before or target in after:
            return True
        if task and task.group(1) == job and int(task.group(2)) < writers:
            return True
    return False


def _describe_targets(scenario: Scenario, kind: str) -> str:
    """The targets of ``kind`` for an error message, each job's write tasks as one range."""
    parts: list[str] = []
    for job, before, writers, after in _targets_by_job(scenario, kind):
        tasks = [f"{job}/task-0"] if writers == 1 else []
        if writers > 1:
            tasks = [f"{job}/task-0 to {job}/task-{writers - 1}"]
        parts += [*before, *tasks, *after]
    return ", ".join(parts)


class ProtocolSpec(_Spec):
    """``[protocol]``: variant switches of the protocol; the default is always the real Hudi rule.

    This class IS the list of variants: one line per switch, a ``Literal`` of its choices with
    the real rule as default. :data:`PROTOCOL_VARIANTS` is derived from it.
    """

    file_slicing: Literal["completion_time", "base_instant"] = "completion_time"
    """Place a log file by its completion time (Hudi 1.x, RFC-66) or by its base instant (0.x)."""
    slice_anchor: Literal["earliest_completed", "earliest_log"] = "earliest_completed"
    """For a file group with only log files, which log anchors its first slice: the earliest
    completed one (the fix) or the earliest whatever its state (apache/hudi#19774)."""
    archived_completion_lookup: bool = True
    """Completion-time lookup falls back to the archived timeline (true), or reads only the active
    one (false: apache/hudi#14365, logs of archived instants drop out of compaction plans)."""
    persist_write_meta: bool = True
    """A write task keeps its write-metadata events in its checkpoint state and re-sends them after
    a failover (true), or keeps nothing (false: HUDI-9570's data loss; docs/protocol.md 6.6)."""
    put_if_absent: bool = True
    """Timeline files are created only if absent, so a time collision aborts the second writer
    (true), or storage silently overwrites them (false: the collision hides a lost write)."""
    commit_scope: Literal["all_below", "latest_only"] = "all_below"
    """On the ACK for checkpoint n the coordinator commits every buffered instant below n in order
    (all_below, Flink's subsume contract), or only the newest, dropping those whose ACK was lost."""
    snapshot_partial_buffers: bool = False
    """The coordinator's checkpoint keeps only fully received event buffers (false), or also ones
    still being filled (true: apache/hudi#19215, a global failover commits them half and loses
    the rest)."""
    partial_update_merge: Literal["column_group", "row"] = "column_group"
    """Multi-stream partial updates (jobs with ``columns``): merge each column group by its own
    ordering value (column_group, the real rule: PartialUpdateAvroPayload with HUDI-4882's
    per-group ordering), or merge whole rows on ``ts`` (row: the table left as an ordinary
    EVENT_TIME_ORDERING table, so a newer record of one stream wipes the other's columns)."""
    failed_writes_cleaning: Literal["auto", "EAGER", "LAZY"] = "auto"
    """Rollback of failed writes: EAGER (before each write) or LAZY (by heartbeat expiry); auto is
    EAGER for one job and LAZY for several, resolved when the scenario is validated."""


class ExpectSpec(_Spec):
    """``[expect]``: the verdict the scenario must get; a different one fails the suite."""

    violations: Annotated[tuple[InvariantName, ...], Field(strict=False)] = ()
    """Invariants this scenario must violate (known-bad variants); all others must hold."""

    @model_validator(mode="after")
    def _no_duplicates(self) -> Self:
        seen: set[str] = set()
        for index, name in enumerate(self.violations):
            if name in seen:
                raise _RuleViolation(
                    f"{_show(name)} is listed twice",
                    key=f"expect.violations[{index}]",
                    allowed="each invariant at most once",
                )
            seen.add(name)
        return self


class SimSpec(_Spec):
    """``[sim]``: tuning knobs of the simulated world that scenarios rarely change."""

    drain_timeout_s: Seconds = 120.0
    """After duration_s, faults stop and the source stops; the run then drains until everything
    checkpointed is committed, and fails liveness if that takes longer than this."""
    restart_delay_ms: Milliseconds = 1000
    """Time from a crash to the restart of the failed task or job."""
    network_delay_ms: _integer(0, 60_000) = 2
    """One-way delay of an RPC between tasks and the coordinator."""
    storage_latency_ms: _integer(0, 60_000) = 5
    """Latency of one storage operation (create, read, list)."""
    heartbeat_interval_ms: _integer(1, MS_PER_HOUR) = 60000
    """Writer heartbeat interval (hoodie.client.heartbeat.interval_in_ms)."""
    heartbeat_tolerable_misses: _integer(1, 1000) = 2
    """Missed heartbeats before a write counts as failed, for LAZY cleaning."""
    archive_max_active: _integer(2, 100_000) = 30
    """Archive when the active timeline holds more completed instants than this."""
    archive_min_active: _integer(1, 100_000) = 20
    """Completed instants the active timeline keeps after archiving; below archive_max_active."""
    max_wall_s: _number(0, 7 * SECONDS_PER_DAY, open_low=True) = 3600.0
    """Wall-clock seconds a run may take before it is stopped as a runaway (an error, and a
    partial run folder marked as such); it never changes what a finished run records."""

    @model_validator(mode="after")
    def _archive_window(self) -> Self:
        if self.archive_min_active >= self.archive_max_active:
            raise _RuleViolation(
                f"{self.archive_min_active} is not below archive_max_active "
                f"({self.archive_max_active})",
                key="sim.archive_min_active",
                allowed=f"an integer >= 1 and < archive_max_active ({self.archive_max_active})",
            )
        return self


PROTOCOL_VARIANTS: dict[str, tuple[str | bool, ...]] = {
    name: (field.default, not field.default)
    if field.annotation is bool
    else get_args(field.annotation)
    for name, field in ProtocolSpec.model_fields.items()
}
"""Switch name -> its choices, the real rule (the default) first, derived from
:class:`ProtocolSpec` (for sweeps and reports)."""


class Scenario(_Spec):
    """A whole scenario file, validated, with every default (including positional ones) filled."""

    scenario: ScenarioInfo
    """``[scenario]``: required, because ``name`` is."""
    table: TableSpec = TableSpec()
    time: TimeSpec = TimeSpec()
    jobs: Annotated[tuple[JobSpec, ...], Field(strict=False, min_length=1)] = (JobSpec(),)
    faults: FaultSpec = FaultSpec()
    protocol: ProtocolSpec = ProtocolSpec(failed_writes_cleaning="EAGER")
    expect: ExpectSpec = ExpectSpec()
    sim: SimSpec = SimSpec()

    @model_validator(mode="before")
    @classmethod
    def _fill_contextual_defaults(cls, data: Any) -> Any:
        """Fill the defaults that depend on other keys, before the fields are validated.

        Anything malformed (``jobs`` not an array, a job not a table) is left alone for field
        validation to report with its precise key.
        """
        if not isinstance(data, dict):
            return data
        data = dict(data)
        jobs = data.get("jobs", [{}])
        if not isinstance(jobs, list | tuple):
            return data
        items = [_explicit_keys(job) for job in jobs]
        someone_explicit = any(
            item.get("table_services") is True for item in items if item is not None
        )
        filled: list[Any] = []
        for index, (job, item) in enumerate(zip(jobs, items, strict=True)):
            if item is None:
                filled.append(job)
                continue
            item.setdefault("name", f"job{index}")
            item.setdefault("table_services", index == 0 and not someone_explicit)
            if item.get("columns") and "ordering_field" not in item:
                item["ordering_field"] = f"{item['name']}_ts"
            filled.append(item)
        data["jobs"] = filled
        protocol = data.get("protocol", {})
        protocol = _explicit_keys(protocol)
        if protocol is not None:
            if protocol.get("failed_writes_cleaning", "auto") == "auto":
                protocol["failed_writes_cleaning"] = "EAGER" if len(filled) == 1 else "LAZY"
            data["protocol"] = protocol
        return data

    @model_validator(mode="after")
    def _multi_job_rules(self) -> Self:
        """Rules across jobs that Hudi itself enforces for multi-writer tables (docs/protocol.md section 7)."""
        names: dict[str, int] = {}
        for index, job in enumerate(self.jobs):
            if job.name in names:
                raise _RuleViolation(
                    f"duplicate job name {_show(job.name)} (also jobs[{names[job.name]}].name)",
                    key=f"jobs[{index}].name",
                    allowed="a name no other job has",
                )
            names[job.name] = index
        services = [index for index, job in enumerate(self.jobs) if job.table_services]
        if len(services) > 1:
            raise _RuleViolation(
                f"jobs[{services[0]}] already runs table services; only one job may",
                key=f"jobs[{services[1]}].table_services",
                allowed="true in at most one job",
            )
        if len(self.jobs) > 1:
            nbcc = [index for index, job in enumerate(self.jobs) if job.concurrency == "nbcc"]
            if nbcc and self.table.type != "MERGE_ON_READ":
                raise _RuleViolation(
                    f"{self.table.type} cannot be written by several jobs with NBCC "
                    f"(jobs[{nbcc[0]}] uses nbcc; NBCC is MERGE_ON_READ + bucket index)",
                    key="table.type",
                    allowed='MERGE_ON_READ, or concurrency = "occ" in every job',
                )
            if self.protocol.failed_writes_cleaning == "EAGER":
                raise _RuleViolation(
                    f"EAGER with {len(self.jobs)} jobs; Hudi requires LAZY for multi-writer",
                    key="protocol.failed_writes_cleaning",
                    allowed="LAZY, auto",
                )
        return self

    @model_validator(mode="after")
    def _column_group_rules(self) -> Self:
        """Multi-stream partial updates (docs/protocol.md section 5.3): every job writes its own column group of the
        same keys, on a MERGE_ON_READ table merged by event time."""
        grouped = [index for index, job in enumerate(self.jobs) if job.columns]
        for index, job in enumerate(self.jobs):
            if job.ordering_field and not job.columns:
                raise _RuleViolation(
                    "only a job with columns has its own ordering field (whole records use ts)",
                    key=f"jobs[{index}].ordering_field",
                    allowed='"" without columns',
                )
        if not grouped:
            return self
        first = grouped[0]
        owner: dict[str, str] = {}
        for index, job in enumerate(self.jobs):
            if not job.columns:
                raise _RuleViolation(
                    f"jobs[{first}] writes a column group, so every job must",
                    key=f"jobs[{index}].columns",
                    allowed="a non-empty array of column names",
                )
            if job.operation != "upsert":
                raise _RuleViolation(
                    f"{_show(job.operation)} with columns; a column group updates keys",
                    key=f"jobs[{index}].operation",
                    allowed="upsert",
                )
            named = [("ordering_field", job.ordering_field)]
            named += [(f"columns[{i}]", column) for i, column in enumerate(job.columns)]
            for where, column in named:
                key = f"jobs[{index}].{where}"
                if where == "ordering_field":
                    _check_column_name_at(column, key)
                if column in owner:
                    raise _RuleViolation(
                        f"column {_show(column)} is already written by {owner[column]}",
                        key=key,
                        allowed="a column no other job or ordering field uses",
                    )
                owner[column] = f"jobs[{index}]" + (
                    " as its ordering field" if where == "ordering_field" else ""
                )
        if self.table.type != "MERGE_ON_READ":
            raise _RuleViolation(
                f"{self.table.type} with column groups (jobs[{first}].columns); partial "
                "updates merge logs per column group",
                key="table.type",
                allowed="MERGE_ON_READ",
            )
        if self.table.merge_mode != "EVENT_TIME_ORDERING":
            raise _RuleViolation(
                f"{self.table.merge_mode} with column groups (jobs[{first}].columns); each group "
                "is merged by its ordering value",
                key="table.merge_mode",
                allowed="EVENT_TIME_ORDERING",
            )
        return self

    @model_validator(mode="after")
    def _records_fit_in_memory(self) -> Self:
        """Every job's source records together stay below :data:`MAX_RECORDS`."""
        total = sum(job.records_per_s for job in self.jobs) * self.scenario.duration_s
        if total > MAX_RECORDS:
            raise _RuleViolation(
                f"the jobs' records_per_s x duration_s is {total:.3g} records, more than a run "
                "holds in memory",
                key="scenario.duration_s",
                allowed=f"at most {MAX_RECORDS:,} records per run",
            )
        return self

    @model_validator(mode="after")
    def _fault_schedule_fits(self) -> Self:
        """Schedule entries name processes this scenario has, at times inside the run."""
        duration = _number_text(self.scenario.duration_s)
        for index, entry in enumerate(self.faults.schedule):
            if entry.at_s >= self.scenario.duration_s:
                raise _RuleViolation(
                    f"{_number_text(entry.at_s)} is not before duration_s ({duration}); "
                    "faults stop when the run drains",
                    key=f"faults.schedule[{index}].at_s",
                    allowed=f"a number >= 0 and < {duration}",
                )
            if not _is_fault_target(self, entry.kind, entry.target):
                raise _RuleViolation(
                    f"unknown target {_show(entry.target)} for kind {_show(entry.kind)}",
                    key=f"faults.schedule[{index}].target",
                    allowed=_describe_targets(self, entry.kind),
                )
        return self


def _check_column_name_at(name: str, key: str) -> None:
    if not _COLUMN_PATTERN.match(name) or name in RESERVED_COLUMNS:
        raise _RuleViolation(f"bad column name {_show(name)}", key=key, allowed=_COLUMN_RULE)


def _explicit_keys(item: Any) -> dict[str, Any] | None:
    """The keys a user actually gave for one table (dict from TOML, or a model built in Python)."""
    if isinstance(item, dict):
        return dict(item)
    if isinstance(item, BaseModel):
        return {name: getattr(item, name) for name in item.model_fields_set}
    return None


# ---------------------------------------------------------------------------------------------
# reading and writing


def load_scenario(
    path: str | Path, *, seed: int | None = None, storage: str | None = None
) -> Scenario:
    """Read and validate a scenario file; ``seed`` and ``storage`` override the file (CLI flags).

    Overrides go through the same validation as the file, so ``--seed -1`` gets the same one-line
    error as ``seed = -1`` would.
    """
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as error:
        raise ScenarioError(
            source, "", f"cannot read the file: {error.strerror or error}"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ScenarioError(
            source, "", f"not UTF-8 text (byte {error.start})", "a UTF-8 TOML file"
        ) from None
    return parse_scenario(text, source, seed=seed, storage=storage)


def parse_scenario(
    text: str,
    source: str = "<string>",
    *,
    seed: int | None = None,
    storage: str | None = None,
) -> Scenario:
    """Validate scenario TOML text; ``source`` names it in errors (a file path or ``<string>``)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise _syntax_error(source, error) from None
    return scenario_from_dict(data, source, seed=seed, storage=storage)


def scenario_from_dict(
    data: dict[str, Any],
    source: str = "<dict>",
    *,
    seed: int | None = None,
    storage: str | None = None,
) -> Scenario:
    """Validate an already parsed scenario (as TOML would give it); errors as :class:`ScenarioError`.

    For generators (property tests, sweeps) that build scenarios as data rather than text.
    """
    data = dict(data)
    overrides: dict[str, str] = {}
    if seed is not None:
        _override(data, "scenario", "seed", seed)
        overrides["scenario.seed"] = "--seed"
    if storage is not None:
        _override(data, "table", "storage", storage)
        overrides["table.storage"] = "--storage"
    try:
        return Scenario.model_validate(data)
    except ValidationError as error:
        converted = _convert(source, error)
        flag = overrides.get(converted.key)
        if flag is None:
            raise converted from None
        raise ScenarioError(
            source, converted.key, f"{converted.message} (given by {flag})", converted.allowed
        ) from None


def _override(data: dict[str, Any], table: str, key: str, value: object) -> None:
    """Set ``[table] key`` in raw data; a malformed table is left for validation to report."""
    section = data.get(table, {})
    if isinstance(section, dict):
        data[table] = {**section, key: value}


def resolved_toml(scenario: Scenario) -> str:
    """The scenario with every default filled in, as TOML that reads back to an equal scenario.

    Written beside each run so the run can be repeated exactly, whatever defaults change later.
    Keys come in schema order, so equal scenarios give byte-identical text.
    """
    # mode="json" turns tuples into lists: tomli-w writes a list of dicts as [[jobs]] tables
    return tomli_w.dumps(scenario.model_dump(mode="json"))


# ---------------------------------------------------------------------------------------------
# pydantic errors -> one line

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def _syntax_error(source: str, error: tomllib.TOMLDecodeError) -> ScenarioError:
    """TOML syntax error with line and column (Python 3.11 only has them in the message)."""
    text = str(error)
    match = _TOML_POSITION.search(text)
    if match is None:
        return ScenarioError(source, "", f"invalid TOML: {text}")
    return ScenarioError(
        source,
        "",
        f"invalid TOML: {text[: match.start()]}",
        line=int(match.group(1)),
        column=int(match.group(2)),
    )


def _convert(source: str, error: ValidationError) -> ScenarioError:
    """The first pydantic error, rephrased as key + problem + what is allowed."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    kind = first["type"]
    value = first.get("input")
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, _RuleViolation):
        key = cause.key or _dotted(loc)
        allowed = cause.allowed or _allowed(_resolve(loc))
        return ScenarioError(source, key, cause.message, allowed)
    if kind == "extra_forbidden":
        parent = _model_of(_resolve(loc[:-1]))
        keys = ", ".join(parent.model_fields) if parent is not None else ""
        if not loc[:-1]:
            return ScenarioError(source, _dotted(loc), f"unknown table [{loc[-1]}]", keys)
        return ScenarioError(source, _dotted(loc), f"unknown key {_show(loc[-1])}", keys)
    target = _resolve(loc)
    allowed = _allowed(target)
    key = _dotted(loc)
    if kind == "missing":
        what = "table" if _model_of(target) is not None else "key"
        return ScenarioError(source, key, f"required {what} is missing", allowed)
    if kind == "literal_error":
        return ScenarioError(source, key, f"unknown value {_show(value)}", allowed)
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        return ScenarioError(source, key, f"{_show(value)} is out of range", allowed)
    if kind == "finite_number":
        return ScenarioError(source, key, f"{_show(value)} is not a finite number", allowed)
    if kind == "too_short" and loc == ("jobs",):
        return ScenarioError(source, key, "no [[jobs]] table", allowed)
    if kind == "string_too_short":
        return ScenarioError(source, key, "must not be empty", allowed)
    if kind in _TYPE_NOUNS:
        noun = "an array of tables [[jobs]]" if loc == ("jobs",) else _TYPE_NOUNS[kind]
        return ScenarioError(source, key, f"expected {noun}, got {_show(value)}", allowed)
    return ScenarioError(source, key, first["msg"], allowed)


_TYPE_NOUNS = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
    "tuple_type": "an array",
}
"""Pydantic's type-error kinds -> the TOML kind of value that was expected."""


def _dotted(loc: tuple[int | str, ...]) -> str:
    """``('jobs', 1, 'writers')`` -> ``jobs[1].writers``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _resolve(loc: tuple[int | str, ...]) -> Any:
    """The schema node a location points at: a model class, or a field (its FieldInfo), or an
    array element's annotation; ``None`` when the location leaves the schema."""
    node: Any = Scenario
    for part in loc:
        annotation = node.annotation if isinstance(node, FieldInfo) else node
        if isinstance(part, str) and _is_model(annotation) and part in annotation.model_fields:
            node = annotation.model_fields[part]
        elif isinstance(part, int) and get_origin(annotation) is tuple:
            node = get_args(annotation)[0]
        else:
            return None
    return node


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _model_of(node: Any) -> type[BaseModel] | None:
    """The table (model class) a schema node stands for, if it is one."""
    annotation = node.annotation if isinstance(node, FieldInfo) else node
    return annotation if _is_model(annotation) else None


def _allowed(node: Any) -> str:
    """What a schema node accepts, phrased for a person writing TOML."""
    if node is None:
        return ""
    model = _model_of(node)
    if model is not None:
        return "a table with keys " + ", ".join(model.model_fields)
    if isinstance(node, FieldInfo):
        annotation, metadata = node.annotation, list(node.metadata)
    elif get_origin(node) is Annotated:
        annotation, *metadata = get_args(node)
    else:
        annotation, metadata = node, []
    if get_origin(annotation) is UnionType:  # an optional key: describe the value it takes
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if any(getattr(item, "func", None) is _check_invariant for item in metadata):
        return ", ".join(INVARIANTS)
    if get_origin(annotation) is Literal:
        return ", ".join(str(choice) for choice in get_args(annotation))
    if get_origin(annotation) is tuple:
        element = get_args(annotation)[0]
        if _is_model(element):
            return f"one or more {getattr(element, 'toml_array', '[[jobs]]')} tables"
        return "an array of: " + _allowed(element)
    if annotation is bool:
        return "true, false"
    if annotation is str:
        return "a non-empty string" if _bound(metadata, "min_length") else "a string"
    noun = {int: "an integer", float: "a number"}.get(annotation, str(annotation))
    low, high, above = (_bound(metadata, name) for name in ("ge", "le", "gt"))
    if low is not None and high is not None:
        return f"{noun} in [{_number_text(low)}, {_number_text(high)}]"
    if above is not None and high is not None:
        return f"{noun} > {_number_text(above)} and <= {_number_text(high)}"
    if above is not None:
        return f"{noun} > {_number_text(above)}"
    if low is not None:
        return f"{noun} >= {_number_text(low)}"
    return noun


def _bound(metadata: list[Any], name: str) -> Any:
    """A constraint's value from field metadata (pydantic keeps ``Ge(ge=0)``-style objects)."""
    for item in metadata:
        value = getattr(item, name, None)
        if value is not None:
            return value
    return None


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _show(value: object) -> str:
    """A value as the user wrote it in TOML (strings quoted, tables and arrays named)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)
