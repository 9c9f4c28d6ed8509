"""Output folders (testbed/outputs.py and every command that writes one): a folder the testbed did
not write is never replaced without ``--force``, a second writer is refused, a run folder never
lands outside its output folder, and a runaway run stops with a partial folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from testbed.cli import main
from testbed.outputs import (
    MARKER,
    OutputFolderError,
    check_replaceable,
    lock_path,
    marked_kind,
    output_lock,
)

SCENARIO = """\
[scenario]
name = "outputs"
duration_s = 4
seed = 2

[[jobs]]
writers = 1
checkpoint_interval_s = 2
records_per_s = 50
key_space = 100
"""

COMMANDS = {
    "run": lambda source, out: ["run", str(source), "--out", str(out), "-q"],
    "demo": lambda source, out: ["demo", "--out", str(out)],
    "explore": lambda source, out: [
        *("explore", str(source), "--examples", "1", "--shrink-runs", "0"),
        *("--out", str(out), "-q"),
    ],
    "suite": lambda source, out: ["suite", str(source), "--out", str(out), "--workers", "1", "-q"],
    "sweep": lambda source, out: [
        *("sweep", str(source), "--seeds", "1:1", "--no-spark", "--out", str(out), "-q"),
    ],
}
"""Every command that writes an output folder, as a command line."""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture
def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("years of work")
    return folder


def one_error_line(result: Result) -> str:
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: ")
    return line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_folder_the_testbed_did_not_write_is_refused(command, source, users_folder):
    line = one_error_line(invoke(*COMMANDS[command](source, users_folder)))
    assert str(users_folder) in line and "--force" in line
    assert sorted(p.name for p in users_folder.iterdir()) == ["thesis.tex"]
    assert (users_folder / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in users_folder.parent.iterdir()) == ["mine", "s.toml"]


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_force_replaces_it_and_a_folder_the_testbed_wrote_is_replaced(
    command, source, users_folder
):
    result = invoke(*COMMANDS[command](source, users_folder), "--force")
    assert result.exit_code == 0, result.output
    assert not (users_folder / "thesis.tex").exists()
    assert marked_kind(users_folder) == command
    again = invoke(*COMMANDS[command](source, users_folder))
    assert again.exit_code == 0, again.output


def test_every_command_marks_its_folder(source, tmp_path):
    for command, line in COMMANDS.items():
        out = tmp_path / f"out-{command}"
        result = invoke(*line(source, out))
        assert result.exit_code == 0, (command, result.output)
        assert marked_kind(out) == command
        assert not lock_path(out).exists()  # the lock goes with the command


def test_a_folder_written_before_markers_existed_is_replaced(tmp_path):
    legacy = tmp_path / "old-run"
    legacy.mkdir()
    for name in ("scenario.toml", "history.jsonl", "result.json"):
        (legacy / name).write_text("")
    check_replaceable(legacy)
    (legacy / "notes.md").write_text("mine")
    with pytest.raises(OutputFolderError, match="not a folder the testbed wrote"):
        check_replaceable(legacy)


@pytest.mark.parametrize("names", [["table"], ["plots"], ["table", "plots"], ["scenario.toml"]])
def test_a_folder_of_only_names_a_run_uses_is_still_a_users(tmp_path, names):
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in names:
        if "." in name:
            (folder / name).write_text("")
        else:
            (folder / name).mkdir()
    with pytest.raises(OutputFolderError, match="not a folder the testbed wrote"):
        check_replaceable(folder)


def test_files_and_the_working_folder_are_never_outputs(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputFolderError, match="not a folder"):
        check_replaceable(tmp_path / "f", force=True)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputFolderError, match="refusing"):
        check_replaceable(Path("."), force=True)


def test_a_second_writer_is_refused_naming_the_owner(tmp_path):
    out = tmp_path / "out"
    with (
        output_lock(out),
        pytest.raises(OutputFolderError, match=f"pid {os.getpid()}"),
        output_lock(out),
    ):
        pass
    with output_lock(out):  # released: taken again
        pass


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path):
    out = tmp_path / "out"
    code = (
        "import os, sys; from pathlib import Path; from testbed.outputs import output_lock\n"
        f"with output_lock(Path({str(out)!r})): os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert lock_path(out).exists()  # the crashed owner left its file behind
    with output_lock(out):
        assert lock_path(out).read_text().strip() == str(os.getpid())


def test_the_losing_one_of_two_runs_into_one_folder_is_one_error_line(source, tmp_path):
    out = tmp_path / "out"
    with output_lock(out):
        line = one_error_line(invoke(*COMMANDS["run"](source, out)))
    assert "another testbed command is writing it" in line
    assert not out.exists()


def test_a_scenario_name_is_never_a_path(tmp_path):
    evil = tmp_path / "evil.toml"
    evil.write_text(SCENARIO.replace('"outputs"', '"../../etc/evil"'))
    line = one_error_line(invoke("run", str(evil), "-q", "--out", str(tmp_path / "o")))
    assert "scenario.name" in line
    line = one_error_line(invoke("suite", str(evil), "--out", str(tmp_path / "s"), "-q"))
    assert "scenario.name" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["evil.toml"]


def test_an_unwritable_output_is_one_error_line(source, tmp_path):
    (tmp_path / "file").write_text("x")
    one_error_line(invoke(*COMMANDS["run"](source, tmp_path / "file" / "under")))
    one_error_line(invoke(*COMMANDS["run"](source, Path("/proc/no/such"))))


def test_a_runaway_run_stops_with_a_partial_folder(source, tmp_path):
    slow = tmp_path / "slow.toml"
    slow.write_text(
        SCENARIO.replace("duration_s = 4", "duration_s = 600") + "[sim]\nmax_wall_s = 0.001\n"
    )
    out = tmp_path / "out"
    line = one_error_line(invoke("run", str(slow), "--out", str(out), "-q"))
    assert "max_wall_s" in line and str(out) in line
    assert sorted(p.name for p in out.iterdir()) == [
        MARKER,
        "history.jsonl",
        "partial.json",
        "scenario.toml",
    ]
    partial = json.loads((out / "partial.json").read_text())
    assert partial["partial"] is True and 0 < partial["simulated_ms"] < 600_000
    assert (out / "history.jsonl").read_text().count("\n") > 0


def test_a_user_error_spanning_lines_is_shown_on_one(capsys):
    from testbed.cli_common import UserError

    UserError("a.parquet: Invalid: bad footer\n  in column 3\n").show()
    assert capsys.readouterr().err == "error: a.parquet: Invalid: bad footer in column 3\n"
