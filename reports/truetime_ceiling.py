"""What async instant generation costs a table: the instants a second TrueTime can mint.

Hudi's TrueTime (``SkewAdjustingTimeGenerator``) holds the timeline lock through its wait of
``max_expected_skew_ms`` for every time it hands out, a requested time and a completion time
alike, so one table mints at most ``1000 / (2 x max_expected_skew_ms)`` instants a second,
whatever the number of jobs. The ``truetime_ceiling`` grid (base ``truetime_instant_ceiling``:
four NBCC jobs) varies the checkpoint interval, which sets how many instants the jobs ask for,
and the skew bound, which sets the ceiling. :func:`ceiling_point` reduces a run folder to its
point; :func:`plot_truetime_ceiling` draws instants minted against instants asked for, with each
bound's ceiling, and what the writers pay for it (time blocked waiting for an instant).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reports.figures import Figure, new_figure, save, styled
from reports.run_data import load_run, value
from reports.throughput import blocked_fractions

PALETTE = ("#2f7fc1", "#e4572e", "#3a9d5d", "#ff9f1c", "#9b5de5")


@dataclass(frozen=True)
class CeilingPoint:
    bound_ms: int
    asked_per_s: float
    """Instants the jobs' checkpoints ask for: the sum over jobs of 1 / checkpoint interval."""
    minted_per_s: float
    """Requested instant times handed out during the load (``instant_time`` events)."""
    blocked: float
    """Mean fraction of the run a writer waited for an instant."""

    @property
    def ceiling_per_s(self) -> float:
        return 1000.0 / (2 * self.bound_ms) if self.bound_ms else float("inf")


def ceiling_point(run_dir: Path) -> CeilingPoint:
    """The run's point: asked from its scenario, minted from its history (requested times
    handed out before the load stopped, per second of load), blocked from its metrics."""
    run = load_run(Path(run_dir))
    duration_ms = float(run.scenario["scenario"]["duration_s"]) * 1000
    asked = sum(1.0 / float(job["checkpoint_interval_s"]) for job in run.scenario["jobs"])
    minted = sum(
        1
        for e in run.events
        if e.f == "instant_time" and e.time <= duration_ms and value(e).get("use") == "requested"
    )
    fractions = [b for b, _ in blocked_fractions(run).values()]
    return CeilingPoint(
        bound_ms=int(run.scenario["time"]["max_expected_skew_ms"]),
        asked_per_s=asked,
        minted_per_s=minted / (duration_ms / 1000),
        blocked=float(np.mean(fractions)) if fractions else 0.0,
    )


def plot_truetime_ceiling(points: list[CeilingPoint], out_dir: Path) -> Figure:
    """Left: instants minted per second against instants asked for, one line per skew bound,
    its ceiling dashed. Right: the writers' time blocked waiting for an instant."""
    lines: dict[int, dict[float, list[CeilingPoint]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        lines[p.bound_ms][p.asked_per_s].append(p)
    top = max((p.asked_per_s for p in points), default=1.0)
    with styled():
        fig = new_figure(12, 4.6)
        left, right = fig.subplots(1, 2)
        left.plot([0, top], [0, top], ls=":", color="#888888", label="minted = asked")
        for i, bound in enumerate(sorted(lines)):
            color = PALETTE[i % len(PALETTE)]
            asked = sorted(lines[bound])
            minted = [float(np.mean([p.minted_per_s for p in lines[bound][a]])) for a in asked]
            blocked = [100 * float(np.mean([p.blocked for p in lines[bound][a]])) for a in asked]
            ceiling = lines[bound][asked[0]][0].ceiling_per_s
            left.plot(asked, minted, marker="o", color=color, label=f"bound {bound} ms")
            left.axhline(ceiling, ls="--", lw=1.0, color=color, label=f"1 / (2 × {bound} ms)")
            right.plot(asked, blocked, marker="o", color=color, label=f"bound {bound} ms")
        left.set_xlabel("instants the checkpoints ask for (per s)")
        left.set_ylabel("instants minted (per s)")
        left.set_title("one table's instants per second under TrueTime")
        left.legend(loc="upper left", fontsize=8)
        right.set_xlabel("instants the checkpoints ask for (per s)")
        right.set_ylabel("writers' time blocked waiting for an instant (%)")
        right.set_title("what the ceiling costs the writers")
        right.legend(loc="upper left", fontsize=8)
    return save(
        fig,
        out_dir,
        "truetime_ceiling",
        "TrueTime: the instants-per-second ceiling",
        _caption(points),
    )


def _caption(points: list[CeilingPoint]) -> str:
    if not points:
        return "No run of the truetime_ceiling grid."
    parts = []
    for bound in sorted({p.bound_ms for p in points}):
        mine = [p for p in points if p.bound_ms == bound]
        busiest = max(mine, key=lambda p: p.asked_per_s)
        parts.append(
            f"bound {bound} ms: ceiling {busiest.ceiling_per_s:.3g}/s; asked "
            f"{busiest.asked_per_s:.3g}/s, minted {busiest.minted_per_s:.3g}/s, writers blocked "
            f"{100 * busiest.blocked:.1f}% of the run"
        )
    return (
        "TrueTime holds the timeline lock through its skew wait for requested and completion "
        "times alike, so one table mints at most 1 / (2 × bound) instants a second however many "
        "jobs ask; past it, instant requests queue at the lock and checkpoints stretch. "
        + "; ".join(parts)
        + "."
    )
