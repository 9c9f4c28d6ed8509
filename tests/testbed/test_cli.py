"""``testbed inspect`` / ``testbed read`` against the real Hudi tables in the fixtures, with the
independent reader hudi-rs as the oracle, plus the error contract (one line, exit code 2)."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from models.view.filenames import parse_log_file_name
from testbed.cli import main
from tests.conftest import FIXTURE_NAMES
from tests.hudi_oracle import oracle_file_slices, oracle_read

pytest.importorskip("hudi")


def inspect_json(path, *extra: str) -> dict:
    result = CliRunner().invoke(main, ["inspect", str(path), "--json", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def read_rows(path, tmp_path, *extra: str) -> pa.Table:
    out = tmp_path / "rows.parquet"
    result = CliRunner().invoke(main, ["read", str(path), "--out", str(out), *extra])
    assert result.exit_code == 0, result.output
    return pq.read_table(out)


def canonical(rows: pa.Table, like: pa.Table) -> list[dict]:
    """Rows as dicts in the oracle's column order, sorted on every sortable column."""
    if rows.num_rows == 0:
        return []
    rows = rows.select(like.column_names)
    keys = [n for n in rows.column_names if not pa.types.is_nested(rows.schema.field(n).type)]
    return rows.sort_by([(k, "ascending") for k in keys]).to_pylist()


def same_rows(ours: pa.Table, theirs: pa.Table) -> bool:
    return ours.num_rows == theirs.num_rows and canonical(ours, theirs) == canonical(theirs, theirs)


@pytest.mark.oracle
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_inspect_lists_the_same_latest_slices_as_hudi_rs(fixture_tables, name):
    path = fixture_tables[name]
    assert inspect_json(path)["file_slices"] == oracle_file_slices(path)


@pytest.mark.oracle
@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_read_returns_the_same_rows_as_hudi_rs(fixture_tables, name, tmp_path):
    path = fixture_tables[name]
    theirs = oracle_read(path)
    ours = read_rows(path, tmp_path)
    assert same_rows(ours, theirs)


@pytest.mark.oracle
def test_time_travel_matches_hudi_rs_at_every_completion(fixture_tables, tmp_path):
    """As of each instant's completion time (no write was in flight across it in this table),
    slices and rows agree with hudi-rs.

    hudi-rs lists every log file of the chosen slice, even those written after ``as_of``, and only
    drops their blocks when reading; we leave such logs out of the slice. So its log list is cut
    at ``as_of`` (by the instant in the name) before comparing.
    """
    path = fixture_tables["quickstart_trips_table_mor_avro_v8_trips_8i3u1d"]
    instants = inspect_json(path)["instants"]
    for instant in instants:
        if instant["completed"] is None or instant["action"] == "indexing":
            continue
        as_of = instant["completed"]
        ours = inspect_json(path, "--as-of", as_of)
        theirs_slices = oracle_file_slices(path, as_of)
        for s in theirs_slices:
            s["log_files"] = [
                n for n in s["log_files"] if parse_log_file_name(n).instant_time <= as_of
            ]
        assert ours["file_slices"] == theirs_slices, as_of
        theirs = oracle_read(path, as_of)
        rows = read_rows(path, tmp_path, "--as-of", as_of)
        assert same_rows(rows, theirs), as_of


def test_inspect_json_shape(fixture_tables):
    report = inspect_json(fixture_tables["quickstart_trips_table_mor_avro_v8_trips_8i3u1d"])
    assert set(report) == {"table", "instants", "file_slices"}
    assert report["table"]["hoodie.table.version"] == "8"
    first = report["instants"][0]
    assert set(first) == {"requested", "completed", "action", "state"}
    assert first == {
        "requested": "20251220210108078",
        "completed": "20251220210109593",
        "action": "deltacommit",
        "state": "COMPLETED",
    }
    assert [i["action"] for i in report["instants"]].count("commit") == 1  # the compaction
    for s in report["file_slices"]:
        assert set(s) == {"partition", "file_id", "base_instant", "base_file", "log_files"}


def test_inspect_text_output(fixture_tables):
    result = CliRunner().invoke(
        main, ["inspect", str(fixture_tables["sample_table_cow_v8_nonpartitioned"])]
    )
    assert result.exit_code == 0, result.output
    assert "20250713010536861" in result.output and "Latest file slices" in result.output


def test_not_a_table_is_one_line_and_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["inspect", str(tmp_path)])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and "not a Hudi table" in lines[0]


def test_missing_path_is_exit_2(tmp_path):
    result = CliRunner().invoke(main, ["read", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no such directory" in result.output


def test_corrupt_instant_file_is_one_line_and_exit_2(fixture_tables, tmp_path):
    source = fixture_tables["sample_table_mor_avro_v9_txns_simple_nometa"]
    table = tmp_path / "table"
    shutil.copytree(source, table)
    plan = sorted((table / ".hoodie" / "timeline").glob("*.replacecommit"))[0]
    plan.write_bytes(b"Obj\x01garbage")
    result = CliRunner().invoke(main, ["inspect", str(table)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and plan.name in lines[0]


def test_bad_as_of_is_exit_2(fixture_tables):
    path = fixture_tables["sample_table_cow_v8_nonpartitioned"]
    result = CliRunner().invoke(main, ["inspect", str(path), "--as-of", "yesterday"])
    assert result.exit_code == 2 and "--as-of" in result.output


def test_demo_writes_a_table_hudi_rs_reads_identically(tmp_path):
    out = tmp_path / "demo"
    result = CliRunner().invoke(main, ["demo", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert inspect_json(out)["file_slices"] == oracle_file_slices(out)
    theirs = oracle_read(out)
    assert same_rows(read_rows(out, tmp_path), theirs)
    assert theirs.num_rows == 3
