"""Hudi's marker tests, ported onto :mod:`models.write.markers` and
:mod:`models.write.marker_dir_state` with Hudi's assertions.

- ``TestMarkerDirState`` (``hudi-timeline-service/src/test/java/org/apache/hudi/timeline/service/
  handlers/marker/``, apache/hudi ``1f032015``, the test of apache/hudi#19368).
- ``TestWriteMarkersBase`` with ``TestDirectWriteMarkers`` (``e1c0c995``) and
  ``TestTimelineServerBasedWriteMarkers`` (``hudi-client/hudi-spark-client/src/test/java/org/
  apache/hudi/table/marker/``; the base read as the index's newest stored version, which adds the
  ``file4.log`` marker of ``createLogMarkerIfNotExists``).
- ``TestMarkerUtils#testReadMarkerType`` (``hudi-common``).

Translations: Hudi's ``MarkerCreationFuture`` is the result list of
:func:`~models.write.marker_dir_state.process_marker_creation_requests` (``future.get() ==
"true"`` is ``[True]``; a future completed exceptionally with a ``HoodieIOException`` cause is the
:class:`~models.table_errors.HoodieIOException` it raises). The timeline-server client of
``TestTimelineServerBasedWriteMarkers`` talks to a running server over HTTP; here
:class:`ServerNow` hands each request to the server's folder state as one batch and returns its
answer (the batching itself, and the HTTP failures, are :mod:`sim.marker_server`'s, tested in
``tests/sim/test_marker_server.py``). Hudi's ``CloseFailingHoodieStorage`` writes the bytes and
then fails at ``close()``: :class:`CloseFailing` writes and then raises. Table version 8 writers
mark a log file ``CREATE`` (``createLogMarkerIfNotExists``), so ``file4.log`` is a ``CREATE``
marker, as in the test's non-``AppendMarkerHandler`` branch. Hudi's instants ``000`` and
``00000000000001`` are the model's ``00000000000000001`` (the model's instant times have 17
digits). A timeline-server request answered at once is a batch of its own, written to the next
``MARKERS<n>`` file round robin, as with Hudi's server when requests come one at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from models.format.commit_metadata import WriteStat
from models.storage import InMemoryStorage
from models.table_errors import HoodieIOException
from models.write.finalize import finalize_write
from models.write.marker_dir_state import MarkerDirState, process_marker_creation_requests
from models.write.markers import (
    DIRECT,
    MARKER_TYPE_FILE,
    TIMELINE_SERVER_BASED,
    DirectWriteMarkers,
    all_marker_file_paths,
    created_and_merged_data_paths,
    delete_markers,
    does_marker_dir_exist,
    marker_folder,
    marker_name,
    marker_type_of,
    read_server_marker_files,
    strip_marker_suffix,
    write_marker_type,
)

INSTANT = "00000000000000001"
MARKER_NAME = (
    "2016/68b3ad4d-9d43-4e4c-8f4b-4c9b6d3e8b3a-0_1-0-1_00000000000001.parquet.marker.CREATE"
)


class CloseFailing(InMemoryStorage):
    """Hudi's ``CloseFailingHoodieStorage``: a ``MARKERS<n>`` file is written, then its close
    fails, while ``should_fail_close``."""

    should_fail_close = False

    def write(self, path: str, data: bytes) -> None:
        super().write(path, data)
        name = path.rsplit("/", 1)[-1]
        if self.should_fail_close and name.startswith("MARKERS") and name != MARKER_TYPE_FILE:
            raise OSError("Simulated failure to persist the file at close() time")


# --- TestMarkerDirState ----------------------------------------------------------------------


def markers_file_content(storage: InMemoryStorage, index: int) -> str:
    return storage.read(f"{marker_folder(INSTANT)}/MARKERS{index}").decode()


def test_marker_creation_request_processing():
    """``TestMarkerDirState#testMarkerCreationRequestProcessing``."""
    storage = CloseFailing()
    dir_state = MarkerDirState(storage, INSTANT, 1)
    file_index = dir_state.next_file_index()
    assert file_index is not None

    results = process_marker_creation_requests(dir_state, file_index, [MARKER_NAME])

    assert results == [True]
    assert dir_state.markers == {MARKER_NAME}
    assert markers_file_content(storage, file_index) == MARKER_NAME + "\n"
    # The file index must be released after the batch is processed
    assert dir_state.next_file_index() == file_index


def test_marker_creation_requests_fail_when_flush_fails():
    """``TestMarkerDirState#testMarkerCreationRequestsFailWhenFlushFails``."""
    storage = CloseFailing()
    dir_state = MarkerDirState(storage, INSTANT, 1)
    storage.should_fail_close = True
    file_index = dir_state.next_file_index()
    assert file_index is not None

    with pytest.raises(HoodieIOException):
        process_marker_creation_requests(dir_state, file_index, [MARKER_NAME])

    # The marker without durable persistence must not be acknowledged as existing
    assert dir_state.markers == set()
    # The file index must be released even if the flush fails
    assert dir_state.next_file_index() == file_index


