"""Ctrl-C keeps what finished and says what did not: ``testbed suite``, ``sweep``, ``explore`` and
``verify`` interrupted for real (SIGINT to the command's whole process group, as a terminal
sends it, so worker processes get it too) and while they write their records.

After an interrupted command: exit code 130, a record that says ``interrupted`` with counts
that match what is on disk, every run folder a whole run (``result.json``), no ``.partial``
leftover, no traceback, and nothing written once the command has exited.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from testbed import explore_report as explore_module
from testbed.cli import main
from testbed.outputs import MARKER, write_marker

TINY = """\
[scenario]
name = "tiny"
description = "a short real-protocol run"
duration_s = {duration}
seed = 1

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2
records_per_s = 200
key_space = 1000
"""

QUIET_AFTER_EXIT_S = 1.5
"""How long the output must stay unchanged after the command exited."""


@pytest.fixture
def tiny(tmp_path) -> Callable[[int], Path]:
    def write(duration: int) -> Path:
        path = tmp_path / f"tiny{duration}.toml"
        path.write_text(TINY.format(duration=duration))
        return path

    return write


@contextlib.contextmanager
def command(*args: str) -> Any:
    """``testbed ARGS`` in a session of its own; yields the process, killed if still running."""
    process = subprocess.Popen(
        [sys.executable, "-m", "testbed.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()


def ctrl_c(
    process: subprocess.Popen, ready: Callable[[], bool], timeout_s: float = 180
) -> tuple[int, str, str]:
    """Wait until ``ready()``, press Ctrl-C (SIGINT to the process group) and wait for exit."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert process.poll() is None, f"exited before Ctrl-C: {process.communicate()}"
        assert time.monotonic() < deadline, "no progress in time"
        time.sleep(0.05)
    os.killpg(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=timeout_s)
    return process.returncode, out, err


