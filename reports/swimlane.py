"""Swimlanes: what every writer and coordinator was doing over time, read from the history.

The question a design review asks of a commit protocol is "who waited for whom, and when": a
writer blocked for an instant at every checkpoint (``blocking`` instant generation) looks like a
red stripe down all the writer lanes at each checkpoint line; a lost ACK is a mark on the
coordinator lane followed (or not) by a recommit; a crash is a grey gap across the whole job.

States of a writer lane: *buffering* (alive, taking records), *flushing* (``flush`` invoke -> ok),
*blocked* (``wait_instant`` invoke -> ok; the part spent waiting for the previous instant's commit,
``commit_wait_ms``, darker), *down* (the job's ``failover`` -> its next ``start``). The
coordinator lane shows commits; the compactor lane shows compactions. Checkpoints are lines
across a job's lanes (red when failed); faults by the nemesis are marks on the lane they hit.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from faults import KINDS, kind_of_event
from reports.figures import COLORS, Figure, new_figure, percent, save, seconds, styled
from reports.run_data import RunData, value

STATES = ("buffering", "flushing", "blocked", "commit_wait", "compacting", "down")
STATE_LABELS = {
    "buffering": "buffering (alive)",
    "flushing": "flushing",
    "blocked": "blocked waiting for an instant",
    "commit_wait": "blocked waiting for the previous commit",
    "compacting": "compacting",
    "down": "down (failover)",
}
STATE_COLORS = {**COLORS, "compacting": "#3a9d5d"}
MARKS = {  # commits and each fault kind's mark (faults/<kind>.py) -> (marker, color, label)
    "commit": ("|", COLORS["commit"], "commit"),
    **{
        kind.name: (kind.mark.marker, kind.mark.color, kind.mark.label)
        for kind in KINDS
        if kind.mark is not None
    },
}


@dataclass
class Lanes:
    """Everything the swimlane draws, in seconds of simulated time."""

    lanes: list[str]
    intervals: dict[str, dict[str, list[tuple[float, float]]]] = field(default_factory=dict)
    """lane -> state -> [(start_s, width_s)]"""
    marks: list[tuple[str, float, str]] = field(default_factory=list)
    """(lane, time_s, kind) for commits and faults"""
    checkpoints: list[tuple[str, float, bool]] = field(default_factory=list)
    """(job, time_s, completed) for every checkpoint that completed or failed"""
    drain_s: float | None = None
    end_s: float = 0.0

    def add(self, lane: str, state: str, start_ms: int, end_ms: int) -> None:
        if end_ms > start_ms and lane in self.intervals:
            self.intervals[lane].setdefault(state, []).append(
                (start_ms / 1000, (end_ms - start_ms) / 1000)
            )


def _lane_order(run: RunData) -> list[str]:
    seen = {e.process for e in run.events}
    lanes = []
    for job in run.jobs:
        lanes.append(f"{job}/coordinator")
        lanes += [w for w in run.writers if w.startswith(f"{job}/")]
        if f"{job}/compactor" in seen:
            lanes.append(f"{job}/compactor")
    return lanes


def _fault_lane(run: RunData, lanes: set[str], kind: str, v: dict) -> str | None:
    """The lane a nemesis event hit: the named process, or the channel's receiver."""
    process = v.get("process")
    if isinstance(process, str) and process in lanes:
        return process
    channel = v.get("channel")
    if isinstance(channel, str) and "/" in channel:
        job, rest = channel.split("/", 1)
        if rest == "notify":
            return f"{job}/coordinator"
        for part in rest.split("->"):
            if f"{job}/{part}" in lanes:
                return f"{job}/{part}"
        return f"{job}/coordinator" if f"{job}/coordinator" in lanes else None
    path = v.get("path")
    if kind == "storage_write_failure" and isinstance(path, str) and run.jobs:
        return f"{run.jobs[0]}/coordinator"
    return None


