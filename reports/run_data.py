"""A run folder read back for plotting: the resolved scenario, the history, the verdicts and, when
the run kept it, the table.

The plots are drawn from what the run folder records and nothing else (no re-simulation), so a
run from last week or another machine plots the same; :func:`load_run` is the only reader.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from models.history import Event, read_history
from models.timeline.instant_time import InstantTimeError, parse_epoch_ms


class RunFolderError(ValueError):
    """The folder is not a complete run folder (the message names the missing file)."""


@dataclass(frozen=True)
class RunData:
    folder: Path
    scenario: dict[str, Any]
    """The resolved ``scenario.toml`` as plain TOML data (every default filled in)."""
    result: dict[str, Any]
    events: Sequence[Event]

    @property
    def name(self) -> str:
        return str(self.result.get("scenario") or self.scenario.get("scenario", {}).get("name"))

    @property
    def seed(self) -> int | None:
        return self.result.get("seed")

    @property
    def table_root(self) -> Path | None:
        root = self.folder / "table"
        return root if (root / ".hoodie").is_dir() else None

    @cached_property
    def epoch_ms(self) -> int:
        """Epoch ms of simulated time 0: instant times minus this are on the history's time axis
        (up to each process's clock skew)."""
        for event in self.events[:50]:
            if event.f == "setup" and isinstance(event.value, dict):
                return int(event.value.get("epoch_ms", 0))
        return 0

    @cached_property
    def end_ms(self) -> int:
        return max((e.time for e in self.events), default=0)

    @cached_property
    def duration_ms(self) -> int:
        """The run's fault phase (``duration_s``), before the drain."""
        return int(float(self.scenario.get("scenario", {}).get("duration_s", 0)) * 1000)

    @cached_property
    def jobs(self) -> list[str]:
        """Job names in scenario order."""
        return [str(job["name"]) for job in self.scenario.get("jobs", [])]

    @cached_property
    def writers(self) -> list[str]:
        """``<job>/task-<i>`` of every writer, by job then task number."""
        return [
            f"{job['name']}/task-{i}"
            for job in self.scenario.get("jobs", [])
            for i in range(int(job.get("writers", 0)))
        ]

    def time_ms(self, instant_time: str) -> int | None:
        """An instant time on the run's time axis (ms since simulated time 0), None if invalid."""
        try:
            return parse_epoch_ms(instant_time) - self.epoch_ms
        except (InstantTimeError, TypeError):
            return None

    @property
    def violated(self) -> list[str]:
        return sorted(
            name for name, v in self.result.get("invariants", {}).items() if not v.get("ok", True)
        )

    @property
    def expected_violations(self) -> list[str]:
        return list(self.result.get("expected_violations", []))

    @property
    def metrics(self) -> dict[str, Any]:
        return self.result.get("metrics", {})


def load_run(folder: Path) -> RunData:
    """Read a run folder written by ``testbed run`` (``scenario.toml``, ``history.jsonl``,
    ``result.json``); :class:`RunFolderError` names what is missing or unreadable."""
    folder = Path(folder)
    files = {name: folder / name for name in ("scenario.toml", "history.jsonl", "result.json")}
    for name, path in files.items():
        if not path.is_file():
            raise RunFolderError(f"{folder}: no {name} (not a run folder)")
    try:
        scenario = tomllib.loads(files["scenario.toml"].read_text())
        result = json.loads(files["result.json"].read_text())
        events = read_history(files["history.jsonl"])
    except (ValueError, tomllib.TOMLDecodeError) as error:
        raise RunFolderError(f"{folder}: {error}") from None
    return RunData(folder, scenario, result, events)


def value(event: Event) -> dict[str, Any]:
    """The event's value as a dict (empty for a non-dict value)."""
    return event.value if isinstance(event.value, dict) else {}


__all__ = ["RunData", "RunFolderError", "load_run", "value"]
