"""The timeline as a picture: every instant as an interval from its requested time to its completion
time, one lane per action (and job), collisions marked.

Hudi 1.x orders everything by these two times: a log joins the file slice of the latest barrier at
or before its deltacommit's *completion* time, and a reader sees an instant once its completion
time is at or before the read's. So the picture a reviewer needs is the intervals on the instant
time axis itself (the clocks' view, skew included), not the simulator's true time: two intervals
sharing an endpoint, or a completion left of its own requested time, is exactly what breaks the
rules. The same drawing serves a simulated run (instants recovered from the history) and a real
table (its timeline), see :func:`spans_from_history` and :func:`spans_from_timeline`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from models.timeline.active import Timeline
from models.timeline.instant_time import InstantTimeError, parse_epoch_ms
from reports.figures import ACTION_COLORS, COLORS, Figure, new_figure, save, styled
from reports.run_data import RunData, value

PENDING_COLOR = "#b0b0b0"
ROLLED_BACK_COLOR = "#f2a7a7"


@dataclass(frozen=True)
class InstantSpan:
    """One instant on the time axis (seconds from the axis origin)."""

    requested: str
    requested_s: float
    completed_s: float | None
    action: str
    lane: str
    rolled_back_s: float | None = None
    """When a rollback removed this (failed) instant: the rollback's completion time."""

    @property
    def rolled_back(self) -> bool:
        return self.rolled_back_s is not None

    @property
    def pending(self) -> bool:
        return self.completed_s is None


@dataclass(frozen=True)
class TimelineData:
    spans: tuple[InstantSpan, ...]
    collisions: tuple[tuple[float, str], ...] = ()
    """(time_s, lane) of every instant time handed out more than once."""
    end_s: float = 0.0
    origin: str = ""
    """What time 0 is, for the axis label."""


def _ms(text: object) -> int | None:
    try:
        return parse_epoch_ms(str(text))
    except InstantTimeError:
        return None


def spans_from_history(run: RunData) -> TimelineData:
    """Instants of a simulated run, from its ``instant_time`` events and the operations that name
    what each requested time became (``start_instant``, ``schedule_compaction``, ``rollback``)."""
    write_action = (
        "commit"
        if run.scenario.get("table", {}).get("type") == "COPY_ON_WRITE"
        else ("deltacommit")
    )
    requested: dict[str, str] = {}  # requested time -> job of the process that took it
    completed: dict[str, tuple[str, str]] = {}  # requested -> (completion, action)
    action_of: dict[str, str] = {}
    rolled_back: dict[str, str] = {}  # failed instant -> the rollback instant that removed it
    handed_out: Counter[str] = Counter()
    owner_of_time: dict[str, str] = {}
    for e in run.events:
        v = value(e)
        job = e.process.split("/", 1)[0]
        if e.f == "instant_time":
            time = v.get("time")
            if not isinstance(time, str):
                continue
            handed_out[time] += 1
            owner_of_time.setdefault(time, job)
            if v.get("use") == "requested":
                requested.setdefault(time, job)
            elif isinstance(v.get("instant"), str) and "error" not in v:
                completed[v["instant"]] = (time, str(v.get("action", "?")))
        elif e.type == "ok" and e.f == "start_instant" and isinstance(v.get("instant"), str):
            action_of.setdefault(v["instant"], write_action)
        elif e.type == "ok" and e.f == "schedule_compaction":
            action_of.setdefault(str(v.get("instant")), "compaction")
        elif e.type == "ok" and e.f == "rollback":
            action_of.setdefault(str(v.get("rollback")), "rollback")
            rolled_back[str(v.get("instant"))] = str(v.get("rollback"))
    multi_job = len(run.jobs) > 1
    spans = []
    for time in sorted(set(requested) | set(completed)):
        start = _ms(time)
        if start is None:
            continue
        completion, action = completed.get(time, (None, action_of.get(time, "")))
        if completion is None and time not in action_of:
            continue  # a time handed out for an instant that was never created
        action = "compaction" if action_of.get(time) == "compaction" else action
        job = requested.get(time, owner_of_time.get(time, ""))
        end = _ms(completion) if completion else None
        rollback = completed.get(rolled_back.get(time, ""), (None, ""))[0]
        rollback_ms = _ms(rollback) if rollback else None
        spans.append(
            InstantSpan(
                requested=time,
                requested_s=(start - run.epoch_ms) / 1000,
                completed_s=None if end is None else (end - run.epoch_ms) / 1000,
                action=action,
                lane=f"{action} ({job})" if multi_job and job else action,
                rolled_back_s=None
                if time not in rolled_back
                else ((rollback_ms or run.end_ms + run.epoch_ms) - run.epoch_ms) / 1000,
            )
        )
    lanes_by_time: dict[str, list[str]] = defaultdict(list)
    for span in spans:
        lanes_by_time[span.requested].append(span.lane)
    for time, (completion, _) in completed.items():
        for span in spans:
            if span.requested == time:
                lanes_by_time[completion].append(span.lane)
    collisions = []
    for time, count in sorted(handed_out.items()):
        ms = _ms(time)
        if count > 1 and ms is not None:
            for lane in sorted(set(lanes_by_time.get(time, []))) or [
                spans[0].lane if spans else ""
            ]:
                collisions.append(((ms - run.epoch_ms) / 1000, lane))
    end_s = max(
        [run.end_ms / 1000]
        + [s.completed_s for s in spans if s.completed_s is not None]
        + [s.requested_s for s in spans]
    )
    return TimelineData(tuple(spans), tuple(collisions), end_s, "simulated time 0")


