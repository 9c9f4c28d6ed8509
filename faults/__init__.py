"""The kinds of ``[[faults.schedule]]`` entries, one module each (``faults/<kind>.py``), and the
registry the scenario format, the nemesis, explore, minimize and the plots read them from.

Adding a kind: write its module (a :class:`faults.base.FaultKind`), list it in :data:`KINDS`,
test it, and document it in docs/scenarios.md ("Fault schedules").
"""

from __future__ import annotations

from faults import (
    clock_jump,
    crash,
    delay_ack,
    duplicate_ack,
    fail_checkpoint,
    lose_ack,
    pause,
    rescale,
    restore_crash,
    storage_failure,
    taskmanager_pause,
    write_error,
)
from faults.base import FaultKind, Hook

KINDS: tuple[FaultKind, ...] = (
    lose_ack.KIND,
    delay_ack.KIND,
    duplicate_ack.KIND,
    fail_checkpoint.KIND,
    crash.KIND,
    clock_jump.KIND,
    storage_failure.KIND,
    pause.KIND,
    rescale.KIND,
    write_error.KIND,
    restore_crash.KIND,
    taskmanager_pause.KIND,
)
"""Every kind, in the order the nemesis applies notification kinds (a lost notification is not
also delayed or duplicated) and explore draws them."""

FAULT_KINDS: tuple[str, ...] = tuple(kind.name for kind in KINDS)
"""The names a ``[[faults.schedule]]`` entry's ``kind`` takes (docs/scenarios.md)."""

_BY_NAME = {kind.name: kind for kind in KINDS}
_ALIASES = {alias: kind.name for kind in KINDS for alias in kind.aliases}
_BY_EVENT = {kind.event: kind for kind in KINDS}


def canonical_name(name: str) -> str | None:
    """The kind's one name for ``name`` (itself, or the kind an older name stands for); None
    for no kind."""
    if name in _BY_NAME:
        return name
    return _ALIASES.get(name)


def fault_kind(name: str) -> FaultKind:
    """The kind called ``name`` (or an older name of it); ``KeyError`` for no kind."""
    canonical = canonical_name(name)
    if canonical is None:
        raise KeyError(name)
    return _BY_NAME[canonical]


def kind_of_event(event: str) -> FaultKind | None:
    """The kind whose ``nemesis`` history events are called ``event`` (random faults of the
    channels and storage record the same events as the scheduled ones)."""
    return _BY_EVENT.get(event)


def kinds_with_hook(hook: Hook) -> tuple[FaultKind, ...]:
    """The kinds the nemesis fires at ``hook``, in :data:`KINDS` order."""
    return tuple(kind for kind in KINDS if kind.hook == hook)


RANDOM_RATES: tuple[str, ...] = tuple(rate for kind in KINDS for rate in kind.rates)
"""``[faults]`` keys that make random faults (explore sets them to 0 and draws a schedule)."""

__all__ = [
    "FAULT_KINDS",
    "KINDS",
    "RANDOM_RATES",
    "FaultKind",
    "canonical_name",
    "fault_kind",
    "kind_of_event",
    "kinds_with_hook",
]
