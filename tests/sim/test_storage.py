"""Tests for sim/storage.py (and LocalStorage.now_ms in models/storage.py).

Simulated storage must stamp files with simulated time on both implementations, fail writes only
before touching anything, and draw its failures from its own stream in a fixed pattern.
"""

from __future__ import annotations

import os

import pytest

from models.storage import FileAlreadyExistsError, InMemoryStorage, LocalStorage, Storage
from sim.rng import Rng
from sim.storage import SimStorage, StorageWriteError


class Now:
    """A settable stand-in for the simulator's clock."""

    def __init__(self, ms: int = 0) -> None:
        self.ms = ms

    def __call__(self) -> int:
        return self.ms


def make_inner(kind: str, tmp_path) -> InMemoryStorage | LocalStorage:
    return InMemoryStorage() if kind == "memory" else LocalStorage(tmp_path / "table")


@pytest.fixture(params=("memory", "local"))
def kind(request) -> str:
    return request.param


def test_is_a_storage(kind, tmp_path):
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(), rng=Rng(1))
    assert isinstance(storage, Storage)


def test_modification_times_are_simulated_time(kind, tmp_path):
    epoch_ms = 1_700_000_000_000
    now = Now(epoch_ms + 5)
    storage = SimStorage(make_inner(kind, tmp_path), now=now, rng=Rng(1))
    storage.create_if_absent(".hoodie/a.commit", b"a")
    now.ms = epoch_ms + 250
    storage.write("hoodie.properties", b"p")
    storage.create_if_absent(".hoodie/b.commit", b"bb")
    assert [(s.path, s.size, s.modified_ms) for s in storage.list_dir(".hoodie")] == [
        (".hoodie/a.commit", 1, epoch_ms + 5),
        (".hoodie/b.commit", 2, epoch_ms + 250),
    ]
    assert storage.list_dir("")[0].modified_ms == epoch_ms + 250


def test_rewriting_a_file_gets_the_new_time(kind, tmp_path):
    now = Now(1_000)
    storage = SimStorage(make_inner(kind, tmp_path), now=now, rng=Rng(1))
    storage.write("hoodie.properties", b"v1")
    now.ms = 9_000
    storage.write("hoodie.properties", b"v2")
    (status,) = storage.list_dir("")
    assert (status.size, status.modified_ms) == (2, 9_000)
    assert storage.read("hoodie.properties") == b"v2"


def test_delegates_everything(kind, tmp_path):
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(1), rng=Rng(1))
    storage.create_if_absent("p/x/f1", b"12")
    assert storage.exists("p/x/f1") and not storage.exists("p/x/f2")
    assert storage.read("p/x/f1") == b"12"
    assert storage.list_subdirs("p") == ["x"]
    with pytest.raises(FileAlreadyExistsError):
        storage.create_if_absent("p/x/f1", b"again")
    storage.delete("p/x/f1")
    assert not storage.exists("p/x/f1")
    with pytest.raises(FileNotFoundError):
        storage.read("p/x/f1")


def test_counters_and_latency(kind, tmp_path):
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(), rng=Rng(1), latency_ms=4)
    mark = storage.usage()
    storage.create_if_absent("a", b"x" * 1_500_000)
    storage.write("b", b"y" * 700_000)
    storage.read("a")
    storage.exists("b")
    with pytest.raises(FileAlreadyExistsError):
        storage.create_if_absent("a", b"zzz")  # costs a round trip, writes nothing
    assert storage.ops == 5
    assert storage.bytes_written == 2_200_000
    assert storage.ops_by_kind["create_if_absent"] == 2 and storage.ops_by_kind["read"] == 1
    assert storage.latency_for(0) == 4
    assert storage.latency_for(2_999_999) == 4 + 2
    assert storage.latency_since(mark) == 5 * 4 + 2
    assert storage.latency_since(storage.usage()) == 0


def test_write_failures_happen_before_touching_the_inner_storage(kind, tmp_path):
    faults: list = []
    inner = make_inner(kind, tmp_path)
    storage = SimStorage(
        inner,
        now=Now(),
        rng=Rng(1),
        write_failure=1.0,
        on_fault=lambda k, d: faults.append((k, d)),
    )
    with pytest.raises(StorageWriteError, match="injected"):
        storage.create_if_absent(".hoodie/1.commit", b"data")
    with pytest.raises(OSError):
        storage.write("hoodie.properties", b"props")
    assert not inner.exists(".hoodie/1.commit") and not inner.exists("hoodie.properties")
    assert storage.list_dir(".hoodie") == []
    assert faults == [
        ("storage_write_failure", {"path": ".hoodie/1.commit"}),
        ("storage_write_failure", {"path": "hoodie.properties"}),
    ]
    assert storage.write_failures == 2 and storage.bytes_written == 0
    if kind == "local":  # not even a temp file or folder
        assert not (tmp_path / "table").exists()


def test_failures_can_be_switched_off_for_the_drain(kind, tmp_path):
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(), rng=Rng(1), write_failure=1.0)
    storage.failures_enabled = False
    storage.create_if_absent("a", b"1")
    assert storage.read("a") == b"1"
    assert storage.write_failures == 0


def test_reads_never_fail_and_draw_nothing():
    rng = Rng(1)
    storage = SimStorage(InMemoryStorage(), now=Now(), rng=rng, write_failure=1.0)
    storage.exists("a")
    storage.list_dir("")
    assert rng.random() == Rng(1).random()


