"""``testbed sweep``: one scenario over a range of seeds, on Spark or in this process.

Each seed is a whole in-memory simulation plus every checker, run inside one task; only a flat row
comes back (verdicts, the digest, key metrics). Rows are written in chunks to
``sweep.parquet/part-NNNNN.parquet`` as each chunk of seeds finishes, so Ctrl-C or a lost cluster
keeps every finished chunk; ``summary.json`` is rewritten (atomically) after each chunk.

Ctrl-C keeps what finished and says what did not: the finished chunks stay (and, without Spark,
the finished seeds of the chunk in progress, as one more part; a Spark job's results arrive all
at once, so its chunk in progress is lost), the Spark jobs are cancelled before the command
exits, and ``summary.json`` and ``report.html`` are written from the finished seeds with
``"interrupted": true``. A Ctrl-C while those two are being written still leaves a
``summary.json`` saying ``"interrupted": true`` (and no report).

``summary.json`` (a public contract: fields are only ever added)::

    {"scenario", "source", "engine", "seeds": {"first", "last", "count"}, "runs", "interrupted",
     "finished", "abandoned", "ok", "expected_violations", "as_expected", "errors",
     "violations": {invariant: seeds}, "failing": [{"seed", "violated", "error", "replay"}],
     "metrics": {column: {"min", "p50", "p90", "max", "mean"}}}

``runs`` and ``finished`` are the seeds that ran (rows in ``sweep.parquet/``), ``abandoned`` the
seeds of the range that did not (0 unless ``interrupted``); ``ok`` is false when interrupted.

The engine never changes a verdict: a seed's simulation depends on the scenario and the seed only,
so ``--master local[1]``, ``local[2]``, a cluster and ``--no-spark`` give the same rows (only
``wall_s`` differs), which the tests check.
"""

from __future__ import annotations

import json
import shlex
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from reports.metrics import nearest_rank
from scenarios.schema import Scenario, parse_scenario
from testbed.atomic import write_text_atomic
from testbed.interrupt import sigint_watched
from testbed.run import result_json, simulate_and_check
from testbed.seed_chunks import (
    CHUNK_SEEDS,
    ChunkInterrupted,
    Runner,
    SeedPlan,
    read_seed_rows,
    run_seed_chunks,
)

MAX_WHY = 3
"""Violation sentences kept per row (the full explanation comes from replaying the seed)."""

ROW_SCHEMA = pa.schema(
    [
        ("scenario", pa.string()),
        ("seed", pa.int64()),
        ("ok", pa.bool_()),
        ("expected_violations", pa.list_(pa.string())),
        ("violated", pa.list_(pa.string())),
        ("error", pa.string()),
        ("drained", pa.bool_()),
        ("digest", pa.string()),
        ("events", pa.int64()),
        ("sim_end_ms", pa.int64()),
        ("commits", pa.int64()),
        ("records_committed", pa.int64()),
        ("failovers", pa.int64()),
        ("checkpoints_failed", pa.int64()),
        ("faults", pa.int64()),
        ("blocked_ms_total", pa.int64()),
        ("commit_latency_p99_ms", pa.int64()),
        ("why", pa.string()),
        ("wall_s", pa.float64()),
    ]
)
"""One row per seed (a public contract, columns are only ever added). ``why`` is a JSON object
{invariant: [first sentences]}; ``wall_s`` is the only column that differs between two runs."""
METRIC_COLUMNS = (
    "events",
    "sim_end_ms",
    "commits",
    "records_committed",
    "failovers",
    "checkpoints_failed",
    "faults",
    "blocked_ms_total",
    "commit_latency_p99_ms",
    "wall_s",
)


@dataclass(frozen=True)
class SeedTask:
    """What an executor needs to run one seed: the resolved scenario text, where it came from."""

    text: str
    source: str
    seed: int


def evaluate_seed(task: SeedTask) -> dict[str, Any]:
    """Simulate one seed in memory and check it; a crash becomes the row's ``error``."""
    started = time.perf_counter()  # wall time is reported, never fed into the simulation
    scenario = parse_scenario(task.text, task.source, seed=task.seed, storage="memory")
    row: dict[str, Any] = {
        "scenario": scenario.scenario.name,
        "seed": task.seed,
        "expected_violations": list(scenario.expect.violations),
    }
    try:
        outcome, verdicts = simulate_and_check(scenario)
        result = result_json(scenario, outcome, verdicts)
    except Exception as error:  # the sweep goes on; the seed replays the crash
        last = traceback.format_exception_only(error)[-1].strip()
        return _row(row | {"ok": False, "violated": [], "error": last}, started)
    metrics = result["metrics"]
    jobs = metrics["jobs"].values()
    latencies = [j["commit_latency_ms"]["p99"] for j in jobs if j["commit_latency_ms"]["p99"]]
    violated = sorted(name for name, verdict in verdicts.items() if not verdict.ok)
    row |= {name: result[name] for name in ("ok", "drained", "digest")} | {
        "violated": violated,
        "error": None,
        "events": metrics["events"],
        "sim_end_ms": metrics["sim_end_ms"],
        "commits": sum(j["commits"] for j in jobs),
        "records_committed": sum(j["records_committed"] for j in jobs),
        "failovers": sum(j["failovers"] for j in jobs),
        "checkpoints_failed": sum(j["checkpoints_failed"] for j in jobs),
        "faults": sum(metrics["faults"].values()),
        "blocked_ms_total": metrics["blocked_ms_total"],
        "commit_latency_p99_ms": max(latencies, default=None),
        "why": json.dumps(
            {name: [v.why for v in verdicts[name].violations[:MAX_WHY]] for name in violated},
            sort_keys=True,
        ),
    }
    return _row(row, started)


