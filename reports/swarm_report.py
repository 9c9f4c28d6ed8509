"""A swarm's ``report.html`` (``testbed swarm``): a sweep's report (:mod:`reports.sweep_report`)
over the drawn scenarios, plus what the failing seeds shared: the parameter values every failing
seed took and those far more common among them than among all seeds."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from reports.page import scrolling
from reports.sweep_report import write_sweep_report


def write_swarm_report(
    out_dir: Path, rows: Sequence[dict[str, Any]], summary: dict[str, Any]
) -> Path:
    """``out_dir/report.html`` for ``testbed swarm`` (``summary`` is its summary.json)."""
    seeds = summary.get("seeds") or {}
    title = f"Swarm, seeds {seeds.get('first')} to {seeds.get('last')}"
    return write_sweep_report(
        out_dir, rows, summary, title=title, sections=_shared_sections(summary.get("shared") or {})
    )


def _shared_sections(shared: dict[str, Any]) -> list[str]:
    failing = shared.get("failing") or 0
    head = f"<h2>What the {failing} failing seed(s) shared</h2>"
    if not failing:
        return [head, '<p class="muted">Nothing failed.</p>']
    every = shared.get("by_every_failing_seed") or {}
    listed = "".join(
        f"<li><code>{escape(name)} = {escape(str(value))}</code></li>"
        for name, value in every.items()
    )
    parts = [head, "<p>Values every failing seed took (and not every seed):</p>"]
    parts.append(f"<ul>{listed}</ul>" if listed else '<p class="muted">None.</p>')
    over = shared.get("over_represented") or []
    if over:
        rows = "".join(
            f"<tr><td><code>{escape(o['parameter'])} = {escape(str(o['value']))}</code></td>"
            f'<td class="num">{o["failing"]}</td><td class="num">{o["failing_share"]:.0%}</td>'
            f'<td class="num">{o["share"]:.0%}</td></tr>'
            for o in over
        )
        parts.append(
            "<p>Values far more common among failing seeds than among all:</p>"
            + scrolling(
                '<table class="summary"><thead><tr><th>parameter</th><th>failing seeds</th>'
                "<th>share of failing</th><th>share of all</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        )
    return parts


__all__ = ["write_swarm_report"]
