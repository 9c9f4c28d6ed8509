"""Write markers, both kinds Hudi writes (``hoodie.write.markers.type``), and how they are read.

A marker announces a data file before it is written, so a rollback can find the files of a failed
instant and finalizing a commit can find files it does not list (docs/protocol.md section 3).

``DIRECT`` (``DirectWriteMarkers``; the Flink default: ``HoodieWriteConfig.Builder#
getDefaultMarkersType`` gives DIRECT for Flink and Java)
    One empty file per data file, ``.hoodie/.temp/<instant>/<partition>/<file>.marker.<IOType>``
    (``WriteMarkers#getMarkerPath``); the Flink handles create it if absent
    (``FlinkCreateHandle``/``FlinkAppendHandle`` call ``createIfNotExists``). Reading them lists
    every folder under the instant's marker folder.
``TIMELINE_SERVER_BASED`` (``TimelineServerBasedWriteMarkers``; usable from Flink since
apache/hudi#14202)
    The writers send each marker name, ``<partition>/<file>.marker.<IOType>``, to the embedded
    timeline server, which batches them (``MarkerHandler``) and writes them, one name per line,
    into a few files ``.hoodie/.temp/<instant>/MARKERS<n>`` (one per batch worker,
    ``MarkerDirState#flushMarkersToFile`` rewrites the whole file) plus ``MARKERS.type`` holding
    ``TIMELINE_SERVER_BASED`` (written before the first batch). :class:`MarkerDirState` is the
    server's state of one marker folder; the server process that batches requests lives in the
    simulator.

Reading (``MarkerBasedRollbackUtils#getAllMarkerPaths``): a folder with ``MARKERS.type`` saying
``TIMELINE_SERVER_BASED`` is read from its ``MARKERS<n>`` files, any other as direct markers.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Protocol

from models.storage import FileAlreadyExistsError, FileStatus, Storage, join

MARKERS_FOLDER = ".hoodie/.temp"
MARKER_TYPES = ("CREATE", "MERGE", "APPEND")
"""Hudi's ``IOType`` values a marker name ends with."""
RECONCILED_MARKER_TYPES = ("CREATE", "MERGE")
"""Markers whose files finalizing a write deletes when the commit does not list them."""
MARKER_EXTENSION = ".marker."
MARKER_TYPE_FILE = "MARKERS.type"
"""``MarkerUtils.MARKER_TYPE_FILENAME``."""
MARKERS_FILE_PREFIX = "MARKERS"
"""``MarkerUtils.MARKERS_FILENAME_PREFIX``: the server's files are ``MARKERS0``, ``MARKERS1``..."""
TIMELINE_SERVER_BASED = "TIMELINE_SERVER_BASED"
DIRECT = "DIRECT"


@dataclass(frozen=True)
class Marker:
    """One marker: the data file it announces and how it was written; ``path`` is the marker
    file (direct) or the ``MARKERS<n>`` file that holds it (timeline-server based)."""

    partition: str
    file_name: str
    marker_type: str
    path: str

    @property
    def data_path(self) -> str:
        return join(self.partition, self.file_name)


class WriteMarkers(Protocol):
    """How a write handle creates its marker (Hudi's ``WriteMarkers#createIfNotExists``)."""

    def create_if_not_exists(
        self, instant_time: str, partition: str, file_name: str, io_type: str
    ) -> bool:
        """Create the marker of ``file_name``; False if it existed already."""
        ...


def marker_folder(instant_time: str) -> str:
    """``.hoodie/.temp/<instant>`` (``HoodieTableMetaClient#getMarkerFolderPath``)."""
    return join(MARKERS_FOLDER, instant_time)


def marker_name(partition: str, file_name: str, io_type: str) -> str:
    """``<partition>/<file>.marker.<IOType>``, without partition on a non-partitioned table
    (``WriteMarkers#getMarkerFileName`` under ``getMarkerPath``)."""
    return join(partition, f"{file_name}{MARKER_EXTENSION}{io_type}")


def parse_marker_name(name: str, path: str) -> Marker | None:
    """The marker a name relative to the marker folder gives (None: not a marker)."""
    partition, _, base = name.rpartition("/")
    file_name, sep, io_type = base.rpartition(MARKER_EXTENSION)
    if not sep or io_type not in MARKER_TYPES:
        return None
    return Marker(partition, file_name, io_type, path)


@dataclass(frozen=True)
class DirectWriteMarkers:
    """Direct markers on ``storage`` (``DirectWriteMarkers#create`` with ``checkIfExists``)."""

    storage: Storage

    def create_if_not_exists(
        self, instant_time: str, partition: str, file_name: str, io_type: str
    ) -> bool:
        path = join(marker_folder(instant_time), marker_name(partition, file_name, io_type))
        with contextlib.suppress(FileAlreadyExistsError):  # a retried write re-creates its marker
            self.storage.create_if_absent(path, b"")
            return True
        return False


def marker_type_of(storage: Storage, instant_time: str) -> str | None:
    """What ``MARKERS.type`` says (``MarkerUtils#readMarkerType``; None: absent or empty)."""
    path = join(marker_folder(instant_time), MARKER_TYPE_FILE)
    if not storage.exists(path):
        return None
    return _type_in(storage, path)


def _type_in(storage: Storage, path: str) -> str | None:
    return storage.read(path).decode().strip() or None