def tree(folder: Path) -> dict[str, int]:
    """Every file under ``folder`` with its size."""
    return {str(p.relative_to(folder)): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def assert_quiet_after_exit(folder: Path) -> None:
    """Nothing appears or changes once the command has exited (no worker is left running)."""
    before = tree(folder)
    time.sleep(QUIET_AFTER_EXIT_S)
    assert tree(folder) == before


def header_of(html: str) -> str:
    """The report's header: its verdict badges and notes."""
    return html[html.index("<header>") : html.index("</header>")]


def finished_runs(out: Path, stale: Path | None = None, *, at_least: int = 1) -> Callable[[], bool]:
    """Whether ``at_least`` runs of this command have finished (folders other than ``stale``
    are whole). A folder is whole a moment before the suite has collected its run's row (a
    Ctrl-C in that moment abandons the run), so waiting for two makes the first surely kept."""

    def ready() -> bool:
        runs = out / "runs"
        whole = runs.is_dir() and [
            d for d in runs.iterdir() if d != stale and (d / "result.json").is_file()
        ]
        return bool(whole) and len(whole) >= at_least

    return ready


def without_spark_worker_tracebacks(err: str) -> str:
    """``err`` without the tracebacks PySpark's own Python workers print (frames in
    ``pyspark/daemon.py`` or ``pyspark.zip``): when Ctrl-C cancels a Spark job, the JVM closes the
    socket of a worker still reading its task and the worker prints a ``ConnectionResetError``
    through the inherited stderr. Nothing of the testbed's; every other traceback stays."""
    kept: list[str] = []
    block: list[str] | None = None
    for line in err.splitlines():
        if "Traceback (most recent call last):" in line or block is not None:
            block = [*(block or []), line]
            if line[:1] not in (" ", "\t") and "Traceback (most recent call last):" not in line:
                if not any("pyspark/daemon.py" in b or "pyspark.zip/" in b for b in block):
                    kept += block
                block = None
            continue
        kept.append(line)
    return "\n".join(kept + (block or []))


def assert_suite_interrupted(out: Path, planned: int, code: int, err: str) -> dict[str, Any]:
    assert code == 130, err
    assert "Traceback" not in without_spark_worker_tracebacks(err), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert summary["finished"] == len(summary["runs"]) >= 1
    assert summary["finished"] + summary["abandoned"] == planned
    assert summary["abandoned"] >= 1
    folders = sorted(p.name for p in (out / "runs").iterdir())
    assert folders == sorted(Path(row["run_dir"]).name for row in summary["runs"])
    for folder in folders:
        assert (out / "runs" / folder / "result.json").is_file()
        assert not (out / "runs" / folder / "error.txt").exists()
    assert not list(out.rglob("*.partial"))
    assert pq.read_table(out / "summary.parquet").num_rows == summary["finished"]
    header = header_of((out / "report.html").read_text())
    assert f"interrupted, {summary['abandoned']} run(s) abandoned" in header
    assert "badge fail" not in header  # every finished run is as expected: nothing red
    assert_quiet_after_exit(out)
    return summary


# --- suite --------------------------------------------------------------------------------------


def test_suite_in_worker_processes(tiny, tmp_path):
    out = tmp_path / "suite"
    scenario = tiny(10)
    stale = out / "runs" / "tiny-seed12"  # an earlier suite run's folder: not this run's result
    stale.mkdir(parents=True)
    (stale / "result.json").write_text("{}")
    write_marker(out, "suite")  # the earlier suite run's folder, as the testbed marks it
    args = ("suite", str(scenario), "--seeds", "12", "--workers", "2", "--out", str(out), "-q")
    with command(*args) as process:
        # three whole folders: with two workers the first was whole a run's length before,
        # so its row is surely collected even on a loaded machine
        code, stdout, err = ctrl_c(process, finished_runs(out, stale, at_least=3))
    summary = assert_suite_interrupted(out, 12, code, err)
    assert f"{summary['abandoned']} run(s) abandoned" in stdout
    assert not stale.exists()


def test_suite_on_spark(tiny, tmp_path):  # a JVM start and Spark's stop: about 25 s
    pytest.importorskip("pyspark")
    out = tmp_path / "suite"
    scenario = tiny(10)
    args = ("suite", str(scenario), "--seeds", "12", "--master", "local[2]", "--out", str(out))
    with command(*args, "-q") as process:
        code, _, err = ctrl_c(process, finished_runs(out, at_least=3))
    assert_suite_interrupted(out, 12, code, err)


# --- sweep --------------------------------------------------------------------------------------


def assert_sweep_interrupted(out: Path, count: int, code: int, err: str) -> dict[str, Any]:
    assert code == 130, err
    assert "Traceback" not in without_spark_worker_tracebacks(err), err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert summary["finished"] == summary["runs"] >= 1
    assert summary["finished"] + summary["abandoned"] == count
    seeds = pq.read_table(out / "sweep.parquet").column("seed").to_pylist()
    assert seeds == list(range(1, summary["finished"] + 1))
    assert not list(out.rglob("*.partial"))
    header = header_of((out / "report.html").read_text())
    assert f"interrupted, {summary['abandoned']} seed(s) not run" in header
    assert "badge fail" not in header
    assert f"{summary['finished']} of {count} seeds finished" in err
    assert_quiet_after_exit(out)
    return summary


def test_sweep_without_spark_keeps_the_finished_seeds_of_the_chunk_in_progress(tiny, tmp_path):
    out = tmp_path / "sweep"
    scenario = tiny(4)
    started: list[float] = []

    def a_few_seeds_done() -> bool:  # rows land per chunk: give the first seeds some time
        if not (out / "summary.json").is_file():
            return False
        started.append(started[0] if started else time.monotonic())
        return time.monotonic() - started[0] > 2.5

    args = ("sweep", str(scenario), "--seeds", "1:100000", "--no-spark", "--out", str(out), "-q")
    with command(*args) as process:
        code, _, err = ctrl_c(process, a_few_seeds_done)
    summary = assert_sweep_interrupted(out, 100000, code, err)
    assert summary["finished"] < 256  # the first chunk was in progress: its finished seeds kept


@pytest.mark.slow  # a JVM start and a chunk of 256 seeds: about 50 s
def test_sweep_on_spark_keeps_the_finished_chunks(tiny, tmp_path):
    pytest.importorskip("pyspark")
    out = tmp_path / "sweep"
    scenario = tiny(4)
    args = ("sweep", str(scenario), "--seeds", "1:100000", "--master", "local[2]")
    with command(*args, "--out", str(out), "-q") as process:
        code, _, err = ctrl_c(process, lambda: (out / "sweep.parquet/part-00000.parquet").is_file())
    summary = assert_sweep_interrupted(out, 100000, code, err)
    assert summary["finished"] % 256 == 0


# --- explore ------------------------------------------------------------------------------------


def test_explore_says_it_was_interrupted(tiny, tmp_path):
    out = tmp_path / "explore"
    scenario = tiny(10)
    started = time.monotonic()
    args = ("explore", str(scenario), "--examples", "100000", "--out", str(out), "-q")
    with command(*args) as process:
        code, stdout, err = ctrl_c(process, lambda: time.monotonic() - started > 4)
    assert code == 130, err
    assert "Traceback" not in err, err
    record = json.loads((out / "explore.json").read_text())
    assert record["interrupted"] is True and record["found"] is False
    assert f"interrupted after {record['examples']} examples" in stdout
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "explore.json"]
    assert not list(tmp_path.rglob("*.partial"))
    assert_quiet_after_exit(out)