def lanes_of(run: RunData) -> Lanes:
    """The swimlane's data from one pass over the history."""
    order = _lane_order(run)
    result = Lanes(order, {lane: {} for lane in order}, end_s=run.end_ms / 1000)
    lane_set = set(order)
    alive_since: dict[str, int] = {}  # job -> start of its current epoch
    down_since: dict[str, int] = {}  # job -> its last failover, until the next start
    open_: dict[tuple[str, str], int] = {}  # (lane, state) -> start
    for e in run.events:
        v = value(e)
        if e.process == "nemesis":
            fault = kind_of_event(e.f)
            lane = _fault_lane(run, lane_set, e.f, v)
            if fault is not None and fault.mark is not None and lane:
                result.marks.append((lane, e.time / 1000, fault.name))
            continue
        if e.process == "world":
            if e.f == "drain":
                result.drain_s = e.time / 1000
            continue
        job, _, role = e.process.partition("/")
        if not role:  # job-level events: start and failover
            if e.f == "start":
                if job in down_since:
                    _job_lanes(result, job, "down", down_since.pop(job), e.time)
                alive_since[job] = e.time
            elif e.f == "failover":
                _close_epoch(result, job, e.time, alive_since, open_)
                down_since[job] = e.time
            continue
        lane = e.process
        if e.f in _SPANS:
            state = _SPANS[e.f]
            if e.type == "invoke":
                open_[lane, state] = e.time
            elif (lane, state) in open_:
                start = open_.pop((lane, state))
                commit_wait = min(int(v.get("commit_wait_ms", 0)), e.time - start)
                result.add(lane, "commit_wait", start, start + commit_wait)
                result.add(lane, state, start + commit_wait, e.time)
        elif e.f == "commit" and e.type == "ok":
            result.marks.append((lane, e.time / 1000, "commit"))
        elif e.f == "checkpoint" and role == "checkpoint" and e.type in ("ok", "fail"):
            result.checkpoints.append((job, e.time / 1000, e.type == "ok"))
    for job in list(alive_since):
        _close_epoch(result, job, run.end_ms, alive_since, open_)
    for job, since in down_since.items():
        _job_lanes(result, job, "down", since, run.end_ms)
    return result


_SPANS = {"wait_instant": "blocked", "flush": "flushing", "compaction": "compacting"}
"""History operations drawn as intervals (invoke -> ok or fail) and the state they show."""


def _job_lanes(result: Lanes, job: str, state: str, start_ms: int, end_ms: int) -> None:
    for lane in result.lanes:
        if lane.startswith(f"{job}/"):
            result.add(lane, state, start_ms, end_ms)


def _close_epoch(
    result: Lanes,
    job: str,
    at_ms: int,
    alive_since: dict[str, int],
    open_: dict[tuple[str, str], int],
) -> None:
    """End the job's epoch at ``at_ms``: its alive time becomes the lanes' background
    (*buffering* for writers), and whatever was in progress is cut off there."""
    for (lane, state), opened in sorted(open_.items()):
        if lane.startswith(f"{job}/"):
            result.add(lane, state, opened, at_ms)
            del open_[lane, state]
    start = alive_since.pop(job, None)
    if start is None:
        return
    for lane in result.lanes:
        if lane.startswith(f"{job}/"):
            background = "buffering" if "/task-" in lane else "coordinator"
            result.add(lane, background, start, at_ms)


