"""The plots of a suite's report: the headline comparisons (blocking vs async instant generation,
OCC vs NBCC, the Flink state index's file groups vs the bucket index's, TrueTime's bound vs the
real skew) when the suite ran their scenarios, the per-run
plots of the few runs that say something new (:func:`plotted_runs`), and the distributions across
seeds (:mod:`reports.distributions`).

A plot that says nothing new is not drawn: per-run plots are drawn for the first seed of a
scenario and for runs whose verdict differs from the expectation (at most
:data:`MAX_PLOTTED_RUNS`); the other runs are linked to their folders. A failed plot becomes a note
(:func:`reports.page.guarded_plot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from html import escape
from pathlib import Path
from typing import Any

from reports.comparisons import (
    plot_blocking_vs_async,
    plot_occ_vs_nbcc,
    plot_truetime,
    truetime_point,
)
from reports.distributions import plot_distributions, rows_from_suite_runs
from reports.figures import Figure
from reports.file_groups import plot_bootstrap_cost, plot_state_vs_bucket
from reports.marker_costs import marker_point, plot_marker_costs
from reports.page import guarded_plot, img, seed_of
from reports.run_plots import plot_run
from reports.suite_data import safe_name
from reports.truetime_ceiling import ceiling_point, plot_truetime_ceiling

MAX_PLOTTED_RUNS = 3
"""Runs of one scenario (or grid) whose per-run plots are drawn: the first seed and the first
runs whose verdict differs from the expectation."""


HEADLINE_PAIRS = (
    ("blocking_vs_async", "blocking_stalls", "async_baseline"),
    ("blocking_vs_async_heavy", "blocking_stalls_heavy", "async_heavy"),
    ("occ_vs_nbcc", "occ_contention", "nbcc_two_jobs"),
    ("state_vs_bucket", "flink_state_cow", "bucket_index_cow"),
    ("index_bootstrap", "flink_state_lost", "flink_state_bootstrap"),
)
"""Comparisons drawn when the suite ran both scenarios (catalog names)."""
HEADLINE_EXTRAS = {"occ_vs_nbcc": "occ_contention_early_detection"}
"""A third scenario a comparison draws as its middle column when the suite ran it."""


@dataclass(frozen=True)
class Plotted:
    figures: list[Figure]
    errors: list[str]


def _first_run(runs: list[dict[str, Any]], scenario: str, seed: int | None = None):
    matches = [r for r in runs if r.get("scenario") == scenario and not r.get("error")]
    if seed is not None:
        same = [r for r in matches if r.get("seed") == seed]
        matches = same or matches
    return matches[0] if matches else None


def headline_plots(suite_dir: Path, runs: list[dict[str, Any]], plots: Path) -> Plotted:
    figures: list[Figure] = []
    errors: list[str] = []
    plain = [r for r in runs if not r.get("grid")]
    draw = {
        "blocking_vs_async": plot_blocking_vs_async,
        "blocking_vs_async_heavy": partial(plot_blocking_vs_async, name="blocking_vs_async_heavy"),
        "occ_vs_nbcc": plot_occ_vs_nbcc,
        "state_vs_bucket": plot_state_vs_bucket,
        "index_bootstrap": plot_bootstrap_cost,
    }
    for name, first, second in HEADLINE_PAIRS:
        a = _first_run(plain, first)
        b = _first_run(plain, second, a.get("seed") if a else None)
        extra = _first_run(plain, HEADLINE_EXTRAS.get(name, ""), a.get("seed") if a else None)
        more = (suite_dir / extra["run_dir"],) if extra else ()
        if a and b:
            figure = guarded_plot(
                lambda n=name, a=a, b=b, more=more: draw[n](
                    suite_dir / a["run_dir"], suite_dir / b["run_dir"], plots / "headline", *more
                ),
                errors,
                name,
            )
            if figure:
                figures.append(figure)
    for grid_name, point, plot in (
        ("truetime", truetime_point, plot_truetime),
        ("truetime_ceiling", ceiling_point, plot_truetime_ceiling),
        ("markers", marker_point, plot_marker_costs),
    ):
        figure = _grid_plot(suite_dir, runs, plots, errors, grid_name, point, plot)
        if figure:
            figures.append(figure)
    return Plotted(figures, errors)


def _grid_plot(suite_dir, runs, plots, errors, grid_name, point, plot) -> Figure | None:
    """The headline plot of a grid's runs, each reduced to its ``point`` (None: no run)."""
    grid = [r for r in runs if r.get("grid") == grid_name and not r.get("error")]
    points = [
        p
        for r in grid
        if (p := guarded_plot(lambda r=r: point(suite_dir / r["run_dir"]), errors, grid_name))
    ]
    if not points:
        return None
    return guarded_plot(lambda: plot(points, plots / "headline"), errors, grid_name)


def plotted_runs(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs whose per-run plots are drawn: the first seed that ran, then the runs whose
    verdict differs from the expectation, at most :data:`MAX_PLOTTED_RUNS`. Another seed of a
    run that behaved as expected would only repeat the first one's pictures."""
    ran = sorted((r for r in runs if not r.get("error")), key=seed_of)
    if not ran:
        return []
    chosen = [ran[0], *(r for r in ran[1:] if not r.get("ok"))]
    return chosen[:MAX_PLOTTED_RUNS]


def run_plots(suite_dir: Path, run: dict[str, Any], errors: list[str]) -> list[Figure]:
    out = suite_dir / "plots" / safe_name(str(run.get("run_dir") or run.get("scenario")))
    return (
        guarded_plot(
            lambda: plot_run(suite_dir / run["run_dir"], out), errors, str(run["scenario"])
        )
        or []
    )


def plots_block(
    suite_dir: Path, run: dict[str, Any], figures: list[Figure], label: str = "Plots"
) -> str:
    anchor = safe_name(str(run.get("run_dir") or ""))
    return (
        f'<h3 id="p-{anchor}">{escape(label)} (seed {escape(str(run.get("seed")))})</h3>'
        + "".join(img(f, suite_dir) for f in figures)
    )


def distributions_block(
    suite_dir: Path, name: str, runs: list[dict[str, Any]], expected: list[str], errors: list[str]
) -> str:
    """Across seeds: violation counts and metric histograms, when the scenario ran more than once."""
    if len(runs) < 2:
        return ""
    out = suite_dir / "plots" / "distributions" / safe_name(name)
    rows = rows_from_suite_runs(sorted(runs, key=seed_of))
    figures = (
        guarded_plot(
            lambda: plot_distributions(rows, out, scenario=name, expected=expected),
            errors,
            f"{name} distributions",
        )
        or []
    )
    if not figures:
        return ""
    return f"<h3>Across {len(runs)} seeds</h3>" + "".join(img(f, suite_dir) for f in figures)


__all__ = [
    "HEADLINE_PAIRS",
    "MAX_PLOTTED_RUNS",
    "Plotted",
    "distributions_block",
    "headline_plots",
    "plots_block",
    "plotted_runs",
    "run_plots",
]
