"""Tests for reports/figures.py: saved plots are byte-stable and carry their caption."""

from __future__ import annotations

from reports.figures import Figure, new_figure, percent, save, seconds, styled, wrap


def draw(out_dir):
    with styled():
        fig = new_figure(4, 3)
        ax = fig.add_subplot()
        ax.plot([0, 1, 2], [2, 0, 1], label="line")
        ax.legend()
    return save(fig, out_dir, "demo", "Demo", "Three points.")


def test_save_writes_png_and_svg_byte_identical_across_draws(tmp_path):
    first, second = draw(tmp_path / "a"), draw(tmp_path / "b")
    assert isinstance(first, Figure)
    assert (first.name, first.title, first.caption) == ("demo", "Demo", "Three points.")
    assert first.png == tmp_path / "a" / "demo.png" and first.svg.suffix == ".svg"
    assert first.png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert first.png.read_bytes() == second.png.read_bytes()
    assert first.svg.read_bytes() == second.svg.read_bytes()
    svg = first.svg.read_text()
    assert "<dc:date>" not in svg and "Matplotlib v" not in svg


def test_units_read_like_a_reviewer_writes_them():
    assert seconds(200) == "200 ms"
    assert seconds(1234) == "1.2 s"
    assert percent(0.0951) == "9.5%"
    assert wrap("a " * 80, 20).count("\n") >= 7
