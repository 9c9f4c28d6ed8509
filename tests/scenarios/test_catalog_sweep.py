"""The real protocol never violates anything, across the catalog and many seeds ("zero
violations across the catalog over hundreds of seeds each").

Two kinds of scenario run here, each at seeds 1..N (``CATALOG_SWEEP_SEEDS``, default 20), in
memory, through every checker:

- every real-protocol catalog scenario (``[expect] violations = []``), as written;
- the *real-rule twin* of every known-bad variant: the variant's scenario (same load, faults
  and schedule) with its known-bad switches set back to the real rule (:func:`real_rule_twin`).
  A variant's catalog scenario is tuned to make its bug show, so its twin is the harshest test
  the real rule gets.

A failure prints the ``testbed run`` command that replays it (the twin is written to a file
first, since it is not in the catalog). The runs go to a pool of ``os.cpu_count()`` processes;
each worker is replaced after a few runs, which bounds the memory a long sweep holds.

``slow``: ``CATALOG_SWEEP_SEEDS=200 pytest -m slow tests/scenarios/test_catalog_sweep.py
--timeout=0`` (a case of 200 seeds outlasts pytest-timeout's 600 s per test). One seed of the
whole catalog costs about 60 s of CPU (base_instant_slicing's twin alone 13 s: 6 s to simulate,
7 s to check). 200 seeds of all 23 cases (4,600 runs) found no violation and no error
(2026-11-21): 84 min on 2 cores for 22 of them, 3 to 6 min each, base_instant_slicing's twin
run apart on the same code.
"""

from __future__ import annotations

import multiprocessing
import os
import shlex
import tomllib
import traceback
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from invariants.checks import check_all
from models.view.table import HudiTable
from scenarios import catalog, catalog_dir
from scenarios.schema import (
    FINDING_TAG,
    LARGE_TAG,
    PROTOCOL_VARIANTS,
    Scenario,
    resolved_toml,
    scenario_from_dict,
)
from sim.world import World

SEEDS_VARIABLE = "CATALOG_SWEEP_SEEDS"
DEFAULT_SEEDS = 20
RUNS_PER_WORKER = 8
"""A worker process is replaced after this many runs (each checked run keeps some memory)."""
TWIN_FOLDER_VARIABLE = "CATALOG_SWEEP_TWINS"
"""Where failing twins are written for their replay command (default: a pytest temp folder)."""

CONFIGURATION = ("failed_writes_cleaning",)
"""``[protocol]`` keys that choose a configuration, not a known-bad rule: kept as written."""


def seeds() -> range:
    return range(1, int(os.environ.get(SEEDS_VARIABLE, DEFAULT_SEEDS)) + 1)


def _raw(stem: str) -> dict[str, Any]:
    return tomllib.loads((catalog_dir() / f"{stem}.toml").read_text())


