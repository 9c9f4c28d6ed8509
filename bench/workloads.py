"""The scenarios the bench runs, and variations of them (duration, writers, load).

Variations go through the scenario schema like a file would (``scenario_from_dict``), so a bench
can never run a scenario ``testbed run`` would reject.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scenarios.schema import Scenario, load_scenario, scenario_from_dict

HERE = Path(__file__).resolve().parent
STANDARD = HERE / "eight_writers_one_hour.toml"
"""8 writers, 1 hour, 5 s checkpoints, lost ACKs, in memory (the simulation-speed row)."""
SMALL = HERE / "small_lost_acks.toml"
"""A short run with faults: the search, sweep and verify rows."""


def standard() -> Scenario:
    return load_scenario(STANDARD)


def small() -> Scenario:
    return load_scenario(SMALL)


def vary(scenario: Scenario, changes: dict[str, Any]) -> Scenario:
    """``scenario`` with dotted keys changed: ``{"scenario.duration_s": 60,
    "jobs.0.writers": 4}`` (a number in the path indexes a list)."""
    data = scenario.model_dump(mode="json")
    for dotted, value in changes.items():
        *path, last = dotted.split(".")
        node: Any = data
        for part in path:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
    return scenario_from_dict(data, f"<bench variation of {scenario.scenario.name}>")


def with_duration(scenario: Scenario, duration_s: float | None) -> Scenario:
    """``scenario`` shortened to ``duration_s`` (None: unchanged)."""
    if duration_s is None:
        return scenario
    return vary(scenario, {"scenario.duration_s": duration_s})


def scenario_text(scenario: Scenario) -> str:
    """The scenario as TOML (what a sweep ships to its executors)."""
    from scenarios.schema import resolved_toml

    return resolved_toml(scenario)
