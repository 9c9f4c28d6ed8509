"""Storage port and its two implementations: in-memory (simulation) and a local directory.

Hudi's timeline is only correct because instant files are *write-once*: a transition creates the
next state's file with an atomic put-if-absent, and a second create of the same name fails. That
turns an instant-time collision into an abort instead of a silent overwrite (docs/protocol.md section 2),
so :meth:`Storage.create_if_absent` is the one primitive everything else builds on.

Paths are relative to the table's base path and always use ``/``.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable


class FileAlreadyExistsError(FileExistsError):
    """A write-once file was created twice."""


@dataclass(frozen=True, order=True)
class FileStatus:
    """One listed file: its path relative to the table, size and modification time."""

    path: str
    size: int
    modified_ms: int

    @cached_property
    def name(self) -> str:
        """The last path component (computed once: views read it for every file, every time)."""
        return self.path.rsplit("/", 1)[-1]


@runtime_checkable
class Storage(Protocol):
    """What the protocol needs of a file system or object store."""

    def create_if_absent(self, path: str, data: bytes) -> None:
        """Atomically create ``path`` with ``data``; raise FileAlreadyExistsError if it exists."""
        ...

    def write(self, path: str, data: bytes) -> None:
        """Create or replace ``path`` (only for mutable files such as hoodie.properties)."""
        ...

    def read(self, path: str) -> bytes:
        """The whole content of ``path``; FileNotFoundError if absent."""
        ...

    def exists(self, path: str) -> bool: ...

    def delete(self, path: str) -> None:
        """Remove ``path`` if it exists (rollback deletes data files and markers)."""
        ...

    def list_dir(self, path: str) -> list[FileStatus]:
        """Files (not folders) directly inside folder ``path``, sorted by path."""
        ...

    def list_subdirs(self, path: str) -> list[str]:
        """Names of the folders directly inside ``path``, sorted."""
        ...


def join(*parts: str) -> str:
    """Join path parts with ``/``, skipping empty parts (a non-partitioned table's partition)."""
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def _status_path(status: FileStatus) -> str:
    return status.path


def _check_relative(path: str) -> str:
    if not path or path.startswith("/") or ".." in path.split("/"):
        raise ValueError(f"storage paths are relative to the table and stay inside it: {path!r}")
    return path


def _check_folder(path: str) -> str:
    """Like :func:`_check_relative`, but ``""`` (the table's root) is a valid folder."""
    return path if path == "" else _check_relative(path)


class InMemoryStorage:
    """A dict of path -> bytes with a logical modification clock; fast and deterministic.

    ``modified_ms`` comes from :attr:`now_ms`, which the owner (the simulator, or a test) sets; the
    storage never reads a real clock. Files are also indexed by folder, so listing a folder costs
    what is in it, not what is in the whole table (a simulated table holds tens of thousands of
    files and the protocol lists the timeline on every commit); a folder's sorted listing is kept
    and updated in place as files come and go, since folders are listed far more often than written.
    """

    def __init__(self) -> None:
        self._files: dict[str, tuple[bytes, FileStatus]] = {}
        self._folders: dict[str, set[str]] = {}  # folder -> names of files directly inside
        self._listings: dict[str, list[FileStatus]] = {}  # folder -> sorted listing, until changed
        self.now_ms = 0

    def _index(self, path: str, status: FileStatus) -> None:
        """Add ``path`` to its folder; a cached listing is updated in place (a timeline or a
        partition changes with every commit, and re-sorting it each time showed in profiles)."""
        folder, _, name = path.rpartition("/")
        names = self._folders.setdefault(folder, set())
        listing = self._listings.get(folder)
        if listing is not None:
            at = bisect.bisect_left(listing, path, key=_status_path)
            if name in names:
                listing[at] = status
            else:
                listing.insert(at, status)
        names.add(name)

    def create_if_absent(self, path: str, data: bytes) -> None:
        _check_relative(path)
        if path in self._files:
            raise FileAlreadyExistsError(path)
        self._store(path, data)

    def write(self, path: str, data: bytes) -> None:
        self._store(_check_relative(path), data)

    def _store(self, path: str, data: bytes) -> None:
        content = bytes(data)
        status = FileStatus(path, len(content), self.now_ms)
        self._files[path] = (content, status)
        self._index(path, status)

    def read(self, path: str) -> bytes:
        try:
            return self._files[_check_relative(path)][0]
        except KeyError:
            raise FileNotFoundError(path) from None

    def exists(self, path: str) -> bool:
        return _check_relative(path) in self._files

    def delete(self, path: str) -> None:
        if self._files.pop(_check_relative(path), None) is not None:
            folder, _, name = path.rpartition("/")
            listing = self._listings.get(folder)
            if listing is not None:
                del listing[bisect.bisect_left(listing, path, key=_status_path)]
            names = self._folders[folder]
            names.discard(name)
            if not names:
                del self._folders[folder]
                self._listings.pop(folder, None)

    def list_dir(self, path: str) -> list[FileStatus]:
        _check_folder(path)
        folder = path.strip("/")
        listing = self._listings.get(folder)
        if listing is None:
            prefix = f"{folder}/" if folder else ""
            files = self._files
            listing = [files[prefix + name][1] for name in sorted(self._folders.get(folder, ()))]
            self._listings[folder] = listing
        return list(listing)

    def list_subdirs(self, path: str) -> list[str]:
        _check_folder(path)
        folder = path.strip("/")
        prefix = folder + "/" if folder else ""
        subdirs = {
            rest.split("/", 1)[0]
            for known in self._folders
            if (rest := known[len(prefix) :] if known.startswith(prefix) else "") and known
        }
        return sorted(subdirs)

    def paths(self) -> Iterable[str]:
        """Every stored path, sorted (for tests and for materializing a simulated table)."""
        return sorted(self._files)


class LocalStorage:
    """A table in a local directory. ``create_if_absent`` uses ``O_CREAT | O_EXCL`` (atomic).

    ``now_ms``: when set (the simulator sets it before each operation), every file created or
    written gets that modification time instead of the wall clock's, so a simulated table on disk
    has the same, reproducible modification times as its in-memory twin.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.now_ms: int | None = None

    def _stamp(self, target: Path) -> None:
        if self.now_ms is not None:
            stamp_ns = self.now_ms * 1_000_000
            os.utime(target, ns=(stamp_ns, stamp_ns))

    def _abs(self, path: str) -> Path:
        return self.root / _check_relative(path) if path else self.root

    def create_if_absent(self, path: str, data: bytes) -> None:
        target = self._abs(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise FileAlreadyExistsError(path) from None
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        self._stamp(target)

    def write(self, path: str, data: bytes) -> None:
        target = self._abs(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp-write")
        tmp.write_bytes(data)
        self._stamp(tmp)
        os.replace(tmp, target)

    def read(self, path: str) -> bytes:
        return self._abs(path).read_bytes()

    def exists(self, path: str) -> bool:
        return self._abs(path).exists()

    def delete(self, path: str) -> None:
        self._abs(path).unlink(missing_ok=True)

    def list_dir(self, path: str) -> list[FileStatus]:
        folder = self._abs(path)
        if not folder.is_dir():
            return []
        out = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_file():
                    st = entry.stat()
                    out.append(
                        FileStatus(join(path, entry.name), st.st_size, st.st_mtime_ns // 10**6)
                    )
        return sorted(out)

    def list_subdirs(self, path: str) -> list[str]:
        folder = self._abs(path)
        if not folder.is_dir():
            return []
        with os.scandir(folder) as entries:
            return sorted(e.name for e in entries if e.is_dir())
