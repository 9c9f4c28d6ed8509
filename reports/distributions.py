"""Plots across seeds: how often each invariant broke, and how the key metrics spread.

One seed is one sample; a sweep (``testbed sweep``) or a suite run with ``--seeds N`` holds many.
Two pictures answer a reviewer's two questions about them:

- :func:`plot_violation_counts`: in how many seeds each invariant was violated. Every invariant
  gets a row, and a zero is drawn as a green dot with its "0/N", so a clean sweep reads as clean
  at a glance (an empty chart would not say whether the checker ran). Expected violations of a
  known-bad variant are blue, unexpected ones red, as in the suite report.
- :func:`plot_metric_distributions`: one histogram per key metric (commits, committed
  throughput, commit latency, blocked fraction, failovers, faults), with the median and p90
  marked: whether a seed's number is typical or an outlier.

Input is a list of flat rows, one per seed, with the columns of ``testbed.sweep.ROW_SCHEMA``
(``seed``, ``ok``, ``violated``, ``error``, ``commits``, ...); :func:`rows_from_suite_runs` builds
the same rows from a suite's ``summary.json`` runs. This module never imports ``testbed`` (the
layer above): the sweep hands its rows in.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reports.figures import COLORS, Figure, new_figure, percent, save, styled
from reports.metrics import nearest_rank
from scenarios.schema import INVARIANTS

CRASHED = "crashed (error)"
"""The row of the violation chart counting seeds whose run raised (no verdict at all)."""
PANEL_COLUMNS = 3
MAX_INTEGER_BINS = 40
"""Integer metrics spanning at most this many values get one bar per value."""


# --- rows ------------------------------------------------------------------------------------------


def rows_from_suite_runs(runs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flat per-seed rows (the sweep's columns, plus ``commit_latency_p50_ms`` and ``writers``)
    from ``summary.json`` run entries, whose metrics are nested per job and writer. Job counters
    are summed over jobs and the commit latency is the worst job's, as the sweep does."""
    out = []
    for run in runs:
        metrics = run.get("metrics") or {}
        jobs = list((metrics.get("jobs") or {}).values())
        row: dict[str, Any] = {
            "scenario": run.get("scenario"),
            "seed": run.get("seed"),
            "ok": bool(run.get("ok")),
            "expected_violations": list(run.get("expected_violations") or []),
            "violated": list(run.get("violated") or []),
            "error": run.get("error"),
        }
        if metrics and not run.get("error"):
            row |= {
                "sim_end_ms": metrics.get("sim_end_ms"),
                "events": metrics.get("events"),
                "blocked_ms_total": metrics.get("blocked_ms_total"),
                "faults": sum((metrics.get("faults") or {}).values()),
                "writers": len(metrics.get("writers") or {}) or None,
            }
            for name in ("commits", "records_committed", "failovers", "checkpoints_failed"):
                row[name] = sum(int(job.get(name, 0)) for job in jobs)
            for p in ("p50", "p99"):
                values = [(job.get("commit_latency_ms") or {}).get(p) for job in jobs]
                present = [v for v in values if v is not None]
                row[f"commit_latency_{p}_ms"] = max(present) if present else None
        out.append(row)
    return out


def violation_counts(
    rows: Sequence[dict[str, Any]], invariants: Sequence[str] = INVARIANTS
) -> dict[str, int]:
    """Seeds violating each invariant: every name of ``invariants`` (zeros included) in that
    order, then any other name the rows carry (sorted), then :data:`CRASHED` if a run raised."""
    counts = dict.fromkeys(invariants, 0)
    extra: dict[str, int] = {}
    for row in rows:
        for name in row.get("violated") or []:
            if name in counts:
                counts[name] += 1
            else:
                extra[name] = extra.get(name, 0) + 1
    counts |= dict(sorted(extra.items()))
    crashed = sum(1 for row in rows if row.get("error"))
    if crashed:
        counts[CRASHED] = crashed
    return counts


@dataclass(frozen=True)
class Metric:
    """One distribution panel: how a row gives its value, and how a reviewer reads it."""

    key: str
    label: str
    value: Callable[[dict[str, Any], int | None], float | None]
    fmt: Callable[[float], str]


def _column(name: str) -> Callable[[dict[str, Any], int | None], float | None]:
    return lambda row, _writers: row.get(name)


def _throughput(row: dict[str, Any], _writers: int | None) -> float | None:
    records, end_ms = row.get("records_committed"), row.get("sim_end_ms")
    return None if records is None or not end_ms else 1000 * records / end_ms


def _blocked_fraction(row: dict[str, Any], writers: int | None) -> float | None:
    """Writer time blocked waiting for an instant, as a fraction of all writers' run time."""
    blocked, end_ms = row.get("blocked_ms_total"), row.get("sim_end_ms")
    count = row.get("writers") or writers
    return None if blocked is None or not end_ms or not count else blocked / (end_ms * count)


def _count(value: float) -> str:
    return f"{value:.0f}"


