"""A suite's runs as Spark tasks: what an executor runs and how its run folder travels back.

``testbed suite --master URL`` runs the same ``execute`` as the process pool, but on executors that
may not share this machine's disk. So each run travels as a value:

- **On the executor** (:func:`run_in_scratch`): the run is written into a scratch folder of its
  own (under Spark's per-application work folder, which Spark deletes even when a cancelled task
  is killed), then packed with :func:`pack_folder` and returned with its ``summary.json`` row.
- **On the driver** (:class:`SparkRuns`): each archive is unpacked into ``<out>/<rel_dir>`` by
  :func:`unpack_folder`, all or nothing. How a folder is staged and renamed into place is the
  application's convention (``testbed/atomic.py``, which this layer may not import), so the
  caller passes it in as ``staged`` (:data:`Staged`).

Three things make the unpacked folder the one the process pool would have written:

- **Paths.** A few files name the run folder by its absolute path (a counterexample's replay
  command, a traceback). The executor's scratch path is replaced with the driver's run folder in
  the row and in every text file before packing. That is exact only when the driver's path needs
  no quoting in JSON or a shell command, so :func:`require_plain_path` refuses other paths up
  front (one clear error) instead of writing replay commands that do not work.
- **Modification times.** A simulated table on local storage stamps each file with its simulated
  time (``models/storage.py``), and a version-6 table's completion times are read from them, so
  every file's ``st_mtime_ns`` travels exactly (a pax header) and is restored.
- **Empty folders** (a table's ``.hoodie/.temp/<instant>/`` markers) travel as directory entries.

Archives are deterministic (sorted entries, fixed owner and mode, gzip without a timestamp): the
same folder always packs to the same bytes. Unpacking trusts nothing: absolute names, ``..``,
links and special files are refused before anything is written.

**One Spark job per run**, not one job for the whole suite (as ``replay.distribute`` does for a
sweep's chunks): a run's folder lands, and the progress bar moves, as soon as that run finishes;
Ctrl-C (cancelling the job group) loses only the runs in flight, like the process pool; and a
result too large for ``spark.driver.maxResultSize`` fails that run alone. A run takes seconds, so
a job's overhead (tens of milliseconds) does not matter; a thread per in-flight job keeps
``JOBS_PER_CORE`` jobs per core queued so executors never wait on the driver.

A run folder is small (``history.jsonl``, ``result.json``, ``scenario.toml``: 200-330 KB for the
smoke suite's runs, 22-32 KB packed) unless the scenario writes a table on local storage, whose
files then travel too (they are part of the run folder; a small table adds tens of KB). Every
scenario the ``"*"`` suites pick runs in memory; the ``large`` suite's multi-million-record table
would travel whole, in memory on both sides: run it with worker processes, or raise
``spark.driver.maxResultSize`` (a run above it is recorded as lost, the others go on).
"""

from __future__ import annotations

import concurrent.futures as futures
import contextlib
import dataclasses
import functools
import gzip
import io
import itertools
import os
import re
import shutil
import tarfile
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from replay.distribute import ignoring_sigint

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from replay.session import SparkOptions

JOBS_PER_CORE = 2
POLL_S = 0.5
MTIME_NS = "TESTBED.mtime_ns"
"""The pax header holding a file's exact modification time (tar's own field is whole seconds,
and pax's fractional ``mtime`` is read back as a float, which loses nanoseconds)."""
_PLAIN = re.compile(r"[\w@%+=:,./-]+", re.ASCII)
"""Characters that neither JSON nor ``shlex.quote`` escape."""
_GROUPS = itertools.count()

Staged = Callable[[Path], AbstractContextManager[Path]]
"""``staged(target)``: an empty folder to fill, put in place of ``target`` when the block ends
normally and deleted when it raises (``testbed.atomic.staged_folder``)."""


class UnsafeArchiveError(ValueError):
    """An archive entry that would land outside the run folder, or is not a file or folder."""


