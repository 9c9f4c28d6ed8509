"""``report.html``: one self-contained page a design review can read (``write_report``).

Input is a suite folder as ``testbed suite`` writes it: ``summary.json`` and the run folders it
names. Output is ``report.html`` next to it, with every image embedded (base64 PNG) and the style
inline: no scripts, no external files, so it can be mailed, attached to a ticket or opened years
later. Plots are also kept as PNG and SVG under ``plots/``.

What it shows, in reading order: the suite's verdict and summary table; the headline comparisons
(blocking vs async instant generation, OCC vs NBCC, TrueTime's bound vs the real skew) when the
suite ran their scenarios; then one section per scenario with its description, the verdict of every
invariant, the plots of one representative run (the first whose verdict differs from its
expectation, else the first seed), every violation with its explanation and replay command, and
for a known-bad variant its counterexample. A known-bad variant caught as expected is shown as
such (blue, "caught"), never in the red of a real failure.
"""

from __future__ import annotations

import base64
import json
from collections import defaultdict
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from reports.comparisons import (
    plot_blocking_vs_async,
    plot_occ_vs_nbcc,
    plot_truetime,
    truetime_point,
)
from reports.figures import Figure
from reports.run_plots import plot_run

MAX_VIOLATIONS_SHOWN = 3
"""Violations listed per invariant and run (the count of the rest is given)."""
HEADLINE_PAIRS = (
    ("blocking_vs_async", "blocking_stalls", "async_baseline"),
    ("occ_vs_nbcc", "occ_contention", "nbcc_two_jobs"),
)
"""Comparisons drawn when the suite ran both scenarios (catalog names)."""


@dataclass(frozen=True)
class _Plotted:
    figures: list[Figure]
    errors: list[str]


def write_report(suite_dir: Path) -> Path:
    """Read ``suite_dir/summary.json`` and its run folders, draw the plots into
    ``suite_dir/plots/`` and write ``suite_dir/report.html``; returns its path."""
    suite_dir = Path(suite_dir)
    summary = json.loads((suite_dir / "summary.json").read_text())
    runs: list[dict[str, Any]] = list(summary.get("runs") or [])
    plots = suite_dir / "plots"
    headline = _headline(suite_dir, runs, plots)
    sections = []
    for scenario in _scenarios(summary, runs):
        scenario_runs = [r for r in runs if r.get("scenario") == scenario["scenario"]]
        sections.append(_scenario_section(suite_dir, scenario, scenario_runs, plots))
    page = _page(summary, runs, headline, sections)
    target = suite_dir / "report.html"
    tmp = target.with_name(target.name + ".partial")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(target)
    return target


# --- data ------------------------------------------------------------------------------------------


