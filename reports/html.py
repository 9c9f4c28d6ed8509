"""A suite's ``report.html``: one self-contained page a design review can read (a sweep's is
:mod:`reports.sweep_report`; both share :mod:`reports.page`'s frame, style and images). This
module reads the suite folder (:mod:`reports.suite_data`) and assembles the page from its sections.

Input is a suite folder as ``testbed suite`` writes it: ``summary.json`` and the run folders it
names. Output is ``report.html`` next to it, with every image embedded and the style inline: no
scripts, no external files, so it can be mailed, attached to a ticket or opened years later.
Plots are also kept as PNG and SVG under ``plots/``, and the report links to them and to the run
folders (links only: the page reads the same without them).

The page must stay small enough to mail (a few MB for the ``full`` suite), so an embedded image is
the plot's preview (:attr:`reports.figures.Figure.preview`: drawn at a lower DPI than the file on
disk, on a 256-color palette: plots are flat colors and anti-aliased edges, so it looks the same
in a third of the bytes); never the SVG. And a plot that says nothing new is not drawn
(:func:`reports.suite_plots.plotted_runs`). A grid (``[grids.*]``) gets one section with a table
of its points, the plots of its first point and the happens-before chains of its first violating
point; its summary is the headline comparison drawn from all points.

What it shows, in reading order: the suite's verdict and summary table
(:mod:`reports.suite_summary`) and, when the suite ran grids over releases, the release x
scenario matrix (:mod:`reports.suite_releases`); the headline comparisons (blocking vs async instant generation, OCC
vs NBCC, TrueTime's bound vs the real skew, :mod:`reports.suite_plots`) when the suite ran their
scenarios; then one section per scenario (:mod:`reports.suite_scenario`) with its description, the
verdict of every invariant, with ``--seeds N`` the distributions across its seeds
(:mod:`reports.distributions`), every violation with its explanation and replay command, for a
known-bad variant its minimal counterexample (:mod:`reports.suite_counterexamples`), and the
plots. A known-bad variant caught as expected is shown as such (blue, "caught"), never in the red
of a real failure. Then one section per grid (:mod:`reports.suite_grid`).
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from reports.page import badge, document, img, write_page
from reports.suite_data import grid_points, scenario_entries
from reports.suite_grid import grid_section
from reports.suite_plots import Plotted, headline_plots
from reports.suite_releases import release_matrix
from reports.suite_scenario import scenario_section
from reports.suite_summary import legend, summary_table


def write_report(suite_dir: Path) -> Path:
    """Read ``suite_dir/summary.json`` and its run folders, draw the plots into
    ``suite_dir/plots/`` and write ``suite_dir/report.html``; returns its path."""
    suite_dir = Path(suite_dir)
    summary = json.loads((suite_dir / "summary.json").read_text())
    runs: list[dict[str, Any]] = list(summary.get("runs") or [])
    plots = suite_dir / "plots"
    headline = headline_plots(suite_dir, runs, plots)
    scenarios = scenario_entries(summary, runs)
    plain = [s for s in scenarios if not s.get("grid")]
    grids = grid_points(scenarios)
    sections = [
        scenario_section(suite_dir, s, [r for r in runs if r.get("scenario") == s["scenario"]])
        for s in plain
    ]
    for grid, points in grids.items():
        names = {p["scenario"] for p in points}
        grid_runs = [r for r in runs if r.get("scenario") in names]
        sections.append(grid_section(suite_dir, grid, points, grid_runs))
    page = _page(summary, runs, plain, grids, headline, sections, suite_dir)
    return write_page(suite_dir / "report.html", page)


def _page(
    summary: dict[str, Any],
    runs: list[dict[str, Any]],
    scenarios: list[dict[str, Any]],
    grids: dict[str, list[dict[str, Any]]],
    headline: Plotted,
    sections: list[str],
    suite_dir: Path,
) -> str:
    title = f"Suite {summary.get('suite', '')}".strip()
    ok = bool(summary.get("ok"))
    failing = [s["scenario"] for s in scenarios if not s.get("ok")]
    failing += [g for g, points in grids.items() if not all(p.get("ok") for p in points)]
    caught = [s["scenario"] for s in scenarios if s.get("ok") and s.get("expected_violations")]
    if summary.get("interrupted"):
        verdict, notes = _interrupted(summary, runs, failing)
    elif ok:
        verdict, notes = badge("pass", "every verdict matches its expectation"), []
    else:
        verdict, notes = badge("fail", f"{len(failing)} scenario(s) NOT as expected"), []
    seeds = summary.get("seeds")
    grid = sum(1 for r in runs if r.get("grid"))
    lead = (
        f"{len(scenarios)} scenarios, {len(runs) - grid} runs"
        + (f" ({seeds} seed(s) each)" if seeds else "")
        + (f", plus {grid} grid runs for the comparisons" if grid else "")
        + f"; {len(caught)} known-bad variant(s) caught as expected."
    )
    headline_html = "".join(img(f, suite_dir) for f in headline.figures) + "".join(
        f'<p class="error">plot failed: {escape(e)}</p>' for e in headline.errors
    )
    body = [
        f"<header><h1>{escape(title)}</h1>{verdict}",
        f'<p class="description">{escape(summary.get("description") or "")}</p>',
        f'<p class="lead">{escape(lead)}</p>',
        *notes,
        "</header>",
        "<h2>Summary</h2>",
        legend(),
        summary_table(scenarios, grids, runs),
        release_matrix(grids, runs),
    ]
    if headline_html:
        body += ["<h2>Headline comparisons</h2>", headline_html]
    body += sections
    return document(title, body)


def _interrupted(
    summary: dict[str, Any], runs: list[dict[str, Any]], failing: list[str]
) -> tuple[str, list[str]]:
    """The header of an interrupted suite: an interrupted badge saying how many runs were
    abandoned (plus a failure badge only if a finished run is not as expected) and a note that
    only the finished runs are reported."""
    finished = summary.get("finished", len(runs))
    abandoned = summary.get("abandoned")
    lost = f", {abandoned} run(s) abandoned" if abandoned is not None else ""
    verdict = badge("interrupted", f"interrupted{lost}")
    if failing:
        verdict += " " + badge("fail", f"{len(failing)} scenario(s) NOT as expected")
    note = f"Interrupted (Ctrl-C): only the {finished} run(s) that finished are reported" + (
        f"; {abandoned} run(s) were abandoned (in flight or not started) and left no folder."
        if abandoned is not None
        else "."
    )
    return verdict, [f'<p class="interrupted">{escape(note)}</p>']


__all__ = ["write_report"]
