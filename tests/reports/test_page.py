"""Tests for reports/page.py: what every report shares (embedded images, badges, the page)."""

from __future__ import annotations

import io
import re
import shlex
from html import unescape

from PIL import Image

from reports.figures import Figure, new_figure, save, styled
from reports.page import (
    CSS,
    EMBED_MAX_WIDTH_PX,
    badge,
    command_html,
    document,
    embedded_png,
    scrolling,
    write_page,
)


def test_embedded_png_of_a_figure_without_preview_is_reduced_from_its_file(tmp_path):
    with styled():
        fig = new_figure(14, 3)
        fig.add_subplot().plot([0, 1, 2], [2, 0, 1])
    saved = save(fig, tmp_path, "wide", "Wide", "A plot wider than the page.")
    bare = Figure(saved.name, saved.title, saved.caption, saved.png, saved.svg)
    data = embedded_png(bare)
    with Image.open(io.BytesIO(data)) as image:
        assert image.mode == "P" and image.width == EMBED_MAX_WIDTH_PX
    assert embedded_png(saved) == saved.preview  # a saved figure brings its own
    assert len(saved.preview) < saved.png.stat().st_size
    assert embedded_png(bare) == data  # deterministic


def test_a_page_is_one_self_contained_document_written_whole(tmp_path):
    page = document("t <1>", [badge("caught"), badge("fail", "2 <seeds>")])
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    assert "<title>t &lt;1&gt;: Hudi commit-protocol testbed</title>" in page
    assert "caught as expected" in page and "2 &lt;seeds&gt;" in page
    target = write_page(tmp_path / "report.html", page)
    assert target.read_text(encoding="utf-8") == page
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no staging left


def test_a_command_wraps_only_between_its_arguments():
    html = command_html("testbed run '/tmp/my runs/a-b.toml' --seed 3")
    assert html.startswith('<code class="command">')
    args = re.findall(r'<span class="arg">([^<]*)</span>', html)
    assert args == ["testbed", "run", "&#x27;/tmp/my runs/a-b.toml&#x27;", "--seed", "3"]
    text = unescape(re.sub(r"<[^>]+>", "", html))
    assert shlex.split(text) == ["testbed", "run", "/tmp/my runs/a-b.toml", "--seed", "3"]
    assert "code.command .arg { white-space: nowrap; }" in CSS
    assert command_html("it's") == "<code>it&#x27;s</code>"  # not a shell line: as it is


def test_a_wide_table_scrolls_instead_of_being_cut():
    assert scrolling("<table></table>") == '<div class="scroll"><table></table></div>'
    assert "div.scroll { overflow-x: auto;" in CSS
