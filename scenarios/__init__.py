"""Scenarios: the TOML files that say what to simulate, their schema, and the bundled catalog.

This layer is data (docs/design.md): it imports nothing of ours, so the simulator, the CLI, the
reports and the Spark sweeps can all read scenarios without pulling each other in. The format is
documented key by key in ``docs/scenarios.md``; :mod:`scenarios.schema` holds the rules.
"""

from __future__ import annotations

from pathlib import Path

from scenarios.schema import (
    INVARIANTS,
    PROTOCOL_VARIANTS,
    ExpectSpec,
    FaultSpec,
    JobSpec,
    ProtocolSpec,
    Scenario,
    ScenarioError,
    ScenarioInfo,
    SimSpec,
    TableSpec,
    TimeSpec,
    load_scenario,
    parse_scenario,
    resolved_toml,
    scenario_from_dict,
)

__all__ = [
    "INVARIANTS",
    "PROTOCOL_VARIANTS",
    "ExpectSpec",
    "FaultSpec",
    "JobSpec",
    "ProtocolSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioInfo",
    "SimSpec",
    "TableSpec",
    "TimeSpec",
    "catalog",
    "catalog_dir",
    "load_scenario",
    "parse_scenario",
    "resolved_toml",
    "scenario_from_dict",
]


def catalog_dir() -> Path:
    """The folder of bundled scenarios, shipped inside the package so an installed testbed finds
    them without a source checkout (package data: ``scenarios = ["catalog/*.toml"]``)."""
    return Path(__file__).resolve().parent / "catalog"


def catalog() -> list[Path]:
    """The bundled scenario files, sorted by name so suites run (and report) in a stable order."""
    return sorted(catalog_dir().glob("*.toml"))