def list_markers(storage: Storage, instant_time: str) -> list[Marker]:
    """Every marker of ``instant_time``, whichever kind wrote them, sorted by data file path.

    Hudi asks for ``MARKERS.type`` first (one ``exists``); here it is looked for in the listing
    of the marker folder, which reading direct markers makes anyway."""
    root = marker_folder(instant_time)
    top = storage.list_dir(root)
    kind = next((_type_in(storage, s.path) for s in top if s.name == MARKER_TYPE_FILE), None)
    if kind == TIMELINE_SERVER_BASED:
        markers = _server_markers(storage, instant_time, top)
    else:
        markers = _direct_markers(storage, instant_time, top)
    return sorted(markers, key=lambda m: m.data_path)


def _direct_markers(storage: Storage, instant_time: str, top: list[FileStatus]) -> list[Marker]:
    """Every ``*.marker.*`` file under the marker folder (``DirectWriteMarkers#
    allMarkerFilePaths``); ``top`` is the folder's own listing."""
    root = marker_folder(instant_time)
    out = []
    stack = [""]
    while stack:
        partition = stack.pop()
        folder = join(root, partition)
        for status in top if partition == "" else storage.list_dir(folder):
            marker = parse_marker_name(join(partition, status.name), status.path)
            if marker is not None:
                out.append(marker)
        stack.extend(join(partition, sub) for sub in storage.list_subdirs(folder))
    return out


def read_server_marker_files(
    storage: Storage, instant_time: str, listing: list[FileStatus] | None = None
) -> dict[int, list[str]]:
    """The names in each ``MARKERS<n>`` file, by ``n`` (``MarkerUtils#
    readTimelineServerBasedMarkersFromFileSystem``: one name per line); ``listing``: the marker
    folder's, if already made."""
    if listing is None:
        listing = storage.list_dir(marker_folder(instant_time))
    out: dict[int, list[str]] = {}
    for status in listing:
        suffix = status.name.removeprefix(MARKERS_FILE_PREFIX)
        if status.name == MARKER_TYPE_FILE or suffix == status.name or not suffix.isdigit():
            continue
        lines = storage.read(status.path).decode().splitlines()
        out[int(suffix)] = [line for line in lines if line]
    return out


def _server_markers(storage: Storage, instant_time: str, top: list[FileStatus]) -> list[Marker]:
    folder = marker_folder(instant_time)
    out = []
    for index, names in sorted(read_server_marker_files(storage, instant_time, top).items()):
        path = join(folder, f"{MARKERS_FILE_PREFIX}{index}")
        out.extend(m for name in names if (m := parse_marker_name(name, path)) is not None)
    return out


def delete_markers(storage: Storage, instant_time: str) -> bool:
    """Remove the marker folder of ``instant_time``, either kind (``deleteMarkerDir``,
    ``quietDeleteMarkerDir``); False if there was none."""
    existed = False
    stack = [marker_folder(instant_time)]
    while stack:
        folder = stack.pop()
        for status in storage.list_dir(folder):
            storage.delete(status.path)
            existed = True
        subdirs = storage.list_subdirs(folder)
        existed = existed or bool(subdirs)
        stack.extend(join(folder, sub) for sub in subdirs)
    return existed


def does_marker_dir_exist(storage: Storage, instant_time: str) -> bool:
    """Whether the instant's marker folder holds anything (``doesMarkerDirExist``; an object
    store has no empty folders)."""
    folder = marker_folder(instant_time)
    return bool(storage.list_dir(folder) or storage.list_subdirs(folder))


def all_marker_file_paths(storage: Storage, instant_time: str) -> list[str]:
    """Every marker's name relative to the marker folder, sorted (``allMarkerFilePaths``)."""
    markers = list_markers(storage, instant_time)
    return sorted(marker_name(m.partition, m.file_name, m.marker_type) for m in markers)


def created_and_merged_data_paths(storage: Storage, instant_time: str) -> list[str]:
    """The data files ``CREATE`` and ``MERGE`` markers name, sorted
    (``createdAndMergedDataPaths``: what finalizing a write reconciles)."""
    markers = list_markers(storage, instant_time)
    return sorted(m.data_path for m in markers if m.marker_type in RECONCILED_MARKER_TYPES)


def strip_marker_suffix(path: str) -> str:
    """``path`` without its ``.marker.<IOType>`` (``WriteMarkers#stripMarkerSuffix``)."""
    return path[: path.index(".marker")]


def write_marker_type(storage: Storage, instant_time: str, marker_type: str) -> None:
    """``MARKERS.type`` holding ``marker_type`` (``MarkerUtils#writeMarkerTypeToFile``)."""
    storage.write(join(marker_folder(instant_time), MARKER_TYPE_FILE), marker_type.encode())


__all__ = [
    "DIRECT",
    "MARKERS_FILE_PREFIX",
    "MARKERS_FOLDER",
    "MARKER_TYPES",
    "MARKER_TYPE_FILE",
    "RECONCILED_MARKER_TYPES",
    "TIMELINE_SERVER_BASED",
    "DirectWriteMarkers",
    "Marker",
    "WriteMarkers",
    "all_marker_file_paths",
    "created_and_merged_data_paths",
    "delete_markers",
    "does_marker_dir_exist",
    "list_markers",
    "marker_folder",
    "marker_name",
    "marker_type_of",
    "parse_marker_name",
    "read_server_marker_files",
    "strip_marker_suffix",
    "write_marker_type",
]