def spans_from_timeline(timeline: Timeline | Iterable) -> TimelineData:
    """Instants of a real table's timeline, on an axis starting at its first requested time."""
    instants = list(timeline)
    times = [t for i in instants for t in (_ms(i.requested_time), _ms(i.completion_time or ""))]
    known = [t for t in times if t is not None]
    origin_ms = min(known) if known else 0
    spans = []
    handed_out: Counter[str] = Counter()
    for instant in instants:
        start = _ms(instant.requested_time)
        if start is None:
            continue
        handed_out[instant.requested_time] += 1
        end = _ms(instant.completion_time) if instant.completion_time else None
        if instant.completion_time:
            handed_out[instant.completion_time] += 1
        spans.append(
            InstantSpan(
                requested=instant.requested_time,
                requested_s=(start - origin_ms) / 1000,
                completed_s=None if end is None else (end - origin_ms) / 1000,
                action=instant.action,
                lane=instant.action,
            )
        )
    collisions = []
    for span in spans:
        if handed_out[span.requested] > 1:
            collisions.append((span.requested_s, span.lane))
    end_s = max([0.0] + [t for s in spans for t in (s.requested_s, s.completed_s or 0.0)])
    origin = instants[0].requested_time if instants else ""
    return TimelineData(tuple(spans), tuple(sorted(set(collisions))), end_s, f"instant {origin}")


def _pack(spans: Sequence[InstantSpan], min_width_s: float, end_s: float) -> list[int]:
    """Row of each span within its lane: greedy interval packing, so overlapping instants of one
    lane (concurrent writes) stack instead of hiding each other."""
    rows_end: list[float] = []
    rows = []
    for span in spans:
        stop = max(span.completed_s if span.completed_s is not None else end_s, span.requested_s)
        stop = max(stop, span.requested_s + min_width_s)
        for row, row_end in enumerate(rows_end):
            if row_end <= span.requested_s:
                rows_end[row] = stop
                rows.append(row)
                break
        else:
            rows_end.append(stop)
            rows.append(len(rows_end) - 1)
    return rows


