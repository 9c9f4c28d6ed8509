"""A suite's ``report.html``: one self-contained page a design review can read (a sweep's is
:mod:`reports.sweep_report`; both share :mod:`reports.page`'s frame, style and images).

Input is a suite folder as ``testbed suite`` writes it: ``summary.json`` and the run folders it
names. Output is ``report.html`` next to it, with every image embedded and the style inline: no
scripts, no external files, so it can be mailed, attached to a ticket or opened years later.
Plots are also kept as PNG and SVG under ``plots/``, and the report links to them and to the run
folders (links only: the page reads the same without them).

The page must stay small enough to mail (a few MB for the ``full`` suite), so an embedded image is
the plot's preview (:attr:`reports.figures.Figure.preview`: drawn at a lower DPI than the file on
disk, on a 256-color palette: plots are flat colors and anti-aliased edges, so it looks the same
in a third of the bytes); never the SVG. And a plot that says
nothing new is not drawn: per-run plots are drawn for the first seed of a scenario and for runs
whose verdict differs from the expectation (at most :data:`MAX_PLOTTED_RUNS`), the other runs are
linked to their folders. A grid (``[grids.*]``) gets one section with a table of its points,
the plots of its first point and the happens-before chains of its first violating point; its
summary is the headline comparison drawn from all points.

What it shows, in reading order: the suite's verdict and summary table; the headline comparisons
(blocking vs async instant generation, OCC vs NBCC, TrueTime's bound vs the real skew) when the
suite ran their scenarios; then one section per scenario with its description, the verdict of every
invariant, with ``--seeds N`` the distributions across its seeds (:mod:`reports.distributions`),
every violation with its explanation and replay command, for a known-bad variant its minimal
counterexample (the explanation ``counterexample.txt``, its replay command, the TOML), and the
plots. A known-bad variant caught as expected is shown as such (blue, "caught"), never in the red
of a real failure. Then one section per grid.
"""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from collections.abc import Sequence
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
from reports.distributions import plot_distributions, rows_from_suite_runs
from reports.figures import Figure
from reports.page import (
    BADGES,
    badge,
    command_html,
    document,
    guarded_plot,
    href,
    img,
    scrolling,
    seed_of,
    write_page,
)
from reports.run_data import load_run
from reports.run_plots import plot_run
from reports.violations import plot_violations

MAX_VIOLATIONS_SHOWN = 3
"""Violations listed per invariant and run (the count of the rest is given)."""
MAX_PLOTTED_RUNS = 3
"""Runs of one scenario (or grid) whose per-run plots are drawn: the first seed and the first
runs whose verdict differs from the expectation."""
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
    scenarios = _scenarios(summary, runs)
    plain = [s for s in scenarios if not s.get("grid")]
    grids = _grids(scenarios)
    sections = [
        _scenario_section(suite_dir, s, [r for r in runs if r.get("scenario") == s["scenario"]])
        for s in plain
    ]
    for grid, points in grids.items():
        names = {p["scenario"] for p in points}
        grid_runs = [r for r in runs if r.get("scenario") in names]
        sections.append(_grid_section(suite_dir, grid, points, grid_runs))
    page = _page(summary, runs, plain, grids, headline, sections, suite_dir)
    return write_page(suite_dir / "report.html", page)


# --- data ------------------------------------------------------------------------------------------


def _scenarios(summary: dict[str, Any], runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Scenario entries of the summary, or built from the runs if it has none (grid runs are
    then folded into the comparisons only, not given a section)."""
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


def _grids(scenarios: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Grid name -> its points' scenario entries, in suite order."""
    grids: dict[str, list[dict[str, Any]]] = {}
    for entry in scenarios:
        if entry.get("grid"):
            grids.setdefault(str(entry["grid"]), []).append(entry)
    return grids


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


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "run"


# --- plots -----------------------------------------------------------------------------------------


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
            figure = guarded_plot(
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
                p := guarded_plot(
                    lambda r=r: truetime_point(suite_dir / r["run_dir"]), errors, "truetime"
                )
            )
        ]
        if points:
            figure = guarded_plot(
                lambda: plot_truetime(points, plots / "headline"), errors, "truetime"
            )
            if figure:
                figures.append(figure)
    return _Plotted(figures, errors)


