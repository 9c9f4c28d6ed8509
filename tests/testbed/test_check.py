"""``testbed check RUN_DIR`` (testbed/check.py + testbed/cli.py): a recorded run re-checked from
its folder, compared with its result.json, a local table read again by hudi-rs; exit codes 0
(match), 1 (mismatch), 2 (bad input)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from invariants.checks import CHECKERS
from testbed.check import check_run, snapshot_difference
from testbed.cli import main
from tests.hudi_oracle import HUDI_AVAILABLE

SCENARIO = """\
[scenario]
name = "check_me"
duration_s = 8
seed = 4

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 300
key_space = 800
"""

LOST_UPDATES = """\
[scenario]
name = "latest_only"
duration_s = 8
seed = 1

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 300
key_space = 50000

[[faults.schedule]]
at_s = 0
kind = "lose_ack"
target = "ingest"
checkpoint = 2

[protocol]
commit_scope = "latest_only"

[expect]
violations = ["exactly_once", "no_data_loss"]
"""


def record(tmp_path_factory: pytest.TempPathFactory, text: str, storage: str) -> Path:
    root = tmp_path_factory.mktemp(f"run-{storage}")
    source = root / "scenario.toml"
    source.write_text(text)
    out = root / "run"
    result = CliRunner().invoke(
        main, ["run", str(source), "--storage", storage, "--out", str(out), "--quiet"]
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory, SCENARIO, "local")


@pytest.fixture(scope="module")
def memory_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record(tmp_path_factory, SCENARIO, "memory")


def copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def check(folder: Path) -> Result:
    return CliRunner().invoke(main, ["check", str(folder)])


def edit_result(folder: Path, change) -> None:
    path = folder / "result.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


# --- matching runs ------------------------------------------------------------------------------


def test_a_local_run_matches_and_hudi_rs_reads_the_same_snapshot(local_run):
    result = check(local_run)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "check_me seed 4: as expected (re-checked)"
    assert "  no_data_loss: ok (expected)" in lines
    assert f"  table: the recorded table {local_run / 'table'}" in lines
    if HUDI_AVAILABLE:
        assert any(line.startswith("  hudi-rs: reads the same snapshot (") for line in lines)
    else:
        assert any("hudi-rs: not installed" in line for line in lines)
    assert lines[-1].startswith("matches result.json (digest sha256:")


def test_a_memory_run_is_rebuilt_by_replaying_its_scenario(memory_run):
    result = check(memory_run)
    assert result.exit_code == 0, result.output
    assert "rebuilt in memory by re-running scenario.toml" in result.output
    assert "hudi-rs: not applicable (no table on disk)" in result.output


def test_a_known_bad_run_matches_with_its_violations(tmp_path_factory):
    folder = record(tmp_path_factory, LOST_UPDATES, "local")
    result = check(folder)
    assert result.exit_code == 0, result.output
    assert "latest_only seed 1: as expected (re-checked)" in result.output
    assert "  no_data_loss: VIOLATED (expected)" in result.output
    if HUDI_AVAILABLE:  # both readers agree on the damaged table
        assert "hudi-rs: reads the same snapshot" in result.output


# --- mismatches ---------------------------------------------------------------------------------


def test_a_verdict_that_changed_is_a_mismatch(local_run, tmp_path):
    folder = copy(local_run, tmp_path)

    def flip(data):
        data["invariants"]["no_data_loss"] = {
            "ok": False,
            "violations": [{"why": "made up", "events": [1]}],
        }

    edit_result(folder, flip)
    result = check(folder)
    assert result.exit_code == 1
    assert "MISMATCH with result.json:" in result.output
    assert "  - no_data_loss: result.json says VIOLATED, re-checked ok" in result.output


def test_different_violations_of_a_violated_invariant_are_a_mismatch(tmp_path_factory, tmp_path):
    folder = copy(record(tmp_path_factory, LOST_UPDATES, "memory"), tmp_path)

    def reword(data):
        data["invariants"]["no_data_loss"]["violations"][0]["why"] = "something else"

    edit_result(folder, reword)
    result = check(folder)
    assert result.exit_code == 1
    assert "no_data_loss: violated as recorded, but the violations differ" in result.output


def test_a_checker_that_disappeared_is_a_mismatch_a_new_one_that_holds_is_a_note(
    local_run, tmp_path
):
    folder = copy(local_run, tmp_path)

    def rename(data):
        data["invariants"]["old_checker"] = data["invariants"].pop("liveness")

    edit_result(folder, rename)
    result = check(folder)
    assert result.exit_code == 1
    assert "  - old_checker: in result.json but no longer checked" in result.output
    assert "  note: liveness: not in result.json (a checker added since the run); it holds" in (
        result.output
    )


def test_a_history_that_is_not_the_recorded_one_is_a_mismatch(local_run, tmp_path):
    folder = copy(local_run, tmp_path)
    edit_result(folder, lambda data: data.update(digest="sha256:" + "0" * 64))
    result = check(folder)
    assert result.exit_code == 1
    assert "history.jsonl has digest sha256:" in result.output


def test_a_memory_run_whose_scenario_no_longer_replays_is_not_rechecked(memory_run, tmp_path):
    folder = copy(memory_run, tmp_path)
    scenario = folder / "scenario.toml"
    scenario.write_text(scenario.read_text().replace("seed = 4", "seed = 5"))
    result = check(folder)
    assert result.exit_code == 1
    assert "check_me seed 5: not re-checked" in result.output
    assert "cannot be rebuilt" in result.output


# --- bad input ----------------------------------------------------------------------------------


def test_bad_folders_exit_2_with_one_line(local_run, tmp_path):
    cases = {}
    cases["missing"] = (tmp_path / "nope", "no such directory")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases["empty"] = (empty, "not a run folder (missing scenario.toml, history.jsonl, result.json)")
    broken = copy(local_run, tmp_path)
    with (broken / "history.jsonl").open("a") as history:
        history.write("{not json\n")
    cases["history"] = (broken, "history.jsonl, line")
    no_table = tmp_path / "no_table"
    shutil.copytree(local_run, no_table, ignore=shutil.ignore_patterns("table"))
    cases["table"] = (no_table, 'storage = "local" but there is no table/ folder')
    for name, (folder, message) in cases.items():
        result = check(folder)
        assert result.exit_code == 2, name
        assert result.output.startswith("error: ") and message in result.output, name
        assert result.output.count("\n") == 1, name


# --- snapshot comparison ------------------------------------------------------------------------


def rows(*records: tuple[str, str, int]) -> pa.Table:
    partitions, keys, values = zip(*records, strict=True) if records else ((), (), ())
    return pa.table(
        {
            "_hoodie_partition_path": pa.array(partitions, pa.string()),
            "_hoodie_record_key": pa.array(keys, pa.string()),
            "value": pa.array(values, pa.int64()),
        }
    )


def test_equal_snapshots_in_any_order_do_not_differ():
    ours = rows(("p0", "a", 1), ("p1", "b", 2))
    assert snapshot_difference(ours, rows(("p1", "b", 2), ("p0", "a", 1))) == ""
    assert snapshot_difference(rows(), None) == ""


def test_snapshot_differences_are_one_sentence():
    ours = rows(("p0", "a", 1), ("p1", "b", 2))
    assert snapshot_difference(ours, rows(("p0", "a", 1))) == (
        "2 rows in ours, 1 in hudi-rs; 1 keys only in ours (e.g. p1/b)"
    )
    assert "values differ in value for 1 keys (e.g. p1/b, value ours 2 vs hudi-rs 3)" in (
        snapshot_difference(ours, rows(("p0", "a", 1), ("p1", "b", 3)))
    )
    assert snapshot_difference(ours, None) == "hudi-rs reads no rows, ours 2"
    assert "a key appears a different number of times" in snapshot_difference(
        ours, rows(("p0", "a", 1), ("p1", "b", 2), ("p1", "b", 2))
    )
    other = ours.append_column("extra", pa.array([1, 2]))
    assert snapshot_difference(ours, other) == "the columns differ (extra)"


def test_check_reports_each_step_to_its_progress(memory_run):
    steps: list[str] = []
    assert check_run(memory_run, progress=steps.append).match
    assert steps[:2] == [
        "reading the run folder",
        "re-running scenario.toml to rebuild its table in memory",
    ]
    assert steps[2:] == [f"checking {name}" for name in CHECKERS]