class PathNeedsQuotingError(ValueError):
    """A run folder path that the files of a run cannot name without quoting (see module doc)."""


class FolderTask(Protocol):
    """What :func:`run_in_scratch` needs of a task (a dataclass, e.g. ``testbed.suite.RunTask``):
    ``run_dir`` is where the run writes, ``rel_dir`` its path below the suite folder."""

    index: int
    run_dir: Path
    rel_dir: str


TaskT = TypeVar("TaskT", bound=FolderTask)
Run = Callable[[Any], dict[str, Any]]
"""Runs one task into its ``run_dir`` and returns its row (``testbed.suite.execute``)."""


@dataclass(frozen=True)
class PackedRun:
    """What travels back from an executor: the row and the run folder's archive (``None`` when
    the run left no folder)."""

    row: dict[str, Any]
    folder: bytes | None


# --- paths ----------------------------------------------------------------------------------------


def require_plain_path(path: Path | str) -> None:
    """Refuse a path that JSON or a shell command would have to quote (spaces, quotes, non-ASCII):
    relocating the scratch path by plain text replacement is exact only for plain paths."""
    text = str(path)
    if not _PLAIN.fullmatch(text):
        raise PathNeedsQuotingError(
            f"{text}: runs on Spark need a suite folder whose absolute path has only letters, "
            "digits and @%+=:,./-_ (its runs name it in replay commands); choose another --out"
        )


def relative_parts(name: str) -> tuple[str, ...]:
    """``name`` as the parts of a path inside a folder; :class:`UnsafeArchiveError` for anything
    that could leave it (absolute, ``..``, backslashes, empty parts)."""
    parts = tuple(name.split("/"))
    if any(part in ("", ".", "..") or "\\" in part or "\x00" in part for part in parts):
        raise UnsafeArchiveError(f"{name!r}: not a relative path inside the run folder")
    return parts


def _relocate(value: Any, here: str, there: str) -> Any:
    """Every string in a row with the scratch path ``here`` replaced by the run folder ``there``."""
    if isinstance(value, str):
        return value.replace(here, there)
    if isinstance(value, dict):
        return {key: _relocate(item, here, there) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_relocate(item, here, there) for item in value)
    return value


# --- packing --------------------------------------------------------------------------------------


def pack_folder(folder: Path, *, relocate: tuple[str, str] | None = None) -> bytes:
    """``folder`` as a gzip'd pax tar: the same folder always gives the same bytes.

    ``relocate = (here, there)`` replaces the path ``here`` with ``there`` in every file that
    mentions it; such a file must be text (a binary file's offsets would break)."""
    here, there = (p.encode() for p in relocate) if relocate else (b"", b"")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
            info = tarfile.TarInfo(path.relative_to(folder).as_posix())
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if path.is_symlink():
                raise UnsafeArchiveError(f"{path}: a run folder holds no links")
            if path.is_dir():
                info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
                archive.addfile(info)
                continue
            if not path.is_file():
                raise UnsafeArchiveError(f"{path}: not a file or folder")
            data = path.read_bytes()
            if here and here in data:
                try:
                    data.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError(
                        f"{path}: a binary file names the scratch folder; it cannot be relocated"
                    ) from None
                data = data.replace(here, there)
            mtime_ns = path.stat().st_mtime_ns
            info.size, info.mode, info.mtime = len(data), 0o644, mtime_ns // 10**9
            info.pax_headers = {MTIME_NS: str(mtime_ns)}
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), compresslevel=6, mtime=0)


