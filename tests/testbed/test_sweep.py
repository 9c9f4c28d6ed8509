"""``testbed sweep``: the same seeds give the same rows on any engine; chunks survive Ctrl-C."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from scenarios.schema import load_scenario
from testbed.cli import main
from testbed.seed_chunks import chunks
from testbed.sweep import ROW_SCHEMA, distribution, read_rows, run_here, run_sweep

SMALL = """\
[scenario]
name = "sweep_small"
description = "Four writers, lost and late ACKs, crashes: short enough for a test sweep."
duration_s = 20
seed = 1

[[jobs]]
name = "ingest"
writers = 2
instant_generation = "async"
checkpoint_interval_s = 2
records_per_s = 200
key_space = 300

[faults]
ack_loss = 0.3
ack_delay_ms = 1500
writer_crash_per_hour = 200

[expect]
violations = []
"""

BAD = SMALL.replace('name = "sweep_small"', 'name = "sweep_bad"').replace(
    "[expect]", '[protocol]\ncommit_scope = "latest_only"\n\n[expect]'
)


@pytest.fixture
def small(tmp_path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def deterministic(rows) -> list[dict]:
    return [{k: v for k, v in row.items() if k != "wall_s"} for row in rows]


def test_chunks_cover_the_range_in_order():
    assert [list(r) for r in chunks(3, 9, 3)] == [[3, 4, 5], [6, 7, 8], [9]]


def test_distribution_uses_nearest_rank():
    assert distribution([5, 1, 3, 2, 4]) == {"min": 1, "p50": 3, "p90": 5, "max": 5, "mean": 3.0}
    assert distribution([])["p50"] is None


def test_a_sweep_here_writes_rows_and_a_summary(small, tmp_path):
    progress = []
    result = run_sweep(
        load_scenario(small),
        small,
        (1, 5),
        tmp_path / "out",
        run_here,
        engine="none",
        chunk_seeds=2,
        on_progress=lambda done, total: progress.append((done, total)),
    )
    rows = read_rows(tmp_path / "out")
    assert rows.schema == ROW_SCHEMA
    assert rows.column("seed").to_pylist() == [1, 2, 3, 4, 5]
    assert len(sorted((tmp_path / "out" / "sweep.parquet").glob("part-*"))) == 3
    assert progress[-1] == (5, 5)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary == result.summary
    assert summary["ok"] and summary["runs"] == 5 and summary["failing"] == []
    assert summary["metrics"]["commits"]["min"] > 0
    assert len(set(rows.column("digest").to_pylist())) == 5


def test_a_known_bad_variant_lists_failing_seeds_with_their_replay(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(BAD.replace("violations = []", 'violations = ["no_data_loss"]'))
    result = run_sweep(load_scenario(bad), bad, (1, 4), tmp_path / "out", run_here, engine="none")
    rows = read_rows(tmp_path / "out").to_pylist()
    caught = [r for r in rows if "no_data_loss" in r["violated"]]
    assert caught, "latest_only with lost ACKs must lose data on some seed"
    assert json.loads(caught[0]["why"])["no_data_loss"][0]
    missed = [r["seed"] for r in rows if not r["ok"]]
    assert [f["seed"] for f in result.summary["failing"]] == missed
    for failure in result.summary["failing"]:
        assert failure["replay"].startswith(f"testbed run {bad.resolve()} --seed ")


def test_ctrl_c_keeps_the_finished_chunks(small, tmp_path):
    calls = []

    def interrupted_on_second_chunk(tasks, on_progress):
        calls.append(len(tasks))
        if len(calls) == 2:
            raise KeyboardInterrupt
        return run_here(tasks, on_progress)

    result = run_sweep(
        load_scenario(small),
        small,
        (1, 4),
        tmp_path / "out",
        interrupted_on_second_chunk,
        engine="none",
        chunk_seeds=2,
    )
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert result.interrupted and summary == result.summary
    assert summary["interrupted"] and not summary["ok"] and summary["runs"] == 2
    assert (summary["finished"], summary["abandoned"]) == (2, 2)
    assert read_rows(tmp_path / "out").column("seed").to_pylist() == [1, 2]


def test_a_crashing_seed_becomes_an_error_row(small, tmp_path, monkeypatch):
    import testbed.sweep as sweep

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(sweep, "simulate_and_check", broken)
    run_sweep(load_scenario(small), small, (1, 1), tmp_path / "out", run_here, engine="none")
    (row,) = read_rows(tmp_path / "out").to_pylist()
    assert row["error"] == "RuntimeError: boom" and not row["ok"]


def test_cli_sweep_is_verdict_for_verdict_the_same_on_spark_and_without(small, tmp_path):
    """local[1], local[2] and no Spark: the same rows (digests included), only wall_s differs."""
    pytest.importorskip("pyspark")
    runner = CliRunner()
    tables = {}
    for name, flags in {
        "none": ["--no-spark"],
        "local1": ["--master", "local[1]"],
        "local2": ["--master", "local[2]"],
    }.items():
        out = tmp_path / name
        done = runner.invoke(
            main, ["sweep", str(small), "--seeds", "1:4", "--out", str(out), "-q", *flags]
        )
        assert done.exit_code == 0, done.output
        assert "4/4 seeds as expected" in done.output
        tables[name] = deterministic(pq.read_table(out / "sweep.parquet").to_pylist())
    assert tables["none"] == tables["local1"] == tables["local2"]


def test_cli_sweep_refuses_a_bad_seed_range(small):
    done = CliRunner().invoke(main, ["sweep", str(small), "--seeds", "5:2", "--no-spark"])
    assert done.exit_code == 2 and "error:" in done.output
