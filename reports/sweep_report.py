"""A sweep's ``report.html`` (``testbed sweep``): its verdict, the violations per invariant and
the metric distributions across seeds (:mod:`reports.distributions`), the metrics' percentiles
and every failing seed with its replay command. The page's frame and style are
:mod:`reports.page`'s, as for a suite's report (:mod:`reports.html`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from reports.distributions import plot_distributions
from reports.page import (
    badge,
    command_html,
    document,
    guarded_plot,
    img,
    scrolling,
    seed_of,
    write_page,
)

MAX_FAILING_SEEDS_SHOWN = 50
"""Failing seeds listed in a sweep report (all of them are in summary.json)."""


def write_sweep_report(
    out_dir: Path,
    rows: Sequence[dict[str, Any]],
    summary: dict[str, Any],
    *,
    writers: int | None = None,
    title: str | None = None,
    sections: Sequence[str] = (),
) -> Path:
    """``out_dir/report.html`` for a ``testbed sweep``: its verdict, the violations per
    invariant and the metric distributions across seeds (drawn into ``out_dir/plots/`` as PNG
    and SVG), the metrics' percentiles and every failing seed with its replay command.
    ``rows`` are the sweep's rows (``testbed.sweep.ROW_SCHEMA``), ``summary`` its summary.json;
    ``writers`` the scenario's writer count (the rows do not carry it). ``title`` replaces
    "Sweep <scenario>", and ``sections`` (HTML) come before the failing seeds."""
    out_dir = Path(out_dir)
    rows = sorted(rows, key=seed_of)
    name = str(summary.get("scenario") or "sweep")
    errors: list[str] = []
    figures = (
        guarded_plot(
            lambda: plot_distributions(
                rows,
                out_dir / "plots",
                scenario=name,
                expected=list(summary.get("expected_violations") or []),
                writers=writers,
            ),
            errors,
            "distributions",
        )
        if rows
        else []
    ) or []
    seeds = summary.get("seeds") or {}
    failing = list(summary.get("failing") or [])
    ok = bool(summary.get("ok"))
    if summary.get("interrupted"):
        verdict = badge("interrupted", _interrupted_badge(summary, len(rows)))
        if failing:
            verdict += " " + badge("fail", f"{len(failing)} seed(s) NOT as expected")
    elif ok:
        verdict = badge("pass", "every seed as expected")
    else:
        verdict = badge("fail", f"{len(failing)} seed(s) NOT as expected")
    expected = ", ".join(summary.get("expected_violations") or []) or "none"
    lead = (
        f"Seeds {seeds.get('first')} to {seeds.get('last')} ({len(rows)} of {seeds.get('count')} "
        f"ran) {_engine(summary.get('engine'))}: {summary.get('as_expected', 0)} as expected, "
        f"{summary.get('errors', 0)} crashed. Expected violations: {expected}."
    )
    title = title or f"Sweep {name}"
    body = [f"<header><h1>{escape(title)}</h1>{verdict}", f'<p class="lead">{escape(lead)}</p>']
    if summary.get("source"):
        body.append(f'<p class="muted">Scenario: <code>{escape(str(summary["source"]))}</code></p>')
    if summary.get("interrupted"):
        body.append(
            '<p class="interrupted">Interrupted (Ctrl-C): only the seeds that finished are '
            "reported.</p>"
        )
    body.append("</header>")
    body += ["<h2>Across seeds</h2>", *(img(f, out_dir) for f in figures)]
    body += [f'<p class="error">plot failed: {escape(e)}</p>' for e in errors]
    body += ["<h2>Metric percentiles</h2>", _percentile_table(summary.get("metrics") or {})]
    body += list(sections)
    body += [f"<h2>Seeds not as expected ({len(failing)})</h2>", _failing_table(rows, failing)]
    return write_page(out_dir / "report.html", document(title, body))


def _interrupted_badge(summary: dict[str, Any], rows: int) -> str:
    """``interrupted, N seed(s) not run`` (the count is absent from older summaries)."""
    abandoned = summary.get("abandoned")
    if abandoned is None:
        count = (summary.get("seeds") or {}).get("count")
        abandoned = count - rows if isinstance(count, int) else None
    return "interrupted" + (f", {abandoned} seed(s) not run" if abandoned is not None else "")


def _engine(engine: str | None) -> str:
    return "without Spark" if engine in (None, "", "none") else f"on {engine}"


def _percentile_table(metrics: dict[str, dict[str, Any]]) -> str:
    if not metrics:
        return '<p class="muted">No metrics (no seed finished).</p>'
    columns = ("min", "p50", "p90", "max", "mean")
    rows = "".join(
        f"<tr><td>{escape(name)}</td>"
        + "".join(
            f'<td class="num">{escape("–" if d.get(c) is None else str(d.get(c)))}</td>'
            for c in columns
        )
        + "</tr>"
        for name, d in metrics.items()
    )
    head = "".join(f"<th>{c}</th>" for c in ("metric", *columns))
    return scrolling(
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    )


def _failing_table(rows: Sequence[dict[str, Any]], failing: list[dict[str, Any]]) -> str:
    if not failing:
        return '<p class="muted">None: every seed that ran is as expected.</p>'
    by_seed = {row.get("seed"): row for row in rows}
    out = []
    for failure in failing[:MAX_FAILING_SEEDS_SHOWN]:
        row = by_seed.get(failure.get("seed"), {})
        what = (
            failure.get("error")
            or ", ".join(failure.get("violated") or [])
            or ("expected violation not found")
        )
        try:
            why: dict[str, list[str]] = json.loads(row.get("why") or "{}")
        except ValueError:
            why = {}
        sentences = "".join(
            f"<li><b>{escape(inv)}</b>: {escape(text)}</li>"
            for inv, texts in sorted(why.items())
            for text in texts[:1]
        )
        out.append(
            f'<tr class="fail"><td class="num">{escape(str(failure.get("seed")))}</td>'
            f"<td>{escape(what)}"
            + (f'<ul class="why">{sentences}</ul>' if sentences else "")
            + f"</td><td>{command_html(failure.get('replay') or '')}</td></tr>"
        )
    more = len(failing) - MAX_FAILING_SEEDS_SHOWN
    note = f'<p class="muted">and {more} more in summary.json</p>' if more > 0 else ""
    return (
        '<table class="runs"><thead><tr><th>seed</th><th>violated</th><th>replay</th></tr>'
        f"</thead><tbody>{''.join(out)}</tbody></table>{note}"
    )


__all__ = ["MAX_FAILING_SEEDS_SHOWN", "write_sweep_report"]
