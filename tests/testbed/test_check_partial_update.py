"""``testbed check`` on a table merged per column group (testbed/check.py, tests/hudi_oracle.py):
hudi-rs merges whole rows, so the merged-snapshot comparison is skipped with its reason, never
passed silently."""

from __future__ import annotations

import tomllib
from pathlib import Path

import tomli_w
from click.testing import CliRunner

from models.storage import InMemoryStorage
from models.view.partial_update import ColumnGroup, declare_column_groups
from models.write.table_init import create_table
from scenarios import catalog_dir
from testbed.check import oracle_skip_reason
from testbed.cli import main
from tests.hudi_oracle import oracle_merges_like_ours


def test_a_run_folder_of_column_groups_is_checked_without_the_merged_oracle(tmp_path: Path):
    data = tomllib.loads((catalog_dir() / "partial_update_row_merge.toml").read_text())
    data["scenario"]["duration_s"] = 12
    source = tmp_path / "row.toml"
    source.write_text(tomli_w.dumps(data))
    out = tmp_path / "run"
    ran = CliRunner().invoke(main, ["run", str(source), "--storage", "local", "--out", str(out)])
    assert ran.exit_code == 0, ran.output  # the variant violates what it expects
    checked = CliRunner().invoke(main, ["check", str(out)])
    assert checked.exit_code == 0, checked.output
    line = next(x for x in checked.output.splitlines() if x.startswith("  hudi-rs:"))
    assert line.startswith("  hudi-rs: merged snapshot not compared: the table declares 2 column")
    assert "which hudi-rs does not implement" in line
    assert oracle_merges_like_ours(out / "table") == (
        False,
        "2 column groups are merged per group; hudi-rs merges rows",
    )


def test_an_ordinary_table_is_compared():
    table = create_table(InMemoryStorage(), name="t", record_key_field="key", ordering_field="ts")
    assert oracle_skip_reason(table) == ""
    declare_column_groups(table, [ColumnGroup("a_ts", ("a",))])
    assert "1 column groups" in oracle_skip_reason(table)