def _ms(value: float) -> str:
    return f"{value:.0f} ms"


METRICS: tuple[Metric, ...] = (
    Metric("commits", "commits per run", _column("commits"), _count),
    Metric("throughput", "records committed / s", _throughput, lambda v: f"{v:.0f}/s"),
    Metric(
        "commit_latency_p50_ms", "commit latency p50 (ms)", _column("commit_latency_p50_ms"), _ms
    ),
    Metric(
        "commit_latency_p99_ms", "commit latency p99 (ms)", _column("commit_latency_p99_ms"), _ms
    ),
    Metric("blocked_fraction", "writers' time blocked (%)", _blocked_fraction, percent),
    Metric("failovers", "failovers per run", _column("failovers"), _count),
    Metric("faults", "faults injected per run", _column("faults"), _count),
)
"""The panels, in order; a metric no row carries (the sweep has no p50) is left out. Commit
latency is the worst job's."""


def metric_values(
    rows: Sequence[dict[str, Any]], writers: int | None = None
) -> dict[str, list[float]]:
    """Metric key -> its values over the rows that have it (seed order), for every metric of
    :data:`METRICS` at least one row has. ``writers`` is the writer count of rows without one
    (the blocked fraction needs it)."""
    out = {}
    for metric in METRICS:
        values = [metric.value(row, writers) for row in rows]
        present = [float(v) for v in values if v is not None]
        if present:
            out[metric.key] = present
    return out


def percentile(values: Sequence[float], p: int) -> float:
    """Nearest rank, as the sweep's summary and the run metrics compute it."""
    ordered = sorted(values)
    return ordered[nearest_rank(len(ordered), p) - 1]


def bin_edges(values: Sequence[float]) -> np.ndarray:
    """One bar per value for small integer ranges (a count of 3 failovers is its own bar), else
    about sqrt(n) equal bins (5 to 20); a constant metric gets one bar around its value."""
    data = np.asarray(values, dtype=float)
    low, high = float(data.min()), float(data.max())
    integers = bool(np.all(data == np.round(data)))
    if integers and high - low <= MAX_INTEGER_BINS:
        return np.arange(low - 0.5, high + 1.5)
    if high == low:
        pad = max(abs(low) * 0.05, 1e-9)
        return np.array([low - pad, high + pad])
    bins = min(20, max(5, math.ceil(math.sqrt(len(data)))))
    return np.linspace(low, high, bins + 1)


# --- plots -----------------------------------------------------------------------------------------


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def plot_violation_counts(
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    title: str,
    expected: Sequence[str] = (),
    name: str = "violations",
) -> Figure:
    """Horizontal bars: seeds (out of all rows) in which each invariant was violated."""
    counts = violation_counts(rows)
    with styled():
        fig = new_figure(10, 1.2 + 0.3 * len(counts))
        ax = fig.add_subplot()
        draw_violation_counts(ax, counts, len(rows), expected)
        ax.set_title(title)
    caption = _violations_caption(counts, len(rows), set(expected))
    return save(fig, out_dir, name, title, caption)


def draw_violation_counts(
    ax, counts: dict[str, int], total: int, expected: Sequence[str] = ()
) -> None:
    """One bar per name of ``counts`` (first on top), labelled ``count/total``; a zero gets a
    green dot (an expected violation never seen, a red cross), so it shows."""
    expected_set = set(expected)
    names = list(counts)
    y = np.arange(len(names))[::-1]
    colors = [
        COLORS["caught"] if n in expected_set and n != CRASHED else COLORS["violation"]
        for n in names
    ]
    ax.barh(y, [counts[n] for n in names], 0.6, color=colors)
    ax.set_xlim(0, max(total, 1) * 1.18)
    for yi, n in zip(y, names, strict=True):
        count = counts[n]
        if n == CRASHED:
            note, color = " crashed", COLORS["violation"]
        elif n in expected_set:
            note = " expected" if count == total else f" expected in all {total}"
            color = COLORS["caught"] if count == total else COLORS["violation"]
            if not count:
                ax.plot([0], [yi], "x", color=color, markersize=6, clip_on=False)
        elif count:
            note, color = " unexpected", COLORS["violation"]
        else:
            note, color = "", COLORS["ok"]
            ax.plot([0], [yi], "o", color=COLORS["ok"], markersize=5, clip_on=False)
        ax.text(
            count + 0.01 * max(total, 1),
            yi,
            f"  {count}/{total}{note}",
            va="center",
            fontsize=8,
            color=color,
        )
    ax.set_yticks(y, names)
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_xlabel(f"seeds with a violation (of {_seeds(total)})")
    ax.grid(axis="y", visible=False)