def test_explore_interrupted_while_checking_the_replay_keeps_the_counterexample(
    tmp_path, monkeypatch
):
    from scenarios import catalog_dir

    def interrupted(path: Path, expected: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(explore_module, "_check_replay", interrupted)
    out = tmp_path / "search"
    scenario = catalog_dir() / "commit_latest_only.toml"
    args = ["--examples", "10", "--shrink-runs", "20", "--max-duration-s", "6"]
    result = CliRunner().invoke(main, ["explore", str(scenario), *args, "--out", str(out), "-q"])
    assert result.exit_code == 130, result.output
    assert "interrupted while shrinking" in result.output
    record = json.loads((out / "explore.json").read_text())
    assert record["interrupted"] is True and record["found"] is True
    assert record["replay_checked"] is False
    assert (out / "counterexample.toml").is_file()
    assert not list(tmp_path.rglob("*.partial"))


# --- interrupted while writing the record ---------------------------------------------------------


def test_suite_interrupted_while_writing_the_report(tiny, tmp_path, monkeypatch):
    def interrupted(suite_dir: Path) -> Path:
        (suite_dir / "report.html.partial").write_text("<html>half")
        raise KeyboardInterrupt

    monkeypatch.setattr("reports.html.write_report", interrupted)
    out = tmp_path / "suite"
    out.mkdir()
    write_marker(out, "suite")
    (out / "report.html").write_text("an earlier suite run's report")
    args = ["suite", str(tiny(4)), "--seeds", "2", "--workers", "1", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert (summary["finished"], summary["abandoned"]) == (2, 0)
    assert "report.html not written: interrupted while writing the report" in result.output
    assert not (out / "report.html").exists() and not list(out.rglob("*.partial"))


def test_sweep_interrupted_while_writing_the_report(tiny, tmp_path, monkeypatch):
    def interrupted(out_dir: Path, *args: Any, **kwargs: Any) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr("reports.sweep_report.write_sweep_report", interrupted)
    out = tmp_path / "sweep"
    args = ["sweep", str(tiny(4)), "--seeds", "1:2", "--no-spark", "--out", str(out), "-q"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 130, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["ok"] is False
    assert (summary["finished"], summary["abandoned"]) == (2, 0)
    assert not (out / "report.html").exists() and not list(out.rglob("*.partial"))


def test_verify_interrupted_prints_one_line_and_writes_nothing(tmp_path, monkeypatch):
    @contextlib.contextmanager
    def no_spark(options: Any, work: Path) -> Any:
        yield None

    def interrupted(*args: Any) -> dict[str, Any]:
        raise KeyboardInterrupt

    class Target:
        table_root = tmp_path / "run" / "table"

    monkeypatch.setattr("replay.session.spark_session", no_spark)
    monkeypatch.setattr("replay.verify.resolve_target", lambda path, ledger: Target())
    monkeypatch.setattr("replay.verify.verify", interrupted)
    result = CliRunner().invoke(main, ["verify", str(tmp_path / "run")])
    assert result.exit_code == 130, result.output
    assert result.output.strip() == "interrupted: nothing verified, nothing written"
    assert not list(tmp_path.rglob("verify.json*"))
