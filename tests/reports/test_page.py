"""Tests for reports/page.py: what every report shares (embedded images, badges, the page)."""

from __future__ import annotations

import io

from PIL import Image

from reports.figures import Figure, new_figure, save, styled
from reports.page import EMBED_MAX_WIDTH_PX, badge, document, embedded_png, write_page


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