def _violations_caption(counts: dict[str, int], total: int, expected: set[str]) -> str:
    crashed = counts.get(CRASHED, 0)
    seen = [(n, c) for n, c in counts.items() if c and n != CRASHED]
    parts = [
        f"{n} in {c}/{total} ({'expected' if n in expected else 'UNEXPECTED'})" for n, c in seen
    ]
    text = f"{_seeds(total)}: " + (
        "violated " + ", ".join(parts) + "." if parts else "no invariant violated in any seed."
    )
    missed = sorted(n for n in expected if counts.get(n, 0) < total)
    if missed:
        text += f" Expected in every seed but missed in some: {', '.join(missed)}."
    if crashed:
        text += f" {_seeds(crashed)} crashed before a verdict."
    return text


def plot_metric_distributions(
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    title: str,
    writers: int | None = None,
    name: str = "metrics",
) -> Figure | None:
    """One histogram per metric of :data:`METRICS` (seeds per value bin), median and p90 marked;
    None when no row has a metric (every seed crashed)."""
    values = metric_values(rows, writers)
    if not values:
        return None
    metrics = [m for m in METRICS if m.key in values]
    cols = min(PANEL_COLUMNS, len(metrics))
    grid_rows = -(-len(metrics) // cols)
    with styled():
        fig = new_figure(12, 0.6 + 2.5 * grid_rows)
        fig.suptitle(title)
        axes = fig.subplots(grid_rows, cols, squeeze=False).ravel()
        for ax, metric in zip(axes, metrics, strict=False):
            draw_histogram(ax, metric, values[metric.key])
        for ax in axes[len(metrics) :]:
            ax.set_visible(False)
    n = max(len(v) for v in values.values())
    caption = (
        f"{_seeds(n)} with metrics"
        + (f" (of {len(rows)}; the others crashed)" if n < len(rows) else "")
        + ": "
        + "; ".join(
            f"{m.label.split(' (')[0]} median {m.fmt(percentile(values[m.key], 50))} "
            f"(range {m.fmt(min(values[m.key]))} to {m.fmt(max(values[m.key]))})"
            for m in metrics
        )
        + ". Solid line: median, dashed: p90."
    )
    return save(fig, out_dir, name, title, caption)


def draw_histogram(ax, metric: Metric, values: list[float]) -> None:
    """Seeds per value bin of ``metric`` (:func:`bin_edges`), the median (solid) and p90
    (dashed) as vertical lines; a fraction is drawn in percent."""
    edges = bin_edges(values)
    counts, _ = np.histogram(values, bins=edges)
    scale = 100.0 if metric.key == "blocked_fraction" else 1.0  # a fraction is read in percent
    ax.bar(
        edges[:-1] * scale,
        counts,
        width=np.diff(edges) * scale * 0.92,
        align="edge",
        color=COLORS["written"],
    )
    p50, p90 = percentile(values, 50), percentile(values, 90)
    ax.axvline(p50 * scale, color=COLORS["crash"], linewidth=1.2)
    ax.axvline(p90 * scale, color=COLORS["crash"], linewidth=1.0, linestyle="--")
    ax.set_title(
        f"{metric.label}\nmedian {metric.fmt(p50)} · p90 {metric.fmt(p90)} · "
        f"max {metric.fmt(max(values))}",
        fontsize=9,
    )
    ax.set_ylabel("seeds")
    ax.yaxis.get_major_locator().set_params(integer=True)
    if scale == 1.0 and np.all(np.diff(edges) == 1):  # one bar per integer value
        ax.xaxis.get_major_locator().set_params(integer=True)
    if p50 == max(values) == min(values):  # every seed alike: one bar, and say so
        center, half = p50 * scale, 2.5 * float(edges[-1] - edges[0]) * scale
        low = center - half
        if p50 >= 0:  # counts and durations: no negative axis
            low = max(low, min(0.0, float(edges[0]) * scale))
        ax.set_xlim(low, center + half)
        ax.text(
            0.5,
            0.5,
            f"all {_seeds(len(values))}: {metric.fmt(p50)}",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85},
        )


def plot_distributions(
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    scenario: str,
    expected: Sequence[str] = (),
    writers: int | None = None,
) -> list[Figure]:
    """Both pictures for one scenario's seeds, into ``out_dir`` (``violations``, ``metrics``)."""
    seeds = [row["seed"] for row in rows if row.get("seed") is not None]
    span = f"seeds {min(seeds)}-{max(seeds)}" if seeds else "no seeds"
    figures = [
        plot_violation_counts(
            rows,
            out_dir,
            title=f"{scenario}: violations per invariant across {_seeds(len(rows))} ({span})",
            expected=expected,
        )
    ]
    metrics = plot_metric_distributions(
        rows, out_dir, title=f"{scenario}: metrics across seeds ({span})", writers=writers
    )
    if metrics is not None:
        figures.append(metrics)
    return figures


__all__ = [
    "CRASHED",
    "METRICS",
    "Metric",
    "bin_edges",
    "draw_histogram",
    "draw_violation_counts",
    "metric_values",
    "percentile",
    "plot_distributions",
    "plot_metric_distributions",
    "plot_violation_counts",
    "rows_from_suite_runs",
    "violation_counts",
]
