"""What a suite's report shows of a run's failures: the violations of each invariant with their
explanations and replay command (:data:`MAX_VIOLATIONS_SHOWN` per invariant), and for a caught
known-bad variant its minimal counterexample (the explanation ``counterexample.txt``, its replay
command, the TOML).
"""

from __future__ import annotations

import shlex
from html import escape
from pathlib import Path
from typing import Any

from reports.page import badge, command_html, href, seed_of
from reports.suite_data import run_result

MAX_VIOLATIONS_SHOWN = 3
"""Violations listed per invariant and run (the count of the rest is given)."""


def violations_block(suite_dir: Path, run: dict[str, Any], expected: list[str]) -> str:
    result = run_result(suite_dir, run)
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


def counterexamples_block(suite_dir: Path, runs: list[dict[str, Any]]) -> str:
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


__all__ = ["MAX_VIOLATIONS_SHOWN", "counterexamples_block", "violations_block"]
