"""What a suite's report reads from its folder: the scenario entries of ``summary.json`` (or
those built from its runs), its grids, a run's ``result.json``, the verdict kind of a scenario or
run, and the run a section lists the invariants of.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from reports.page import seed_of


def scenario_entries(summary: dict[str, Any], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scenario entries of the summary, or built from the runs if it has none (grid runs are
    then folded into the comparisons only, not given a section)."""
    listed = [s for s in summary.get("scenarios") or [] if s.get("scenario")]
    if listed:
        return listed
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if not run.get("grid"):
            by_name[run.get("scenario", "?")].append(run)
    out = []
    for name, group in by_name.items():
        violated: dict[str, int] = defaultdict(int)
        for run in group:
            for inv in run.get("violated") or []:
                violated[inv] += 1
        out.append(
            {
                "scenario": name,
                "description": group[0].get("description", ""),
                "runs": len(group),
                "ok": all(r.get("ok") for r in group),
                "expected_violations": group[0].get("expected_violations") or [],
                "violated_in": dict(violated),
            }
        )
    return out


def grid_points(scenarios: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Grid name -> its points' scenario entries, in suite order."""
    grids: dict[str, list[dict[str, Any]]] = {}
    for entry in scenarios:
        if entry.get("grid"):
            grids.setdefault(str(entry["grid"]), []).append(entry)
    return grids


def run_result(suite_dir: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    path = suite_dir / str(run.get("run_dir", "")) / "result.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def verdict_kind(expected: list[str], ok: bool, error: str | None = None) -> str:
    """``pass`` (real protocol held), ``caught`` (known-bad variant caught as expected),
    ``fail`` (verdict differs from the expectation) or ``error`` (the run itself failed)."""
    if error:
        return "error"
    if not ok:
        return "fail"
    return "caught" if expected else "pass"


def safe_name(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "run"


def representative(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run whose invariants the section lists: the first that differs from its
    expectation, else the first (lowest seed) that ran."""
    ran = [r for r in runs if not r.get("error")]
    ran.sort(key=lambda r: (bool(r.get("ok")), seed_of(r)))
    return ran[0] if ran else None


__all__ = [
    "grid_points",
    "representative",
    "run_result",
    "safe_name",
    "scenario_entries",
    "verdict_kind",
]