def _row(values: dict[str, Any], started: float) -> dict[str, Any]:
    return {name: values.get(name) for name in ROW_SCHEMA.names} | {
        "wall_s": round(time.perf_counter() - started, 3)
    }


def run_here(tasks: list[SeedTask], on_progress: Callable[[int, int], None] | None) -> list[dict]:
    """The engine-free reference: every seed in this process, one after the other. Ctrl-C
    raises :class:`ChunkInterrupted` with the rows of the seeds that finished."""
    rows: list[dict[str, Any]] = []
    try:
        with sigint_watched() as watch:
            for done, task in enumerate(tasks, start=1):
                row = evaluate_seed(task)
                watch.raise_if_seen()
                rows.append(row)
                if on_progress is not None:
                    on_progress(done, len(tasks))
    except KeyboardInterrupt:
        raise ChunkInterrupted(rows) from None
    return rows


@dataclass(frozen=True)
class SweepResult:
    out: Path
    summary: dict[str, Any]

    @property
    def ok(self) -> bool:
        return bool(self.summary["ok"])

    @property
    def interrupted(self) -> bool:
        return bool(self.summary["interrupted"])


def run_sweep(
    scenario: Scenario,
    source: Path,
    seeds: tuple[int, int],
    out: Path,
    runner: Runner,
    *,
    engine: str,
    chunk_seeds: int = CHUNK_SEEDS,
    on_progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Sweep seeds ``first..last`` (inclusive) of ``scenario`` into ``out``; ``out`` is replaced.

    ``on_progress(done_seeds, total_seeds)``. Ctrl-C stops the sweep and returns normally: the
    finished chunks are kept, and so are the finished seeds of the interrupted chunk when the
    runner names them (:class:`ChunkInterrupted`); the summary and report are written from
    those with ``"interrupted": true`` (:attr:`SweepResult.interrupted`).
    """
    text = source.read_text(encoding="utf-8")

    def summary_of(rows: pa.Table, interrupted: bool) -> dict[str, Any]:
        return summarize(rows, scenario, source, seeds, engine, interrupted=interrupted)

    def report(done_rows: list[pa.Table], summary: dict[str, Any]) -> None:
        write_report(out, done_rows, summary, scenario)

    summary = run_seed_chunks(
        SeedPlan(
            out,
            "sweep",
            seeds,
            lambda seed_range: [SeedTask(text, str(source), seed) for seed in seed_range],
            summary_of,
            report,
            ROW_SCHEMA,
        ),
        runner,
        chunk_seeds=chunk_seeds,
        on_progress=on_progress,
    )
    return SweepResult(out, summary)


def write_report(
    out: Path, done_rows: list[pa.Table], summary: dict[str, Any], scenario: Scenario
) -> Path | None:
    """``report.html`` and the plots across seeds (PNG + SVG under ``plots/``) from the finished
    rows. A failure leaves its traceback in ``report_error.txt`` instead: the rows and the summary
    are the sweep's result, the report only shows them."""
    # matplotlib: the driver needs it, executors not
    from reports.sweep_report import write_sweep_report

    rows = pa.concat_tables(done_rows).to_pylist() if done_rows else []
    writers = sum(job.writers for job in scenario.jobs)
    try:
        return write_sweep_report(out, rows, summary, writers=writers)
    except Exception:
        write_text_atomic(out / "report_error.txt", traceback.format_exc())
        return None


def read_rows(out: Path) -> pa.Table:
    """The rows of a sweep folder, every finished part in order."""
    return read_seed_rows(out, "sweep", ROW_SCHEMA)


def replay_command(source: Path, seed: int) -> str:
    return shlex.join(["testbed", "run", str(source.resolve()), "--seed", str(seed)])


def distribution(values: list[float]) -> dict[str, float | None]:
    """min / p50 / p90 / max / mean of one metric across seeds (nearest rank, no interpolation)."""
    if not values:
        return {"min": None, "p50": None, "p90": None, "max": None, "mean": None}
    ordered = sorted(values)
    return {
        "min": ordered[0],
        "p50": ordered[nearest_rank(len(ordered), 50) - 1],
        "p90": ordered[nearest_rank(len(ordered), 90) - 1],
        "max": ordered[-1],
        "mean": round(sum(ordered) / len(ordered), 3),
    }


def summarize(
    rows: pa.Table,
    scenario: Scenario,
    source: Path,
    seeds: tuple[int, int],
    engine: str,
    *,
    interrupted: bool,
) -> dict[str, Any]:
    """The sweep in one object (``summary.json``, a public contract: fields are only added)."""
    data = rows.to_pylist()
    violations: dict[str, int] = {}
    for row in data:
        for name in row["violated"]:
            violations[name] = violations.get(name, 0) + 1
    failing = [
        {
            "seed": row["seed"],
            "violated": row["violated"],
            "error": row["error"],
            "replay": replay_command(source, row["seed"]),
        }
        for row in data
        if not row["ok"]
    ]
    return {
        "scenario": scenario.scenario.name,
        "source": str(source),
        "engine": engine,
        "seeds": {"first": seeds[0], "last": seeds[1], "count": seeds[1] - seeds[0] + 1},
        "runs": len(data),
        "interrupted": interrupted,
        "finished": len(data),
        "abandoned": seeds[1] - seeds[0] + 1 - len(data),
        "ok": not failing and not interrupted and len(data) == seeds[1] - seeds[0] + 1,
        "expected_violations": list(scenario.expect.violations),
        "as_expected": len(data) - len(failing),
        "errors": sum(1 for row in data if row["error"]),
        "violations": dict(sorted(violations.items())),
        "failing": failing,
        "metrics": {
            name: distribution([row[name] for row in data if row[name] is not None])
            for name in METRIC_COLUMNS
        },
    }
