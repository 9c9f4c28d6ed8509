"""The timeline server's state of one marker folder (Hudi's ``MarkerDirState``, in
``hudi-timeline-service``), and how it processes one batch of marker requests.

The server process that gathers requests and hands batches to workers is the simulator's
(:mod:`sim.marker_server`); the file format and reading are :mod:`models.write.markers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from models.storage import Storage, join
from models.table_errors import HoodieIOException
from models.write.markers import (
    MARKER_TYPE_FILE,
    MARKERS_FILE_PREFIX,
    TIMELINE_SERVER_BASED,
    marker_folder,
    read_server_marker_files,
    write_marker_type,
)


@dataclass
class MarkerDirState:
    """The timeline server's state of one marker folder (Hudi's ``MarkerDirState``): every marker
    it accepted, and per batch worker ``n`` the content of its ``MARKERS<n>`` file.

    Built from the files already there (``syncMarkersFromFileSystem``, as a restarted server
    does the first time a request names the folder). As in Hudi, a rebuilt file's content is its
    names joined by ``,`` with no line end (Hadoop's ``StringUtils.join(",", ...)``; sorted here,
    a ``HashSet``'s order in Hudi), while :meth:`accept` appends ``name\n``
    (``addMarkerToMap``): a batch written to a rebuilt file runs its lines together.
    :meth:`accept` is the in-memory part of ``processMarkerCreationRequests`` (a name seen before
    is refused: False), :meth:`flush` the write (``MARKERS.type`` first if not yet written, then
    the whole ``MARKERS<n>`` file when the batch added a name), :meth:`forget` what
    apache/hudi#19368 does when that write fails (the batch's names dropped)."""

    storage: Storage
    instant_time: str
    num_threads: int
    markers: set[str] = field(default_factory=set)
    buffers: dict[int, str] = field(default_factory=dict)
    type_written: bool = False
    in_use: set[int] = field(default_factory=set)
    last_index: int = -1
    _batch: dict[int, tuple[int, list[str]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, names in read_server_marker_files(self.storage, self.instant_time).items():
            if names:
                self.buffers[index] = ",".join(sorted(set(names)))
                self.markers.update(names)
        path = join(marker_folder(self.instant_time), MARKER_TYPE_FILE)
        self.type_written = self.storage.exists(path)

    def next_file_index(self) -> int | None:
        """The next free worker file, round robin (``getNextFileIndexToUse``; None: all busy)."""
        for step in range(1, self.num_threads + 1):
            index = (self.last_index + step) % self.num_threads
            if index not in self.in_use:
                self.in_use.add(index)
                self.last_index = index
                return index
        return None

    def accept(self, index: int, names: list[str]) -> list[bool]:
        """Add ``names`` to worker file ``index``; each result False for a duplicate."""
        buffer = self.buffers.get(index, "")
        added: list[str] = []
        results = []
        for name in names:
            new = name not in self.markers
            if new:
                self.markers.add(name)
                added.append(name)
            results.append(new)
        self.buffers[index] = buffer + "".join(f"{name}\n" for name in added)
        self._batch[index] = (len(buffer), added)
        return results

    def flush(self, index: int) -> None:
        """Write ``MARKERS.type`` (once) and, when the batch added a name, the whole
        ``MARKERS<index>`` file."""
        folder = marker_folder(self.instant_time)
        if not self.type_written:
            write_marker_type(self.storage, self.instant_time, TIMELINE_SERVER_BASED)
            self.type_written = True
        if self._batch.get(index, (0, []))[1]:
            content = self.buffers[index].encode()
            self.storage.write(join(folder, f"{MARKERS_FILE_PREFIX}{index}"), content)

    def forget(self, index: int) -> None:
        """Drop the names of worker file ``index``'s last batch, whose write failed
        (apache/hudi#19368)."""
        length, added = self._batch.pop(index, (0, []))
        self.markers.difference_update(added)
        self.buffers[index] = self.buffers.get(index, "")[:length]

    def release(self, index: int) -> None:
        """Worker file ``index`` is free again."""
        self.in_use.discard(index)


def process_marker_creation_requests(
    state: MarkerDirState, index: int, names: list[str], *, swallow_failure: bool = False
) -> list[bool]:
    """One batch of worker file ``index`` (``MarkerDirState#processMarkerCreationRequests``):
    accept ``names``, write the files, release the file index.

    A failed write (apache/hudi#19368, Hudi's latest) drops the batch's names and raises
    :class:`HoodieIOException` (the requests fail), the index released all the same. With
    ``swallow_failure`` (Hudi 1.0 and 1.1: ``flushMarkersToFile`` closes the writer with
    ``closeQuietly``, and a store that uploads at ``close()`` fails there) the failure is lost:
    the names stay in memory and the requests are answered as if the file were written."""
    try:
        results = state.accept(index, names)
        try:
            state.flush(index)
        except OSError as error:
            if swallow_failure:
                return results
            state.forget(index)
            path = join(marker_folder(state.instant_time), f"{MARKERS_FILE_PREFIX}{index}")
            raise HoodieIOException(f"Failed to overwrite marker file {path}: {error}") from error
    finally:
        state.release(index)
    return results


__all__ = ["MarkerDirState", "process_marker_creation_requests"]
