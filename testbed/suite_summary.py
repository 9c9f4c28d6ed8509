"""What a suite leaves behind and prints: ``summary.json`` (its shape is in :mod:`testbed.suite`),
``summary.parquet`` (one flat row per run), the verdict table and the closing lines."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scenarios.suite_entries import Suite
from testbed.atomic import staging_path, write_text_atomic

if TYPE_CHECKING:
    from testbed.suite import SuiteOutcome


# --- summary.json, summary.parquet ------------------------------------------------------------------


def summarize(
    suite: Suite,
    seeds: int,
    rows: list[dict[str, Any]],
    interrupted: bool,
    *,
    planned: int | None = None,
) -> dict[str, Any]:
    """``summary.json`` from the finished runs' rows (in suite order) of ``planned`` runs
    (default: as many as finished)."""
    scenarios: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = scenarios.setdefault(
            row["scenario"],
            {
                "scenario": row["scenario"],
                "description": row["description"],
                "runs": 0,
                "ok": True,
                "expected_violations": row["expected_violations"],
                "violated_in": {},
                "expect": row["expect"],
                "may_violate": row["may_violate"],
                "grid": row["grid"],
                "params": row["params"],
            },
        )
        entry["runs"] += 1
        entry["ok"] = entry["ok"] and row["ok"]
        for name in row["violated"]:
            entry["violated_in"][name] = entry["violated_in"].get(name, 0) + 1
    for entry in scenarios.values():
        entry["violated_in"] = dict(sorted(entry["violated_in"].items()))
    return {
        "suite": suite.name,
        "description": suite.description,
        "seeds": seeds,
        "ok": not interrupted and all(row["ok"] for row in rows),
        "interrupted": interrupted,
        "finished": len(rows),
        "abandoned": max(0, (len(rows) if planned is None else planned) - len(rows)),
        "runs": rows,
        "scenarios": list(scenarios.values()),
    }


def flat_row(row: dict[str, Any]) -> dict[str, Any]:
    """One ``summary.parquet`` row: the run's verdict and its key metrics as scalars (job
    counters summed over jobs, commit latency percentiles the worst job's)."""
    metrics = row.get("metrics") or {}
    jobs = list((metrics.get("jobs") or {}).values())
    flat: dict[str, Any] = {
        "scenario": row["scenario"],
        "seed": row["seed"],
        "ok": row["ok"],
        "expect": row["expect"],
        "expected": ",".join(row["expected_violations"]),
        "violated": ",".join(row["violated"]),
        "violations": len(row["violated"]),
        "error": row["error"],
        "wall_s": float(row["wall_s"]),
        "grid": row["grid"],
        "params": json.dumps(row["params"], sort_keys=True),
        "digest": row["digest"],
        "counterexample": row["counterexample"],
        "blocked_ms_total": metrics.get("blocked_ms_total"),
        "commit_wait_ms_total": metrics.get("commit_wait_ms_total"),
        "faults_total": sum((metrics.get("faults") or {}).values()) if metrics else None,
    }
    counters = sorted({k for job in jobs for k, v in job.items() if _is_count(v)})
    for name in counters:
        flat[name] = sum(job.get(name, 0) for job in jobs)
    for p in ("p50", "p99", "max"):
        values = [job["commit_latency_ms"][p] for job in jobs if "commit_latency_ms" in job]
        values = [v for v in values if v is not None]
        flat[f"commit_latency_{p}_ms"] = max(values) if values else None
    return flat


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """``summary.json`` and ``summary.parquet``, each written under a temporary name first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2) + "\n")
    rows = [flat_row(row) for row in summary["runs"]]
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    fixed = {
        "scenario": pa.string(),
        "seed": pa.int64(),
        "ok": pa.bool_(),
        "expect": pa.string(),
        "expected": pa.string(),
        "violated": pa.string(),
        "violations": pa.int64(),
        "error": pa.string(),
        "wall_s": pa.float64(),
        "grid": pa.string(),
        "params": pa.string(),
        "digest": pa.string(),
        "counterexample": pa.string(),
    }
    if not rows:
        columns = dict.fromkeys(fixed)
    schema = pa.schema([(name, fixed.get(name, pa.int64())) for name in columns])
    table = pa.table({name: [row.get(name) for row in rows] for name in columns}, schema=schema)
    staging = staging_path(out / "summary.parquet")
    pq.write_table(table, staging)
    os.replace(staging, out / "summary.parquet")


# --- what the command prints ---------------------------------------------------------------------


def summary_table(summary: dict[str, Any]) -> Any:
    """A rich table: one row per scenario with its seeds, verdict against the expectation and
    key metrics (mean commits and blocked time over its runs)."""
    from rich.table import Table

    runs_of: dict[str, list[dict[str, Any]]] = {}
    for row in summary["runs"]:
        runs_of.setdefault(row["scenario"], []).append(row)
    table = Table(title=f"suite {summary['suite']}", title_justify="left")
    for column, justify in (
        ("scenario", "left"),
        ("seeds", "right"),
        ("verdict", "left"),
        ("expected", "left"),
        ("violated", "left"),
        ("commits", "right"),
        ("blocked ms", "right"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for entry in summary["scenarios"]:
        rows = runs_of[entry["scenario"]]
        seeds = [row["seed"] for row in rows]
        seed_range = str(seeds[0]) if len(seeds) == 1 else f"{seeds[0]}-{seeds[-1]}"
        seed_text = f"{len(seeds)} ({seed_range})"
        good = sum(row["ok"] for row in rows)
        errors = sum(row["error"] is not None for row in rows)
        verdict = "[green]as expected[/]" if entry["ok"] else "[bold red]NOT as expected[/]"
        if len(rows) > 1 or errors:
            verdict += f" {good}/{len(rows)}"
        if errors:
            verdict += f" ({errors} error{'s' if errors > 1 else ''})"
        if entry["expect"] == "any-of":
            expected = "any of " + ", ".join(entry["may_violate"])
        elif entry["expect"] == "unchecked":
            expected = "(unchecked)"
        else:
            expected = ", ".join(entry["expected_violations"]) or "none"
        violated = ", ".join(
            name if len(rows) == 1 else f"{name} x{count}"
            for name, count in entry["violated_in"].items()
        )
        metrics = [flat_row(row) for row in rows if row["metrics"]]
        table.add_row(
            entry["scenario"],
            seed_text,
            verdict,
            expected,
            violated or "none",
            _mean([m.get("commits") for m in metrics]),
            _mean([m.get("blocked_ms_total") for m in metrics]),
        )
    return table


def _mean(values: list[Any]) -> str:
    numbers = [v for v in values if v is not None]
    return f"{sum(numbers) / len(numbers):.0f}" if numbers else "-"


def report_lines(outcome: SuiteOutcome) -> list[str]:
    """What follows the table: failed runs with their error or replay, counterexamples, files."""
    summary, out = outcome.summary, outcome.out
    lines: list[str] = []
    for row in summary["runs"]:
        if row["ok"]:
            continue
        label = f"{row['scenario']} seed {row['seed']}"
        if row["error"]:
            lines.append(
                f"ERROR {label}: {row['error']} (traceback: {out / row['run_dir']}/error.txt)"
            )
        else:
            lines.append(
                f"NOT as expected {label}: violated {', '.join(row['violated']) or 'nothing'}"
                f", expected {', '.join(row['expected_violations']) or 'nothing'}"
            )
        if row["replay"]:
            lines.append(f"  replay: {row['replay']}")
    caught = [row for row in summary["runs"] if row["counterexample"]]
    if caught:
        lines.append(f"minimal counterexamples of {len(caught)} caught known-bad runs:")
        for row in caught:
            lines.append(f"  {row['scenario']}: {out / row['counterexample']}")
    total = len(summary["runs"])
    good = sum(row["ok"] for row in summary["runs"])
    if summary["interrupted"]:
        abandoned = summary.get("abandoned", 0)
        lines.append(
            f"interrupted: {good}/{total} finished runs as expected, {abandoned} run(s) abandoned"
        )
    else:
        lines.append(f"{good}/{total} runs as expected")
    lines.append(f"summary: {out / 'summary.json'} (and summary.parquet)")
    if outcome.report is not None:
        lines.append(f"report: {outcome.report}")
    else:
        lines.append(f"report.html not written: {outcome.report_error}")
    return lines