def unpack_folder(data: bytes, target: Path, staged: Staged) -> None:
    """Replace ``target`` with the folder packed in ``data``, all or nothing: every entry is
    checked before anything is written, and the folder is built in ``staged(target)``; on any
    error (Ctrl-C included) ``target`` is left as it was."""
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(data)), mode="r:") as archive:
        entries = []
        seen: set[tuple[str, ...]] = set()
        for member in archive.getmembers():
            parts = relative_parts(member.name)
            if not (member.isfile() or member.isdir()):
                raise UnsafeArchiveError(f"{member.name!r}: only files and folders are unpacked")
            if parts in seen:
                raise UnsafeArchiveError(f"{member.name!r}: appears twice")
            seen.add(parts)
            entries.append((member, parts))
        with staged(target) as staging:
            for member, parts in entries:
                dest = staging.joinpath(*parts)
                if member.isdir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = archive.extractfile(member)
                assert source is not None  # a regular file always has data
                dest.write_bytes(source.read())
                stamp = member.pax_headers.get(MTIME_NS)
                if stamp is not None:
                    os.utime(dest, ns=(int(stamp), int(stamp)))


def write_error_folder(target: Path, text: str, staged: Staged) -> None:
    """Replace ``target`` with a folder holding only ``error.txt`` (a run Spark lost), so nothing
    from an earlier suite run stays behind looking like this run's result."""
    with staged(target) as staging:
        (staging / "error.txt").write_text(text)


# --- on the executor ------------------------------------------------------------------------------


def run_in_scratch(run: Run, task: FolderTask, scratch_root: Path | None = None) -> PackedRun:
    """Run ``task`` into a scratch folder (below ``scratch_root``, default Spark's work folder on
    an executor, else the system's temp folder) and return its row and packed folder, both
    naming ``task.run_dir`` wherever the run named the scratch folder."""
    parts = relative_parts(task.rel_dir)
    root = Path(tempfile.mkdtemp(prefix="testbed-run-", dir=scratch_root or _scratch_root()))
    try:
        local = dataclasses.replace(task, run_dir=root.resolve().joinpath(*parts))  # type: ignore
        here, there = str(local.run_dir), str(task.run_dir)
        require_plain_path(here)
        row = _relocate(run(local), here, there)
        folder = None
        if local.run_dir.is_dir():
            folder = pack_folder(local.run_dir, relocate=(here, there))
        return PackedRun(row, folder)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _scratch_root() -> str | None:
    """Spark's per-application folder on an executor (deleted with the application, so a killed
    task leaves nothing behind for long); ``None`` (the system temp folder) elsewhere."""
    try:
        from pyspark import SparkFiles, TaskContext
    except ImportError:
        return None
    return SparkFiles.getRootDirectory() if TaskContext.get() is not None else None


# --- on the driver --------------------------------------------------------------------------------


class RunLostError(RuntimeError):
    """Spark lost a run (a lost executor, a result above ``spark.driver.maxResultSize``, ...)."""


class SparkRuns:
    """A ``testbed.suite`` engine: each task is one Spark job whose only task runs
    :func:`run_in_scratch`; the driver unpacks each run folder as it arrives and calls
    ``ended(task, row)`` (or ``ended(task, error)`` for a run Spark lost). Run folders are
    written through ``staged`` (:data:`Staged`)."""

    def __init__(
        self, spark: SparkSession, run: Run, *, staged: Staged, description: str = "testbed suite"
    ):
        self.spark = spark
        self.run = run
        self.staged = staged
        self.description = description

    def __call__(
        self, tasks: Sequence[TaskT], ended: Callable[[TaskT, dict[str, Any] | Exception], None]
    ) -> None:
        for task in tasks:
            require_plain_path(task.run_dir)
        if not tasks:
            return
        context = self.spark.sparkContext
        group = f"testbed-suite-{next(_GROUPS)}"
        stop = threading.Event()
        run, description = self.run, self.description

        def job(task: TaskT) -> PackedRun:
            if stop.is_set():
                raise futures.CancelledError
            # job groups are thread-local: set in the thread that submits the job
            context.setJobGroup(group, description, interruptOnCancel=True)
            rdd = context.parallelize([task], 1)
            in_scratch = functools.partial(run_in_scratch, run)
            (packed,) = rdd.map(lambda one: ignoring_sigint(in_scratch, one)).collect()
            return packed

        threads = max(1, min(len(tasks), context.defaultParallelism * JOBS_PER_CORE))
        pool = futures.ThreadPoolExecutor(threads, thread_name_prefix=group)
        pending = {pool.submit(job, task): task for task in tasks}
        try:
            while pending:
                done, _ = futures.wait(pending, timeout=POLL_S, return_when=futures.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: pending[f].index):
                    task = pending.pop(future)
                    ended(task, _land(task, future, self.staged))
        except BaseException:
            stop.set()
            _silence(context)
            pool.shutdown(wait=False, cancel_futures=True)
            running = [f for f in pending if not f.done()]
            while running:  # a job submitted just before stop was set is cancelled here too
                _cancel(context, group)
                futures.wait(running, timeout=POLL_S)
                running = [f for f in running if not f.done()]
            raise
        pool.shutdown(wait=True)


