"""The catalogue of bad inputs and faults a user reported, each by name, replayed exactly: every
one ends in exit 0 with the right answer or exit 2 with one ``error:`` line (``check``: exit 1
with the finding), and nothing outside the output folder, or in a folder the testbed did not
write, is touched. Interrupted runs (Ctrl-C) have their own subprocess tests in
``test_ctrl_c.py``; inspect's exit code in a loop is ``test_exit_codes.py``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from testbed.cli import main
from testbed.outputs import output_lock
from tests.testbed.test_fuzz_tables import Damage, Pristine, pristine  # noqa: F401
from tests.testbed.test_fuzz_tables import damaged_copy as damaged

SCENARIO = """\
[scenario]
name = "{name}"
duration_s = {duration}
seed = 1

[[jobs]]
writers = 1
checkpoint_interval_s = 1
records_per_s = 40
key_space = 50
"""


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def scenario(tmp_path: Path, *, name: str = "reported", duration: str = "3") -> Path:
    path = tmp_path / "s.toml"
    path.write_text(SCENARIO.format(name=name, duration=duration))
    return path


def users_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    return folder


def latest(p: Pristine, suffix: str) -> str:
    return [f for f in p.files if f.endswith(suffix) and "/history/" not in f][-1]


# --- the cases: each returns what the command did, and what must be left untouched ---------------


def run_over_users_folder(tmp_path: Path, p: Pristine) -> Result:
    return invoke("run", str(scenario(tmp_path)), "--out", str(users_folder(tmp_path)), "-q")


def demo_over_users_folder(tmp_path: Path, p: Pristine) -> Result:
    return invoke("demo", "--out", str(users_folder(tmp_path)))


def explore_over_users_folder(tmp_path: Path, p: Pristine) -> Result:
    out = users_folder(tmp_path)
    return invoke("explore", str(scenario(tmp_path)), "--examples", "1", "--out", str(out), "-q")


def scenario_named_as_a_path(tmp_path: Path, p: Pristine) -> Result:
    source = scenario(tmp_path, name="../../etc/evil")
    return invoke("suite", str(source), "--out", str(tmp_path / "suite"), "-q")


def empty_deltacommit(tmp_path: Path, p: Pristine) -> Result:
    table = damaged(p, tmp_path, Damage("empty", latest(p, ".deltacommit"))) / "table"
    return invoke("read", str(table))


def truncated_deltacommit(tmp_path: Path, p: Pristine) -> Result:
    table = damaged(p, tmp_path, Damage("truncate", latest(p, ".deltacommit"), 0.5)) / "table"
    return invoke("inspect", str(table))


def random_bytes_commit(tmp_path: Path, p: Pristine) -> Result:
    name = latest(p, ".commit")
    table = damaged(p, tmp_path, Damage("random", name, payload=b"\x9a" * 64)) / "table"
    return invoke("inspect", str(table), "--json")


def check_on_a_damaged_table(tmp_path: Path, p: Pristine) -> Result:
    return invoke("check", str(damaged(p, tmp_path, Damage("empty", latest(p, ".deltacommit")))))


def unwritable_out_the_working_folder(tmp_path: Path, p: Pristine) -> Result:
    return invoke("run", str(scenario(tmp_path)), "--out", str(tmp_path), "-q")


def unwritable_out_under_a_file(tmp_path: Path, p: Pristine) -> Result:
    (tmp_path / "file").write_text("x")
    return invoke("run", str(scenario(tmp_path)), "--out", str(tmp_path / "file" / "run"), "-q")


def base_file_of_random_bytes(tmp_path: Path, p: Pristine) -> Result:
    read = next(s for s in p.inspect["file_slices"] if s["base_file"])  # a base the read needs
    base = f"{read['partition']}/{read['base_file']}"
    table = damaged(p, tmp_path, Damage("random", base, payload=b"\x07" * 300)) / "table"
    return invoke("read", str(table))


def corrupt_archive_manifest(tmp_path: Path, p: Pristine) -> Result:
    manifest = [f for f in p.files if "/history/manifest_" in f][-1]
    table = damaged(p, tmp_path, Damage("random", manifest, payload=b"{not json")) / "table"
    return invoke("inspect", str(table))


def seed_at_2_62(tmp_path: Path, p: Pristine) -> Result:
    source = scenario(tmp_path)
    return invoke("run", str(source), "--seed", str(2**62), "--out", str(tmp_path / "o"), "-q")


def seed_beyond_2_63(tmp_path: Path, p: Pristine) -> Result:
    source = scenario(tmp_path)
    return invoke("run", str(source), "--seed", str(2**63), "--out", str(tmp_path / "o"), "-q")


def losing_one_of_two_runs(tmp_path: Path, p: Pristine) -> Result:
    out = tmp_path / "same"
    with output_lock(out):  # the winner holds the folder
        return invoke("run", str(scenario(tmp_path)), "--out", str(out), "-q")


def duration_of_1e12_seconds(tmp_path: Path, p: Pristine) -> Result:
    source = scenario(tmp_path, duration="1e12")
    return invoke("run", str(source), "--out", str(tmp_path / "o"), "-q")


Case = Callable[[Path, Pristine], Result]
REPORTED: dict[str, tuple[Case, int, str]] = {
    "run --out on a folder it did not write": (run_over_users_folder, 2, "--force"),
    "demo --out on a folder it did not write": (demo_over_users_folder, 2, "--force"),
    "explore --out on a folder it did not write": (explore_over_users_folder, 2, "--force"),
    'scenario name "../../etc/evil"': (scenario_named_as_a_path, 2, "scenario.name"),
    "an empty .deltacommit": (empty_deltacommit, 2, ".deltacommit"),
    "a truncated .deltacommit": (truncated_deltacommit, 2, ".deltacommit"),
    "a .commit of random bytes": (random_bytes_commit, 2, ".commit"),
    "check on a damaged table": (check_on_a_damaged_table, 1, "the table is corrupt"),
    "--out . (the working folder)": (unwritable_out_the_working_folder, 2, "refusing"),
    "--out under a file": (unwritable_out_under_a_file, 2, "file"),
    "a base parquet file of random bytes": (base_file_of_random_bytes, 2, "parquet"),
    "a corrupt archive manifest": (corrupt_archive_manifest, 2, "manifest"),
    "a seed of 2^62": (seed_at_2_62, 0, "replay: "),
    "a seed of 2^63": (seed_beyond_2_63, 2, "--seed"),
    "the losing one of two runs into one --out": (losing_one_of_two_runs, 2, "pid"),
    "duration_s = 1e12": (duration_of_1e12_seconds, 2, "scenario.duration_s"),
}
"""Each reported case: how to reproduce it, the exit code it must end with, and a word of what
it must say (on stderr for exit 2, on stdout otherwise)."""


@pytest.mark.parametrize("name", sorted(REPORTED))
def test_reported_case(name: str, pristine: Pristine, tmp_path: Path) -> None:  # noqa: F811
    reproduce, code, says = REPORTED[name]
    work = tmp_path / "work"
    work.mkdir()
    result = reproduce(work, pristine)
    assert isinstance(result.exception, SystemExit | None), result.exception  # no traceback
    assert result.exit_code == code, result.output
    if code == 2:
        (line,) = result.stderr.splitlines()
        assert line.startswith("error: ") and says in line, line
    else:
        assert says in result.stdout, result.output
    mine = work / "mine"
    if mine.exists():  # the user's folder is as it was
        assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
        assert (mine / "notes.txt").read_text() == "mine"
    assert not any(work.parent.glob("*.lock")) and not any(work.glob("*.lock"))
