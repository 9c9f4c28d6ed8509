"""A grid's section of a suite's report (``[grids.*]``): a table of its points with their
expectations, verdicts and metrics, the violations not as expected, the plots of its first point
and the happens-before chains of its first violating point. The grid's summary is the headline
comparison drawn from all points (:mod:`reports.suite_plots`).
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from reports.page import BADGES, badge, command_html, guarded_plot, seed_of
from reports.run_data import load_run
from reports.suite_counterexamples import violations_block
from reports.suite_data import safe_name
from reports.suite_plots import MAX_PLOTTED_RUNS, plots_block, run_plots
from reports.suite_scenario import files_cell
from reports.suite_summary import METRIC_HEADERS, metrics_cells
from reports.violations import plot_violations

GRID_HEADERS = ("point", "seed", "expectation", "violated", "verdict", *METRIC_HEADERS, "files")


def _point_label(point: dict[str, Any]) -> str:
    params = point.get("params") or {}
    return (
        ", ".join(f"{k.rsplit('.', 1)[-1]} = {v}" for k, v in params.items()) or point["scenario"]
    )


def _expectation(point: dict[str, Any]) -> str:
    mode = point.get("expect") or "exact"
    if mode == "any-of":
        return "any of " + ", ".join(point.get("may_violate") or [])
    if mode == "unchecked":
        return "(unchecked)"
    return ", ".join(point.get("expected_violations") or []) or "none"


def _point_kind(run: dict[str, Any]) -> tuple[str, str]:
    if run.get("error"):
        return "error", BADGES["error"]
    if not run.get("ok"):
        return "fail", BADGES["fail"]
    if run.get("violated"):
        return "caught", "as expected (violations allowed)"
    return "pass", BADGES["pass"]


def grid_section(
    suite_dir: Path, grid: str, points: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> str:
    """One section per grid: a table of its points and the plots of the few that say something
    the headline comparison does not (the first point, the first violating one, failures)."""
    ok = all(p.get("ok") for p in points)
    kind = "pass" if ok else "fail"
    order = {p["scenario"]: i for i, p in enumerate(points)}
    runs = sorted(runs, key=lambda r: (order.get(r.get("scenario"), 0), seed_of(r)))
    chosen, violating = _plotted_points(runs)
    plotted = {id(r) for r in chosen} | ({id(violating)} if violating else set())
    description = str(points[0].get("description") or "") if points else ""
    if points and points[0].get("params") and ": " in description:
        description = description.rsplit(": ", 1)[0] + "."
    rows = [_grid_row(suite_dir, points, run, plotted) for run in runs]
    head = "".join(f"<th>{h}</th>" for h in GRID_HEADERS)
    parts = [
        f'<section id="g-{safe_name(grid)}" class="scenario grid {kind}">',
        f"<h2>grid {escape(grid)} {badge(kind, 'every point as expected' if ok else 'NOT as expected')}</h2>",
        f'<p class="description">{escape(description)}</p>',
        f'<table class="runs grid"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]
    errors: list[str] = []
    failing = "".join(
        violations_block(suite_dir, r, list(r.get("expected_violations") or []))
        for r in runs
        if not r.get("ok") and not r.get("error")
    )
    if failing:
        parts.append(f"<h3>Violations not as expected</h3>{failing}")
    for run in chosen:
        figures = run_plots(suite_dir, run, errors)
        if figures:
            parts.append(plots_block(suite_dir, run, figures, f"Plots of {_point_label(run)}"))
    if violating is not None and (chains := _violation_plots(suite_dir, grid, violating, errors)):
        parts.append(chains)
    parts.extend(f'<p class="error">plot failed: {escape(e)}</p>' for e in errors)
    parts.append("</section>")
    return "\n".join(parts)


def _plotted_points(
    runs: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(the runs whose per-run plots are drawn: the first point and the failures, at most
    :data:`~reports.suite_plots.MAX_PLOTTED_RUNS`; the first violating run whose happens-before
    chains are drawn, None when a plotted run already shows them)."""
    ran = [r for r in runs if not r.get("error")]
    chosen = ran[:1] + [r for r in ran[1:] if not r.get("ok")]
    chosen = chosen[:MAX_PLOTTED_RUNS]
    violating = (
        None  # a plotted run already shows its happens-before chains
        if any(r.get("violated") for r in chosen)
        else next((r for r in ran if r.get("violated")), None)
    )
    return chosen, violating


def _grid_row(
    suite_dir: Path, points: list[dict[str, Any]], run: dict[str, Any], plotted: set[int]
) -> str:
    """One run's row of the grid table (and its replay row)."""
    point_kind, text = _point_kind(run)
    point = next((p for p in points if p["scenario"] == run.get("scenario")), run)
    return (
        f'<tr class="{point_kind}"><td>{escape(_point_label(point))}</td>'
        f'<td class="num">{escape(str(run.get("seed")))}</td>'
        f"<td>{escape(_expectation(point))}</td>"
        f"<td>{escape(', '.join(run.get('violated') or []) or 'none')}</td>"
        f"<td>{badge(point_kind, text)}</td>"
        + metrics_cells(run.get("metrics") or {})
        + f"<td>{files_cell(suite_dir, run, plotted)}</td></tr>"
        + (
            f'<tr class="{point_kind} replay-row"><td colspan="{len(GRID_HEADERS)}">replay: '
            f"{command_html(run['replay'])}</td></tr>"
            if run.get("replay")
            else ""
        )
    )


def _violation_plots(
    suite_dir: Path, grid: str, violating: dict[str, Any], errors: list[str]
) -> str:
    """The happens-before chains of the grid's first violating run ("" if none could be drawn)."""
    out = suite_dir / "plots" / safe_name(str(violating.get("run_dir")))
    figures = (
        guarded_plot(
            lambda: plot_violations(load_run(suite_dir / violating["run_dir"]), out),
            errors,
            grid,
        )
        or []
    )
    if not figures:
        return ""
    label = f"First violation in the grid: {_point_label(violating)}"
    return plots_block(suite_dir, violating, figures, label)


__all__ = ["GRID_HEADERS", "grid_section"]
