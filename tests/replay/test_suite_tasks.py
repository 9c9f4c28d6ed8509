"""replay/suite_tasks.py: packing a run folder on an executor, unpacking it on the driver (all or
nothing, never outside the run folder), relocating the scratch path, and the engine's bookkeeping
(runs land as they finish, a lost run, Ctrl-C) with a stand-in Spark context (no JVM here; the
real local-mode run is tests/testbed/test_suite_spark.py)."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from replay import suite_tasks
from replay.suite_tasks import (
    PackedRun,
    PathNeedsQuotingError,
    RunLostError,
    SparkRuns,
    UnsafeArchiveError,
    pack_folder,
    require_plain_path,
    run_in_scratch,
    unpack_folder,
)
from testbed.atomic import staged_folder
from testbed.outputs import MARKER, write_marker

STAMP_NS = 1_767_225_606_572_000_000
"""A simulated modification time (ms precision, as models/storage.py stamps table files)."""
ODD_NS = 1_767_225_606_572_123_457
"""Nanoseconds a float would round away."""


def tree(folder: Path) -> dict[str, tuple[bytes | None, int | None]]:
    """Every entry below ``folder``: a file's bytes and exact mtime, or (None, None) if a folder."""
    found: dict[str, tuple[bytes | None, int | None]] = {}
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(folder).as_posix()
        found[name] = (
            (path.read_bytes(), path.stat().st_mtime_ns) if path.is_file() else (None, None)
        )
    return found


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "src" / "runs" / "x-seed1"
    (folder / "table" / ".hoodie" / ".temp" / "001").mkdir(parents=True)  # an empty marker folder
    (folder / "history.jsonl").write_text('{"index": 0}\n')
    write_marker(folder, "run")  # as testbed run writes every run folder
    (folder / "table" / "base.parquet").write_bytes(bytes(range(256)))
    os.utime(folder / "table" / "base.parquet", ns=(STAMP_NS, STAMP_NS))
    (folder / "table" / ".hoodie" / "hoodie.properties").write_text("hoodie.table.name=t\n")
    os.utime(folder / "table" / ".hoodie" / "hoodie.properties", ns=(ODD_NS, ODD_NS))
    return folder


def test_a_folder_packs_to_the_same_bytes_and_unpacks_to_the_same_tree(run_folder, tmp_path):
    packed = pack_folder(run_folder)
    assert pack_folder(run_folder) == packed
    target = tmp_path / "out" / "runs" / "x-seed1"
    unpack_folder(packed, target, staged_folder)
    assert tree(target) == tree(run_folder)
    assert (target / "table" / ".hoodie" / ".temp" / "001").is_dir()
    assert (target / "table" / "base.parquet").stat().st_mtime_ns == STAMP_NS
    assert (target / "table" / ".hoodie" / "hoodie.properties").stat().st_mtime_ns == ODD_NS
    assert not target.with_name("x-seed1.partial").exists()


def test_unpacking_replaces_an_earlier_run_folder(run_folder, tmp_path):
    target = tmp_path / "out"
    (target / "stale").mkdir(parents=True)
    (target / "error.txt").write_text("from an earlier suite run")
    unpack_folder(pack_folder(run_folder), target, staged_folder)
    assert tree(target) == tree(run_folder)