def test_marker_recreation_after_flush_failure():
    """``TestMarkerDirState#testMarkerRecreationAfterFlushFailure``."""
    storage = CloseFailing()
    dir_state = MarkerDirState(storage, INSTANT, 1)
    storage.should_fail_close = True
    with pytest.raises(HoodieIOException):
        process_marker_creation_requests(dir_state, 0, [MARKER_NAME])

    # A retried request for the same marker must succeed once the storage recovers
    storage.should_fail_close = False
    retried = process_marker_creation_requests(dir_state, 0, [MARKER_NAME])

    assert retried == [True]
    assert dir_state.markers == {MARKER_NAME}
    assert markers_file_content(storage, 0) == MARKER_NAME + "\n"


# --- TestWriteMarkersBase, TestDirectWriteMarkers, TestTimelineServerBasedWriteMarkers --------


@dataclass
class ServerNow:
    """A timeline-server marker client whose every request is one batch of the server."""

    storage: InMemoryStorage
    instant_time: str
    states: dict[str, MarkerDirState] = field(default_factory=dict)

    def create_if_not_exists(self, instant_time, partition, file_name, io_type) -> bool:
        state = self.states.setdefault(instant_time, MarkerDirState(self.storage, instant_time, 20))
        index = state.next_file_index()
        assert index is not None
        name = marker_name(partition, file_name, io_type)
        (created,) = process_marker_creation_requests(state, index, [name])
        return created


@dataclass
class Markers:
    """``WriteMarkers`` of instant ``000`` over either kind, with the test's helpers."""

    kind: str
    storage: InMemoryStorage = field(default_factory=InMemoryStorage)

    def __post_init__(self) -> None:
        self.client = (
            DirectWriteMarkers(self.storage)
            if self.kind == DIRECT
            else ServerNow(self.storage, INSTANT)
        )

    def create(self, partition: str, file_name: str, io_type: str) -> None:
        self.client.create_if_not_exists(INSTANT, partition, file_name, io_type)

    def create_some_markers(self, partitioned: bool) -> None:
        self.create("2020/06/01" if partitioned else "", "file1", "MERGE")
        self.create("2020/06/02" if partitioned else "", "file2", "APPEND")
        self.create("2020/06/03" if partitioned else "", "file3", "CREATE")
        self.create("2025/03/28" if partitioned else "", "file4.log", "CREATE")

    def create_invalid_file(self, partition: str, name: str) -> None:
        folder = marker_folder(INSTANT)
        self.storage.create_if_absent(
            f"{folder}/{partition}/{name}" if partition else f"{folder}/{name}", b""
        )

    def files_in_marker_folder(self) -> list[str]:
        """``HoodieTestTable.listRecursive`` of the marker folder."""
        folder = marker_folder(INSTANT)
        return [p for p in self.storage.paths() if p.startswith(folder + "/")]


def relative_marker_path_list(partitioned: bool) -> list[str]:
    """``getRelativeMarkerPathList`` (not an ``AppendMarkerHandler``: the log marker is CREATE)."""
    if partitioned:
        return [
            "2020/06/01/file1.marker.MERGE",
            "2020/06/02/file2.marker.APPEND",
            "2020/06/03/file3.marker.CREATE",
            "2025/03/28/file4.log.marker.CREATE",
        ]
    return [
        "file1.marker.MERGE",
        "file2.marker.APPEND",
        "file3.marker.CREATE",
        "file4.log.marker.CREATE",
    ]


def verify_markers_in_file_system(markers: Markers, partitioned: bool) -> None:
    """Each subclass's ``verifyMarkersInFileSystem``."""
    folder = marker_folder(INSTANT)
    if markers.kind == DIRECT:
        found = sorted(p for p in markers.files_in_marker_folder() if ".marker" in p)
        assert found == [f"{folder}/{e}" for e in relative_marker_path_list(partitioned)]
        return
    all_markers = sorted(
        n for ns in read_server_marker_files(markers.storage, INSTANT).values() for n in ns
    )
    assert all_markers == relative_marker_path_list(partitioned)
    assert markers.storage.exists(f"{folder}/{MARKER_TYPE_FILE}")
    assert markers.storage.read(f"{folder}/{MARKER_TYPE_FILE}").decode() == TIMELINE_SERVER_BASED


KINDS = (DIRECT, TIMELINE_SERVER_BASED)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("partitioned", [True, False])
def test_creation(kind, partitioned):
    """``TestWriteMarkersBase#testCreation``."""
    markers = Markers(kind)
    markers.create_some_markers(partitioned)
    assert does_marker_dir_exist(markers.storage, INSTANT)
    verify_markers_in_file_system(markers, partitioned)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("partitioned", [True, False])
