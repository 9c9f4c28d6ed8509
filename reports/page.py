"""What every ``report.html`` shares: the page's frame and style, verdict badges, embedded images
and the guard that turns a failed plot into a note (:mod:`reports.html` for a suite,
:mod:`reports.sweep_report` for a sweep).

A report is one self-contained file: the style is inline and every image is embedded as a small
palette PNG (:func:`embedded_png`, never the SVG), so the page can be mailed, attached to a ticket
or opened years later. It is written under ``<name>.partial`` and renamed into place, so a crash
never leaves half a page that looks complete.
"""

from __future__ import annotations

import base64
import os
import shlex
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any, TypeVar

from reports.figures import Figure, palette_png

EMBED_MAX_WIDTH_PX = 1184
"""Width of the page's column (``main``: 1240 px less its padding): an embedded copy of a wider
plot is scaled down to it."""

T = TypeVar("T")

BADGES = {
    "pass": "holds",
    "caught": "caught as expected",
    "fail": "NOT as expected",
    "error": "error",
    "interrupted": "interrupted",
}
"""A verdict's badge text: the real protocol held, a known-bad variant was caught as expected,
a verdict differs from its expectation, the run itself failed, the command was interrupted
(Ctrl-C) and reports only what finished."""


def badge(kind: str, text: str | None = None) -> str:
    return f'<span class="badge {kind}">{escape(text or BADGES[kind])}</span>'


def href(page_dir: Path, target: Path) -> str:
    """A link from a page in ``page_dir`` to ``target``, relative to that folder."""
    return escape(Path(os.path.relpath(target, page_dir)).as_posix(), quote=True)


def seed_of(run: dict[str, Any]) -> int:
    return int(run.get("seed") or 0)


def guarded_plot(action: Callable[[], T], errors: list[str], what: str) -> T | None:
    """Run one plotting call; a failure becomes a visible note in the report instead of losing
    the whole report (the verdicts matter more than one picture)."""
    try:
        return action()
    except Exception as error:  # shown in the report, never swallowed silently
        errors.append(f"{what}: {type(error).__name__}: {error}")
        return None


def embedded_png(figure: Figure) -> bytes:
    """The PNG the page embeds for ``figure``: its in-memory preview (drawn at
    :data:`~reports.figures.PREVIEW_DPI` on a palette), or for a figure without one its file
    reduced the same way (palette, at most :data:`EMBED_MAX_WIDTH_PX` wide). Never the SVG."""
    return figure.preview or palette_png(figure.png, EMBED_MAX_WIDTH_PX)


def img(figure: Figure, page_dir: Path) -> str:
    """``figure`` embedded, with its caption and links to its PNG and SVG files."""
    data = base64.b64encode(embedded_png(figure)).decode("ascii")
    links = (
        f'<a href="{href(page_dir, figure.png)}">PNG</a> · '
        f'<a href="{href(page_dir, figure.svg)}">SVG</a>'
    )
    return (
        f'<figure><img alt="{escape(figure.title)}" src="data:image/png;base64,{data}">'
        f"<figcaption><b>{escape(figure.title)}.</b> {escape(figure.caption)} "
        f'<span class="files">{links}</span></figcaption></figure>'
    )


def document(title: str, body: list[str]) -> str:
    """The whole page: ``body``'s HTML fragments in the page's frame and style."""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}: Hudi commit-protocol testbed</title>"
        f"<style>{CSS}</style></head><body><main>\n" + "\n".join(body) + "\n</main></body></html>\n"
    )


def write_page(target: Path, page: str) -> Path:
    """Write ``page`` to ``target`` all or nothing (staged and renamed); returns ``target``."""
    staging = target.with_name(target.name + ".partial")
    staging.write_text(page, encoding="utf-8")
    staging.replace(target)
    return target


CSS = """
:root { --ink:#1f2328; --muted:#5b6470; --line:#d8dee4; --bg:#ffffff; --soft:#f6f8fa;
  --pass:#2f7d4f; --pass-bg:#e8f4ec; --caught:#2b5fa6; --caught-bg:#e7eef9;
  --fail:#b42318; --fail-bg:#fdecea; --warn:#8a5300; --warn-bg:#fdf3e1; }
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
p.lead, p.intro, p.legend, .muted { color: var(--muted); }
a { color: var(--caught); }
.badge { display:inline-block; padding: 1px 9px; border-radius: 10px; font-size: 12px;
  font-weight: 600; vertical-align: middle; white-space: nowrap; }
.badge.pass { color: var(--pass); background: var(--pass-bg); }
.badge.caught { color: var(--caught); background: var(--caught-bg); }
.badge.fail, .badge.error { color: #fff; background: var(--fail); }
.badge.interrupted { color: var(--warn); background: var(--warn-bg); }
.interrupted { color: var(--warn); font-weight: 600; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin: 8px 0 12px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { background: var(--soft); font-weight: 600; color: var(--muted); }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.fail td, tr.error td { background: var(--fail-bg); }
table.grid tr:not(.replay-row) td { border-bottom: none; }
tr.replay-row td { padding-top: 0; font-size: 12px; color: var(--muted); }
table.summary td:first-child a { color: var(--ink); font-weight: 600; text-decoration: none; }
code { font: 12px/1.4 ui-monospace, "SF Mono", Menlo, Consolas, monospace; background: var(--soft);
  padding: 1px 4px; border-radius: 4px; word-break: break-all; }
code.command { word-break: normal; }
code.command .arg { white-space: nowrap; }
div.scroll { overflow-x: auto; max-width: 100%; }
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
.violation ul, ul.why { margin: 4px 0; padding-left: 18px; font-size: 13px; }
.violation li { margin: 3px 0; }
.events, li.more { color: var(--muted); font-size: 12px; }
p.replay { font-size: 13px; }
.error { color: var(--fail); font-weight: 600; }
div.counterexample { margin: 10px 0; border: 1px solid var(--line); border-radius: 6px;
  padding: 6px 12px; background: var(--soft); }
div.counterexample h3 { margin-top: 8px; }
div.counterexample pre { font-size: 12px; overflow-x: auto; }
pre.explanation { white-space: pre-wrap; background: var(--caught-bg); padding: 8px 10px;
  border-left: 4px solid var(--caught); border-radius: 0 6px 6px 0; }
figure { margin: 14px 0 22px; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 4px; max-width: 1000px; }
figcaption .files { white-space: nowrap; font-size: 12px; }
"""


def command_html(command: str) -> str:
    """A shell command as ``<code>`` that wraps only between its arguments (each argument kept
    on one line, quoted as a shell needs it), so a copied line still runs."""
    try:
        words = shlex.split(command)
    except ValueError:  # not a shell line: show it as it is
        return f"<code>{escape(command)}</code>"
    args = " ".join(f'<span class="arg">{escape(shlex.quote(word))}</span>' for word in words)
    return f'<code class="command">{args}</code>'


def scrolling(html: str) -> str:
    """``html`` (a wide table) in a box that scrolls sideways on a narrow screen instead of
    being cut."""
    return f'<div class="scroll">{html}</div>'


__all__ = [
    "BADGES",
    "CSS",
    "EMBED_MAX_WIDTH_PX",
    "badge",
    "command_html",
    "document",
    "embedded_png",
    "guarded_plot",
    "href",
    "img",
    "scrolling",
    "seed_of",
    "write_page",
]
