"""Every per-run plot from one run folder: ``plot_run(run_dir, out_dir) -> list[Figure]``.

In order: the swimlanes (who waited for whom), the timeline (instants as requested -> completed
intervals), the file slices (from ``table/`` when the run kept it on disk, else rebuilt from the
history), throughput and blocked time, and for every violated invariant the happens-before chain
behind it. A plot that does not apply (no writers, no instants, no file groups, no violation) is
left out rather than drawn as empty axes.
"""

from __future__ import annotations

from pathlib import Path

from models.storage import LocalStorage
from models.table_errors import CorruptTableError
from models.view.fsview import SlicingError
from models.view.table import HudiTable, NotAHudiTableError
from reports.figures import Figure
from reports.run_data import RunData, load_run
from reports.slices import SliceLayout, layout_from_history, layout_from_table, plot_slices
from reports.swimlane import plot_swimlane
from reports.throughput import plot_throughput
from reports.timeline import plot_timeline, spans_from_history
from reports.violations import plot_violations


def plot_run(run_dir: Path, out_dir: Path) -> list[Figure]:
    """Draw every plot that applies to the run folder ``run_dir`` into ``out_dir`` (PNG + SVG)."""
    run = load_run(Path(run_dir))
    out_dir = Path(out_dir)
    figures: list[Figure] = []
    if run.writers:
        figures.append(plot_swimlane(run, out_dir))
    if spans_from_history(run).spans:
        figures.append(plot_timeline(run, out_dir))
    layout = slice_layout(run)
    if layout is not None and layout.groups:
        source = "table" if layout.source == "table" else "history"
        figures.append(plot_slices(layout, out_dir, f"{run.name}: file slices (from the {source})"))
    if run.writers:
        figures.append(plot_throughput(run, out_dir))
    figures.extend(plot_violations(run, out_dir))
    return figures


def slice_layout(run: RunData) -> SliceLayout | None:
    """Slices from the run's table if it has one, else from its history; None if neither can be
    sliced (a known-bad variant can leave two instants at one time, which no view can slice)."""
    if run.table_root is not None:
        try:
            table = HudiTable(LocalStorage(run.table_root))
            return layout_from_table(table, origin_ms=run.epoch_ms, origin="simulated time 0")
        except (CorruptTableError, NotAHudiTableError, SlicingError):
            pass
    try:
        return layout_from_history(run)
    except (SlicingError, ValueError):
        return None


__all__ = ["plot_run", "slice_layout"]
