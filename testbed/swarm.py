"""``testbed swarm``: a whole scenario drawn per seed (:mod:`testbed.swarm_draw`), run on Hudi's
real rules, on Spark or in this process.

The seeds run chunk by chunk like a sweep's (:mod:`testbed.seed_chunks`): each chunk's rows land
in ``swarm.parquet/part-NNNNN.parquet`` (a sweep's row plus ``parameters``, the drawn features as
JSON), and ``summary.json`` is rewritten after it. As each chunk finishes, every failing seed
gets its folder ``failing/swarm_<seed>/`` on the driver: ``scenario.toml`` (what ran; ``testbed
run`` replays it) and, for the first :data:`MAX_COUNTEREXAMPLES` failing seeds, its minimal
counterexample (``counterexample.toml``/``.json``/``.txt``, :mod:`testbed.minimize`).

``summary.json`` (a public contract: fields are only ever added)::

    {"kind": "swarm", "engine", "seeds": {"first", "last", "count"}, "runs", "interrupted",
     "finished", "abandoned", "ok", "errors", "violations": {invariant: seeds},
     "failing": [{"seed", "violated", "error", "scenario", "replay", "counterexample"}],
     "shared": {"failing", "by_every_failing_seed": {parameter: value},
                "over_represented": [{"parameter", "value", "failing", "runs",
                                      "failing_share", "share"}]},
     "metrics": {column: {"min", "p50", "p90", "max", "mean"}}}

``shared`` answers "what did the failing seeds have in common": the parameter values every
failing seed took (values every seed took are left out), and the values far more common among
failing seeds than among all (at least twice as common and in at least two failing seeds).
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

from scenarios.schema import Scenario, load_scenario, resolved_toml, scenario_from_dict
from testbed.atomic import write_text_atomic
from testbed.seed_chunks import (
    CHUNK_SEEDS,
    ChunkInterrupted,
    Runner,
    SeedPlan,
    read_seed_rows,
    run_seed_chunks,
)
from testbed.swarm_draw import draw_swarm, swarm_name, swarm_parameters
from testbed.sweep import METRIC_COLUMNS, ROW_SCHEMA, SeedTask, distribution

SWARM_ROW_SCHEMA = ROW_SCHEMA.append(pa.field("parameters", pa.string()))
"""A sweep's row plus ``parameters`` (JSON {parameter: value}, :func:`swarm_parameters`)."""
MAX_COUNTEREXAMPLES = 20
"""Failing seeds minimized per swarm (in seed order); the others keep their scenario file."""
MIN_LIFT = 2.0
"""How much more common among failing seeds a value must be to count as over-represented."""


def swarm_scenario(seed: int) -> Scenario:
    """The validated scenario of swarm seed ``seed``."""
    return scenario_from_dict(draw_swarm(seed), f"<swarm seed {seed}>")


def swarm_task(seed: int, scenario: Scenario) -> SeedTask:
    """What an executor runs for ``seed``: its drawn ``scenario`` as resolved TOML."""
    return SeedTask(resolved_toml(scenario), f"<swarm seed {seed}>", seed)


def failing_folder(out: Path, seed: int) -> Path:
    return out / "failing" / swarm_name(seed)


