"""One scenario's section of a suite's report: its description, the runs table, the verdict of
every invariant, with ``--seeds N`` the distributions across its seeds, every violation with its
explanation and replay command, for a known-bad variant its minimal counterexample, and the plots.
A known-bad variant caught as expected is shown as such (blue, "caught"), never in the red of a
real failure.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from reports.page import badge, command_html, href, seed_of
from reports.suite_counterexamples import counterexamples_block, violations_block
from reports.suite_data import representative, run_result, safe_name, verdict_kind
from reports.suite_plots import distributions_block, plots_block, plotted_runs, run_plots


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


def _runs_table(suite_dir: Path, runs: list[dict[str, Any]], plotted: set[int]) -> str:
    rows = []
    for run in sorted(runs, key=seed_of):
        kind = verdict_kind(
            run.get("expected_violations") or [], bool(run.get("ok")), run.get("error")
        )
        violated = ", ".join(run.get("violated") or []) or "none"
        error = run.get("error")
        rows.append(
            f'<tr class="{kind}"><td class="num">{escape(str(run.get("seed")))}</td>'
            f"<td>{badge(kind)}</td><td>{escape(violated)}</td>"
            f'<td class="num">{float(run.get("wall_s") or 0):.1f} s</td>'
            f"<td>{command_html(run.get('replay') or '')}"
            + (f'<div class="error">{escape(str(error))}</div>' if error else "")
            + f"</td><td>{files_cell(suite_dir, run, plotted)}</td></tr>"
        )
    return (
        '<table class="runs"><thead><tr><th>seed</th><th>verdict</th><th>violated</th>'
        f"<th>wall</th><th>replay</th><th>files</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def files_cell(suite_dir: Path, run: dict[str, Any], plotted: set[int]) -> str:
    if not run.get("run_dir"):
        return ""
    folder = f'<a href="{href(suite_dir, suite_dir / str(run["run_dir"]))}/">run folder</a>'
    if id(run) in plotted:
        return f'<a href="#p-{safe_name(str(run["run_dir"]))}">plots</a> · {folder}'
    return folder


def scenario_section(suite_dir: Path, scenario: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    name = scenario["scenario"]
    expected = list(scenario.get("expected_violations") or [])
    run_errors = [r.get("error") for r in runs if r.get("error")]
    kind = verdict_kind(expected, bool(scenario.get("ok")), run_errors[0] if run_errors else None)
    rep = representative(runs)
    errors: list[str] = []
    chosen = plotted_runs(runs)
    description = scenario.get("description") or (runs[0].get("description") if runs else "")
    intro = (
        "Known-bad variant: the checkers must catch " + ", ".join(expected) + "."
        if expected
        else "Real protocol: every invariant must hold."
    )
    parts = [
        f'<section id="s-{safe_name(name)}" class="scenario {kind}">',
        f"<h2>{escape(name)} {badge(kind)}</h2>",
        f'<p class="description">{escape(description or "")}</p>',
        f'<p class="intro">{escape(intro)}</p>',
        _runs_table(suite_dir, runs, {id(r) for r in chosen}),
    ]
    if rep is not None:
        parts.append(
            f"<h3>Invariants (seed {escape(str(rep.get('seed')))})</h3>"
            + _invariant_grid(run_result(suite_dir, rep), expected)
        )
    parts.append(distributions_block(suite_dir, name, runs, expected, errors))
    shown = sorted(
        {id(r): r for r in [*chosen, *(r for r in runs if not r.get("ok"))]}.values(), key=seed_of
    )
    violations = "".join(violations_block(suite_dir, r, expected) for r in shown)
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
    parts.append(counterexamples_block(suite_dir, runs))
    for run in chosen:
        figures = run_plots(suite_dir, run, errors)
        if figures:
            parts.append(plots_block(suite_dir, run, figures))
    parts.extend(f'<p class="error">plot failed: {escape(e)}</p>' for e in errors)
    parts.append("</section>")
    return "\n".join(p for p in parts if p)


__all__ = ["files_cell", "scenario_section"]
