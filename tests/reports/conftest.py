"""Short real runs of catalog scenarios, simulated once per test session, for the plot tests.

Plots are tested on what ``testbed run`` really writes (no hand-made histories): each fixture run is
a catalog scenario cut to a few simulated seconds, so the whole set simulates in a few seconds.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scenarios.schema import load_scenario
from testbed.run import run_scenario

CATALOG = Path(__file__).resolve().parents[2] / "scenarios" / "catalog"

SHORT_RUNS = {  # fixture name -> (catalog scenario, duration_s, storage, [time] overrides)
    "blocking": ("blocking_stalls", 12, "memory", {}),
    "async": ("async_baseline", 12, "memory", {}),
    "blocking_heavy": ("blocking_stalls_heavy", 12, "memory", {}),
    "async_heavy": ("async_heavy", 12, "memory", {}),
    "skew": ("local_clock_skew", 12, "memory", {}),
    "occ": ("occ_contention", 10, "memory", {}),
    "nbcc": ("nbcc_two_jobs", 10, "memory", {}),
    "occ_early": ("occ_contention_early_detection", 14, "memory", {}),
    "local": ("nbcc_two_jobs", 12, "local", {}),
    "tt_safe": (
        "truetime_bound_too_small",
        6,
        "memory",
        {"max_expected_skew_ms": 100, "clock_skew_ms": 20},
    ),
    "tt_unsafe": ("truetime_bound_too_small", 6, "memory", {}),
    "ceiling": ("truetime_instant_ceiling", 8, "memory", {}),
    "state": ("flink_state_cow", 40, "memory", {}),
    "bucket": ("bucket_index_cow", 40, "memory", {}),
    "state_lost": ("flink_state_lost", 30, "memory", {}),
    "state_bootstrap": ("flink_state_bootstrap", 30, "memory", {}),
    "server_markers": ("timeline_server_markers", 10, "memory", {}),
}


def short_scenario(name: str, duration_s: float, time: dict[str, int], target: Path) -> Path:
    """The catalog scenario ``name`` with ``duration_s`` and ``[time]`` keys replaced."""
    text = (CATALOG / f"{name}.toml").read_text()
    text = re.sub(r"(?m)^duration_s = .*$", f"duration_s = {duration_s}", text)
    for key, value in time.items():
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1, f"{name}.toml has no single {key}"
    target.write_text(text)
    return target


@pytest.fixture(scope="session")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Fixture name -> run folder (see :data:`SHORT_RUNS`)."""
    root = tmp_path_factory.mktemp("report-runs")
    folders = {}
    for key, (name, duration_s, storage, time) in SHORT_RUNS.items():
        source = short_scenario(name, duration_s, time, root / f"{key}.toml")
        scenario = load_scenario(source, storage=storage)
        folders[key] = run_scenario(scenario, source, root / key).folder
    return folders
