"""What a fault kind is: the one interface every ``[[faults.schedule]]`` kind implements.

A kind is one module of this package holding one :class:`FaultKind`. It says everything the rest
of the testbed needs about it, so adding a kind touches its module, its test and the docs:

- its one name (the scenario's ``kind``, the plots' legend key, the docs) and older names still
  read in scenario files;
- its options (schedule keys besides ``at_s``, ``kind``, ``target``) with their ranges;
- whom it may hit in a scenario (:meth:`FaultKind.targets`);
- when the nemesis fires it (:data:`Hook`) and what it does then (:meth:`FaultKind.fire` for
  the timed kinds, through the narrow :class:`NemesisPort`);
- the history event it records (``nemesis`` process, event ``f``);
- the ``[faults]`` rate keys that make random faults of it, and how ``testbed explore`` draws
  schedule entries of it instead (:meth:`FaultKind.wanted`, :meth:`FaultKind.draw_options`);
- how a random fault of it is read back from a history as a schedule entry
  (:meth:`FaultKind.from_event`), which is what ``minimize`` starts from;
- its mark on the swimlane plot.

This package sits below ``scenarios`` (the scenario format needs every kind's keys) and above
``models``; the simulator, explore, minimize and the plots read the same modules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn

Hook = Literal[
    "timed", "notification", "checkpoint", "storage_write", "flush", "restore", "instant"
]
"""When the nemesis fires a scheduled entry of a kind:

- ``timed``: at ``at_s`` exactly (:meth:`FaultKind.fire`);
- ``notification``: on the first checkpoint-complete notification the target job sends at or
  after ``at_s`` (with ``checkpoint = N``: the one for checkpoint N);
- ``checkpoint``: on the first checkpoint triggered at or after ``at_s`` that gets all its ACKs;
- ``storage_write``: on the first storage write at or after ``at_s`` by the target process (or by
  any process of the target job);
- ``flush``: on the first flush with records that the target write task starts at or after
  ``at_s``;
- ``restore``: on the first restore (start) of the target write task at or after ``at_s``,
  before it sends its bootstrap event;
- ``instant``: on the first instant the target job's coordinator starts at or after ``at_s``.
"""

MS_PER_HOUR = 3_600_000


@dataclass(frozen=True)
class Option:
    """One schedule key a kind takes besides ``at_s``, ``kind``, ``target``: an integer in
    ``[low, high]`` (never 0 when ``nonzero``), required or not."""

    name: str
    low: int
    high: int
    doc: str
    required: bool = False
    nonzero: bool = False

    def allowed(self) -> str:
        """The rule in words, for error messages and the docs."""
        text = f"an integer in [{self.low}, {self.high}]"
        return f"a non-zero integer in [{self.low}, {self.high}]" if self.nonzero else text

    def fits(self, value: Any) -> bool:
        return (
            type(value) is int
            and self.low <= value <= self.high
            and not (self.nonzero and value == 0)
        )


@dataclass(frozen=True)
class Mark:
    """How the swimlane plot marks a fault of the kind: a matplotlib marker, its colour, the
    legend's label."""

    marker: str
    color: str
    label: str


@dataclass(frozen=True)
class Targets:
    """The targets of a kind in one job: named processes, then the first ``writers`` write tasks
    (``<job>/task-<i>``, counted, not listed), then more named processes."""

    before: tuple[str, ...] = ()
    writers: int = 0
    after: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plan:
    """How explore draws entries of one kind: up to ``max_entries`` among ``targets``; ``bound``
    is the upper bound of the kind's size option (a delay, a clock step, a pause)."""

    kind: str
    targets: tuple[str, ...]
    max_entries: int
    bound: int = 0


@dataclass(frozen=True)
class Wanted:
    """A kind's share of the faults a scenario's rates imply: ``expected`` faults over the run
    among ``targets``, sized up to ``bound``; explore turns it into a :class:`Plan`."""

    targets: tuple[str, ...]
    expected: float
    bound: int = 0


@dataclass(frozen=True)
class HistoryContext:
    """What reading a history's fault events back needs: the scenario's job names and the
    checkpoint each job completed last before the event."""

    jobs: tuple[str, ...]
    last_checkpoint: Mapping[str, int]


class NemesisPort(Protocol):
    """What a timed kind may do to the world when it fires."""

    def record(self, event: str, value: dict[str, Any], index: int | None) -> None:
        """Record a ``nemesis`` history event (``index``: the schedule entry behind it)."""

    def crash(self, target: str) -> None:
        """Fail the target's job as a crash of ``target``: a write task's is a task failure
        (its region restarts, or the whole job under ``failover = "full"``), the coordinator's
        a JobManager failover."""

    def rescale(self, target: str, writers: int) -> None:
        """Restart the target job from its last checkpoint with ``writers`` write tasks."""

    def jump_clock(self, target: str, delta_ms: int) -> int:
        """Step the target's clock by ``delta_ms``; its skew afterwards."""

    def pause(self, target: str, duration_ms: int) -> None:
        """Stop the target process at its next protocol step for ``duration_ms``."""

    def job_restarting(self, target: str) -> bool:
        """Whether the target's job is down and restarting."""