def real_rule_twin(data: dict[str, Any]) -> dict[str, Any]:
    """The scenario ``data`` (TOML tables) with every known-bad choice set back to the real
    rule, and nothing else changed:

    - each ``[protocol]`` switch to its default (the real Hudi rule), but the cleaning policy;
    - ``[time]``: TrueTime, with the clocks' skew within its bound (offsets are drawn in
      [-``clock_skew_ms``, ``clock_skew_ms``], so two clocks differ by up to twice that, which
      must stay below ``max_expected_skew_ms``; the bound is kept, the skew is lowered);
    - jobs: ``minibatch`` instant generation (a proposal, at-least-once) becomes ``async``; a
      copy-on-write upsert job on ``async`` becomes ``blocking`` (Hudi 1.1 keeps those blocking);
      several jobs under OCC run under NBCC (OCC between Flink jobs on the same file groups
      restarts the losing job forever, apache/hudi#19046: inherent, not a switch), without the
      early conflict detection that only OCC allows; the Flink
      state index's entries never expire (no ``index_state_ttl_days``, Hudi's default) and its
      index is global (no ``index_global``, Hudi's default ``index.global.enabled``).

    ``[expect] violations`` becomes empty.
    """
    data = {
        table: (dict(value) if isinstance(value, dict) else value) for table, value in data.items()
    }
    data["protocol"] = {
        name: value for name, value in data.get("protocol", {}).items() if name in CONFIGURATION
    }
    time = data.setdefault("time", {})
    if time.get("generator", "truetime") != "truetime":
        time["generator"] = "truetime"
    bound = time.get("max_expected_skew_ms", 200)
    time["clock_skew_ms"] = min(time.get("clock_skew_ms", 50), max(0, (bound - 1) // 2))
    cow = data.get("table", {}).get("type") == "COPY_ON_WRITE"
    occ_jobs = sum(job.get("concurrency") == "occ" for job in data.get("jobs", [{}]))
    jobs = []
    for job in data.get("jobs", [{}]):
        job = dict(job)
        mode = job.get("instant_generation", "async")
        if mode == "minibatch":
            mode = "async"
        if cow and mode == "async" and job.get("operation", "upsert") == "upsert":
            mode = "blocking"
        job["instant_generation"] = mode
        job.pop("index_state_ttl_days", None)
        job.pop("index_global", None)
        if occ_jobs > 1:
            job["concurrency"] = "nbcc"
            job.pop("early_conflict_detection", None)  # OCC only
        jobs.append(job)
    data["jobs"] = jobs
    data["expect"] = {"violations": []}
    return data


def cases() -> list[tuple[str, bool]]:
    """(catalog stem, twin): every real-protocol scenario as written, every variant's twin; not
    the scenarios tagged ``large`` (minutes per run: twenty seeds of one would outlast the rest)
    nor those tagged ``finding`` (Hudi's own rule is what they catch; tests/sim/test_variants.py
    holds their fix)."""
    out = []
    for path in catalog():
        raw = _raw(path.stem)
        if {LARGE_TAG, FINDING_TAG} & set(raw["scenario"].get("tags", [])):
            continue
        known_bad = bool(raw.get("expect", {}).get("violations"))
        out.append((path.stem, known_bad))
    return out


def scenario_of(stem: str, twin: bool, seed: int) -> Scenario:
    data = _raw(stem)
    if twin:
        data = real_rule_twin(data)
    data["scenario"]["seed"] = seed
    data.setdefault("table", {})["storage"] = "memory"
    return scenario_from_dict(data, f"{stem}{' (real-rule twin)' if twin else ''}")


def run_case(stem: str, twin: bool, seed: int) -> tuple[tuple[str, ...], str]:
    """(violated invariants, traceback if the run raised) of one run (in a worker)."""
    try:
        outcome = World(scenario_of(stem, twin, seed)).run()
        verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    except Exception:
        return (), traceback.format_exc()
    return tuple(sorted(name for name, v in verdicts.items() if not v.ok)), ""


def sweep(stem: str, twin: bool) -> dict[int, tuple[tuple[str, ...], str]]:
    """One case at every seed, in a process pool: seed -> :func:`run_case`'s answer.

    ``multiprocessing.Pool`` rather than ``ProcessPoolExecutor``: the latter's
    ``max_tasks_per_child`` can hang on Python 3.11 when a retired worker is replaced (its
    pytest process waited forever here with no worker left)."""
    jobs = [(stem, twin, seed) for seed in seeds()]
    context = multiprocessing.get_context("spawn")
    with context.Pool(os.cpu_count(), maxtasksperchild=RUNS_PER_WORKER) as pool:
        done = pool.starmap(run_case, jobs, chunksize=1)
    return {seed: outcome for (_, _, seed), outcome in zip(jobs, done, strict=True)}


def replay_command(stem: str, twin: bool, seed: int, folder: Path) -> str:
    """The ``testbed run`` command that repeats one run (a twin is written to ``folder``)."""
    path = catalog_dir() / f"{stem}.toml"
    if twin:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}_real_rule.toml"
        path.write_text(resolved_toml(scenario_of(stem, twin, seed)))
    parts = ["testbed", "run", str(path.resolve()), "--seed", str(seed), "--storage", "memory"]
    return shlex.join(parts)


# --- the twins -----------------------------------------------------------------------------------


def test_a_twin_turns_every_switch_back_and_keeps_everything_else():
    for stem, twin in cases():
        if not twin:
            continue
        data = _raw(stem)
        scenario = scenario_of(stem, True, 1)
        protocol = scenario.protocol.model_dump()
        for name, values in PROTOCOL_VARIANTS.items():
            if name not in CONFIGURATION:
                assert protocol[name] == values[0], (stem, name)
        time = scenario.time
        assert time.generator == "truetime"
        assert 2 * time.clock_skew_ms < time.max_expected_skew_ms, stem
        for job in scenario.jobs:
            assert job.instant_generation != "minibatch"
            if scenario.table.type == "COPY_ON_WRITE" and job.operation == "upsert":
                assert job.instant_generation == "blocking"
        assert scenario.expect.violations == ()
        # the load, the faults and the schedule are the variant's
        assert len(scenario.jobs) == len(data.get("jobs", [{}]))
        assert scenario.faults == scenario_from_dict(data, stem).faults
        assert scenario.scenario.duration_s == data["scenario"].get("duration_s", 60)


def test_every_catalog_scenario_is_swept():
    swept = cases()
    tags = {p.stem: set(_raw(p.stem)["scenario"].get("tags", [])) for p in catalog()}
    large = {stem for stem, tagged in tags.items() if LARGE_TAG in tagged}
    findings = {stem for stem, tagged in tags.items() if FINDING_TAG in tagged}
    assert large and findings
    assert {stem for stem, _ in swept} == set(tags) - large - findings
    assert any(twin for _, twin in swept) and any(not twin for _, twin in swept)


def test_a_twin_round_trips_through_toml():
    data = real_rule_twin(_raw("timeline_overwrite"))
    assert tomllib.loads(tomli_w.dumps(data)) == data


# --- the sweep -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("stem", "twin"), cases(), ids=[f"{s}{'-twin' if t else ''}" for s, t in cases()]
)
def test_the_real_protocol_violates_nothing(stem, twin, tmp_path):
    results = sweep(stem, twin)
    folder = Path(os.environ.get(TWIN_FOLDER_VARIABLE) or tmp_path)
    failures = []
    for seed, (violated, error) in sorted(results.items()):
        if violated or error:
            what = error.strip().splitlines()[-1] if error else ", ".join(violated)
            failures.append(
                f"seed {seed}: {what}\n  replay: {replay_command(stem, twin, seed, folder)}"
            )
    assert not failures, f"{len(failures)}/{len(results)} runs failed:\n" + "\n".join(failures)
