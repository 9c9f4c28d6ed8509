"""File slices per file group over time: base files, log files, and the slice each log joined.

This is the picture behind Hudi 1.x's completion-time slicing (RFC-66): a compaction opens a new
slice at its requested time while writers keep appending; a log whose deltacommit was *requested*
before that barrier but *completed* after it joins the new slice (drawn as a line from its
requested to its completion time), which is why the compaction may leave it out. Under the 0.x
rule the same log would stay in the old slice and be lost once the compaction's base file
replaces it.

Two sources, one drawing:

- a table on storage (``table/`` of a local run, or any real Hudi table): the slices the testbed's
  own file-system view builds (:func:`layout_from_table`), exactly what ``testbed inspect`` reads;
- a run kept in memory: the history's ``commit`` events list every data file, and compactions are
  replayed with the simulator's planning rule (every file group whose latest slice has committed
  logs and no pending compaction), then sliced by the same view code (:func:`layout_from_history`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.collections import LineCollection, PolyCollection
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from models.storage import FileStatus
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.timeline.instant_time import InstantTimeError, parse_epoch_ms
from models.view.filenames import FileNameError, parse_log_file_name
from models.view.fsview import SLICING_RULES, FileGroup, build_file_groups
from reports.figures import Figure, new_figure, save, styled
from reports.run_data import RunData, value

MAX_GROUPS = 40
"""Most file groups drawn (the first ones by partition and file id); the caption says if more."""
SLICE_COLORS = ("#dbe9f6", "#fbe3c9")
LOG_COLORS = ("#2f7fc1", "#e07b00")
BASE_COLOR = "#222222"


@dataclass(frozen=True)
class LogMark:
    requested_s: float
    completed_s: float | None
    slice_index: int


@dataclass(frozen=True)
class SliceSpan:
    start_s: float
    base_file: bool
    pending_compaction: bool


@dataclass(frozen=True)
class GroupLayout:
    label: str
    slices: tuple[SliceSpan, ...]
    logs: tuple[LogMark, ...]


@dataclass(frozen=True)
class SliceLayout:
    groups: tuple[GroupLayout, ...]
    end_s: float
    origin: str
    source: str
    """``"table"`` or ``"history"``: where the slices came from (the caption says so)."""
    total_groups: int = 0
    notes: tuple[str, ...] = field(default=())


def _seconds(time: str | None, origin_ms: int) -> float | None:
    if time is None:
        return None
    try:
        return (parse_epoch_ms(time) - origin_ms) / 1000
    except InstantTimeError:
        return None


def _label(partition: str, file_id: str) -> str:
    return f"{partition or '(none)'}/{file_id[:8]}…{file_id[-2:]}"


def layout_of(
    groups: Sequence[FileGroup],
    origin_ms: int,
    end_s: float,
    origin: str,
    source: str,
    log_completions: dict[str, str] | None = None,
) -> SliceLayout:
    """Turn the view's file groups into what the plot draws. ``log_completions`` (file name ->
    completion time of the commit that listed it) fills in what the view leaves out under the
    ``base_instant`` rule, where a log's name carries its slice's base instant, not its writer."""
    log_completions = log_completions or {}
    out = []
    for group in groups[:MAX_GROUPS]:
        slices, logs = [], []
        for index, file_slice in enumerate(group.slices):
            start = _seconds(file_slice.base_instant, origin_ms)
            if start is None:
                continue
            slices.append(
                SliceSpan(
                    start_s=start,
                    base_file=file_slice.base_file is not None,
                    pending_compaction=file_slice.base_instant in group.pending_compactions
                    and file_slice.base_file is None,
                )
            )
            for log in file_slice.log_files:
                requested = _seconds(log.instant_time, origin_ms)
                if requested is not None:
                    completed = _seconds(
                        log.completion_time or log_completions.get(log.name), origin_ms
                    )
                    logs.append(LogMark(requested, completed, index))
        out.append(GroupLayout(_label(group.partition, group.file_id), tuple(slices), tuple(logs)))
    return SliceLayout(tuple(out), end_s, origin, source, total_groups=len(groups))


def layout_from_table(table, *, origin_ms: int | None = None, origin: str = "") -> SliceLayout:
    """Slices of a table on storage (a :class:`models.view.table.HudiTable`), as its readers see them."""
    timeline, groups = table.file_groups()
    times = [
        t
        for i in timeline
        for t in (_seconds(i.requested_time, 0), _seconds(i.completion_time, 0))
        if t is not None
    ]
    if origin_ms is None:
        origin_ms = int(min(times) * 1000) if times else 0
        first = min(timeline, key=lambda i: i.requested_time, default=None)
        origin = f"instant {first.requested_time}" if first else ""
    end_s = max([0.0] + [t - origin_ms / 1000 for t in times])
    return layout_of(groups, origin_ms, end_s, origin, "table")


def layout_from_history(run: RunData) -> SliceLayout:
    """Slices rebuilt from a run's history (for runs that kept their table in memory)."""
    completion: dict[str, str] = {}  # deltacommit -> completion
    file_completion: dict[str, str] = {}  # data file name -> completion of the commit listing it
    files: dict[str, list[FileStatus]] = {}  # partition -> data files
    compactions: list[tuple[str, str | None]] = []  # (requested, completion)
    compaction_done: dict[str, str] = {}
    for e in run.events:
        v = value(e)
        if e.f == "commit" and e.type == "ok" and isinstance(v.get("instant"), str):
            if isinstance(v.get("completion"), str):
                completion[v["instant"]] = v["completion"]
            for path in v.get("files") or []:
                if isinstance(path, str):
                    partition, _, name = path.rpartition("/")
                    files.setdefault(partition, []).append(FileStatus(path, 0, 0))
                    if isinstance(v.get("completion"), str):
                        file_completion.setdefault(name, v["completion"])
        elif e.f == "schedule_compaction" and e.type == "ok" and isinstance(v.get("instant"), str):
            compactions.append((v["instant"], None))
        elif e.f == "compaction" and e.type == "ok" and isinstance(v.get("completion"), str):
            compaction_done[str(v.get("instant"))] = v["completion"]
    plans = _replay_plans(files, file_completion, [c for c, _ in compactions], compaction_done)
    instants = [Instant(t, State.COMPLETED, "deltacommit", c) for t, c in completion.items()]
    pending: dict[str, list[tuple[str, str]]] = {}
    for requested, members in plans.items():
        done = compaction_done.get(requested)
        if done is not None:
            instants.append(Instant(requested, State.COMPLETED, "commit", done))
            for partition, file_id in members:
                name = f"{file_id}_0-0-0_{requested}.parquet"
                path = f"{partition}/{name}" if partition else name
                files.setdefault(partition, []).append(FileStatus(path, 0, 0))
        else:
            instants.append(Instant(requested, State.REQUESTED, "compaction"))
            pending[requested] = sorted(members)
    rule = run.scenario.get("protocol", {}).get("file_slicing", "completion_time")
    groups = build_file_groups(
        Timeline(tuple(_unique(instants))),
        files,
        pending_compactions=pending,
        rule=rule if rule in SLICING_RULES else "completion_time",
    )
    return layout_of(
        groups, run.epoch_ms, run.end_ms / 1000, "simulated time 0", "history", file_completion
    )


