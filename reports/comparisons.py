"""Plots across runs: the comparisons a design review asks for.

- :func:`plot_blocking_vs_async`: the seed's headline. The same workload under ``blocking`` and
  ``async`` instant generation, at two loads (catalog pairs ``blocking_stalls`` /
  ``async_baseline``: buffers flush only at the barriers; ``blocking_stalls_heavy`` /
  ``async_heavy``: buffers fill several times per checkpoint): throughput over time side by
  side, and the fraction of the run each writer spent blocked.
- :func:`plot_occ_vs_nbcc`: committed vs wasted work under contention (``occ_contention`` /
  ``nbcc_two_jobs``): what OCC's aborts cost that NBCC does not pay.
- :func:`plot_truetime`: TrueTime's price and its guarantee, over a grid of runs varying the skew
  bound (``[time] max_expected_skew_ms``) and the real skew (``clock_skew_ms``): the wait each
  instant pays grows with the bound, and violations appear once the bound is below the real skew.
  :func:`truetime_point` reduces one run folder to its point on that grid.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.patches import Rectangle

from reports.figures import COLORS, Figure, new_figure, percent, save, seconds, styled
from reports.run_data import RunData, load_run, value
from reports.throughput import blocked_fractions, draw_blocked_bars, draw_rates, rates

# --- blocking vs async -----------------------------------------------------------------------------


def _stall_summary(run: RunData) -> tuple[float, int, float]:
    """(mean fraction of the run a writer was blocked, longest single stall in ms, mean
    fraction spent waiting for the previous commit)."""
    fractions = blocked_fractions(run)
    n = max(len(fractions), 1)
    longest = max(
        (w.get("max_blocked_ms", 0) for w in run.metrics.get("writers", {}).values()), default=0
    )
    return (
        sum(b for b, _ in fractions.values()) / n,
        int(longest),
        sum(c for _, c in fractions.values()) / n,
    )


def _committed(run: RunData) -> int:
    return sum(j.get("records_committed", 0) for j in run.metrics.get("jobs", {}).values())


def plot_blocking_vs_async(
    blocking: Path, async_: Path, out_dir: Path, name: str = "blocking_vs_async"
) -> Figure:
    """Throughput over time under blocking (left) and async (right) instant generation on the
    same workload, and the blocked-time fraction of every writer under both; saved as
    ``name``."""
    slow, fast = load_run(Path(blocking)), load_run(Path(async_))
    peak = max(
        float(np.max(s.read, initial=0.0)) for run in (slow, fast) for s in rates(run).values()
    )
    with styled():
        fig = new_figure(12, 6.4 + 0.2 * len(slow.writers))
        grid = fig.add_gridspec(2, 2, height_ratios=[3, 1.4 + 0.25 * len(slow.writers)])
        draw_rates(
            fig.add_subplot(grid[0, 0]),
            slow,
            ymax=peak * 1.15,
            title=f"blocking instant generation ({slow.name})",
        )
        draw_rates(
            fig.add_subplot(grid[0, 1]),
            fast,
            ymax=peak * 1.15,
            title=f"async instant generation ({fast.name})",
        )
        draw_blocked_bars(
            fig.add_subplot(grid[1, :]),
            [("blocking", slow, COLORS["blocking"]), ("async", fast, COLORS["async"])],
        )
    (b_frac, b_long, b_commit), (a_frac, a_long, _) = _stall_summary(slow), _stall_summary(fast)
    checkpoints = sum(
        j.get("checkpoints_completed", 0) for j in slow.metrics.get("jobs", {}).values()
    )
    verdict = (
        "async removes the commit stalls"
        if b_commit > 0
        else "a blocking writer asks for an instant only when it flushes, finds the previous "
        "one committed by then and does not wait for it: at this load blocking costs nothing"
    )
    caption = (
        f"Same workload ({slow.name} / {fast.name}), {len(slow.writers)} writers, {checkpoints} "
        f"checkpoints: under blocking instant generation writers are blocked {percent(b_frac)} of "
        f"the run ({percent(b_commit)} waiting for the previous commit; longest stall "
        f"{seconds(b_long)}), under async {percent(a_frac)} (longest {seconds(a_long)}, "
        f"TrueTime's wait for a new instant): {verdict}. Records committed: {_committed(slow)} "
        f"blocking vs {_committed(fast)} async."
    )
    return save(fig, out_dir, name, "Blocking vs async instant generation", caption)


# --- OCC vs NBCC -----------------------------------------------------------------------------------

WASTE_METRICS = ("commits_aborted", "records_aborted", "failovers")
"""What contention costs: a lost conflict check aborts the commit and fails the job over (Hudi's
Flink sink recommits the same instant after the restart; there is no retry)."""


def _work(run: RunData) -> dict[str, int | None]:
    """Summed over jobs; a metric the run did not record is None ("not measured")."""
    jobs = run.metrics.get("jobs", {}).values()
    out: dict[str, int | None] = {
        "commits": sum(j.get("commits", 0) for j in jobs),
        "records_committed": sum(j.get("records_committed", 0) for j in jobs),
    }
    for name in WASTE_METRICS:
        values = [j.get(name) for j in jobs]
        out[name] = None if not values or any(v is None for v in values) else sum(values)
    writers = run.metrics.get("writers", {}).values()
    out["records_written"] = sum(w.get("records_written", 0) for w in writers)
    out["early_conflicts"] = sum(j.get("early_conflicts", 0) for j in jobs)
    if out["records_aborted"] is not None:  # thrown away at the commit or at a marker check
        out["records_aborted"] += sum(j.get("records_aborted_early", 0) for j in jobs)
    return out


def _time_to_abort(run: RunData) -> int | None:
    """The slowest job's median time from an instant's first flush to its abort."""
    values = [
        j.get("time_to_abort_ms", {}).get("p50") for j in run.metrics.get("jobs", {}).values()
    ]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _latency(run: RunData, key: str) -> int | None:
    values = [j.get("commit_latency_ms", {}).get(key) for j in run.metrics.get("jobs", {}).values()]
    values = [v for v in values if v is not None]
    return max(values) if values else None


def _fmt(value: int | None) -> str:
    return "not measured" if value is None else str(value)


def plot_occ_vs_nbcc(occ: Path, nbcc: Path, out_dir: Path, occ_early: Path | None = None) -> Figure:
    """Committed vs wasted work of OCC and NBCC under contention, and of OCC with early
    conflict detection (``occ_early``) when the suite ran it."""
    runs = [("OCC", load_run(Path(occ)))]
    if occ_early is not None:
        runs.append(("OCC + early detection", load_run(Path(occ_early))))
    runs.append(("NBCC", load_run(Path(nbcc))))
    work = {label: _work(run) for label, run in runs}
    labels = [label for label, _ in runs]
    per_s = {label: 1000 / max(run.end_ms, 1) for label, run in runs}
    per_min = {label: 60 * v for label, v in per_s.items()}
    with styled():
        fig = new_figure(12, 4.4)
        axes = fig.subplots(1, 3)
        x = np.arange(len(labels))
        committed = [(work[lbl]["records_committed"] or 0) * per_s[lbl] for lbl in labels]
        wasted = [work[lbl]["records_aborted"] for lbl in labels]
        wasted_rate = [(w or 0) * per_s[lbl] for w, lbl in zip(wasted, labels, strict=True)]
        ax = axes[0]
        ax.bar(x, committed, 0.6, color=COLORS["committed"], label="committed")
        ax.bar(x, wasted_rate, 0.6, bottom=committed, color=COLORS["wasted"], label="aborted")
        for xi, c, w, rate in zip(x, committed, wasted, wasted_rate, strict=True):
            note = "aborted: not measured" if w is None else f"aborted: {w} ({rate:.0f}/s)"
            ax.text(xi, c + rate, note, ha="center", va="bottom", fontsize=7)
        ax.set_ylim(
            0, max([c + w for c, w in zip(committed, wasted_rate, strict=True)] + [1]) * 1.2
        )
        ax.set_xticks(x, labels)
        ax.set_ylabel("records / s of run")
        ax.set_title("records written: committed vs aborted")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.32), ncols=2)
        ax = axes[1]
        kinds = [
            ("commits", COLORS["committed"]),
            ("commits_aborted", COLORS["wasted"]),
            ("failovers", COLORS["duplicate_ack"]),
        ]
        width = 0.8 / len(kinds)
        top = 1.0
        for i, (kind, color) in enumerate(kinds):
            values = [work[lbl][kind] for lbl in labels]
            rates_ = [(v or 0) * per_min[lbl] for v, lbl in zip(values, labels, strict=True)]
            xs = x + (i - 1) * width
            ax.bar(xs, rates_, width * 0.9, color=color, label=kind.replace("_", " "))
            for xv, v, r in zip(xs, values, rates_, strict=True):
                ax.text(xv, r, "n/m" if v is None else str(v), ha="center", va="bottom", fontsize=7)
            top = max(top, *rates_)
        ax.set_ylim(0, top * 1.2)
        ax.set_xticks(x, labels)
        ax.set_ylabel("per minute of run (labels: totals)")
        ax.set_title("commits, aborted commits, failovers")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.32), ncols=3)
        ax = axes[2]
        for i, key in enumerate(("p50", "p99")):
            values = [_latency(run, key) or 0 for _, run in runs]
            ax.bar(
                x + (i - 0.5) * 0.35,
                values,
                0.32,
                label=f"commit latency {key}",
                color=("#9ecae1", "#2f7fc1")[i],
            )
        ax.set_xticks(x, labels)
        ax.set_ylabel("ms")
        ax.set_title("flush-to-commit latency (slowest job)")
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, -0.32), ncols=2)
    parts = []
    for label, run in runs:
        w = work[label]
        total = (w["records_committed"] or 0) + (w["records_aborted"] or 0)
        share = (
            "not measured"
            if w["records_aborted"] is None
            else percent((w["records_aborted"] or 0) / total if total else 0.0)
        )
        abort = _time_to_abort(run)
        parts.append(
            f"{label} ({run.name}, {seconds(run.duration_ms)}): {w['commits']} commits, "
            f"{_fmt(w['commits_aborted'])} aborted at commit, {w['early_conflicts']} early "
            f"conflicts, {_fmt(w['failovers'])} failovers, wasted records {share}"
            + ("" if abort is None else f", median time to abort {abort} ms")
        )
    caption = "Under contention, " + "; ".join(parts) + "."
    return save(fig, out_dir, "occ_vs_nbcc", "OCC vs NBCC: committed vs wasted work", caption)


# --- TrueTime --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrueTimePoint:
    """One run on the TrueTime grid."""

    bound_ms: int
    """``[time] max_expected_skew_ms``: how long TrueTime waits under the lock."""
    skew_ms: int
    """``[time] clock_skew_ms``: each clock is off by up to this much either way."""
    wait_ms_per_instant: float
    """Simulated time spent getting instant times (lock + skew wait), per instant."""
    violations: int
    """Violations the checkers reported."""


def truetime_point(run_dir: Path) -> TrueTimePoint:
    """The run's point on the TrueTime grid, from its scenario, history and verdicts.

    The wait is the ``wait_ms`` the history records on each ``instant_time`` event (the lock and
    TrueTime's skew wait), summed over requested and completion times and divided by the number
    of instants requested: what one instant costs, start to commit.
    """
    run = load_run(Path(run_dir))
    time = run.scenario.get("time", {})
    waited = 0
    requested = 0
    for e in run.events:
        if e.f == "instant_time":
            v = value(e)
            waited += int(v.get("wait_ms", 0))
            requested += v.get("use") == "requested"
    violations = sum(
        len(v.get("violations") or []) for v in run.result.get("invariants", {}).values()
    )
    return TrueTimePoint(
        bound_ms=int(time.get("max_expected_skew_ms", 0)),
        skew_ms=int(time.get("clock_skew_ms", 0)),
        wait_ms_per_instant=waited / requested if requested else 0.0,
        violations=violations,
    )


def plot_truetime(points: list[TrueTimePoint], out_dir: Path) -> Figure:
    """Wait per instant against the bound (one line per real skew), and violations on the
    bound x skew grid (runs of one cell averaged; cells where the bound is below the largest
    difference two clocks can have, twice the skew, outlined)."""
    cells: dict[tuple[int, int], list[TrueTimePoint]] = defaultdict(list)
    for p in points:
        cells[p.bound_ms, p.skew_ms].append(p)
    bounds = sorted({b for b, _ in cells})
    skews = sorted({s for _, s in cells})
    wait = {k: float(np.mean([p.wait_ms_per_instant for p in v])) for k, v in cells.items()}
    violations = {k: float(np.mean([p.violations for p in v])) for k, v in cells.items()}
    with styled():
        fig = new_figure(12, 4.6)
        left, right = fig.subplots(1, 2)
        for i, skew in enumerate(skews):
            xs = [b for b in bounds if (b, skew) in wait]
            left.plot(
                xs,
                [wait[b, skew] for b in xs],
                marker="o",
                label=f"clock skew ±{skew} ms",
                color=_ramp(i, len(skews)),
            )
        if bounds:
            left.plot(
                bounds,
                [2 * b for b in bounds],
                ls=":",
                color="#888888",
                label="2 × bound (a requested and a completion time)",
            )
        left.set_xlabel("skew bound max_expected_skew_ms")
        left.set_ylabel("wait per instant (ms)")
        left.set_title("TrueTime's cost: time spent getting instant times")
        left.legend(loc="upper left")
        grid = np.full((len(bounds), len(skews)), np.nan)
        for (b, s), v in violations.items():
            grid[bounds.index(b), skews.index(s)] = v
        top = max(float(np.nanmax(grid)) if grid.size else 0.0, 1.0)
        image = right.imshow(grid, cmap="Reds", vmin=0, vmax=top, origin="lower", aspect="auto")
        right.grid(False)
        for (b, s), v in violations.items():
            r, c = bounds.index(b), skews.index(s)
            right.text(
                c,
                r,
                f"{v:g}",
                ha="center",
                va="center",
                fontsize=8,
                color="white" if v > top * 0.6 else "#222222",
            )
            if b < 2 * s:
                right.add_patch(
                    Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ls="--", lw=1.0, ec="#444444")
                )
        right.set_xticks(range(len(skews)), [f"±{s}" for s in skews])
        right.set_yticks(range(len(bounds)), [str(b) for b in bounds])
        right.set_xlabel("real clock skew clock_skew_ms")
        right.set_ylabel("skew bound max_expected_skew_ms")
        right.set_title("violations per run (dashed: bound < 2 × skew)")
        fig.colorbar(image, ax=right, label="violations per run")
    return save(
        fig,
        out_dir,
        "truetime",
        "TrueTime: wait overhead and violations",
        _truetime_caption(points, wait, violations),
    )


def _ramp(i: int, n: int) -> str:
    palette = ("#2f7fc1", "#3a9d5d", "#ff9f1c", "#e4572e", "#9b5de5", "#6c6c6c")
    return palette[i % len(palette)] if n else palette[0]


def _truetime_caption(
    points: list[TrueTimePoint],
    wait: dict[tuple[int, int], float],
    violations: dict[tuple[int, int], float],
) -> str:
    if not points:
        return "No TrueTime runs."
    by_bound: dict[int, list[float]] = defaultdict(list)
    for (b, _), w in wait.items():
        by_bound[b].append(w)
    low, high = min(by_bound), max(by_bound)
    unsafe = [p for p in points if p.bound_ms < 2 * p.skew_ms]
    safe = [p for p in points if p.bound_ms >= 2 * p.skew_ms]
    text = (
        f"{len(points)} runs: each instant waits {np.mean(by_bound[low]):.0f} ms at bound "
        f"{low} ms and {np.mean(by_bound[high]):.0f} ms at bound {high} ms, whatever the real skew. "
    )
    text += (
        f"Runs with the bound below twice the skew: {sum(p.violations > 0 for p in unsafe)} of "
        f"{len(unsafe)} violated an invariant; with the bound at or above it: "
        f"{sum(p.violations > 0 for p in safe)} of {len(safe)}."
    )
    return text


__all__ = [
    "TrueTimePoint",
    "plot_blocking_vs_async",
    "plot_occ_vs_nbcc",
    "plot_truetime",
    "truetime_point",
]
