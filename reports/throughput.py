"""Throughput over time and the writers' blocked time, from the history.

Three rates per job, each a count per time bin divided by the bin's length: records the source
*read* (``emit``: it stops reading while a writer waits for an instant, since Flink backpressure
stalls the source, and catches up afterwards), records the writers *flushed* and records
*committed*. Under ``blocking`` instant generation the read rate dips to zero at every checkpoint
while all writers wait; under ``async`` it stays flat. Next to it, the share of writers blocked at
each moment, and per writer the fraction of the run spent blocked (the part spent waiting for the
previous instant's commit, which only ``blocking`` has, darker).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reports.figures import COLORS, Figure, new_figure, percent, save, styled
from reports.run_data import RunData, value

MAX_BINS = 600
SMOOTH_MS = 10_000
"""Window of the committed rate's moving average: commits come in bursts once per checkpoint,
so their per-bin rate is all spikes; averaged over a few checkpoints it is comparable to the
read rate."""


def smoothed(values: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average over ``window`` bins (shorter at the start)."""
    if window <= 1 or len(values) == 0:
        return values
    sums = np.cumsum(np.concatenate([[0.0], values]))
    counts = np.minimum(np.arange(1, len(values) + 1), window)
    return (sums[1:] - sums[np.maximum(np.arange(1, len(values) + 1) - window, 0)]) / counts


