"""How the system under test reads the table in a run: the run's ``[protocol]`` variants, from the
history's ``setup`` event, applied to the table and the file-system view options, so the checkers
compare against the reads the run itself would make (``sim/world.py`` builds its table so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from models.history import Event
from models.view.table import HudiTable, ViewOptions


@dataclass(frozen=True)
class SystemView:
    """How the system under test reads the table: its protocol variants (``setup`` event)."""

    table: HudiTable
    options: ViewOptions

    @property
    def key(self) -> tuple[object, ...]:
        return (self.table.archive_lookup, self.options.rule, self.options.anchor)


def protocol_of(events: Sequence[Event]) -> dict[str, Any]:
    """The ``[protocol]`` variants of the run (empty for a history without a setup event)."""
    setup = next((e for e in events if e.f == "setup" and e.process == "world"), None)
    if setup is None or not isinstance(setup.value, dict):
        return {}
    return dict(setup.value.get("protocol") or {})


def system_view(events: Sequence[Event], table: HudiTable) -> SystemView:
    """The table as the run's own protocol variant reads it (``sim/world.py`` builds it so)."""
    protocol = protocol_of(events)
    lookup = bool(protocol.get("archived_completion_lookup", True))
    if lookup != table.archive_lookup:
        table = HudiTable(table.storage, archive_lookup=lookup)
    options = ViewOptions(
        rule=protocol.get("file_slicing"),
        anchor=protocol.get("slice_anchor", "earliest_completed"),
    )
    return SystemView(table, options)


__all__ = ["SystemView", "protocol_of", "system_view"]
