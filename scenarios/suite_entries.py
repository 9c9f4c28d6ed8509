"""A suite resolved for running: its scenarios, each loaded (a catalog or user file, or a grid
point) with the expectation its run is held to (:mod:`scenarios.expectations`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.expectations import Expectation
from scenarios.schema import Scenario


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of a suite, resolved: a catalog or user file, or a grid point."""

    name: str
    scenario: Scenario
    expectation: Expectation
    source: Path | None = None
    """The file it was read from; ``None`` for a grid point (the runner writes one)."""
    grid: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """A grid point's varied dotted keys -> values (its coordinates in the grid; the keys
    ``set`` for every point are in its scenario); empty for a plain scenario."""


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    scenarios: tuple[SuiteScenario, ...]


__all__ = ["Suite", "SuiteScenario"]