def run_swarm(
    seeds: tuple[int, int],
    out: Path,
    runner: Runner,
    *,
    engine: str,
    minimize_runs: int = 0,
    chunk_seeds: int = CHUNK_SEEDS,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run swarm seeds ``first..last`` into ``out`` (replaced); return the summary. With
    ``minimize_runs`` > 0 the first failing seeds are shrunk to minimal counterexamples, each
    with at most that many simulations."""
    minimized: list[int] = []
    drawn: dict[int, Scenario] = {}  # the chunk in progress, each seed drawn once

    def tasks_for(seed_range: range) -> list[SeedTask]:
        drawn.clear()
        drawn.update((seed, swarm_scenario(seed)) for seed in seed_range)
        return [swarm_task(seed, scenario) for seed, scenario in drawn.items()]

    def run_chunk(tasks: list[SeedTask], progress: Callable[[int, int], None] | None) -> list:
        try:
            rows = runner(tasks, progress)
        except ChunkInterrupted as stop:
            raise ChunkInterrupted(_with_parameters(stop.rows, drawn)) from None
        rows = _with_parameters(rows, drawn)
        try:
            for row in rows:
                if not row["ok"]:
                    _keep_failing(out, row, drawn[row["seed"]], minimize_runs, minimized)
        except KeyboardInterrupt:  # the chunk's rows stand; the folder of one seed may not
            raise ChunkInterrupted(rows) from None
        return rows

    def summary_of(rows: pa.Table, interrupted: bool) -> dict[str, Any]:
        return summarize_swarm(rows.to_pylist(), seeds, engine, out, interrupted=interrupted)

    def report(done_rows: list[pa.Table], summary: dict[str, Any]) -> None:
        from reports.swarm_report import write_swarm_report

        rows = pa.concat_tables(done_rows).to_pylist() if done_rows else []
        write_swarm_report(out, rows, summary)

    plan = SeedPlan(
        out,
        "swarm",
        seeds,
        tasks_for,
        summary_of,
        report,
        SWARM_ROW_SCHEMA,
    )
    return run_seed_chunks(plan, run_chunk, chunk_seeds=chunk_seeds, on_progress=on_progress)


def _with_parameters(
    rows: list[dict[str, Any]], drawn: dict[int, Scenario]
) -> list[dict[str, Any]]:
    return [
        row | {"parameters": json.dumps(swarm_parameters(drawn[row["seed"]]), sort_keys=True)}
        for row in rows
    ]


def _keep_failing(
    out: Path, row: dict[str, Any], scenario: Scenario, minimize_runs: int, minimized: list
) -> None:
    """``failing/swarm_<seed>/scenario.toml`` and, within :data:`MAX_COUNTEREXAMPLES`, the
    seed's minimal counterexample beside it."""
    seed = row["seed"]
    folder = failing_folder(out, seed)
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "scenario.toml"
    write_text_atomic(source, resolved_toml(scenario))
    if row["error"] or not minimize_runs or len(minimized) >= MAX_COUNTEREXAMPLES:
        return
    minimized.append(seed)
    _minimize(load_scenario(source), folder, minimize_runs)


def _minimize(scenario: Scenario, folder: Path, max_runs: int) -> None:
    """Shrink the failing run of ``scenario`` to its minimal counterexample in ``folder``."""
    from testbed.minimize import minimize_run
    from testbed.run import result_json, simulate_and_check

    outcome, verdicts = simulate_and_check(scenario)
    violated = sorted(name for name, verdict in verdicts.items() if not verdict.ok)
    if not violated:  # cannot happen for a deterministic run; nothing to shrink
        return
    data = scenario.model_dump(mode="json")
    data["expect"] = {"violations": violated}
    target = scenario_from_dict(data, str(folder / "scenario.toml"))
    minimize_run(
        target,
        outcome.history.events,
        folder,
        max_runs=max_runs,
        verdicts=result_json(scenario, outcome, verdicts)["invariants"],
    )


def read_swarm_rows(out: Path) -> pa.Table:
    return read_seed_rows(out, "swarm", SWARM_ROW_SCHEMA)


def replay_command(out: Path, seed: int) -> str:
    scenario = (failing_folder(out, seed) / "scenario.toml").resolve()
    return shlex.join(["testbed", "run", str(scenario)])


def summarize_swarm(
    rows: list[dict[str, Any]],
    seeds: tuple[int, int],
    engine: str,
    out: Path,
    *,
    interrupted: bool,
) -> dict[str, Any]:
    """The swarm in one object (``summary.json``, a public contract: fields are only added)."""
    violations = Counter(name for row in rows for name in row["violated"])
    failing = [
        {
            "seed": row["seed"],
            "violated": row["violated"],
            "error": row["error"],
            "scenario": str(failing_folder(out, row["seed"]) / "scenario.toml"),
            "replay": replay_command(out, row["seed"]),
            "counterexample": _counterexample(out, row["seed"]),
        }
        for row in rows
        if not row["ok"]
    ]
    count = seeds[1] - seeds[0] + 1
    return {
        "kind": "swarm",
        "engine": engine,
        "seeds": {"first": seeds[0], "last": seeds[1], "count": count},
        "runs": len(rows),
        "interrupted": interrupted,
        "finished": len(rows),
        "abandoned": count - len(rows),
        "ok": not failing and not interrupted and len(rows) == count,
        "errors": sum(1 for row in rows if row["error"]),
        "violations": dict(sorted(violations.items())),
        "failing": failing,
        "shared": shared_parameters(rows),
        "metrics": {
            name: distribution([row[name] for row in rows if row[name] is not None])
            for name in METRIC_COLUMNS
        },
    }


def _counterexample(out: Path, seed: int) -> str | None:
    path = failing_folder(out, seed) / "counterexample.toml"
    return str(path) if path.is_file() else None


def shared_parameters(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the failing rows' drawn parameters have in common (see the module docstring)."""
    drawn = [json.loads(row["parameters"] or "{}") for row in rows]
    failing = [params for row, params in zip(rows, drawn, strict=True) if not row["ok"]]
    every = Counter((name, value) for params in drawn for name, value in params.items())
    among = Counter((name, value) for params in failing for name, value in params.items())
    by_every = {
        name: value
        for (name, value), count in sorted(among.items())
        if failing and count == len(failing) and every[(name, value)] < len(drawn)
    }
    over = []
    for (name, value), count in among.items():
        failing_share = count / len(failing)
        share = every[(name, value)] / len(drawn)
        if count >= 2 and failing_share >= MIN_LIFT * share:
            over.append(
                {
                    "parameter": name,
                    "value": value,
                    "failing": count,
                    "runs": every[(name, value)],
                    "failing_share": round(failing_share, 3),
                    "share": round(share, 3),
                }
            )
    over.sort(key=lambda o: (-o["failing_share"] / o["share"], -o["failing"], o["parameter"]))
    return {"failing": len(failing), "by_every_failing_seed": by_every, "over_represented": over}