def draw_timeline(ax, data: TimelineData, title: str) -> None:
    """Draw ``data`` on ``ax``: lanes top to bottom in order of first appearance."""
    ax.grid(True, axis="x")
    ax.grid(False, axis="y")
    lanes: dict[str, list[InstantSpan]] = {}
    for span in sorted(data.spans, key=lambda s: (s.requested_s, s.requested)):
        lanes.setdefault(span.lane, []).append(span)
    lane_order = sorted(lanes, key=lambda lane: (_lane_rank(lane), lane))
    min_width = max(data.end_s, 1.0) / 400
    y = 0.0
    ticks: list[tuple[float, str]] = []
    lane_y: dict[str, tuple[float, float]] = {}
    for lane in reversed(lane_order):
        spans = lanes[lane]
        rows = _pack(spans, min_width, data.end_s)
        height = max(rows) + 1
        row_h = 0.8 / height if height > 1 else 0.6
        for span, row in zip(spans, rows, strict=True):
            top = y + 0.1 + row * (0.8 / height)
            if span.rolled_back and span.pending:
                width = max(span.rolled_back_s - span.requested_s, min_width)
                color, hatch, alpha = ROLLED_BACK_COLOR, "xx", 0.9
            elif span.pending:
                width = max(data.end_s - span.requested_s, min_width)
                color, hatch, alpha = PENDING_COLOR, "///", 0.8
            else:
                width = max(span.completed_s - span.requested_s, min_width)
                color = ACTION_COLORS.get(span.action, "#6c6c6c")
                hatch, alpha = None, 1.0
            ax.broken_barh(
                [(span.requested_s, width)],
                (top, row_h * 0.85),
                facecolors=color,
                edgecolors="none",
                linewidth=0,
                hatch=hatch,
                alpha=alpha,
            )
            if span.completed_s is not None and span.completed_s <= span.requested_s:
                ax.plot(
                    [span.completed_s], [top + row_h / 2], marker="<", color=COLORS["violation"]
                )
        lane_y[lane] = (y, y + 1)
        ticks.append((y + 0.5, f"{lane} ({len(spans)})"))
        y += 1.0
    if data.collisions:
        xs, ys = [], []
        for t, lane in data.collisions:
            low, high = lane_y.get(lane, (0.0, y))
            xs.append(t)
            ys.append((low + high) / 2)
        ax.scatter(xs, ys, marker="*", s=120, c=COLORS["violation"], zorder=4, edgecolors="white")
    ax.set_yticks([t for t, _ in ticks], [label for _, label in ticks])
    ax.set_ylim(0, max(y, 1))
    ax.set_xlim(0, max(data.end_s, 0.001) * 1.01)
    ax.set_xlabel(f"instant time, seconds since {data.origin}")
    ax.set_title(title)


def _lane_rank(lane: str) -> int:
    order = ("deltacommit", "commit", "compaction", "logcompaction", "replacecommit", "clean")
    action = lane.split(" ", 1)[0]
    return order.index(action) if action in order else len(order)


def legend_handles(data: TimelineData) -> list:
    actions = sorted({s.action for s in data.spans if not s.pending}, key=_lane_rank)
    handles: list = [Patch(color=ACTION_COLORS.get(a, "#6c6c6c"), label=a) for a in actions]
    if any(s.pending and not s.rolled_back for s in data.spans):
        handles.append(Patch(facecolor=PENDING_COLOR, hatch="///", label="pending"))
    if any(s.rolled_back for s in data.spans):
        handles.append(
            Patch(facecolor=ROLLED_BACK_COLOR, hatch="xx", label="failed, until rolled back")
        )
    if data.collisions:
        handles.append(
            Line2D(
                [],
                [],
                marker="*",
                color=COLORS["violation"],
                ls="",
                markersize=10,
                label="time handed out twice",
            )
        )
    if any(s.completed_s is not None and s.completed_s <= s.requested_s for s in data.spans):
        handles.append(
            Line2D(
                [],
                [],
                marker="<",
                color=COLORS["violation"],
                ls="",
                label="completed before requested",
            )
        )
    return handles


def timeline_height(data: TimelineData) -> float:
    return 1.8 + 0.55 * max(1, len({s.lane for s in data.spans}))


def plot_timeline(run: RunData, out_dir: Path) -> Figure:
    data = spans_from_history(run)
    with styled():
        fig = new_figure(11, timeline_height(data))
        ax = fig.add_subplot()
        draw_timeline(ax, data, f"{run.name}: instants, requested -> completed")
        handles = legend_handles(data)
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)))
    return save(fig, out_dir, "timeline", "Timeline: instants per action", _caption(data))


def _caption(data: TimelineData) -> str:
    completed = [s for s in data.spans if not s.pending]
    durations = sorted(s.completed_s - s.requested_s for s in completed)
    by_action = Counter(s.action for s in data.spans)
    parts = ", ".join(f"{n} {a}" for a, n in sorted(by_action.items(), key=lambda x: -x[1]))
    text = f"{len(data.spans)} instants ({parts})"
    if durations:
        median = durations[len(durations) // 2]
        text += (
            f"; median requested-to-completed {median * 1000:.0f} ms, longest {durations[-1]:.2f} s"
        )
    rolled_back = sum(1 for s in data.spans if s.pending and s.rolled_back)
    pending = len(data.spans) - len(completed) - rolled_back
    if rolled_back:
        text += f"; {rolled_back} failed and rolled back"
    text += f"; {pending} never completed." if pending else "; all others completed."
    if data.collisions:
        times = len({t for t, _ in data.collisions})
        text += f" {times} instant time{'s' if times != 1 else ''} handed out twice (stars)."
    return text


__all__ = [
    "InstantSpan",
    "TimelineData",
    "draw_timeline",
    "legend_handles",
    "plot_timeline",
    "spans_from_history",
    "spans_from_timeline",
]
