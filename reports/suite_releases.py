"""The release matrix of a suite's report: the suite's grids over ``protocol.release`` (one per
Hudi bug, ``scenarios/suites.toml``) as one table, a row per grid and a column per release, each
cell the invariants its run violated. A bug reproduced under the release that has it and held
on the releases that fix it reads as one row (docs/scenarios.md, "Releases as presets").
"""

from __future__ import annotations

from html import escape
from typing import Any

from reports.page import badge
from reports.suite_data import verdict_kind
from scenarios.grids import RELEASE_KEY
from scenarios.releases import RELEASES


def release_grids(grids: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """The grids whose points vary the release and nothing else."""
    return {
        name: points
        for name, points in grids.items()
        if points and all(set(p.get("params") or {}) == {RELEASE_KEY} for p in points)
    }


def release_matrix(grids: dict[str, list[dict[str, Any]]], runs: list[dict[str, Any]]) -> str:
    """The matrix section ("" when the suite ran no release grid)."""
    matrix = release_grids(grids)
    if not matrix:
        return ""
    head = "".join(f"<th>{escape(r)}</th>" for r in RELEASES)
    rows = [_row(name, points, runs) for name, points in matrix.items()]
    return (
        "<h2>Hudi releases</h2>"
        '<p class="description">Each row runs one scenario under every release preset: the '
        "invariants it violated there, against what that release is expected to do.</p>"
        f'<table class="runs releases"><thead><tr><th>grid</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _row(name: str, points: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    by_release = {str((p.get("params") or {})[RELEASE_KEY]): p for p in points}
    cells = []
    for release in RELEASES:
        point = by_release.get(release)
        run = next((r for r in runs if point and r.get("scenario") == point["scenario"]), None)
        if point is None or run is None:
            cells.append("<td>–</td>")
            continue
        violated = ", ".join(run.get("violated") or []) or "none"
        kind = verdict_kind(list(run.get("violated") or []), bool(run.get("ok")), run.get("error"))
        cells.append(f"<td>{badge(kind, violated)}</td>")
    description = str(points[0].get("description") or "").rsplit(": ", 1)[0]
    return (
        f'<tr><td><a href="#g-{escape(name)}">{escape(name)}</a>'
        f'<div class="description">{escape(description)}</div></td>{"".join(cells)}</tr>'
    )


__all__ = ["release_grids", "release_matrix"]