def _representative(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The run whose invariants the section lists: the first that differs from its
    expectation, else the first (lowest seed) that ran."""
    ran = [r for r in runs if not r.get("error")]
    ran.sort(key=lambda r: (bool(r.get("ok")), seed_of(r)))
    return ran[0] if ran else None


def plotted_runs(runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs whose per-run plots are drawn: the first seed that ran, then the runs whose
    verdict differs from the expectation, at most :data:`MAX_PLOTTED_RUNS`. Another seed of a
    run that behaved as expected would only repeat the first one's pictures."""
    ran = sorted((r for r in runs if not r.get("error")), key=seed_of)
    if not ran:
        return []
    chosen = [ran[0], *(r for r in ran[1:] if not r.get("ok"))]
    return chosen[:MAX_PLOTTED_RUNS]


def _run_plots(suite_dir: Path, run: dict[str, Any], errors: list[str]) -> list[Figure]:
    out = suite_dir / "plots" / _safe(str(run.get("run_dir") or run.get("scenario")))
    return (
        guarded_plot(
            lambda: plot_run(suite_dir / run["run_dir"], out), errors, str(run["scenario"])
        )
        or []
    )


# --- embedded images -------------------------------------------------------------------------------


# --- html: tables -----------------------------------------------------------------------------------


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


def _summary_table(
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
        kind = _kind(expected, bool(s.get("ok")), errors[0] if errors else None)
        rep = _representative(group)
        violated = s.get("violated_in") or {}
        seen = ", ".join(f"{k} ({v})" for k, v in sorted(violated.items())) or "none"
        rows.append(
            f'<tr class="{kind}"><td><a href="#s-{_safe(name)}">{escape(name)}</a></td>'
            f'<td class="num">{s.get("runs", len(group))}</td>'
            f"<td>{escape(', '.join(expected) or 'none')}</td>"
            f"<td>{escape(seen)}</td><td>{badge(kind)}</td>"
            + (_metrics_cells(rep.get("metrics") or {}) if rep else "<td></td>" * 5)
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
            f'<tr class="{kind}"><td><a href="#g-{_safe(grid)}">grid {escape(grid)}</a> '
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
            f'<div class="violation {kind}"><h4>{escape(name)} {badge(kind, "expected" if kind == "caught" else "unexpected")}</h4>'
            f"<ul>{items}</ul></div>"
        )
    if not blocks:
        return ""
    replay = run.get("replay") or ""
    return (
        f'<div class="run-violations"><h4 class="seed">seed {escape(str(run.get("seed")))}</h4>'
        + "".join(blocks)
        + (f'<p class="replay">replay: {command_html(replay)}</p>' if replay else "")
        + "</div>"
    )


def _counterexample_path(suite_dir: Path, run: dict[str, Any]) -> Path | None:
    listed = run.get("counterexample")
    path = (
        suite_dir / str(listed)
        if listed
        else suite_dir / str(run.get("run_dir", "")) / "counterexample.toml"
    )
    return path if run.get("run_dir") and path.is_file() else None


def _explanation(toml: Path) -> tuple[str, str]:
    """(the explanation of ``counterexample.txt`` next to ``toml`` without its replay line,
    the replay command); the command is built from the path when the text has none."""
    replay = shlex.join(["testbed", "run", str(toml.resolve())])
    try:
        lines = toml.with_suffix(".txt").read_text(errors="replace").rstrip().splitlines()
    except OSError:
        return "", replay
    kept = []
    for line in lines:
        if line.startswith("replay: "):
            replay = line.removeprefix("replay: ").strip()
        else:
            kept.append(line)
    return "\n".join(kept), replay


def _counterexamples(suite_dir: Path, runs: list[dict[str, Any]]) -> str:
    """The first caught run's minimal counterexample in full (explanation, replay command,
    TOML); the other seeds' as links."""
    found = [
        (run, p) for run in sorted(runs, key=seed_of) if (p := _counterexample_path(suite_dir, run))
    ]
    if not found:
        return ""
    (run, toml), others = found[0], found[1:]
    explanation, replay = _explanation(toml)
    parts = [
        '<div class="counterexample">',
        f"<h3>Minimal counterexample (seed {escape(str(run.get('seed')))})</h3>",
    ]
    if explanation:
        parts.append(f'<pre class="explanation">{escape(explanation)}</pre>')
    parts.append(f'<p class="replay">replay: {command_html(replay)}</p>')
    parts.append(
        f'<details><summary>the scenario it replays: <a href="{href(suite_dir, toml)}">'
        f"{escape(str(run.get('run_dir')))}/counterexample.toml</a></summary>"
        f"<pre>{escape(toml.read_text(errors='replace'))}</pre></details>"
    )
    if others:
        links = ", ".join(
            f'<a href="{href(suite_dir, p)}">seed {escape(str(r.get("seed")))}</a>'
            for r, p in others
        )
        parts.append(f'<p class="muted">Also minimized: {links}.</p>')
    parts.append("</div>")
    return "".join(parts)


def _runs_table(suite_dir: Path, runs: list[dict[str, Any]], plotted: set[int]) -> str:
    rows = []
    for run in sorted(runs, key=seed_of):
        kind = _kind(run.get("expected_violations") or [], bool(run.get("ok")), run.get("error"))
        violated = ", ".join(run.get("violated") or []) or "none"
        error = run.get("error")
        rows.append(
            f'<tr class="{kind}"><td class="num">{escape(str(run.get("seed")))}</td>'
            f"<td>{badge(kind)}</td><td>{escape(violated)}</td>"
            f'<td class="num">{float(run.get("wall_s") or 0):.1f} s</td>'
            f"<td>{command_html(run.get('replay') or '')}"
            + (f'<div class="error">{escape(str(error))}</div>' if error else "")
            + f"</td><td>{_files_cell(suite_dir, run, plotted)}</td></tr>"
        )
    return (
        '<table class="runs"><thead><tr><th>seed</th><th>verdict</th><th>violated</th>'
        f"<th>wall</th><th>replay</th><th>files</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _files_cell(suite_dir: Path, run: dict[str, Any], plotted: set[int]) -> str:
    if not run.get("run_dir"):
        return ""
    folder = f'<a href="{href(suite_dir, suite_dir / str(run["run_dir"]))}/">run folder</a>'
    if id(run) in plotted:
        return f'<a href="#p-{_safe(str(run["run_dir"]))}">plots</a> · {folder}'
    return folder


def _plots_block(
    suite_dir: Path, run: dict[str, Any], figures: list[Figure], label: str = "Plots"
) -> str:
    anchor = _safe(str(run.get("run_dir") or ""))
    return (
        f'<h3 id="p-{anchor}">{escape(label)} (seed {escape(str(run.get("seed")))})</h3>'
        + "".join(img(f, suite_dir) for f in figures)
    )


def _distributions(
    suite_dir: Path, name: str, runs: list[dict[str, Any]], expected: list[str], errors: list[str]
) -> str:
    """Across seeds: violation counts and metric histograms, when the scenario ran more than once."""
    if len(runs) < 2:
        return ""
    out = suite_dir / "plots" / "distributions" / _safe(name)
    rows = rows_from_suite_runs(sorted(runs, key=seed_of))
    figures = (
        guarded_plot(
            lambda: plot_distributions(rows, out, scenario=name, expected=expected),
            errors,
            f"{name} distributions",
        )
        or []
    )
    if not figures:
        return ""
    return f"<h3>Across {len(runs)} seeds</h3>" + "".join(img(f, suite_dir) for f in figures)


# --- html: sections ---------------------------------------------------------------------------------


def _scenario_section(suite_dir: Path, scenario: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    name = scenario["scenario"]
    expected = list(scenario.get("expected_violations") or [])
    run_errors = [r.get("error") for r in runs if r.get("error")]
    kind = _kind(expected, bool(scenario.get("ok")), run_errors[0] if run_errors else None)
    rep = _representative(runs)
    errors: list[str] = []
    chosen = plotted_runs(runs)
    description = scenario.get("description") or (runs[0].get("description") if runs else "")
    intro = (
        "Known-bad variant: the checkers must catch " + ", ".join(expected) + "."
        if expected
        else "Real protocol: every invariant must hold."
    )
    parts = [
        f'<section id="s-{_safe(name)}" class="scenario {kind}">',
        f"<h2>{escape(name)} {badge(kind)}</h2>",
        f'<p class="description">{escape(description or "")}</p>',
        f'<p class="intro">{escape(intro)}</p>',
        _runs_table(suite_dir, runs, {id(r) for r in chosen}),
    ]
    if rep is not None:
        parts.append(
            f"<h3>Invariants (seed {escape(str(rep.get('seed')))})</h3>"
            + _invariant_grid(_result(suite_dir, rep), expected)
        )
    parts.append(_distributions(suite_dir, name, runs, expected, errors))
    shown = sorted(
        {id(r): r for r in [*chosen, *(r for r in runs if not r.get("ok"))]}.values(), key=seed_of
    )
    violations = "".join(_violations(suite_dir, r, expected) for r in shown)
    if violations:
        parts.append(f"<h3>Violations</h3>{violations}")
        hidden = len([r for r in runs if r.get("violated")]) - len(
            [r for r in shown if r.get("violated")]
        )
        if hidden > 0:
            parts.append(
                f'<p class="muted">{hidden} more run(s) with the same expected violations: '
                "see the runs table (result.json in each run folder).</p>"
            )
    parts.append(_counterexamples(suite_dir, runs))
    for run in chosen:
        figures = _run_plots(suite_dir, run, errors)
        if figures:
            parts.append(_plots_block(suite_dir, run, figures))
    parts.extend(f'<p class="error">plot failed: {escape(e)}</p>' for e in errors)
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


GRID_HEADERS = ("point", "seed", "expectation", "violated", "verdict", *METRIC_HEADERS, "files")


def _point_label(point: dict[str, Any]) -> str:
    params = point.get("params") or {}
    return (
        ", ".join(f"{k.rsplit('.', 1)[-1]} = {v}" for k, v in params.items()) or point["scenario"]
    )


def _expectation(point: dict[str, Any]) -> str:
    mode = point.get("expect") or "exact"
    if mode == "any-of":
        return "any of " + ", ".join(point.get("may_violate") or [])
    if mode == "unchecked":
        return "(unchecked)"
    return ", ".join(point.get("expected_violations") or []) or "none"


def _point_kind(run: dict[str, Any]) -> tuple[str, str]:
    if run.get("error"):
        return "error", BADGES["error"]
    if not run.get("ok"):
        return "fail", BADGES["fail"]
    if run.get("violated"):
        return "caught", "as expected (violations allowed)"
    return "pass", BADGES["pass"]


def _grid_section(
    suite_dir: Path, grid: str, points: list[dict[str, Any]], runs: list[dict[str, Any]]
) -> str:
    """One section per grid: a table of its points and the plots of the few that say something
    the headline comparison does not (the first point, the first violating one, failures)."""
    ok = all(p.get("ok") for p in points)
    kind = "pass" if ok else "fail"
    order = {p["scenario"]: i for i, p in enumerate(points)}
    runs = sorted(runs, key=lambda r: (order.get(r.get("scenario"), 0), seed_of(r)))
    ran = [r for r in runs if not r.get("error")]
    chosen = ran[:1] + [r for r in ran[1:] if not r.get("ok")]
    chosen = chosen[:MAX_PLOTTED_RUNS]
    violating = (
        None  # a plotted run already shows its happens-before chains
        if any(r.get("violated") for r in chosen)
        else next((r for r in ran if r.get("violated")), None)
    )
    plotted = {id(r) for r in chosen} | ({id(violating)} if violating else set())
    description = str(points[0].get("description") or "") if points else ""
    if points and points[0].get("params") and ": " in description:
        description = description.rsplit(": ", 1)[0] + "."
    rows = []
    for run in runs:
        point_kind, text = _point_kind(run)
        point = next((p for p in points if p["scenario"] == run.get("scenario")), run)
        rows.append(
            f'<tr class="{point_kind}"><td>{escape(_point_label(point))}</td>'
            f'<td class="num">{escape(str(run.get("seed")))}</td>'
            f"<td>{escape(_expectation(point))}</td>"
            f"<td>{escape(', '.join(run.get('violated') or []) or 'none')}</td>"
            f"<td>{badge(point_kind, text)}</td>"
            + _metrics_cells(run.get("metrics") or {})
            + f"<td>{_files_cell(suite_dir, run, plotted)}</td></tr>"
            + (
                f'<tr class="{point_kind} replay-row"><td colspan="{len(GRID_HEADERS)}">replay: '
                f"{command_html(run['replay'])}</td></tr>"
                if run.get("replay")
                else ""
            )
        )
    head = "".join(f"<th>{h}</th>" for h in GRID_HEADERS)
    parts = [
        f'<section id="g-{_safe(grid)}" class="scenario grid {kind}">',
        f"<h2>grid {escape(grid)} {badge(kind, 'every point as expected' if ok else 'NOT as expected')}</h2>",
        f'<p class="description">{escape(description)}</p>',
        f'<table class="runs grid"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>",
    ]
    errors: list[str] = []
    failing = "".join(
        _violations(suite_dir, r, list(r.get("expected_violations") or []))
        for r in runs
        if not r.get("ok") and not r.get("error")
    )
    if failing:
        parts.append(f"<h3>Violations not as expected</h3>{failing}")
    for run in chosen:
        figures = _run_plots(suite_dir, run, errors)
        if figures:
            parts.append(_plots_block(suite_dir, run, figures, f"Plots of {_point_label(run)}"))
    if violating is not None:
        out = suite_dir / "plots" / _safe(str(violating.get("run_dir")))
        figures = (
            guarded_plot(
                lambda: plot_violations(load_run(suite_dir / violating["run_dir"]), out),
                errors,
                grid,
            )
            or []
        )
        if figures:
            parts.append(
                _plots_block(
                    suite_dir,
                    violating,
                    figures,
                    f"First violation in the grid: {_point_label(violating)}",
                )
            )
    parts.extend(f'<p class="error">plot failed: {escape(e)}</p>' for e in errors)
    parts.append("</section>")
    return "\n".join(parts)


# --- html: the page ---------------------------------------------------------------------------------


def _page(
    summary: dict[str, Any],
    runs: list[dict[str, Any]],
    scenarios: list[dict[str, Any]],
    grids: dict[str, list[dict[str, Any]]],
    headline: _Plotted,
    sections: list[str],
    suite_dir: Path,
) -> str:
    title = f"Suite {summary.get('suite', '')}".strip()
    ok = bool(summary.get("ok"))
    failing = [s["scenario"] for s in scenarios if not s.get("ok")]
    failing += [g for g, points in grids.items() if not all(p.get("ok") for p in points)]
    caught = [s["scenario"] for s in scenarios if s.get("ok") and s.get("expected_violations")]
    if summary.get("interrupted"):
        verdict, notes = _interrupted(summary, runs, failing)
    elif ok:
        verdict, notes = badge("pass", "every verdict matches its expectation"), []
    else:
        verdict, notes = badge("fail", f"{len(failing)} scenario(s) NOT as expected"), []
    seeds = summary.get("seeds")
    grid = sum(1 for r in runs if r.get("grid"))
    lead = (
        f"{len(scenarios)} scenarios, {len(runs) - grid} runs"
        + (f" ({seeds} seed(s) each)" if seeds else "")
        + (f", plus {grid} grid runs for the comparisons" if grid else "")
        + f"; {len(caught)} known-bad variant(s) caught as expected."
    )
    headline_html = "".join(img(f, suite_dir) for f in headline.figures) + "".join(
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
        _summary_table(scenarios, grids, runs),
    ]
    if headline_html:
        body += ["<h2>Headline comparisons</h2>", headline_html]
    body += sections
    return document(title, body)


def _interrupted(
    summary: dict[str, Any], runs: list[dict[str, Any]], failing: list[str]
) -> tuple[str, list[str]]:
    """The header of an interrupted suite: an interrupted badge saying how many runs were
    abandoned (plus a failure badge only if a finished run is not as expected) and a note that
    only the finished runs are reported."""
    finished = summary.get("finished", len(runs))
    abandoned = summary.get("abandoned")
    lost = f", {abandoned} run(s) abandoned" if abandoned is not None else ""
    verdict = badge("interrupted", f"interrupted{lost}")
    if failing:
        verdict += " " + badge("fail", f"{len(failing)} scenario(s) NOT as expected")
    note = f"Interrupted (Ctrl-C): only the {finished} run(s) that finished are reported" + (
        f"; {abandoned} run(s) were abandoned (in flight or not started) and left no folder."
        if abandoned is not None
        else "."
    )
    return verdict, [f'<p class="interrupted">{escape(note)}</p>']


def _legend() -> str:
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


__all__ = ["MAX_PLOTTED_RUNS", "plotted_runs", "write_report"]