def _silence(context: Any) -> None:
    """Turn Spark's logging off for the rest of this session, before its jobs are cancelled.

    A task killed by the cancellation logs its teardown as an ERROR with a Java stack trace
    (``TaskContextImpl: Error in TaskCompletionListener ... Block broadcast_1 does not exist``):
    noise to a user who just pressed Ctrl-C, after which the session is only stopped. In local
    mode the executors share the driver's logger, so this covers them too; a cluster's executors
    log to their own files, never to this terminal."""
    with contextlib.suppress(Exception):  # a session already going away may refuse
        context.setLogLevel("OFF")


def _cancel(context: Any, group: str) -> None:
    """Cancel the group's running jobs. Only when it has some: a real Ctrl-C already cancelled
    every job (PySpark's own SIGINT handler), and Spark warns about each group it finds empty."""
    tracker = context.statusTracker()
    if set(tracker.getJobIdsForGroup(group)) & set(tracker.getActiveJobsIds()):
        context.cancelJobGroup(group)


def _land(
    task: FolderTask, future: futures.Future[PackedRun], staged: Staged
) -> dict[str, Any] | Exception:
    """Unpack a finished job's run folder into ``task.run_dir``; the row, or why it is lost."""
    try:
        packed = future.result()
    except Exception as error:
        lost = RunLostError(f"Spark lost the run: {_first_line(error)}")
        with contextlib.suppress(Exception):
            trace = "".join(traceback.format_exception(error))
            write_error_folder(task.run_dir, f"{lost}\n\n{trace}", staged)
        return lost
    try:
        if packed.folder is None:
            shutil.rmtree(task.run_dir, ignore_errors=True)
        else:
            unpack_folder(packed.folder, task.run_dir, staged)
    except Exception as error:
        return error
    return packed.row


def _first_line(error: BaseException) -> str:
    """A Py4J error's own first line is "An error occurred while calling o42.collect": say what
    Spark said instead (the first line of the Java exception's message)."""
    java = getattr(error, "java_exception", None)
    text = str(error)
    if java is not None:
        with contextlib.suppress(Exception):
            text = f"{java.getClass().getSimpleName()}: {java.getMessage()}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else type(error).__name__)[:300]


@contextlib.contextmanager
def spark_runs(
    options: SparkOptions, run: Run, *, staged: Staged, description: str
) -> Iterator[SparkRuns]:
    """A Spark session (stopped on exit, Ctrl-C included) and the engine that runs on it."""
    from replay.session import spark_session

    with (
        tempfile.TemporaryDirectory(prefix="testbed-spark-") as work,
        spark_session(options, Path(work)) as spark,
    ):
        yield SparkRuns(spark, run, staged=staged, description=description)


__all__ = [
    "JOBS_PER_CORE",
    "PackedRun",
    "PathNeedsQuotingError",
    "RunLostError",
    "SparkRuns",
    "Staged",
    "UnsafeArchiveError",
    "pack_folder",
    "relative_parts",
    "require_plain_path",
    "run_in_scratch",
    "spark_runs",
    "unpack_folder",
    "write_error_folder",
]