def _scenarios(summary: dict[str, Any], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scenario entries of the summary, or built from the runs if it has none (grid runs are
    folded into the comparisons, not given sections)."""
    listed = [s for s in summary.get("scenarios") or [] if s.get("scenario")]
    if listed:
        return listed
    by_name: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for run in runs:
        if not run.get("grid"):
            by_name[run.get("scenario", "?")].append(run)
    out = []
    for name, group in by_name.items():
        violated: dict[str, int] = defaultdict(int)
        for run in group:
            for inv in run.get("violated") or []:
                violated[inv] += 1
        out.append(
            {
                "scenario": name,
                "description": group[0].get("description", ""),
                "runs": len(group),
                "ok": all(r.get("ok") for r in group),
                "expected_violations": group[0].get("expected_violations") or [],
                "violated_in": dict(violated),
            }
        )
    return out


def _result(suite_dir: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    path = suite_dir / str(run.get("run_dir", "")) / "result.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _kind(expected: list[str], ok: bool, error: str | None = None) -> str:
    """``pass`` (real protocol held), ``caught`` (known-bad variant caught as expected),
    ``fail`` (verdict differs from the expectation) or ``error`` (the run itself failed)."""
    if error:
        return "error"
    if not ok:
        return "fail"
    return "caught" if expected else "pass"


BADGES = {
    "pass": "holds",
    "caught": "caught as expected",
    "fail": "NOT as expected",
    "error": "error",
}


def _badge(kind: str, text: str | None = None) -> str:
    return f'<span class="badge {kind}">{escape(text or BADGES[kind])}</span>'


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "run"


# --- plots -----------------------------------------------------------------------------------------


def _plot(action, errors: list[str], what: str):
    """Run one plotting call; a failure becomes a visible note in the report instead of losing
    the whole report (the suite's verdicts matter more than one picture)."""
    try:
        return action()
    except Exception as error:  # shown in the report, never swallowed silently
        errors.append(f"{what}: {type(error).__name__}: {error}")
        return None


def _first_run(runs: list[dict[str, Any]], scenario: str, seed: int | None = None):
    matches = [r for r in runs if r.get("scenario") == scenario and not r.get("error")]
    if seed is not None:
        same = [r for r in matches if r.get("seed") == seed]
        matches = same or matches
    return matches[0] if matches else None


def _headline(suite_dir: Path, runs: list[dict[str, Any]], plots: Path) -> _Plotted:
    figures: list[Figure] = []
    errors: list[str] = []
    plain = [r for r in runs if not r.get("grid")]
    draw = {"blocking_vs_async": plot_blocking_vs_async, "occ_vs_nbcc": plot_occ_vs_nbcc}
    for name, first, second in HEADLINE_PAIRS:
        a = _first_run(plain, first)
        b = _first_run(plain, second, a.get("seed") if a else None)
        if a and b:
            figure = _plot(
                lambda n=name, a=a, b=b: draw[n](
                    suite_dir / a["run_dir"], suite_dir / b["run_dir"], plots / "headline"
                ),
                errors,
                name,
            )
            if figure:
                figures.append(figure)
    grid = [r for r in runs if r.get("grid") == "truetime" and not r.get("error")]
    if grid:
        points = [
            p
            for r in grid
            if (
                p := _plot(lambda r=r: truetime_point(suite_dir / r["run_dir"]), errors, "truetime")
            )
        ]
        if points:
            figure = _plot(lambda: plot_truetime(points, plots / "headline"), errors, "truetime")
            if figure:
                figures.append(figure)
    return _Plotted(figures, errors)


def _representative(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run whose plots the section shows: the first that differs from its expectation,
    else the first (lowest seed) that ran."""
    ran = [r for r in runs if not r.get("error")]
    ran.sort(key=lambda r: (bool(r.get("ok")), r.get("seed", 0)))
    return ran[0] if ran else None


# --- html ------------------------------------------------------------------------------------------


def _img(figure: Figure) -> str:
    data = base64.b64encode(figure.png.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{escape(figure.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption><b>{escape(figure.title)}.</b> {escape(figure.caption)}</figcaption></figure>"
    )


def _metrics_cells(metrics: dict[str, Any]) -> str:
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


def _summary_table(scenarios: list[dict[str, Any]], runs: list[dict[str, Any]]) -> str:
    rows = []
    for s in scenarios:
        name = s["scenario"]
        group = [r for r in runs if r.get("scenario") == name]
        errors = [r.get("error") for r in group if r.get("error")]
        expected = list(s.get("expected_violations") or [])
        kind = _kind(expected, bool(s.get("ok")), errors[0] if errors else None)
        rep = _representative(group)
        violated = s.get("violated_in") or {}
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(violated.items())) or "none"
        rows.append(
            f'<tr class="{kind}"><td><a href="#s-{_safe(name)}">{escape(name)}</a></td>'
            f'<td class="num">{s.get("runs", len(group))}</td>'
            f"<td>{escape(', '.join(expected) or 'none')}</td>"
            f"<td>{escape(seen)}</td><td>{_badge(kind)}</td>"
            + (_metrics_cells(rep.get("metrics") or {}) if rep else "<td></td>" * 5)
            + "</tr>"
        )
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "scenario",
            "seeds",
            "expected violations",
            "violated (runs)",
            "verdict",
            *METRIC_HEADERS,
        )
    )
    return f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _invariant_grid(result: dict[str, Any] | None, expected: list[str]) -> str:
    if not result:
        return ""
    cells = []
    for name, verdict in sorted((result.get("invariants") or {}).items()):
        violated = not verdict.get("ok", True)
        if violated and name in expected:
            kind, text = "caught", "violated, as expected"
        elif violated:
            kind, text = "fail", "violated, unexpected"
        elif name in expected:
            kind, text = "fail", "expected violation not found"
        else:
            kind, text = "pass", "holds"
        cells.append(f'<li class="{kind}"><b>{escape(name)}</b><span>{escape(text)}</span></li>')
    for name in result.get("unchecked_expectations") or []:
        cells.append(f'<li class="note"><b>{escape(name)}</b><span>no checker yet</span></li>')
    return f'<ul class="invariants">{"".join(cells)}</ul>'


def _violations(suite_dir: Path, run: dict[str, Any], expected: list[str]) -> str:
    result = _result(suite_dir, run)
    if not result:
        return ""
    blocks = []
    for name, verdict in sorted((result.get("invariants") or {}).items()):
        found = verdict.get("violations") or []
        if verdict.get("ok", True) or not found:
            continue
        kind = "caught" if name in expected else "fail"
        items = "".join(
            f"<li>{escape(str(v.get('why', '')))}"
            + (
                f' <span class="events">events {escape(", ".join(map(str, v.get("events") or [])))}</span>'
                if v.get("events")
                else ""
            )
            + "</li>"
            for v in found[:MAX_VIOLATIONS_SHOWN]
        )
        more = len(found) - MAX_VIOLATIONS_SHOWN
        if more > 0:
            items += f'<li class="more">and {more} more (see result.json)</li>'
        blocks.append(
            f'<div class="violation {kind}"><h4>{escape(name)} {_badge(kind, "expected" if kind == "caught" else "unexpected")}</h4>'
            f"<ul>{items}</ul></div>"
        )
    if not blocks:
        return ""
    replay = run.get("replay") or ""
    return (
        f'<div class="run-violations"><h4 class="seed">seed {escape(str(run.get("seed")))}</h4>'
        + "".join(blocks)
        + (f'<p class="replay">replay: <code>{escape(replay)}</code></p>' if replay else "")
        + "</div>"
    )


def _counterexample(suite_dir: Path, runs: list[dict[str, Any]]) -> str:
    for run in runs:
        path = suite_dir / str(run.get("run_dir", "")) / "counterexample.toml"
        if path.is_file():
            return (
                '<details open class="counterexample"><summary>Minimal counterexample '
                f"(<code>{escape(str(run.get('run_dir')))}/counterexample.toml</code>, replay with "
                "<code>testbed run</code>)</summary>"
                f"<pre>{escape(path.read_text(errors='replace'))}</pre></details>"
            )
    return ""


def _runs_table(runs: list[dict[str, Any]]) -> str:
    rows = []
    for run in sorted(runs, key=lambda r: r.get("seed", 0)):
        kind = _kind(run.get("expected_violations") or [], bool(run.get("ok")), run.get("error"))
        violated = ", ".join(run.get("violated") or []) or "none"
        error = run.get("error")
        rows.append(
            f'<tr class="{kind}"><td class="num">{escape(str(run.get("seed")))}</td>'
            f"<td>{_badge(kind)}</td><td>{escape(violated)}</td>"
            f'<td class="num">{float(run.get("wall_s") or 0):.1f} s</td>'
            f"<td><code>{escape(run.get('replay') or '')}</code>"
            + (f'<div class="error">{escape(str(error))}</div>' if error else "")
            + "</td></tr>"
        )
    return (
        '<table class="runs"><thead><tr><th>seed</th><th>verdict</th><th>violated</th>'
        f"<th>wall</th><th>replay</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _scenario_section(
    suite_dir: Path, scenario: dict[str, Any], runs: list[dict[str, Any]], plots: Path
) -> str:
    name = scenario["scenario"]
    expected = list(scenario.get("expected_violations") or [])
    errors = [r.get("error") for r in runs if r.get("error")]
    kind = _kind(expected, bool(scenario.get("ok")), errors[0] if errors else None)
    rep = _representative(runs)
    errors_: list[str] = []
    figures: list[Figure] = []
    if rep is not None:
        out = plots / _safe(str(rep.get("run_dir") or name))
        figures = _plot(lambda: plot_run(suite_dir / rep["run_dir"], out), errors_, name) or []
    description = scenario.get("description") or (runs[0].get("description") if runs else "")
    intro = (
        "Known-bad variant: the checkers must catch " + ", ".join(expected) + "."
        if expected
        else "Real protocol: every invariant must hold."
    )
    parts = [
        f'<section id="s-{_safe(name)}" class="scenario {kind}">',
        f"<h2>{escape(name)} {_badge(kind)}</h2>",
        f'<p class="description">{escape(description or "")}</p>',
        f'<p class="intro">{escape(intro)}</p>',
        _runs_table(runs),
    ]
    if rep is not None:
        parts.append(
            f"<h3>Invariants (seed {escape(str(rep.get('seed')))})</h3>"
            + _invariant_grid(_result(suite_dir, rep), expected)
        )
    violations = "".join(_violations(suite_dir, r, expected) for r in runs)
    if violations:
        parts.append(f"<h3>Violations</h3>{violations}")
    counterexample = _counterexample(suite_dir, runs)
    if counterexample:
        parts.append(counterexample)
    if figures:
        parts.append(f"<h3>Plots (seed {escape(str(rep.get('seed')))})</h3>")
        parts.extend(_img(f) for f in figures)
    parts.extend(f'<p class="error">plot failed: {escape(e)}</p>' for e in errors_)
    parts.append("</section>")
    return "\n".join(parts)


def _page(
    summary: dict[str, Any], runs: list[dict[str, Any]], headline: _Plotted, sections: list[str]
) -> str:
    scenarios = _scenarios(summary, runs)
    title = f"Suite {summary.get('suite', '')}".strip()
    ok = bool(summary.get("ok"))
    failing = [s["scenario"] for s in scenarios if not s.get("ok")]
    caught = [s["scenario"] for s in scenarios if s.get("ok") and s.get("expected_violations")]
    verdict = (
        _badge("pass", "every verdict matches its expectation")
        if ok
        else _badge("fail", f"{len(failing)} scenario(s) NOT as expected")
    )
    notes = []
    if summary.get("interrupted"):
        notes.append('<p class="error">Interrupted: only the runs that finished are reported.</p>')
    seeds = summary.get("seeds")
    grid = sum(1 for r in runs if r.get("grid"))
    lead = (
        f"{len(scenarios)} scenarios, {len(runs) - grid} runs"
        + (f" ({seeds} seed(s) each)" if seeds else "")
        + (f", plus {grid} grid runs for the comparisons" if grid else "")
        + f"; {len(caught)} known-bad variant(s) caught as expected."
    )
    headline_html = "".join(_img(f) for f in headline.figures) + "".join(
        f'<p class="error">plot failed: {escape(e)}</p>' for e in headline.errors
    )
    body = [
        f"<header><h1>{escape(title)}</h1>{verdict}",
        f'<p class="description">{escape(summary.get("description") or "")}</p>',
        f'<p class="lead">{escape(lead)}</p>',
        *notes,
        "</header>",
        "<h2>Summary</h2>",
        _legend(),
        _summary_table(scenarios, runs),
    ]
    if headline_html:
        body += ["<h2>Headline comparisons</h2>", headline_html]
    body += sections
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}: Hudi commit-protocol testbed</title>"
        f"<style>{CSS}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


def _legend() -> str:
    return (
        '<p class="legend">'
        + _badge("pass")
        + " the real protocol held every invariant · "
        + _badge("caught")
        + " a known-bad variant was caught by exactly the expected invariants · "
        + _badge("fail")
        + " a verdict differs from the expectation (a real failure) · metrics of the seed "
        "shown in each section</p>"
    )


CSS = """
:root { --ink:#1f2328; --muted:#5b6470; --line:#d8dee4; --bg:#ffffff; --soft:#f6f8fa;
  --pass:#2f7d4f; --pass-bg:#e8f4ec; --caught:#2b5fa6; --caught-bg:#e7eef9;
  --fail:#b42318; --fail-bg:#fdecea; }
* { box-sizing: border-box; }
body { margin:0; background:var(--soft); color:var(--ink);
  font: 15px/1.5 -apple-system, "Segoe UI", "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 64px; background: var(--bg); }
h1 { font-size: 26px; margin: 0 12px 4px 0; display: inline-block; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-top: 8px; border-top: 1px solid var(--line); }
h3 { font-size: 15px; margin: 20px 0 6px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
h4 { font-size: 14px; margin: 8px 0 4px; }
p.description { max-width: 900px; }
p.lead, p.intro, p.legend { color: var(--muted); }
.badge { display:inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12px;
  font-weight: 600; vertical-align: middle; white-space: nowrap; }
.badge.pass { color: var(--pass); background: var(--pass-bg); }
.badge.caught { color: var(--caught); background: var(--caught-bg); }
.badge.fail, .badge.error { color: #fff; background: var(--fail); }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 8px 0 12px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; color: var(--muted); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.fail td, tr.error td { background: var(--fail-bg); }
table.summary td:first-child a { color: var(--ink); font-weight: 600; text-decoration: none; }
code { font: 12px/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace; background: var(--soft);
  padding: 1px 4px; border-radius: 4px; word-break: break-all; }
section.scenario { margin-top: 12px; }
section.scenario.fail h2, section.scenario.error h2 { color: var(--fail); }
ul.invariants { list-style: none; padding: 0; display: grid; gap: 6px;
  grid-template-columns: repeat(auto-fill, minmax(220px, 1fr)); }
ul.invariants li { padding: 6px 10px; border-radius: 6px; border-left: 4px solid; font-size: 13px; }
ul.invariants li b { display: block; }
ul.invariants li span { color: var(--muted); font-size: 12px; }
li.pass { border-color: var(--pass); background: var(--pass-bg); }
li.caught { border-color: var(--caught); background: var(--caught-bg); }
li.fail { border-color: var(--fail); background: var(--fail-bg); }
li.note { border-color: var(--line); background: var(--soft); }
.run-violations { margin: 8px 0 16px; }
h4.seed { color: var(--muted); }
.violation { border-left: 4px solid; padding: 4px 12px; margin: 6px 0; border-radius: 0 6px 6px 0; }
.violation.caught { border-color: var(--caught); background: var(--caught-bg); }
.violation.fail { border-color: var(--fail); background: var(--fail-bg); }
.violation ul { margin: 4px 0; padding-left: 18px; font-size: 13px; }
.violation li { margin: 3px 0; }
.events, li.more { color: var(--muted); font-size: 12px; }
p.replay { font-size: 13px; }
.error { color: var(--fail); font-weight: 600; }
details.counterexample { margin: 10px 0; border: 1px solid var(--line); border-radius: 6px;
  padding: 6px 12px; background: var(--soft); }
details.counterexample pre { font-size: 12px; overflow-x: auto; }
figure { margin: 14px 0 22px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; max-width: 1000px; }
"""


__all__ = ["write_report"]