def _unique(instants: list[Instant]) -> list[Instant]:
    """One instant per requested time (a time handed out twice by a known-bad variant shows up
    once, as the first instant that used it: the timeline on storage keeps one file too)."""
    seen: dict[str, Instant] = {}
    for instant in instants:
        seen.setdefault(instant.requested_time, instant)
    return list(seen.values())


def _replay_plans(
    files: dict[str, list[FileStatus]],
    file_completion: dict[str, str],
    scheduled: list[str],
    done: dict[str, str],
) -> dict[str, list[tuple[str, str]]]:
    """The file groups each compaction planned, by the simulator's rule
    (``TableWriter.schedule_compaction``): every group with a log that completed before the
    compaction's time in its latest slice, unless a compaction of that group is still pending."""
    logs: dict[tuple[str, str], list[str]] = {}  # group -> completion times of its logs
    for partition, statuses in files.items():
        for status in statuses:
            try:
                parsed = parse_log_file_name(status.name)
            except FileNameError:
                continue
            finished = file_completion.get(status.name)
            if finished is not None:
                logs.setdefault((partition, parsed.file_id), []).append(finished)
    last_barrier: dict[tuple[str, str], str] = {}
    busy_until: dict[tuple[str, str], str | None] = {}  # group -> completion of its pending plan
    plans: dict[str, list[tuple[str, str]]] = {}
    for requested in sorted(scheduled):
        members = []
        for group, completions in sorted(logs.items()):
            if group in busy_until:
                finished = busy_until[group]
                if finished is None or finished >= requested:
                    continue
            since = last_barrier.get(group, "")
            if any(since < c < requested for c in completions):
                members.append(group)
        for group in members:
            last_barrier[group] = requested
            busy_until[group] = done.get(requested)
        plans[requested] = members
    return plans


