"""What each kind of marker costs in storage requests: direct against timeline-server markers, on
local and object storage (the ``markers`` grid: base ``timeline_server_markers`` without faults or
table services, so every marker is a write task's).

Direct markers cost a conditional PUT per data file, a listing per partition folder to read them
back at commit and a DELETE each after it; timeline-server markers cost one PUT per batch of
requests, a GET per ``MARKERS<n>`` file and a DELETE each, and each data file waits for the next
batch. :func:`marker_point` reduces a run folder to its point (``result.json``'s
``storage.marker_requests`` and ``markers``, the history's flushes); :func:`plot_marker_costs`
draws the marker requests and the writers' wait per data file written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from reports.figures import Figure, new_figure, save, styled
from reports.run_data import load_run, value

KINDS = ("direct", "timeline_server")
COLORS = {"direct": "#e4572e", "timeline_server": "#2f7fc1"}


@dataclass(frozen=True)
class MarkerPoint:
    markers: str
    profile: str
    data_files: int
    """Data files the flushes wrote (the files their write statuses list)."""
    marker_requests: int
    """Storage requests under ``.hoodie/.temp``: creating, reading and deleting markers."""
    marker_request_time_ms: int
    """Their time under the storage profile."""
    writer_wait_ms: int
    """The write tasks' time waiting for markers: direct, their conditional PUTs; timeline
    server, the wait for the server's answers."""
    server_requests: int
    server_batches: int

    @property
    def requests_per_file(self) -> float:
        return self.marker_requests / max(self.data_files, 1)

    @property
    def wait_per_file_ms(self) -> float:
        return self.writer_wait_ms / max(self.data_files, 1)


def marker_point(run_dir: Path) -> MarkerPoint:
    """The run's point: its marker kind and profile from the scenario, its requests from
    ``result.json``, its data files from the flushes in the history."""
    run = load_run(Path(run_dir))
    table = run.scenario.get("table", {})
    storage = run.result.get("storage") or {}
    server = run.result.get("markers") or {}
    requests = storage.get("marker_requests") or {}
    times = storage.get("marker_request_time_ms") or {}
    files = sum(
        len(value(e).get("files") or []) for e in run.events if e.f == "flush" and e.type == "ok"
    )
    kind = str(table.get("markers", "direct"))
    if kind == "direct":
        wait = int(times.get("create_if_absent", 0))
    else:
        wait = int(server.get("answer_wait_ms", 0))
    return MarkerPoint(
        markers=kind,
        profile=str(table.get("storage_profile", "local")),
        data_files=files,
        marker_requests=sum(requests.values()),
        marker_request_time_ms=sum(times.values()),
        writer_wait_ms=wait,
        server_requests=int(server.get("requests", 0)),
        server_batches=int(server.get("batches", 0)),
    )


def plot_marker_costs(points: list[MarkerPoint], out_dir: Path) -> Figure:
    """Left: marker storage requests per data file written; right: the writers' wait for a
    marker per data file; a pair of bars (direct, timeline server) per storage profile."""
    profiles = sorted({p.profile for p in points})
    x = np.arange(len(profiles))
    width = 0.38
    with styled():
        fig = new_figure(12, 4.6)
        left, right = fig.subplots(1, 2)
        for i, kind in enumerate(KINDS):
            chosen = [_mean(points, profile, kind) for profile in profiles]
            offset = (i - 0.5) * width
            label = "direct" if kind == "direct" else "timeline server"
            left.bar(x + offset, [c[0] for c in chosen], width, color=COLORS[kind], label=label)
            right.bar(x + offset, [c[1] for c in chosen], width, color=COLORS[kind], label=label)
        for axis, title, unit in (
            (left, "marker storage requests per data file written", "requests"),
            (right, "a writer's wait for the marker of a data file", "ms"),
        ):
            axis.set_xticks(x, profiles)
            axis.set_xlabel("[table] storage_profile")
            axis.set_ylabel(unit)
            axis.set_title(title)
            axis.set_ylim(top=axis.get_ylim()[1] * 1.25)
            axis.legend(loc="upper center", ncol=2, fontsize=8)
    return save(
        fig, out_dir, "marker_costs", "Markers: direct vs timeline server", _caption(points)
    )


def _mean(points: list[MarkerPoint], profile: str, kind: str) -> tuple[float, float]:
    chosen = [p for p in points if p.profile == profile and p.markers == kind]
    if not chosen:
        return 0.0, 0.0
    return (
        float(np.mean([p.requests_per_file for p in chosen])),
        float(np.mean([p.wait_per_file_ms for p in chosen])),
    )


def _caption(points: list[MarkerPoint]) -> str:
    if not points:
        return "No run of the markers grid."
    parts = []
    for p in sorted(points, key=lambda p: (p.profile, p.markers)):
        batches = (
            f", {p.server_requests} requests to the server in {p.server_batches} batches"
            if p.markers == "timeline_server"
            else ""
        )
        parts.append(
            f"{p.profile}/{p.markers}: {p.data_files} data files, {p.marker_requests} marker "
            f"storage requests ({p.requests_per_file:.2f} per file, "
            f"{p.marker_request_time_ms / 1000:.1f} s), writers waited "
            f"{p.wait_per_file_ms:.0f} ms per file{batches}"
        )
    return "; ".join(parts) + "."


__all__ = ["MarkerPoint", "marker_point", "plot_marker_costs"]
