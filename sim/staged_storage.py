"""Storage writes held back until the writer may make them: a write task's files wait for their
markers.

With timeline-server-based markers a Hudi write handle asks the server for its marker and writes
its data file only after the answer (``TimelineServerBasedWriteMarkers#create`` blocks on the
HTTP reply). The simulator runs a flush's write code in one step, so it runs it over a
:class:`StagedStorage`: reads see the real storage with the flush's own writes on top, writes are
kept in order, and :meth:`StagedStorage.apply` makes them on the real storage once every marker is
answered. The order of requests on the real storage is the order the code made them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from models.storage import FileAlreadyExistsError, FileStatus, Storage
from models.write.write_handles import PARTITION_METADATA


@dataclass
class StagedStorage:
    """A :class:`~models.storage.Storage` over ``base`` whose writes wait for :meth:`apply`.

    ``probe`` answers whether a file exists for a staged create (the check a conditional PUT
    makes itself, so it is not a request of its own; default ``base``)."""

    base: Storage
    probe: Storage | None = None
    _log: list[tuple[str, str, bytes]] = field(default_factory=list)
    _view: dict[str, bytes | None] = field(default_factory=dict)  # None: deleted

    def create_if_absent(self, path: str, data: bytes) -> None:
        if self._exists(path, self.probe or self.base):
            raise FileAlreadyExistsError(path)
        self._keep("create_if_absent", path, bytes(data))

    def write(self, path: str, data: bytes) -> None:
        self._keep("write", path, bytes(data))

    def delete(self, path: str) -> None:
        self._log.append(("delete", path, b""))
        self._view[path] = None

    def _keep(self, kind: str, path: str, data: bytes) -> None:
        self._log.append((kind, path, data))
        self._view[path] = data

    def read(self, path: str) -> bytes:
        if path in self._view:
            data = self._view[path]
            if data is None:
                raise FileNotFoundError(path)
            return data
        return self.base.read(path)

    def exists(self, path: str) -> bool:
        return self._exists(path, self.base)

    def _exists(self, path: str, storage: Storage) -> bool:
        if path in self._view:
            return self._view[path] is not None
        return storage.exists(path)

    def list_dir(self, path: str) -> list[FileStatus]:
        folder = path.strip("/")
        listed = {s.path: s for s in self.base.list_dir(path)}
        for staged, data in self._view.items():
            if staged.rpartition("/")[0] != folder:
                continue
            if data is None:
                listed.pop(staged, None)
            else:
                listed[staged] = FileStatus(staged, len(data), 0)
        return sorted(listed.values())

    def list_subdirs(self, path: str) -> list[str]:
        folder = path.strip("/")
        prefix = f"{folder}/" if folder else ""
        names = set(self.base.list_subdirs(path))
        for staged, data in self._view.items():
            rest = staged[len(prefix) :] if staged.startswith(prefix) else ""
            if data is not None and "/" in rest:
                names.add(rest.split("/", 1)[0])
        return sorted(names)

    def apply(self) -> None:
        """Make the kept writes on the real storage, in order (a failure stops there).

        A partition's ``.hoodie_partition_metadata`` that another writer created meanwhile is
        left as it is: Hudi's ``HoodiePartitionMetadata#trySave`` logs that failure and goes on
        ("this is okay, as long as at least 1 of these succeeded")."""
        log, self._log = self._log, []
        self._view.clear()
        for kind, path, data in log:
            if kind == "delete":
                self.base.delete(path)
            elif kind == "write":
                self.base.write(path, data)
            elif path.rpartition("/")[2] == PARTITION_METADATA:
                with contextlib.suppress(FileAlreadyExistsError):
                    self.base.create_if_absent(path, data)
            else:
                self.base.create_if_absent(path, data)


__all__ = ["StagedStorage"]