def bin_ms(run: RunData) -> int:
    """Half a second for runs up to five minutes, coarser for longer ones (at most 600 bins)."""
    return max(500, -(-run.end_ms // MAX_BINS // 500) * 500)


@dataclass(frozen=True)
class Series:
    """Per-bin rates (records/s) of one job; ``t_s`` are the bins' left edges."""

    t_s: np.ndarray
    read: np.ndarray
    flushed: np.ndarray
    committed: np.ndarray


def rates(run: RunData, bin_width_ms: int | None = None) -> dict[str, Series]:
    """Read, flushed and committed records per second, per job, in bins of ``bin_width_ms``."""
    width = bin_width_ms or bin_ms(run)
    bins = run.end_ms // width + 1
    counts = {job: np.zeros((3, bins)) for job in run.jobs}
    for e in run.events:
        job, _, role = e.process.partition("/")
        if job not in counts:
            continue
        v = value(e)
        b = e.time // width
        if e.f == "emit" and role == "source":
            counts[job][0, b] += int(v.get("to", 0)) - int(v.get("from", 0))
        elif e.f == "flush" and e.type == "ok":
            counts[job][1, b] += int(v.get("records", 0))
        elif e.f == "commit" and e.type == "ok":
            counts[job][2, b] += int(v.get("records", 0))
    t = np.arange(bins) * width / 1000
    per_s = 1000 / width
    return {job: Series(t, c[0] * per_s, c[1] * per_s, c[2] * per_s) for job, c in counts.items()}


def blocked_share(run: RunData, bin_width_ms: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(bin left edges in s, share of all writers blocked waiting for an instant in each bin)."""
    width = bin_width_ms or bin_ms(run)
    bins = run.end_ms // width + 1
    blocked = np.zeros(bins)
    opened: dict[str, int] = {}
    for e in run.events:
        if e.f != "wait_instant":
            continue
        if e.type == "invoke":
            opened[e.process] = e.time
        elif e.process in opened:
            _spread(blocked, opened.pop(e.process), e.time, width)
    writers = max(len(run.writers), 1)
    return np.arange(bins) * width / 1000, blocked / (width * writers)


def _spread(target: np.ndarray, start_ms: int, end_ms: int, width: int) -> None:
    """Add the interval's milliseconds to the bins it covers."""
    first, last = start_ms // width, end_ms // width
    if first == last:
        target[first] += end_ms - start_ms
        return
    target[first] += (first + 1) * width - start_ms
    target[first + 1 : last] += width
    if last < len(target):
        target[last] += end_ms - last * width


def blocked_fractions(run: RunData) -> dict[str, tuple[float, float]]:
    """Writer -> (fraction of the run blocked, fraction of it waiting for a commit)."""
    end = max(run.end_ms, 1)
    out = {}
    for name, w in sorted(run.metrics.get("writers", {}).items()):
        blocked = w.get("blocked_ms", 0) / end
        out[name] = (blocked, w.get("commit_wait_ms", 0) / end)
    return out


def draw_rates(ax, run: RunData, *, ymax: float | None = None, title: str = "") -> None:
    """Read and committed rates of every job, plus the share of writers blocked (right axis)."""
    series = rates(run)
    for i, (job, s) in enumerate(series.items()):
        suffix = f" ({job})" if len(series) > 1 else ""
        style = "-" if i == 0 else "--"
        ax.plot(s.t_s, s.read, style, color=COLORS["written"], lw=0.9, label="read" + suffix)
        ax.plot(
            s.t_s,
            smoothed(s.committed, SMOOTH_MS // bin_ms(run)),
            style,
            color=COLORS["committed"],
            lw=1.4,
            label=f"committed ({SMOOTH_MS // 1000} s average)" + suffix,
        )
    ax.set_ylabel("records / s")
    ax.set_xlabel("simulated time (s)")
    if ymax:
        ax.set_ylim(0, ymax)
    else:
        ax.set_ylim(bottom=0)
    t, share = blocked_share(run)
    twin = ax.twinx()
    twin.fill_between(t, share * 100, step="post", color=COLORS["blocked"], alpha=0.35, lw=0)
    twin.set_ylim(0, 100)
    twin.set_ylabel("writers blocked (%)", color=COLORS["blocked"])
    twin.grid(False)
    twin.spines["right"].set_visible(True)
    ax.set_xlim(0, max(run.end_ms / 1000, 0.001))
    ax.set_title(title or f"{run.name}: throughput")
    ax.legend(loc="upper left", ncols=2)


def draw_blocked_bars(ax, runs: list[tuple[str, RunData, str]]) -> None:
    """Horizontal bars: per writer, the fraction of the run blocked, one color per run."""
    height = 0.8 / max(len(runs), 1)
    top = 0.0
    writers = sorted({w for _, run, _ in runs for w in blocked_fractions(run)})
    for i, (label, run, color) in enumerate(runs):
        fractions = blocked_fractions(run)
        ys = np.arange(len(writers)) + i * height
        blocked = np.array([fractions.get(w, (0.0, 0.0))[0] for w in writers]) * 100
        commit = np.array([fractions.get(w, (0.0, 0.0))[1] for w in writers]) * 100
        ax.barh(ys, blocked, height * 0.9, color=color, label=label)
        if commit.any():
            ax.barh(
                ys,
                commit,
                height * 0.9,
                color=COLORS["commit_wait"],
                label=f"{label}: waiting for the previous commit",
            )
        for y, b in zip(ys, blocked, strict=True):
            ax.text(b, y, f" {b:.1f}%", va="center", fontsize=7)
        top = max(top, float(blocked.max(initial=0.0)))
    ax.set_yticks(np.arange(len(writers)) + height * (len(runs) - 1) / 2, writers)
    ax.invert_yaxis()
    ax.set_xlim(0, max(top * 1.15, 1.0))
    ax.set_xlabel("time blocked waiting for an instant (% of the run)")
    ax.set_title("blocked time per writer")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))


def plot_throughput(run: RunData, out_dir: Path) -> Figure:
    with styled():
        fig = new_figure(11, 4.6 + 0.18 * len(run.writers))
        grid = fig.add_gridspec(2, 1, height_ratios=[3, 1.2 + 0.15 * len(run.writers)])
        draw_rates(fig.add_subplot(grid[0]), run)
        draw_blocked_bars(fig.add_subplot(grid[1]), [(run.name, run, COLORS["blocked"])])
    return save(fig, out_dir, "throughput", "Throughput and blocked time", caption(run))


def caption(run: RunData) -> str:
    jobs = run.metrics.get("jobs", {})
    committed = sum(j.get("records_committed", 0) for j in jobs.values())
    end_s = max(run.end_ms / 1000, 0.001)
    fractions = blocked_fractions(run)
    mean = sum(b for b, _ in fractions.values()) / max(len(fractions), 1)
    worst = max(fractions.items(), key=lambda kv: kv[1][0], default=None)
    text = f"{committed} records committed in {end_s:.0f} s ({committed / end_s:.0f} records/s)"
    if worst:
        text += (
            f"; writers blocked {percent(mean)} of the time on average, "
            f"{worst[0]} the most ({percent(worst[1][0])})"
        )
        commit_wait = sum(c for _, c in fractions.values()) / max(len(fractions), 1)
        if commit_wait:
            text += f", {percent(commit_wait)} waiting for the previous commit"
    return text + "."


__all__ = [
    "Series",
    "blocked_fractions",
    "blocked_share",
    "caption",
    "draw_blocked_bars",
    "draw_rates",
    "plot_throughput",
    "rates",
]
