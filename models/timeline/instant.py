"""Instants and their file names on the timeline (docs/protocol.md section 2).

An :class:`Instant` is one action on the table: its *requested* time (the instant time in every
file it writes), its action, its state, and once completed its *completion* time. Hudi 1.x needs
both times: file slicing places a log file by the completion time of the deltacommit that wrote it.

File names (write-once; each transition adds a file, none is renamed):

=========  ====================================  ====================================
state      layout 2 (table versions 8, 9)         layout 1 (table version 6)
=========  ====================================  ====================================
REQUESTED  ``<t>.<action>.requested``             same
INFLIGHT   ``<t>.<action>.inflight``              same
           (``<t>.inflight`` for ``commit``)
COMPLETED  ``<t>_<completion>.<action>``          ``<t>.<action>`` (completion = mtime)
=========  ====================================  ====================================

A completed ``compaction`` is written as ``commit``, ``logcompaction`` as ``deltacommit`` and
``clustering`` as ``replacecommit`` (Hudi's ``InstantFileNameGeneratorV2``); like Hudi's
``HoodieInstant``, a completed instant reports the action of its completed file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from models.table_errors import HoodieException
from models.timeline.instant_time import format_epoch_ms, normalize


class State(Enum):
    """Instant states in transition order (the value orders them)."""

    REQUESTED = 0
    INFLIGHT = 1
    COMPLETED = 2

    def __lt__(self, other: State) -> bool:
        if not isinstance(other, State):
            return NotImplemented
        return self.value < other.value


ACTIONS = (
    "commit",
    "deltacommit",
    "compaction",
    "logcompaction",
    "clean",
    "rollback",
    "savepoint",
    "restore",
    "replacecommit",
    "clustering",
    "indexing",
)
"""Timeline actions of Hudi 1.x (``HoodieTimeline``)."""

COMPLETED_ACTION = {
    "compaction": "commit",
    "logcompaction": "deltacommit",
    "clustering": "replacecommit",
}
"""The action a pending action's completed file carries."""

# Hudi's instant file name pattern: time (optionally _completion), action, optional state suffix.
_NAME = re.compile(r"^(\d+)(?:_(\d+))?(\.\w+)(\.\D+)?\Z", re.ASCII)


class InstantFileNameError(HoodieException, ValueError):
    """A timeline file name that does not parse as an instant."""


@dataclass(frozen=True, order=True)
class Instant:
    """One action on the timeline at its latest known state.

    Ordered by requested time, then state: the natural order of Hudi's active timeline.
    """

    requested_time: str
    state: State
    action: str
    completion_time: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "requested_time", normalize(self.requested_time))
        if self.completion_time is not None:
            object.__setattr__(self, "completion_time", normalize(self.completion_time))
        if self.action not in ACTIONS:
            raise InstantFileNameError(f"unknown action {self.action!r}; Hudi's are {ACTIONS}")
        if (self.state is State.COMPLETED) != (self.completion_time is not None):
            raise ValueError(f"only a completed instant has a completion time: {self!r}")

    @property
    def is_completed(self) -> bool:
        return self.state is State.COMPLETED

    def requested(self) -> Instant:
        return Instant(self.requested_time, State.REQUESTED, self.action)

    def file_name(self, layout_version: int = 2) -> str:
        """The name of the file that records this instant's state."""
        t = self.requested_time
        if self.state is State.REQUESTED:
            return f"{t}.{self.action}.requested"
        if self.state is State.INFLIGHT:
            return f"{t}.inflight" if self.action == "commit" else f"{t}.{self.action}.inflight"
        action = COMPLETED_ACTION.get(self.action, self.action)
        if layout_version == 1:
            return f"{t}.{action}"
        return f"{t}_{self.completion_time}.{action}"

    def __str__(self) -> str:
        done = f"->{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action}__{self.state.name}]"


@dataclass(frozen=True)
class ParsedInstantFile:
    """What a timeline file name says; ``completion_time`` is None when the name carries none."""

    requested_time: str
    action: str
    state: State
    completion_time: str | None


def parse_instant_file_name(name: str) -> ParsedInstantFile:
    """Parse a timeline file name (either layout). Raises InstantFileNameError if it is none."""
    match = _NAME.match(name)
    if not match:
        raise InstantFileNameError(f"not an instant file name: {name!r}")
    requested, completion, ext, suffix = match.groups()
    action = ext[1:]
    if suffix is None:
        state = State.COMPLETED
    elif suffix == ".requested":
        state = State.REQUESTED
    elif suffix == ".inflight":
        state = State.INFLIGHT
    else:
        raise InstantFileNameError(f"unknown state suffix {suffix!r} in {name!r}")
    if action == "inflight" and state is State.COMPLETED:  # "<t>.inflight" is commit's inflight
        action, state = "commit", State.INFLIGHT
    if action not in ACTIONS:
        raise InstantFileNameError(f"unknown action {action!r} in {name!r}")
    if completion is not None and state is not State.COMPLETED:
        raise InstantFileNameError(
            f"only completed instant files carry a completion time: {name!r}"
        )
    try:
        requested = normalize(requested)
        completion = normalize(completion) if completion is not None else None
    except ValueError as err:
        raise InstantFileNameError(f"{err} (in {name!r})") from err
    return ParsedInstantFile(requested, action, state, completion)


def is_instant_file_name(name: str) -> bool:
    try:
        parse_instant_file_name(name)
    except InstantFileNameError:
        return False
    return True


def completion_from_mtime(modified_ms: int) -> str:
    """Completion time of a legacy completed file: its modification time, as Hudi reads it.

    Hudi formats it in the table's timeline timezone; we use UTC (the simulator's convention). It
    only matters for layout-1 tables, whose slicing does not use completion times.
    """
    return format_epoch_ms(modified_ms)