def archive_with(*entries: tuple[str, bytes | str | None]) -> bytes:
    """A tar.gz of ``(name, data)``: bytes is a file, None a folder, a str a symlink to it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, data in entries:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            elif isinstance(data, str):
                info.type, info.linkname = tarfile.SYMTYPE, data
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue())


@pytest.mark.parametrize(
    "bad",
    [
        ("../escaped.txt", b"x"),
        ("runs/../../escaped.txt", b"x"),
        ("/tmp/escaped.txt", b"x"),
        ("./a.txt", b"x"),
        ("link", "/etc/passwd"),
        ("a.txt", b"twice"),
    ],
    ids=["parent", "nested-parent", "absolute", "dot", "symlink", "duplicate"],
)
def test_an_archive_that_could_escape_the_run_folder_changes_nothing(bad, tmp_path):
    target = tmp_path / "suite" / "runs" / "x-seed1"
    target.mkdir(parents=True)
    (target / "result.json").write_text("kept")
    data = archive_with(("a.txt", b"fine"), bad)
    with pytest.raises(UnsafeArchiveError):
        unpack_folder(data, target, staged_folder)
    assert sorted(p.name for p in tmp_path.rglob("*")) == [
        "result.json",
        "runs",
        "suite",
        "x-seed1",
    ]


def test_an_unpack_interrupted_half_way_leaves_the_old_folder(run_folder, tmp_path, monkeypatch):
    target = tmp_path / "out"
    target.mkdir()
    (target / "result.json").write_text("the earlier run")

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(suite_tasks.os, "utime", ctrl_c)  # after the first file is written
    with pytest.raises(KeyboardInterrupt):
        unpack_folder(pack_folder(run_folder), target, staged_folder)
    assert [p.name for p in target.iterdir()] == ["result.json"]
    assert (target / "result.json").read_text() == "the earlier run"
    assert not (tmp_path / "out.partial").exists()


def test_only_paths_that_need_no_quoting_can_be_relocated():
    require_plain_path("/work/main/runs/suite-smoke/runs/async_baseline-seed1")
    for bad in ("/home/my runs/suite", '/tmp/"x"', "/tmp/café", "/tmp/a'b"):
        with pytest.raises(PathNeedsQuotingError, match="choose another --out"):
            require_plain_path(bad)


@dataclass(frozen=True)
class Task:
    index: int
    run_dir: Path
    rel_dir: str
    binary_mentions_path: bool = False


def fake_run(task: Task) -> dict[str, Any]:
    """Writes what a run writes that names its folder: a replay line in a text file and the row."""
    task.run_dir.mkdir(parents=True)
    (task.run_dir / "counterexample.txt").write_text(f"replay: testbed run {task.run_dir}/c.toml\n")
    (task.run_dir / "empty").mkdir()
    blob = bytes([0xFF, 0xFE]) + (str(task.run_dir).encode() if task.binary_mentions_path else b"")
    (task.run_dir / "base.parquet").write_bytes(blob)
    return {
        "replay": f"testbed run x.toml --out {task.run_dir}",
        "nested": [{"p": str(task.run_dir)}],
    }


def test_a_run_in_scratch_names_the_drivers_run_folder_and_leaves_no_scratch(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    task = Task(0, tmp_path / "suite" / "runs" / "x-seed1", "runs/x-seed1")
    packed = run_in_scratch(fake_run, task, scratch)
    assert list(scratch.iterdir()) == []
    assert packed.row == {
        "replay": f"testbed run x.toml --out {task.run_dir}",
        "nested": [{"p": str(task.run_dir)}],
    }
    assert packed.folder is not None
    unpack_folder(packed.folder, task.run_dir, staged_folder)
    assert (task.run_dir / "counterexample.txt").read_text() == (
        f"replay: testbed run {task.run_dir}/c.toml\n"
    )
    assert (task.run_dir / "base.parquet").read_bytes() == bytes([0xFF, 0xFE])
    assert (task.run_dir / "empty").is_dir()


def test_a_binary_file_naming_the_scratch_path_is_refused_not_corrupted(tmp_path):
    task = Task(0, tmp_path / "suite" / "runs" / "x-seed1", "runs/x-seed1", True)
    with pytest.raises(ValueError, match="binary file"):
        run_in_scratch(fake_run, task, tmp_path)


@pytest.mark.parametrize("rel_dir", ["../x", "/abs", "runs/../../x"])
def test_a_task_cannot_write_outside_its_scratch(rel_dir, tmp_path):
    with pytest.raises(UnsafeArchiveError):
        run_in_scratch(fake_run, Task(0, tmp_path / "x", rel_dir), tmp_path)


# --- the engine, with a stand-in for SparkContext -------------------------------------------------


class FakeContext:
    """Runs each one-task job in the submitting thread, like local mode without the JVM; a job
    of a task named in ``hang`` waits until its group is cancelled."""

    defaultParallelism = 2

    def __init__(self, scratch: Path, fail: set[int] = frozenset(), hang: set[int] = frozenset()):
        self.scratch, self.fail, self.hang = scratch, fail, hang
        self.cancelled = threading.Event()
        self.groups: set[str] = set()
        self.log_level: str | None = None
        self.silenced_before_cancel = False

    def setLogLevel(self, level: str) -> None:
        self.log_level = level
        self.silenced_before_cancel = not self.cancelled.is_set()

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool = False) -> None:
        assert interruptOnCancel
        self.groups.add(group)

    def cancelJobGroup(self, group: str) -> None:
        assert group in self.groups
        self.cancelled.set()

    def statusTracker(self) -> FakeContext:
        return self

    def getJobIdsForGroup(self, group: str) -> list[int]:
        return [0] if group in self.groups else []

    def getActiveJobsIds(self) -> list[int]:
        return [] if self.cancelled.is_set() else [0]

    def parallelize(self, items: list, slices: int) -> FakeRDD:
        assert slices == 1 and len(items) == 1
        return FakeRDD(self, items[0])


@dataclass
class FakeRDD:
    context: FakeContext
    item: Any
    fn: Any = None

    def map(self, fn):
        return FakeRDD(self.context, self.item, fn)

    def collect(self) -> list[PackedRun]:
        if self.item.index in self.context.fail:
            raise RuntimeError("Job aborted: total size of serialized results is bigger than 1g")
        if self.item.index in self.context.hang:
            assert self.context.cancelled.wait(10)
            raise RuntimeError("Job cancelled because the job group was cancelled")
        return [self.fn(self.item)]


@dataclass
class FakeSession:
    sparkContext: FakeContext


def tasks_under(root: Path, count: int) -> list[Task]:
    return [Task(i, root / "runs" / f"s-seed{i}", f"runs/s-seed{i}") for i in range(count)]


def test_runs_land_in_their_folders_and_a_lost_run_says_why(tmp_path):
    context = FakeContext(tmp_path, fail={1})
    tasks = tasks_under(tmp_path / "suite", 3)
    (tasks[1].run_dir).mkdir(parents=True)
    (tasks[1].run_dir / "result.json").write_text("stale, from an earlier suite run")
    ended: dict[int, Any] = {}
    SparkRuns(FakeSession(context), fake_run, staged=staged_folder)(
        tasks, lambda task, got: ended.setdefault(task.index, got)
    )
    assert sorted(ended) == [0, 1, 2]
    for index in (0, 2):
        assert ended[index]["replay"].endswith(f"--out {tasks[index].run_dir}")
        assert (tasks[index].run_dir / "counterexample.txt").is_file()
    assert isinstance(ended[1], RunLostError)
    assert "bigger than 1g" in str(ended[1])
    assert sorted(p.name for p in tasks[1].run_dir.iterdir()) == [MARKER, "error.txt"]
    assert "bigger than 1g" in (tasks[1].run_dir / "error.txt").read_text()


def test_ctrl_c_cancels_the_job_group_and_keeps_the_runs_that_landed(tmp_path):
    context = FakeContext(tmp_path, hang={1})
    tasks = tasks_under(tmp_path / "suite", 4)
    landed: list[int] = []

    def ended(task: Task, got: Any) -> None:
        landed.append(task.index)
        raise KeyboardInterrupt  # the user presses Ctrl-C as the first run lands

    with pytest.raises(KeyboardInterrupt):
        SparkRuns(FakeSession(context), fake_run, staged=staged_folder)(tasks, ended)
    assert context.cancelled.is_set()  # the hanging job was cancelled, not waited for
    assert context.log_level == "OFF" and context.silenced_before_cancel  # no teardown ERRORs
    assert len(landed) == 1 and landed != [1]
    folders = sorted(p.name for p in (tmp_path / "suite" / "runs").iterdir())
    assert folders == [f"s-seed{landed[0]}"]  # runs finished after Ctrl-C are not unpacked