def failure_pattern(seed: int, n: int, *, p: float = 0.3) -> list[bool]:
    storage = SimStorage(
        InMemoryStorage(), now=Now(), rng=Rng(seed).child("storage"), write_failure=p
    )
    pattern = []
    for i in range(n):
        try:
            storage.write(f"f{i}", b"x")
            pattern.append(False)
        except StorageWriteError:
            pattern.append(True)
    return pattern


def test_failures_are_deterministic_per_seed():
    assert failure_pattern(1, 100) == failure_pattern(1, 100)
    assert failure_pattern(1, 100) != failure_pattern(2, 100)
    assert 10 < sum(failure_pattern(1, 100)) < 50


def test_switching_failures_off_does_not_shift_later_draws():
    # Toggle off for a while, then on: the draws after are the same as if never toggled.
    reference = failure_pattern(3, 40, p=0.5)
    storage = SimStorage(
        InMemoryStorage(), now=Now(), rng=Rng(3).child("storage"), write_failure=0.5
    )
    outcomes = []
    for i in range(40):
        storage.failures_enabled = not 10 <= i < 20
        try:
            storage.write(f"f{i}", b"x")
            outcomes.append(False)
        except StorageWriteError:
            outcomes.append(True)
    assert outcomes[:10] == reference[:10]
    assert outcomes[10:20] == [False] * 10
    assert outcomes[20:] == reference[20:]


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="write_failure"):
        SimStorage(InMemoryStorage(), now=Now(), rng=Rng(1), write_failure=1.5)
    with pytest.raises(ValueError, match="latency_ms"):
        SimStorage(InMemoryStorage(), now=Now(), rng=Rng(1), latency_ms=-1)


# ---------------------------------------------------------------------------------------------
# LocalStorage.now_ms (models/storage.py)


def test_local_storage_now_ms_sets_exact_modification_times(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.now_ms = 1_700_000_000_123
    storage.create_if_absent("a/created", b"1")
    storage.now_ms = 1_700_000_000_456
    storage.write("a/written", b"2")
    assert os.stat(tmp_path / "a" / "created").st_mtime_ns == 1_700_000_000_123 * 10**6
    assert os.stat(tmp_path / "a" / "written").st_mtime_ns == 1_700_000_000_456 * 10**6
    assert [s.modified_ms for s in storage.list_dir("a")] == [1_700_000_000_123, 1_700_000_000_456]


def test_local_storage_without_now_ms_keeps_the_file_system_time(tmp_path):
    storage = LocalStorage(tmp_path)
    assert storage.now_ms is None
    storage.create_if_absent("f", b"1")
    (status,) = storage.list_dir("")
    assert status.modified_ms > 1_600_000_000_000  # the file system's (real) time


def test_requests_under_the_marker_folder_are_counted_apart(kind, tmp_path):
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(), rng=Rng(1), latency_ms=5)
    storage.create_if_absent(".hoodie/.temp/001/p/f.parquet.marker.CREATE", b"")
    storage.create_if_absent("p/f.parquet", b"x")
    storage.list_dir(".hoodie/.temp/001/p")
    summary = storage.summary()
    assert summary["requests"]["create_if_absent"] == 2
    assert summary["marker_requests"]["create_if_absent"] == 1
    assert summary["marker_requests"]["list_dir"] == 1
    assert summary["marker_request_time_ms"]["create_if_absent"] == 5


def test_a_process_counts_its_own_requests_apart_from_the_others():
    """The compactor's commit waits for the lock: what other processes do meanwhile is not its
    I/O (``own_usage`` / ``own_latency_since``)."""
    import simpy

    env = simpy.Environment()
    storage = SimStorage(
        InMemoryStorage(),
        now=lambda: int(env.now),
        rng=Rng(1),
        latency_ms=5,
        active=lambda: env.active_process,
    )
    seen: dict[str, int] = {}

    def slow():
        mark = storage.own_usage()
        storage.create_if_absent("a", b"x")
        yield env.timeout(10)
        storage.read("a")
        seen["own"] = storage.own_latency_since(mark)
        storage.forget_own()

    def busy():
        yield env.timeout(5)
        for i in range(3):
            storage.create_if_absent(f"b{i}", b"y")

    mark = storage.usage()
    env.process(slow())
    env.process(busy())
    env.run()
    assert seen["own"] == 10  # its create and read, 5 ms each; not the other's three creates
    assert storage.latency_since(mark) == 25


def test_data_files_are_counted_with_a_base_files_records(kind, tmp_path):
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from sim.storage import DataFileSize, is_data_file

    buffer = io.BytesIO()
    pq.write_table(pa.table({"k": ["a", "b", "c"]}), buffer)
    base = "part=p0/f1-0_0-1-0_20260101000001000.parquet"
    log = "part=p0/.f1-0_20260101000001000.log.1_0-1-0"
    storage = SimStorage(make_inner(kind, tmp_path), now=Now(), rng=Rng(1))
    storage.create_if_absent(base, buffer.getvalue())
    storage.write(log, b"log block")
    storage.create_if_absent(".hoodie/20260101000001000.commit", b"{}")
    storage.create_if_absent(".hoodie/.temp/20260101000001000/part=p0/x.parquet.marker.CREATE", b"")
    assert storage.data_files == {
        base: DataFileSize(len(buffer.getvalue()), 3),
        log: DataFileSize(9, None),
    }
    assert not is_data_file("part=p0/.hoodie_partition_metadata")
