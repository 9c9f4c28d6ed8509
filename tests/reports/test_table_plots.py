"""Tests for reports/table_plots.py and ``testbed inspect PATH --plot FILE``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from reports.table_plots import plot_table
from testbed.cli import main


def test_plot_table_draws_every_fixture_table(fixture_tables, tmp_path):
    for name, root in sorted(fixture_tables.items()):
        out = plot_table(root, tmp_path / f"{name}.png")
        assert out.read_bytes()[:4] == b"\x89PNG", name


def test_plot_table_svg_is_byte_stable(fixture_tables, tmp_path):
    root = next(iter(sorted(fixture_tables.values())))
    a = plot_table(root, tmp_path / "a.svg").read_bytes()
    b = plot_table(root, tmp_path / "b.svg").read_bytes()
    assert a == b and b"<svg" in a


def test_plot_table_refuses_other_formats(fixture_tables, tmp_path):
    root = next(iter(fixture_tables.values()))
    with pytest.raises(ValueError, match="unsupported plot format"):
        plot_table(root, tmp_path / "x.pdf")


def test_inspect_plot_option(runs, tmp_path):
    table = runs["local"] / "table"
    out = tmp_path / "nested" / "table.svg"
    result = CliRunner().invoke(main, ["inspect", str(table), "--json", "--plot", str(out)])
    assert result.exit_code == 0, result.output
    assert out.read_bytes().startswith(b"<?xml")
    assert '"instants"' in result.stdout  # --json output stays parseable with --plot
    bad = CliRunner().invoke(main, ["inspect", str(table), "--plot", str(tmp_path / "t.jpg")])
    assert bad.exit_code == 2 and "unsupported format" in bad.output
    missing = CliRunner().invoke(main, ["inspect", str(tmp_path / "no"), "--plot", str(out)])
    assert missing.exit_code == 2