def draw_slices(ax, layout: SliceLayout, title: str) -> dict[str, int]:
    """Draw ``layout`` on ``ax``; returns counts for the caption.

    Everything of one kind goes into one artist (a bar collection per slice color, one scatter
    per marker kind): a long run has thousands of logs, and an artist per log makes saving slow.
    """
    ax.grid(True, axis="x")
    ax.grid(False, axis="y")
    counts = {"slices": 0, "bases": 0, "logs": 0, "joined_later": 0, "pending_logs": 0}
    n = len(layout.groups)
    bars: dict[tuple[int, bool], list[tuple[float, float, float]]] = defaultdict(list)
    bases: list[tuple[float, float]] = []
    logs: dict[tuple[int, bool], list[tuple[float, float]]] = defaultdict(list)
    late: dict[int, list[list[tuple[float, float]]]] = defaultdict(list)
    for row, group in enumerate(layout.groups):
        y = n - 1 - row
        starts = [s.start_s for s in group.slices]
        for index, file_slice in enumerate(group.slices):
            stop = starts[index + 1] if index + 1 < len(starts) else layout.end_s
            width = max(stop - file_slice.start_s, 0)
            bars[index % 2, file_slice.pending_compaction].append((file_slice.start_s, width, y))
            counts["slices"] += 1
            if file_slice.base_file:
                counts["bases"] += 1
                bases.append((file_slice.start_s, y))
        for log in group.logs:
            parity = log.slice_index % 2
            counts["logs"] += 1
            if log.completed_s is None:
                counts["pending_logs"] += 1
                logs[parity, False].append((log.requested_s, y))
                continue
            home = starts[log.slice_index] if log.slice_index < len(starts) else 0.0
            if log.requested_s < home <= log.completed_s:
                counts["joined_later"] += 1
                late[parity].append([(log.requested_s, y + 0.18), (log.completed_s, y + 0.18)])
            logs[parity, True].append((log.completed_s, y))
    for (parity, pending), spans in sorted(bars.items()):
        ax.add_collection(
            PolyCollection(
                [
                    [(x, y - 0.38), (x + w, y - 0.38), (x + w, y + 0.38), (x, y + 0.38)]
                    for x, w, y in spans
                ],
                facecolors=SLICE_COLORS[parity],
                edgecolors="#9a9a9a" if pending else "none",
                hatch="//" if pending else None,
                linewidths=0.5,
            )
        )
    for parity, segments in sorted(late.items()):
        ax.add_collection(LineCollection(segments, colors=LOG_COLORS[parity], linewidths=1.2))
        starts_xy = np.array([segment[0] for segment in segments])
        ax.scatter(starts_xy[:, 0], starts_xy[:, 1], marker="|", c=LOG_COLORS[parity], s=30)
    for (parity, committed), points in sorted(logs.items()):
        xy = np.array(points)
        if committed:
            ax.scatter(xy[:, 0], xy[:, 1], marker="o", c=LOG_COLORS[parity], s=9, zorder=3)
        else:
            ax.scatter(
                xy[:, 0],
                xy[:, 1],
                marker="o",
                facecolors="white",
                edgecolors=LOG_COLORS[parity],
                s=14,
                zorder=3,
            )
    if bases:
        xy = np.array(bases)
        ax.scatter(xy[:, 0], xy[:, 1], marker="s", c=BASE_COLOR, s=20, zorder=4)
    ax.set_yticks([n - 1 - i for i in range(n)], [g.label for g in layout.groups], fontsize=7)
    ax.set_ylim(-0.6, max(n, 1) - 0.4)
    ax.set_xlim(0, max(layout.end_s, 0.001) * 1.01)
    ax.set_xlabel(f"instant time, seconds since {layout.origin}")
    ax.set_title(title)
    return counts


def slice_legend() -> list:
    return [
        Patch(color=SLICE_COLORS[0], label="file slice (alternating colors)"),
        Patch(
            facecolor=SLICE_COLORS[1], edgecolor="#9a9a9a", hatch="//", label="pending compaction"
        ),
        Line2D([], [], marker="s", color=BASE_COLOR, ls="", label="base file"),
        Line2D([], [], marker="o", color=LOG_COLORS[0], ls="", label="log, at its completion"),
        Line2D(
            [], [], color=LOG_COLORS[1], marker="|", label="log requested before its slice began"
        ),
        Line2D(
            [], [], marker="o", mfc="white", mec=LOG_COLORS[0], ls="", label="log not committed"
        ),
    ]


def caption(layout: SliceLayout, counts: dict[str, int]) -> str:
    shown = len(layout.groups)
    text = (
        f"{shown} file group{'s' if shown != 1 else ''}"
        + (f" (of {layout.total_groups})" if layout.total_groups > shown else "")
        + f": {counts['slices']} slices, {counts['bases']} base files, {counts['logs']} log files"
    )
    text += (
        f"; {counts['joined_later']} logs were requested before a compaction barrier and "
        "completed after it, so they joined the newer slice (completion-time slicing)."
        if counts["joined_later"]
        else "."
    )
    if counts["pending_logs"]:
        text += f" {counts['pending_logs']} log files were never committed."
    if layout.source == "history":
        text += " Rebuilt from the history (the run kept its table in memory)."
    return text


def plot_slices(layout: SliceLayout, out_dir: Path, title: str, name: str = "slices") -> Figure:
    with styled():
        fig = new_figure(11, 1.9 + 0.26 * max(1, len(layout.groups)))
        ax = fig.add_subplot()
        counts = draw_slices(ax, layout, title)
        fig.legend(handles=slice_legend(), loc="outside lower center", ncols=3)
    return save(fig, out_dir, name, "File slices per file group", caption(layout, counts))


__all__ = [
    "GroupLayout",
    "LogMark",
    "SliceLayout",
    "SliceSpan",
    "draw_slices",
    "layout_from_history",
    "layout_from_table",
    "plot_slices",
]
