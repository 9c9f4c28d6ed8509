"""The ``testbed`` console script's exit codes (testbed/cli.py ``entry``): what a shell sees.

``entry`` leaves through ``os._exit`` after flushing, so Arrow's thread pools are never torn down
at interpreter exit (which can abort the process with 134 after its output was printed); these
tests run the real console script in a subprocess and read its output through a pipe."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.demo import write_demo_table

TESTBED = Path(sys.executable).with_name("testbed")


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_table(tmp_path_factory.mktemp("exit") / "demo")


def run_testbed(*args: str) -> subprocess.CompletedProcess[str]:
    command = [str(TESTBED)] if TESTBED.exists() else [sys.executable, "-m", "testbed.cli"]
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, check=False, timeout=120
    )


def inspect_json_exits(table: Path, times: int) -> list[int]:
    codes = []
    for _ in range(times):
        done = run_testbed("inspect", str(table), "--json")
        codes.append(done.returncode)
        assert json.loads(done.stdout)["instants"], done.stderr  # all of it, flushed
    return codes


def test_inspect_json_exits_0_with_its_whole_output(table):
    assert inspect_json_exits(table, 5) == [0] * 5


@pytest.mark.slow
def test_inspect_json_200_times_exits_0_every_time(table):
    assert inspect_json_exits(table, 200) == [0] * 200


def test_exit_codes_of_the_console_script(table, tmp_path):
    assert run_testbed("--help").returncode == 0
    bad = run_testbed("inspect", str(tmp_path / "nope"))
    assert bad.returncode == 2
    assert bad.stderr.startswith("error: ") and bad.stderr.count("\n") == 1
    usage = run_testbed("inspect")
    assert usage.returncode == 2
    assert usage.stderr.startswith("error: Missing argument")
    assert "testbed inspect --help" in usage.stderr
    copy = shutil.copytree(table, tmp_path / "t")
    out = tmp_path / "rows.parquet"
    assert run_testbed("read", str(copy), "--out", str(out)).returncode == 0
    assert out.stat().st_size > 0