@dataclass(frozen=True)
class FaultKind:
    """One kind of scheduled fault (see the module's docstring). Subclasses override the
    methods their hook needs."""

    name: str
    summary: str
    hook: Hook
    event: str
    mark: Mark | None
    """Its swimlane mark (None: the plot shows it otherwise)."""
    options: tuple[Option, ...] = ()
    aliases: tuple[str, ...] = ()
    rates: tuple[str, ...] = ()
    per_checkpoint: bool = False
    """Entries name a ``checkpoint`` of a job (ACK and checkpoint kinds) rather than a time."""
    size_option: str | None = None
    """The option explore draws largest first, bounded by :attr:`Plan.bound`."""
    signed_size: bool = False
    """The size option may be negative (drawn with a random sign)."""
    event_target: str | None = None
    """The key of its history event's value that names the target: set, a recorded fault
    replays as an entry at its time (:func:`timed_entry`), which the default
    :meth:`from_event` returns."""

    def option(self, name: str) -> Option | None:
        return next((option for option in self.options if option.name == name), None)

    def targets(self, scenario: Any, job: Any) -> Targets:
        """Whom an entry may name in ``job`` (a ``[[jobs]]`` spec) of ``scenario``."""
        raise NotImplementedError

    def fire(self, port: NemesisPort, target: str, options: Mapping[str, Any], index: int | None):
        """A ``timed`` kind's action at ``at_s`` (and a random fault's, with ``index`` None)."""
        raise NotImplementedError(f"{self.name} is not a timed kind")

    def wanted(self, scenario: Any) -> list[Wanted]:
        """The faults the scenario's random rates imply for this kind (none by default)."""
        return []

    def draw_options(self, plan: Plan, draw: DrawFn) -> dict[str, Any]:
        """The options of one drawn entry: the size option largest first, up to ``plan.bound``."""
        if self.size_option is None:
            return {}
        from hypothesis import strategies as st

        magnitude = plan.bound - draw(st.integers(min_value=0, max_value=plan.bound - 1))
        if self.signed_size and draw(st.booleans()):
            magnitude = -magnitude
        return {self.size_option: magnitude}

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        """The schedule entry that replays a random fault recorded as ``value`` (None when it
        cannot be replayed as one)."""
        if self.event_target is None:
            return None
        return timed_entry(self, value, at_s, self.event_target)


def job_target(job: Any) -> Targets:
    """A kind aimed at a whole job (its checkpoint coordinator)."""
    return Targets(before=(job.name,))


def checkpoints_in_run(scenario: Any, job: Any, rate: float) -> float:
    """Expected faults of a per-checkpoint ``rate`` over the run of ``job``."""
    return rate * scenario.scenario.duration_s / job.checkpoint_interval_s


def per_job(scenario: Any, rate: float) -> list[Wanted]:
    """One :class:`Wanted` per job for a per-checkpoint rate."""
    return [
        Wanted((job.name,), checkpoints_in_run(scenario, job, rate))
        for job in scenario.jobs
        if rate > 0
    ]


def per_hour(scenario: Any, targets: Sequence[str], rate: float, bound: int = 0) -> list[Wanted]:
    """One :class:`Wanted` for a rate per hour of the run among ``targets`` (none at rate 0)."""
    if rate <= 0:
        return []
    hours = scenario.scenario.duration_s / 3600
    return [Wanted(tuple(targets), rate * hours, bound)]


def named_targets(kind: FaultKind, scenario: Any) -> list[str]:
    """The named processes ``kind`` may hit in every job of ``scenario``."""
    return [target for job in scenario.jobs for target in kind.targets(scenario, job).before]


def timed_entry(kind: FaultKind, value: Mapping[str, Any], at_s: float, target: str) -> dict:
    """The schedule entry that replays a timed fault from its history event ``value``: the
    target under the event's key ``target``, and the kind's size option."""
    entry = {"at_s": at_s, "kind": kind.name, "target": value[target]}
    if kind.size_option is not None:
        entry[kind.size_option] = value[kind.size_option]
    return entry


def has_compactor(scenario: Any, job: Any) -> bool:
    """Whether ``job`` runs a compactor process (table services on a MERGE_ON_READ table)."""
    return bool(job.table_services) and scenario.table.type == "MERGE_ON_READ"


def coordinator_and_compactor(scenario: Any, job: Any) -> Targets:
    """The processes of ``job`` that take instant times and drive protocol steps under the table
    lock: its coordinator, and its compactor if it has one."""
    compactor = (f"{job.name}/compactor",) if has_compactor(scenario, job) else ()
    return Targets(before=(f"{job.name}/coordinator", *compactor))


def notification_entry(
    kind: str, value: dict[str, Any], context: HistoryContext
) -> dict[str, Any] | None:
    """The entry for a random fault on a checkpoint-complete notification: the checkpoint the
    event names, or (histories from before events named it) the one the job completed last."""
    if value.get("message") != "CheckpointComplete":
        return None
    job = str(value.get("channel", "")).rsplit("/", 1)[0]
    checkpoint = value.get("checkpoint", context.last_checkpoint.get(job))
    if job not in context.jobs or checkpoint is None:
        return None
    return {"at_s": 0.0, "kind": kind, "target": job, "checkpoint": int(checkpoint)}


@dataclass(frozen=True)
class NotificationFate:
    """What the nemesis does to one checkpoint-complete notification: ``copies`` to send (0 when
    lost, 2 when duplicated) and the extra delay of each."""

    copies: int = 1
    extra_delay_ms: int = 0


@dataclass(frozen=True)
class NotificationKind(FaultKind):
    """A kind that changes one checkpoint-complete notification (``notification`` hook)."""

    def shape(
        self, fate: NotificationFate, options: Mapping[str, Any]
    ) -> tuple[NotificationFate, dict[str, Any]]:
        """The notification's fate after this fault, and what its event adds to the message's
        description."""
        raise NotImplementedError

    def targets(self, scenario: Any, job: Any) -> Targets:
        return job_target(job)

    def from_event(
        self, value: dict[str, Any], at_s: float, context: HistoryContext
    ) -> dict[str, Any] | None:
        return notification_entry(self.name, value, context)
