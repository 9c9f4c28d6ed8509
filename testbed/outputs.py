"""Output folders that never cost a user data: markers, the replace rule and one writer at a time.

Every folder a command writes (a run, suite, sweep, swarm, explore or demo folder) holds a marker file,
``.testbed-output.json`` (``{"kind": ...}``; a dot-file, so Hudi readers skip it in a table
root). A command replaces an existing folder only when it is one the testbed wrote: it has the
marker, it is empty, or it holds nothing but the names such a folder is made of (folders written
before markers existed). Anything else is refused with one line naming the folder, unless the
user passes ``--force``.

A command also holds ``<folder>.lock`` (next to the folder, since the folder itself is replaced by
a rename) for as long as it writes: a second command aimed at the same folder is refused at once,
naming the pid that owns it. The lock is an ``flock`` on that file, so a crashed owner leaves a
file that the next command takes over.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

MARKER = ".testbed-output.json"
LOCK_SUFFIX = ".lock"
KINDS = ("run", "suite", "sweep", "swarm", "explore", "demo")

_RUN_ENTRIES = frozenset(
    {
        "scenario.toml",
        "history.jsonl",
        "result.json",
        "table",
        "error.txt",
        "plots",
        "counterexample.toml",
        "counterexample.json",
        "counterexample.txt",
    }
)
_LEGACY_ENTRIES = {
    "run": _RUN_ENTRIES,
    "suite": frozenset(
        {"runs", "scenarios", "plots", "summary.json", "summary.parquet", "report.html"}
    ),
    "sweep": frozenset(
        {"sweep.parquet", "summary.json", "report.html", "plots", "report_error.txt"}
    ),
    "explore": frozenset({"explore.json", "counterexample.toml"}),
    "demo": frozenset({".hoodie", "city=sf"}),
}
"""What a folder of each kind is made of: one holding only these names (and staging files), its
signature among them (:data:`_SIGNATURES`), was written by the testbed before folders carried a
marker, and may be replaced."""

_SIGNATURES = {
    "run": frozenset({"result.json", "history.jsonl"}),
    "suite": frozenset({"summary.json"}),
    "sweep": frozenset({"sweep.parquet"}),
    "explore": frozenset({"explore.json"}),
    "demo": frozenset({".hoodie"}),
}
"""The names without which a folder is not taken for one the testbed wrote (a folder holding only
``table/`` or ``plots/`` may be a user's)."""


class OutputFolderError(Exception):
    """An output folder the command may not write (one line for the user)."""


def write_marker(folder: Path, kind: str) -> None:
    """Mark ``folder`` as a ``kind`` folder the testbed wrote."""
    if kind not in KINDS:
        raise ValueError(f"unknown output kind {kind!r}")
    (folder / MARKER).write_text(json.dumps({"kind": kind}) + "\n")


def marked_kind(folder: Path) -> str | None:
    """The kind in ``folder``'s marker, or ``None`` when it has no readable marker."""
    try:
        data = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    kind = data.get("kind") if isinstance(data, dict) else None
    return kind if kind in KINDS else None


def _written_by_testbed(folder: Path) -> bool:
    if marked_kind(folder) is not None:
        return True
    names = {p.name for p in folder.iterdir() if not p.name.endswith(".partial")}
    return not names or any(
        names <= entries and names & _SIGNATURES[kind] for kind, entries in _LEGACY_ENTRIES.items()
    )


def check_replaceable(target: Path, *, force: bool = False) -> None:
    """Raise :class:`OutputFolderError` unless ``target`` may be (re)written: it does not exist,
    or it is a folder the testbed wrote, or ``force`` is given (a folder only, never a file)."""
    if not target.exists() and not target.is_symlink():
        return
    if target.is_symlink() or not target.is_dir():
        raise OutputFolderError(f"{target}: exists and is not a folder; choose another output")
    if target.resolve() in (Path.cwd().resolve(), Path.home().resolve(), Path("/")):
        raise OutputFolderError(f"{target}: refusing to replace this folder; choose another output")
    if force or _written_by_testbed(target):
        return
    raise OutputFolderError(
        f"{target}: not a folder the testbed wrote (no {MARKER}); refusing to replace it "
        "(choose another output, or pass --force to replace it)"
    )


def lock_path(target: Path) -> Path:
    """The lock file of output folder ``target``."""
    resolved = target.resolve()
    return resolved.with_name(resolved.name + LOCK_SUFFIX)


@contextlib.contextmanager
def output_lock(target: Path) -> Iterator[None]:
    """Hold ``target``'s lock while the block runs; raise :class:`OutputFolderError` naming the
    owner when another process holds it."""
    path = lock_path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OutputFolderError(
                f"{target}: another testbed command is writing it (pid {owner}; lock {path})"
            ) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the owner removed the file between our open and our lock: try again
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def claimed(target: Path, *, force: bool = False) -> Iterator[None]:
    """The output folder ``target``, locked for this command and checked to be replaceable."""
    with output_lock(target):
        check_replaceable(target, force=force)
        yield


def inside(folder: Path, child: Path) -> bool:
    """True when ``child`` lies inside ``folder`` (both resolved)."""
    return child.resolve().is_relative_to(folder.resolve())