def test_deletion_when_marker_dir_exists(kind, partitioned):
    """``TestWriteMarkersBase#testDeletionWhenMarkerDirExists``."""
    markers = Markers(kind)
    markers.create("2020/06/01" if partitioned else "", "file1", "MERGE")
    assert does_marker_dir_exist(markers.storage, INSTANT)
    assert delete_markers(markers.storage, INSTANT)
    assert not does_marker_dir_exist(markers.storage, INSTANT)


@pytest.mark.parametrize("kind", KINDS)
def test_deletion_when_marker_dir_not_exists(kind):
    """``TestWriteMarkersBase#testDeletionWhenMarkerDirNotExists``."""
    markers = Markers(kind)
    assert not does_marker_dir_exist(markers.storage, INSTANT)
    assert all_marker_file_paths(markers.storage, INSTANT) == []
    assert not delete_markers(markers.storage, INSTANT)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("partitioned", [True, False])
def test_data_paths_when_creating_or_merging(kind, partitioned):
    """``TestWriteMarkersBase#testDataPathsWhenCreatingOrMerging``."""
    markers = Markers(kind)
    markers.create_some_markers(partitioned)
    markers.create_invalid_file("2020/06/01" if partitioned else "", "invalid_file3")
    file_size = len([p for p in markers.files_in_marker_folder() if MARKER_TYPE_FILE not in p])
    assert file_size == len(relative_marker_path_list(partitioned)) + 1
    expected = ["2020/06/01/file1", "2020/06/03/file3"] if partitioned else ["file1", "file3"]
    expected.append("2025/03/28/file4.log" if partitioned else "file4.log")
    assert created_and_merged_data_paths(markers.storage, INSTANT) == expected


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("partitioned", [True, False])
def test_all_marker_paths(kind, partitioned):
    """``TestWriteMarkersBase#testAllMarkerPaths``."""
    markers = Markers(kind)
    markers.create_some_markers(partitioned)
    paths = [
        p for p in all_marker_file_paths(markers.storage, INSTANT) if MARKER_TYPE_FILE not in p
    ]
    assert paths == relative_marker_path_list(partitioned)


def test_strip_marker_suffix():
    """``TestWriteMarkersBase#testStripMarkerSuffix``."""
    path_prefix = "file:///tmp/table/.hoodie/file"
    marker_file_path = path_prefix + ".marker.APPEND"
    assert strip_marker_suffix(marker_file_path) == path_prefix


def test_marker_reconciliation():
    """``TestDirectWriteMarkers#testMarkerReconciliation``: finalizing deletes the data file
    that has a marker and no write stat."""
    markers = Markers(DIRECT)
    markers.create_some_markers(True)
    data_file1 = "2020/06/01/file5.parquet"
    markers.storage.create_if_absent(data_file1, b"")
    markers.create("2020/06/01", "file5.parquet", "CREATE")
    data_file2 = "2020/06/01/file6.parquet"
    markers.storage.create_if_absent(data_file2, b"")
    markers.create("2020/06/01", "file6.parquet", "CREATE")

    expected_data_paths = [e[: e.index(".marker")] for e in relative_marker_path_list(True)]
    expected_data_paths.append(data_file1)  # file6 left out: it is deleted
    stats = [
        WriteStat(file_id="", path=p, partition_path=p.rsplit("/", 1)[0])
        for p in expected_data_paths
    ]

    finalize_write(markers.storage, INSTANT, stats)
    assert markers.storage.exists(data_file1)
    assert not markers.storage.exists(data_file2)


# --- TestMarkerUtils -------------------------------------------------------------------------


def test_read_marker_type():
    """``TestMarkerUtils#testReadMarkerType``."""
    storage = InMemoryStorage()
    type_file = f"{marker_folder(INSTANT)}/{MARKER_TYPE_FILE}"
    assert marker_type_of(storage, INSTANT) is None, "File does not exist, should be empty"

    # HUDI-6440: Fallback to default Marker Type if the content of marker file is empty
    storage.create_if_absent(type_file, b"")
    assert marker_type_of(storage, INSTANT) is None, "File exists but empty, should be empty"

    storage.delete(type_file)
    write_marker_type(storage, INSTANT, DIRECT)
    assert marker_type_of(storage, INSTANT) == DIRECT, (
        "File exists and contains DIRECT, should be DIRECT"
    )

    storage.delete(type_file)
    write_marker_type(storage, INSTANT, TIMELINE_SERVER_BASED)
    assert marker_type_of(storage, INSTANT) == TIMELINE_SERVER_BASED, (
        "File exists and contains TIMELINE_SERVER_BASED, should be TIMELINE_SERVER_BASED"
    )
