"""The summary of a suite's report: one table row per scenario and per grid with its verdict and
the metrics of its representative run, and the legend of the verdict badges.
"""

from __future__ import annotations

from collections import defaultdict
from html import escape
from typing import Any

from reports.page import badge, scrolling
from reports.suite_data import representative, safe_name, verdict_kind


def metrics_cells(metrics: dict[str, Any]) -> str:
    jobs = (metrics or {}).get("jobs") or {}
    writers = (metrics or {}).get("writers") or {}
    commits = sum(j.get("commits", 0) for j in jobs.values())
    records = sum(j.get("records_committed", 0) for j in jobs.values())
    failovers = sum(j.get("failovers", 0) for j in jobs.values())
    p99 = [
        j.get("commit_latency_ms", {}).get("p99")
        for j in jobs.values()
        if j.get("commit_latency_ms", {}).get("p99") is not None
    ]
    end_ms = max(int((metrics or {}).get("sim_end_ms") or 0), 1)
    blocked = (
        sum(w.get("blocked_ms", 0) for w in writers.values()) / (end_ms * len(writers))
        if writers
        else None
    )
    cells = [
        str(commits) if jobs else "–",
        str(records) if jobs else "–",
        f"{100 * blocked:.1f}%" if blocked is not None else "–",
        str(failovers) if jobs else "–",
        f"{max(p99)} ms" if p99 else "–",
    ]
    return "".join(f'<td class="num">{escape(c)}</td>' for c in cells)


METRIC_HEADERS = ("commits", "records committed", "writers blocked", "failovers", "commit p99")


def summary_table(
    scenarios: list[dict[str, Any]],
    grids: dict[str, list[dict[str, Any]]],
    runs: list[dict[str, Any]],
) -> str:
    rows = []
    for s in scenarios:
        name = s["scenario"]
        group = [r for r in runs if r.get("scenario") == name]
        errors = [r.get("error") for r in group if r.get("error")]
        expected = list(s.get("expected_violations") or [])
        kind = verdict_kind(expected, bool(s.get("ok")), errors[0] if errors else None)
        rep = representative(group)
        violated = s.get("violated_in") or {}
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(violated.items())) or "none"
        rows.append(
            f'<tr class="{kind}"><td><a href="#s-{safe_name(name)}">{escape(name)}</a></td>'
            f'<td class="num">{s.get("runs", len(group))}</td>'
            f"<td>{escape(', '.join(expected) or 'none')}</td>"
            f"<td>{escape(seen)}</td><td>{badge(kind)}</td>"
            + (metrics_cells(rep.get("metrics") or {}) if rep else "<td></td>" * 5)
            + "</tr>"
        )
    for grid, points in grids.items():
        names = {p["scenario"] for p in points}
        group = [r for r in runs if r.get("scenario") in names]
        good = sum(bool(r.get("ok")) for r in group)
        kind = "pass" if points and all(p.get("ok") for p in points) else "fail"
        violated_in: dict[str, int] = defaultdict(int)
        for point in points:
            for inv, count in (point.get("violated_in") or {}).items():
                violated_in[inv] += count
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(violated_in.items())) or "none"
        rows.append(
            f'<tr class="{kind}"><td><a href="#g-{safe_name(grid)}">grid {escape(grid)}</a> '
            f'<span class="muted">({len(points)} points)</span></td>'
            f'<td class="num">{len(group)}</td><td>per point (see its section)</td>'
            f"<td>{escape(seen)}</td>"
            f"<td>{badge(kind, f'{good}/{len(group)} as expected')}</td>"
            + '<td class="num">–</td>' * 5
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "scenario",
            "runs",
            "expected violations",
            "violated (runs)",
            "verdict",
            *METRIC_HEADERS,
        )
    )
    return scrolling(
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def legend() -> str:
    return (
        '<p class="legend">'
        + badge("pass")
        + " the real protocol held every invariant · "
        + badge("caught")
        + " a known-bad variant was caught by exactly the expected invariants · "
        + badge("fail")
        + " a verdict differs from the expectation (a real failure) · metrics of the seed "
        "shown in each section</p>"
    )


__all__ = ["METRIC_HEADERS", "legend", "metrics_cells", "summary_table"]