def plot_swimlane(run: RunData, out_dir) -> Figure:
    lanes = lanes_of(run)
    height = 1.6 + 0.32 * len(lanes.lanes)
    with styled():
        fig = new_figure(11, height)
        ax = fig.add_subplot()
        ax.grid(False)
        y_of = {lane: i for i, lane in enumerate(reversed(lanes.lanes))}
        for lane, states in lanes.intervals.items():
            y = y_of[lane]
            background = states.get("buffering") or states.get("coordinator") or []
            color = STATE_COLORS["buffering" if "buffering" in states else "coordinator"]
            ax.broken_barh(background, (y - 0.35, 0.7), facecolors=color, linewidth=0)
            for state in ("flushing", "blocked", "commit_wait", "compacting", "down"):
                if states.get(state):
                    ax.broken_barh(
                        states[state],
                        (y - 0.35, 0.7),
                        facecolors=STATE_COLORS[state],
                        linewidth=0,
                        alpha=0.55 if state == "down" else 1.0,
                    )
        jobs_lanes: dict[str, list[int]] = defaultdict(list)
        for lane, y in y_of.items():
            jobs_lanes[lane.split("/", 1)[0]].append(y)
        for job, t, ok in lanes.checkpoints:
            ys = jobs_lanes.get(job)
            if ys:
                ax.vlines(
                    t,
                    min(ys) - 0.45,
                    max(ys) + 0.45,
                    colors=COLORS["checkpoint"] if ok else COLORS["checkpoint_failed"],
                    linewidth=0.5 if ok else 1.2,
                    linestyles="solid" if ok else "dashed",
                    alpha=0.6 if ok else 1.0,
                    zorder=1,
                )
        by_kind: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for lane, t, kind in lanes.marks:
            if lane in y_of:
                by_kind[kind].append((t, y_of[lane]))
        for kind, points in sorted(by_kind.items()):
            marker, color, _ = MARKS[kind]
            xs, ys = zip(*points, strict=True)
            ax.scatter(
                xs,
                ys,
                marker=marker,
                c=color,
                s=60 if kind == "commit" else 110 if kind == "crash" else 50,
                linewidths=1.2 if kind == "commit" else 0.4,
                edgecolors="white" if kind != "commit" else None,
                zorder=3,
            )
        if lanes.drain_s is not None and lanes.drain_s < lanes.end_s:
            ax.axvline(lanes.drain_s, color="#444444", linestyle=":", linewidth=1)
            ax.text(
                lanes.drain_s,
                len(lanes.lanes) - 0.45,
                " drain: faults off",
                fontsize=7,
                va="bottom",
                color="#444444",
            )
        ax.set_yticks(list(y_of.values()), list(y_of.keys()))
        ax.set_ylim(-0.6, len(lanes.lanes) - 0.4)
        ax.set_xlim(0, max(lanes.end_s, 0.001))
        ax.set_xlabel("simulated time (s)")
        ax.set_title(f"{run.name}: writers and coordinators over time")
        handles = [
            Patch(color=STATE_COLORS[s], label=STATE_LABELS[s])
            for s in STATES
            if any(s in states for states in lanes.intervals.values())
        ]
        handles.append(Patch(color=COLORS["coordinator"], label="coordinator alive"))
        handles.append(Line2D([], [], color=COLORS["checkpoint"], lw=1, label="checkpoint"))
        if any(not ok for _, _, ok in lanes.checkpoints):
            handles.append(
                Line2D(
                    [],
                    [],
                    color=COLORS["checkpoint_failed"],
                    ls="--",
                    lw=1.2,
                    label="failed checkpoint",
                )
            )
        for kind in sorted(by_kind):
            marker, color, label = MARKS[kind]
            handles.append(
                Line2D([], [], marker=marker, color=color, ls="", markersize=7, label=label)
            )
        fig.legend(handles=handles, loc="outside lower center", ncols=min(5, len(handles)))
    return save(
        fig, out_dir, "swimlane", "Swimlanes: writers and coordinators", _caption(run, lanes)
    )


def _caption(run: RunData, lanes: Lanes) -> str:
    writers = run.metrics.get("writers", {})
    end_ms = max(run.end_ms, 1)
    blocked = [w.get("blocked_ms", 0) for w in writers.values()]
    longest = max((w.get("max_blocked_ms", 0) for w in writers.values()), default=0)
    fraction = sum(blocked) / (end_ms * len(blocked)) if blocked else 0.0
    completed = sum(1 for *_, ok in lanes.checkpoints if ok)
    failed = len(lanes.checkpoints) - completed
    counts = defaultdict(int)
    for _, _, kind in lanes.marks:
        counts[kind] += 1
    faults = [
        f"{counts[k]} {label}{'s' if counts[k] != 1 else ''}"
        for k, (_, _, legend) in MARKS.items()
        if k != "commit" and counts[k]
        for label in (legend.split(" / ")[0],)
    ]
    text = (
        f"{len(writers)} writers over {seconds(end_ms)}: blocked {percent(fraction)} of the time "
        f"on average (longest single stall {seconds(longest)}); {completed} checkpoints completed"
        f"{f', {failed} failed' if failed else ''}, {counts['commit']} commits."
    )
    if faults:
        text += " Faults: " + ", ".join(faults) + "."
    return text


__all__ = ["Lanes", "lanes_of", "plot_swimlane"]
