"""The history events that completed each instant, so a violation found on the table can name
the events behind it.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.history import Event


def instant_events(events: Sequence[Event]) -> dict[str, tuple[int, ...]]:
    """Requested time -> indices of the history events that completed it (``commit`` ok of a
    coordinator, ``compaction`` ok of a compactor); several if it was committed more than once."""
    out: dict[str, list[int]] = {}
    for e in events:
        if e.type == "ok" and e.f in ("commit", "compaction") and isinstance(e.value, dict):
            instant = e.value.get("instant")
            if isinstance(instant, str):
                out.setdefault(instant, []).append(e.index)
    return {k: tuple(v) for k, v in out.items()}


def events_of(index: dict[str, tuple[int, ...]], *instants: str) -> tuple[int, ...]:
    """The completing events of ``instants``, sorted and without repeats."""
    return tuple(sorted({i for t in instants for i in index.get(t, ())}))


__all__ = ["events_of", "instant_events"]
