"""``testbed suite --master`` (testbed/cli.py, the engine hook of testbed/suite.py,
replay/suite_tasks.py): on Spark local mode the suite gives the process pool's rows and run
folders, file for file; Ctrl-C keeps the runs that landed; options that contradict each other are
one-line errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from replay.session import SparkOptions
from replay.suite_tasks import spark_runs
from testbed.atomic import staged_folder
from testbed.cli import main
from testbed.suite import execute, resolve, run_suite
from tests.testbed.test_suite import BAD  # the same tiny known-bad scenario, caught and minimized

LOCAL_TABLE = """\
[scenario]
name = "tiny_local_table"
description = "a short real-protocol run whose table is written on local storage"
duration_s = 6
seed = 1

[table]
storage = "local"

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 200
key_space = 1000
"""


@pytest.fixture
def files(tmp_path: Path) -> list[str]:
    local, caught = tmp_path / "local.toml", tmp_path / "caught.toml"
    local.write_text(LOCAL_TABLE)
    caught.write_text(BAD)
    return [str(local), str(caught)]


@pytest.fixture(autouse=True)
def plain_report(monkeypatch):
    """The report is reports/html.py's job; here both engines only have to reach it."""

    def write_report(suite_dir: Path) -> Path:
        (suite_dir / "report.html").write_text("<html></html>")
        return suite_dir / "report.html"

    monkeypatch.setattr("reports.html.write_report", write_report)


def invoke(*args: str):
    return CliRunner().invoke(main, ["suite", *args, "-q"])


def files_of(out: Path) -> dict[str, tuple[str, int | None]]:
    """Every run-folder file as text with the suite folder's path taken out, and the exact
    modification time of the table's files (simulated times, stamped by models/storage.py)."""
    found: dict[str, tuple[str, int | None]] = {}
    for path in sorted((out / "runs").rglob("*")):
        name = path.relative_to(out).as_posix()
        if path.is_dir():
            found[name] = ("<dir>", None)
            continue
        text = path.read_bytes().decode("utf-8", "backslashreplace")
        mtime = path.stat().st_mtime_ns if "/table/" in name else None
        found[name] = (text.replace(str(out.resolve()), "<out>"), mtime)
    return found


def rows_of(out: Path) -> str:
    summary = json.loads((out / "summary.json").read_text())
    for row in summary["runs"]:
        row["wall_s"] = 0.0
    return json.dumps(summary, sort_keys=True, indent=1).replace(str(out.resolve()), "<out>")


def test_local_spark_gives_the_process_pools_rows_and_run_folders(files, tmp_path):
    pytest.importorskip("pyspark")
    pool, spark = tmp_path / "pool", tmp_path / "spark"
    budget = ["--minimize-runs", "6"]  # enough to shrink and write the counterexample files
    result = invoke(*files, "--out", str(pool), "--workers", "2", *budget)
    assert result.exit_code == 0, result.output
    result = invoke(*files, "--out", str(spark), "--master", "local[2]", *budget)
    assert result.exit_code == 0, result.output
    assert "2/2 runs as expected" in result.output
    assert rows_of(spark) == rows_of(pool)
    assert files_of(spark) == files_of(pool)
    summary = json.loads((spark / "summary.json").read_text())
    local, caught = summary["runs"]
    assert local["digest"].startswith("sha256:") and local["metrics"]["jobs"]["ingest"]["commits"]
    assert local["replay"].endswith(f"--out {spark.resolve() / 'runs/tiny_local_table-seed1'}")
    assert caught["violated"] == ["exactly_once", "no_data_loss"]
    assert caught["counterexample"] == "runs/tiny_bad-seed2/counterexample.toml"
    explanation = (spark / "runs/tiny_bad-seed2/counterexample.txt").read_text()
    assert f"replay: testbed run {spark.resolve()}/runs/tiny_bad-seed2/" in explanation
    assert (spark / "runs/tiny_local_table-seed1/table/.hoodie/hoodie.properties").is_file()
    assert not list(spark.rglob("*.partial"))


@pytest.mark.slow  # a second Spark context; the engine's Ctrl-C logic is tested without a JVM
def test_ctrl_c_on_spark_keeps_the_runs_that_landed(files, tmp_path):
    pytest.importorskip("pyspark")
    out = tmp_path / "out"
    landed: list[dict[str, Any]] = []

    def progress(done: int, total: int, row: dict[str, Any]) -> None:
        landed.append(row)
        raise KeyboardInterrupt  # Ctrl-C as the first run lands; the other is still running

    with spark_runs(
        SparkOptions(master="local[2]"), execute, staged=staged_folder, description="test"
    ) as engine:
        outcome = run_suite(resolve(files), out, minimize_runs=6, progress=progress, engine=engine)
    assert outcome.exit_code == 130
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert [row["scenario"] for row in summary["runs"]] == [landed[0]["scenario"]]
    assert [p.name for p in (out / "runs").iterdir()] == [Path(landed[0]["run_dir"]).name]


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--master", "local[2]", "--workers", "2"], "give one of them"),
        (["--conf", "spark.executor.memory=4g"], "add --master"),
        (["--master", "local[2]", "--conf", "novalue"], "expected key=value"),
        (["--master", "local[2]", "--out", "my runs"], "choose another --out"),
    ],
)
def test_contradicting_options_are_one_line_errors_before_anything_runs(
    args, fragment, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    result = invoke("smoke", *args)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: ") and fragment in line
    assert list(tmp_path.iterdir()) == []
