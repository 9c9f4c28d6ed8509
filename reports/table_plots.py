"""``testbed inspect PATH --plot FILE``: the timeline and file slices of any Hudi table, one image.

Works on every table the testbed reads (table versions 6, 8, 9; a simulated run's ``table/``; the
fixtures written by Hudi itself): the top panel is the timeline (instants as requested -> completed
intervals per action), the bottom one the file slices per file group as the testbed's file-system
view builds them, on the same instant-time axis. The format follows FILE's suffix (``.png``,
``.svg``).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import matplotlib

from reports.figures import STYLE, new_figure, styled
from reports.slices import draw_slices, layout_from_table, slice_legend
from reports.timeline import draw_timeline, legend_handles, spans_from_timeline

FORMATS = ("png", "svg")


def plot_table(table_root: Path, out: Path, *, table=None) -> Path:
    """Draw the table at ``table_root`` into ``out`` (PNG or SVG by its suffix); returns ``out``.

    ``table`` (a :class:`models.view.table.HudiTable`) may be passed when the caller opened it already.
    Raises ValueError for an unsupported suffix; errors opening the table propagate unchanged.
    """
    out = Path(out)
    fmt = out.suffix.lower().lstrip(".")
    if fmt not in FORMATS:
        raise ValueError(f"{out}: unsupported plot format {out.suffix!r} (allowed: .png, .svg)")
    if table is None:
        from models.storage import LocalStorage
        from models.view.table import HudiTable

        table = HudiTable(LocalStorage(Path(table_root)))
    timeline = table.timeline()
    data = spans_from_timeline(timeline)
    origin_ms = _origin_ms(timeline)
    slices = layout_from_table(table, origin_ms=origin_ms, origin=data.origin)
    lanes = max(1, len({s.lane for s in data.spans}))
    groups = max(1, len(slices.groups))
    name = table.config.raw.get("hoodie.table.name", Path(table_root).name)
    with styled():
        fig = new_figure(11, 2.6 + 0.55 * lanes + 0.26 * groups)
        top, bottom = fig.subplots(2, 1, height_ratios=[0.55 * lanes + 0.8, 0.26 * groups + 0.8])
        draw_timeline(top, data, f"{name}: timeline ({len(data.spans)} instants)")
        draw_slices(bottom, slices, f"{name}: file slices per file group")
        end = max(data.end_s, slices.end_s, 1.0) * 1.01
        top.set_xlim(0, end)
        bottom.set_xlim(0, end)
        for ax, empty, text in (
            (top, not data.spans, "no instants on the timeline"),
            (bottom, not slices.groups, "no file groups"),
        ):
            if empty:
                ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", color="#666666")
        handles = legend_handles(data) + (slice_legend() if slices.groups else [])
        if handles:
            fig.legend(handles=handles, loc="outside lower center", ncols=5)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".partial")
    with matplotlib.rc_context(STYLE):
        metadata = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        fig.savefig(tmp, format=fmt, metadata=metadata)
    tmp.replace(out)  # never leave a half-written image behind
    return out


def _origin_ms(timeline) -> int:
    """Epoch ms of the table's first instant time: the plot's time 0."""
    from models.timeline.instant_time import InstantTimeError, parse_epoch_ms

    times = []
    for instant in timeline:
        for t in (instant.requested_time, instant.completion_time):
            with contextlib.suppress(InstantTimeError, TypeError):
                times.append(parse_epoch_ms(t))
    return min(times, default=0)


__all__ = ["FORMATS", "plot_table"]
