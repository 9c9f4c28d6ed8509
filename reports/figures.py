"""What a plot hands the report: a :class:`Figure` (name, title, caption, PNG and SVG paths), and
the one place figures are drawn and saved.

Plots go into run folders and reports that are diffed, cached and reviewed, so the bytes must be a
function of the data alone: no dates, no random ids. matplotlib writes a ``Date`` into SVG and PDF
metadata and salts SVG element ids with a random hash; :func:`save` pins both. Figures are built
on matplotlib's object API with the Agg canvas (never ``pyplot``), so drawing holds no global
state and works in worker processes without a display.
"""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display, ever: plots are drawn in CLIs, tests and worker processes

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from PIL import Image

DPI = 110
"""Resolution of the PNG files on disk (the SVG next to each scales anyway)."""
PREVIEW_DPI = 90
"""Resolution of the copy a report embeds (:attr:`Figure.preview`): an 11-inch plot is 990 px
wide, inside report.html's 1184 px column, and its 9 pt text stays 11 px tall. Lower than
:data:`DPI` because a report embeds a hundred plots and must stay small enough to mail."""
PREVIEW_COLORS = 256
"""Palette of an embedded copy: plots are a few flat colors plus anti-aliased edges, so 256
colors look the same as true color in a third of the bytes."""
SVG_HASH_SALT = "hudi-commit-testbed"
"""Fixed salt for the ids matplotlib gives SVG elements (random otherwise: SVGs would differ)."""

STYLE = {
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "svg.hashsalt": SVG_HASH_SALT,
    "svg.fonttype": "path",  # text as paths: the SVG looks the same without the font installed
}

# One palette for every plot, so a color means the same thing everywhere in a report.
COLORS = {
    "buffering": "#cfe3f3",
    "flushing": "#2f7fc1",
    "blocked": "#e4572e",
    "commit_wait": "#a4161a",
    "down": "#6c6c6c",
    "coordinator": "#e9e4f2",
    "commit": "#3a9d5d",
    "checkpoint": "#8a8a8a",
    "checkpoint_failed": "#c1121f",
    "duplicate_ack": "#ff9f1c",
    "crash": "#000000",
    "blocking": "#e4572e",
    "async": "#2f7fc1",
    "written": "#2f7fc1",
    "committed": "#3a9d5d",
    "wasted": "#e4572e",
    "violation": "#c1121f",
    "caught": "#2b5fa6",
    "ok": "#3a9d5d",
}

ACTION_COLORS = {
    "deltacommit": "#2f7fc1",
    "commit": "#3a9d5d",
    "compaction": "#3a9d5d",
    "rollback": "#e4572e",
    "clean": "#8a8a8a",
    "replacecommit": "#9b5de5",
    "clustering": "#9b5de5",
    "logcompaction": "#00a6a6",
    "restore": "#ff9f1c",
    "savepoint": "#6c6c6c",
    "indexing": "#6c6c6c",
}


@dataclass(frozen=True)
class Figure:
    """One saved plot: what the report shows and what a reviewer reads under it."""

    name: str
    """File stem, unique within one output folder (``swimlane``, ``hb_instant_monotonic``)."""
    title: str
    caption: str
    """One or two sentences with the key numbers, readable without the plot's code."""
    png: Path
    svg: Path
    preview: bytes = field(default=b"", compare=False, repr=False)
    """The PNG a report embeds (:data:`PREVIEW_DPI`, palette colors), kept in memory only; empty
    for a Figure built by hand (a report then derives it from ``png``)."""


def new_figure(width_in: float, height_in: float) -> MplFigure:
    """A blank figure on the Agg canvas, styled like every other plot of the testbed."""
    with matplotlib.rc_context(STYLE):
        figure = MplFigure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def styled():
    """A context applying :data:`STYLE` while axes are created and drawn (rcParams are read then)."""
    return matplotlib.rc_context(STYLE)


def save(figure: MplFigure, out_dir: Path, name: str, title: str, caption: str) -> Figure:
    """Write ``figure`` as ``<name>.png`` and ``<name>.svg`` into ``out_dir``, byte-stable, and
    render the smaller copy a report embeds (:attr:`Figure.preview`)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    png, svg = out_dir / f"{name}.png", out_dir / f"{name}.svg"
    preview = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        figure.savefig(png, format="png", metadata={"Software": None})
        figure.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
        figure.savefig(preview, format="png", dpi=PREVIEW_DPI, metadata={"Software": None})
    return Figure(
        name=name,
        title=title,
        caption=caption,
        png=png,
        svg=svg,
        preview=palette_png(preview.getvalue()),
    )


def palette_png(png: bytes | Path, max_width_px: int | None = None) -> bytes:
    """``png`` (bytes or a file) as a PNG on a :data:`PREVIEW_COLORS` palette, scaled down to
    ``max_width_px`` if wider. No dithering (flat plot colors stay flat); the same input gives
    the same bytes."""
    with Image.open(io.BytesIO(png) if isinstance(png, bytes) else png) as original:
        image = original.convert("RGB")
    if max_width_px is not None and image.width > max_width_px:
        height = round(image.height * max_width_px / image.width)
        image = image.resize((max_width_px, height), Image.Resampling.LANCZOS)
    palette = image.quantize(
        PREVIEW_COLORS, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE
    )
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True)
    return out.getvalue()


def wrap(text: str, width: int = 110) -> str:
    """``text`` broken into lines of at most ``width`` characters (for sentences drawn in plots)."""
    return "\n".join(textwrap.wrap(text, width)) if text else ""


def seconds(ms: float) -> str:
    """``1234`` -> ``"1.2 s"``, ``200`` -> ``"200 ms"``: durations as a reviewer reads them."""
    return f"{ms / 1000:.1f} s" if abs(ms) >= 1000 else f"{ms:.0f} ms"


def percent(fraction: float) -> str:
    return f"{100 * fraction:.1f}%"


__all__ = [
    "ACTION_COLORS",
    "COLORS",
    "DPI",
    "PREVIEW_DPI",
    "Figure",
    "new_figure",
    "palette_png",
    "percent",
    "save",
    "seconds",
    "styled",
    "wrap",
]
