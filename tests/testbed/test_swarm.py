"""``testbed swarm``: rows and summary of the drawn seeds, failing seeds kept with their scenario
file and minimal counterexample, the parameters failing seeds shared, the CLI."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

import testbed.swarm as swarm
from scenarios.schema import load_scenario
from testbed.cli import main
from testbed.swarm import read_swarm_rows, run_swarm, shared_parameters
from testbed.sweep import run_here


def test_a_swarm_writes_rows_with_their_parameters_and_a_summary(tmp_path):
    out = tmp_path / "out"
    summary = run_swarm((3, 4), out, run_here, engine="none")
    rows = read_swarm_rows(out).to_pylist()
    assert [row["seed"] for row in rows] == [3, 4]
    assert [row["scenario"] for row in rows] == ["swarm_3", "swarm_4"]
    assert json.loads(rows[0]["parameters"])["table.type"] in ("MERGE_ON_READ", "COPY_ON_WRITE")
    assert summary == json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "swarm" and summary["runs"] == 2
    assert summary["ok"] and summary["failing"] == [] and (out / "report.html").is_file()


def _known_bad(seed: int) -> dict:
    """A short run that loses data on a known-bad variant (commit only the newest instant)."""
    return {
        "scenario": {"name": f"swarm_{seed}", "duration_s": 8, "seed": seed},
        "table": {"partitions": 1, "buckets_per_partition": 2},
        "jobs": [
            {"writers": 2, "checkpoint_interval_s": 1, "records_per_s": 200, "key_space": 300}
        ],
        "faults": {"ack_loss": 0.4},
        "protocol": {"commit_scope": "latest_only"},
    }


def test_a_failing_seed_keeps_its_scenario_and_its_minimal_counterexample(tmp_path, monkeypatch):
    monkeypatch.setattr(swarm, "draw_swarm", _known_bad)
    out = tmp_path / "out"
    summary = run_swarm((1, 1), out, run_here, engine="none", minimize_runs=8)
    (failure,) = summary["failing"]
    assert failure["violated"] and "no_data_loss" in failure["violated"]
    folder = out / "failing" / "swarm_1"
    assert failure["scenario"] == str(folder / "scenario.toml")
    assert failure["replay"] == f"testbed run {(folder / 'scenario.toml').resolve()}"
    assert load_scenario(folder / "scenario.toml").protocol.commit_scope == "latest_only"
    assert failure["counterexample"] == str(folder / "counterexample.toml")
    minimal = load_scenario(folder / "counterexample.toml")
    assert minimal.faults.ack_loss == 0 and minimal.faults.schedule
    assert not summary["ok"] and summary["shared"]["failing"] == 1


def test_shared_parameters_name_what_every_failing_seed_had():
    def row(seed, ok, **params):
        return {"seed": seed, "ok": ok, "parameters": json.dumps(params)}

    rows = [
        row(1, False, table="COW", acks="on"),
        row(2, False, table="COW", acks="off"),
        row(3, True, table="MOR", acks="on"),
        row(4, True, table="MOR", acks="off"),
        row(5, True, table="MOR", acks="on"),
    ]
    shared = shared_parameters(rows)
    assert shared["failing"] == 2
    assert shared["by_every_failing_seed"] == {"table": "COW"}
    (over,) = shared["over_represented"]
    assert (over["parameter"], over["value"], over["failing"], over["runs"]) == (
        "table",
        "COW",
        2,
        2,
    )
    assert (over["failing_share"], over["share"]) == (1.0, 0.4)


def test_nothing_failing_shares_nothing():
    rows = [{"seed": 1, "ok": True, "parameters": json.dumps({"a": "on"})}]
    assert shared_parameters(rows) == {
        "failing": 0,
        "by_every_failing_seed": {},
        "over_represented": [],
    }


def test_cli_swarm_runs_seeds_and_writes_junit(tmp_path):
    out, junit = tmp_path / "out", tmp_path / "swarm.xml"
    done = CliRunner().invoke(
        main,
        ["swarm", "--seeds", "5:6", "--no-spark", "--out", str(out), "-q", "--junit", str(junit)],
    )
    assert done.exit_code == 0, done.output
    assert "swarm: 2/2 seeds hold" in done.output
    assert junit.read_text().count("<testcase") == 2


def test_cli_swarm_refuses_a_bad_seed_range(tmp_path):
    done = CliRunner().invoke(main, ["swarm", "--seeds", "9:2", "--no-spark"])
    assert done.exit_code == 2 and "error:" in done.output


def test_cli_swarm_is_row_for_row_the_same_on_spark_and_without(tmp_path):
    pytest.importorskip("pyspark")
    tables = {}
    for name, flags in {"none": ["--no-spark"], "local2": ["--master", "local[2]"]}.items():
        out = tmp_path / name
        done = CliRunner().invoke(
            main, ["swarm", "--seeds", "0:3", "--out", str(out), "-q", *flags]
        )
        assert done.exit_code == 0, done.output
        rows = read_swarm_rows(out).to_pylist()
        tables[name] = [{k: v for k, v in r.items() if k != "wall_s"} for r in rows]
    assert tables["none"] == tables["local2"]


def test_ctrl_c_keeps_the_finished_chunks(tmp_path):
    calls = []

    def interrupted_on_second_chunk(tasks, on_progress):
        calls.append(len(tasks))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_here(tasks, on_progress)

    out = tmp_path / "out"
    summary = run_swarm((3, 4), out, interrupted_on_second_chunk, engine="none", chunk_seeds=1)
    assert summary["interrupted"] and not summary["ok"]
    assert (summary["finished"], summary["abandoned"]) == (1, 1)
    assert read_swarm_rows(out).column("seed").to_pylist() == [3]
    assert json.loads((out / "summary.json").read_text()) == summary
