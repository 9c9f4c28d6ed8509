"""Tests for sim/marker_server.py: requests batched every interval, answered after their batch is
on storage (or before it, the variant), duplicates refused, failures and a crash fail requests,
and a new server knows what the old one wrote."""

from __future__ import annotations

import simpy

from models.storage import InMemoryStorage
from models.timeline.active import Timeline
from models.write.early_conflict import DirectMarkerDetection, TimelineServerMarkerDetection
from models.write.markers import list_markers, read_server_marker_files
from sim.marker_server import HoodieRemoteException, MarkerServer, ServerConflictDetection
from sim.rng import Rng
from sim.storage import SimStorage
from sim.storage_profiles import local_profile

INSTANT = "20260101000000000"
WRITE_MS = 5


def setup(**kwargs) -> tuple[simpy.Environment, InMemoryStorage, SimStorage, MarkerServer]:
    env = simpy.Environment()
    inner = InMemoryStorage()
    storage = SimStorage(
        inner, now=lambda: int(env.now), rng=Rng(1), profile=local_profile(WRITE_MS), **kwargs
    )
    return env, inner, storage, MarkerServer(env, storage, batch_interval_ms=50, num_threads=2)


def ask(env, server, name, log, instant=INSTANT):
    """A task's request: log (time, name, answer or error, markers on storage then)."""

    def task():
        try:
            created = yield server.create_marker(instant, name)
        except HoodieRemoteException as error:
            created = f"error: {error}"
        on_disk = sorted(
            n for ns in read_server_marker_files(server.storage.inner, instant).values() for n in ns
        )
        log.append((env.now, name, created, on_disk))

    env.process(task())


def ask_then_ask(env, server, first: str, second: str, *, second_at: int, until: int) -> list:
    """``first`` at once, ``second`` at ``second_at`` ms; the log once ``until`` is reached."""
    log: list = []
    ask(env, server, first, log)
    env.run(until=second_at)
    ask(env, server, second, log)
    env.run(until=until)
    return log


def test_requests_in_one_interval_share_a_batch_answered_after_the_write():
    env, inner, _, server = setup()
    a, b = "p=1/a.parquet.marker.CREATE", "p=1/b.parquet.marker.CREATE"
    log = ask_then_ask(env, server, a, b, second_at=10, until=200)
    both = ["p=1/a.parquet.marker.CREATE", "p=1/b.parquet.marker.CREATE"]
    # batch at 50 ms; MARKERS.type and MARKERS0 written (two requests of 5 ms each)
    assert log == [
        (60, "p=1/a.parquet.marker.CREATE", True, both),
        (60, "p=1/b.parquet.marker.CREATE", True, both),
    ]
    assert server.stats.summary() == {
        "requests": 2,
        "batches": 1,
        "duplicates": 0,
        "failed_requests": 0,
        "answer_wait_ms": 0,
    }
    assert inner.read(f".hoodie/.temp/{INSTANT}/MARKERS.type") == b"TIMELINE_SERVER_BASED"
    assert [m.data_path for m in list_markers(inner, INSTANT)] == ["p=1/a.parquet", "p=1/b.parquet"]


def test_a_duplicate_is_answered_false():
    env, _, _, server = setup()
    log = []
    ask(env, server, "a.parquet.marker.CREATE", log)
    ask(env, server, "a.parquet.marker.CREATE", log)
    env.run(until=200)
    assert [answer for _, _, answer, _ in log] == [True, False]
    assert server.stats.duplicates == 1


def test_later_batches_take_the_next_worker_file():
    env, inner, _, server = setup()
    a, b = "a.parquet.marker.CREATE", "b.parquet.marker.CREATE"
    log = ask_then_ask(env, server, a, b, second_at=80, until=300)
    assert read_server_marker_files(inner, INSTANT) == {
        0: ["a.parquet.marker.CREATE"],
        1: ["b.parquet.marker.CREATE"],
    }
    assert [t for t, *_ in log] == [60, 105]


def test_a_crash_fails_waiting_requests_and_a_new_server_rebuilds_from_files():
    env, _, storage, server = setup()
    log = []
    ask(env, server, "a.parquet.marker.CREATE", log)
    env.run(until=110)
    ask(env, server, "b.parquet.marker.CREATE", log)
    env.run(until=120)
    server.crash()
    ask(env, server, "c.parquet.marker.CREATE", log)
    env.run(until=300)
    assert [(name[0], str(answer)[:6]) for _, name, answer, _ in log] == [
        ("a", "True"),
        ("b", "error:"),
        ("c", "error:"),
    ]
    fresh = MarkerServer(env, storage, batch_interval_ms=50, num_threads=2)
    ask(env, fresh, "a.parquet.marker.CREATE", log)
    ask(env, fresh, "d.parquet.marker.CREATE", log)
    env.run(until=600)
    assert [answer for _, _, answer, _ in log[3:]] == [False, True]


def test_a_failed_write_fails_its_requests_and_forgets_them():
    env, _, storage, server = setup(write_failure=1.0)
    log = []
    ask(env, server, "a.parquet.marker.CREATE", log)
    env.run(until=100)
    assert log[0][2].startswith("error: Failed to create marker file a.parquet.marker.CREATE")
    storage.write_failure = 0.0
    ask(env, server, "a.parquet.marker.CREATE", log)
    env.run(until=300)
    assert log[1][2] is True
    assert server.stats.failed_requests == 1


def test_the_variant_answers_before_the_write_and_a_crash_loses_the_marker():
    env, inner, storage, _ = setup()
    server = MarkerServer(
        env, storage, batch_interval_ms=50, num_threads=2, answer_before_write=True
    )
    log = []
    ask(env, server, "a.parquet.marker.CREATE", log)
    env.run(until=52)
    assert log == [(50, "a.parquet.marker.CREATE", True, [])]
    server.crash()
    env.run(until=300)
    assert list_markers(inner, INSTANT) == []


def test_a_task_sends_its_markers_one_by_one_and_its_wait_is_counted():
    from sim.flink.marker_requests import MarkerRequests, send_markers

    env, inner, _, server = setup()
    requests = MarkerRequests()
    requests.create_if_not_exists(INSTANT, "p=1", "a.parquet", "CREATE")
    requests.create_if_not_exists(INSTANT, "p=1", "b.parquet", "CREATE")
    done = env.process(send_markers(server, requests))
    env.run(until=done)
    # a: batch at 50 ms, answered at 60; b: asked at 60, batch at 100, answered at 105
    assert env.now == 105
    assert server.stats.batches == 2
    assert server.stats.answer_wait_ms == 105
    assert read_server_marker_files(inner, INSTANT) == {
        0: ["p=1/a.parquet.marker.CREATE"],
        1: ["p=1/b.parquet.marker.CREATE"],
    }


OLDER = "20251231235959000"
FG = "00000001-aaaa-4bbb-8ccc-dddddddddddd-0"


def detecting(env, inner, storage, server, period_ms: int = 1000) -> list:
    """``server`` with early conflict detection; the older instant ``OLDER`` has a live
    heartbeat and a ``MARKERS0`` naming a log file of ``FG``. Returns the detections."""
    inner.write(f".hoodie/.temp/{OLDER}/MARKERS.type", b"TIMELINE_SERVER_BASED")
    inner.write(
        f".hoodie/.temp/{OLDER}/MARKERS0", f"p=1/.{FG}_{OLDER}.log.1_0-1-0.marker.CREATE\n".encode()
    )
    inner.write(f".hoodie/.heartbeat/{OLDER}", b"0")
    found: list = []
    candidates = DirectMarkerDetection(
        inner,
        now_ms=lambda: int(env.now),
        timeline=lambda: Timeline(()),
        heartbeat_interval_ms=10**9,
    )
    server.early_conflict = ServerConflictDetection(
        env, TimelineServerMarkerDetection(candidates), period_ms, lambda *hit: found.append(hit)
    )
    return found


def test_the_server_refuses_an_instants_markers_once_it_found_a_conflict():
    env, inner, storage, server = setup()
    found = detecting(env, inner, storage, server)
    log: list = []
    other = "p=1/.00000002-aaaa-4bbb-8ccc-dddddddddddd-0_x.log.1_0-1-0.marker.CREATE"
    ask(env, server, other, log)  # another file group: no conflict, created
    env.run(until=100)
    assert [entry[2] for entry in log] == [True] and found == []
    ask(env, server, f"p=1/.{FG}_{INSTANT}.log.1_0-1-0.marker.CREATE", log)
    env.run(until=200)
    assert log[-1][2] is True  # the check runs every period: not yet
    env.run(until=1100)  # the check at 1 s sees both markers of FG
    assert found == [(INSTANT, OLDER, f"p=1/.{FG}")]
    ask(env, server, "p=1/c.parquet.marker.CREATE", log)
    env.run(until=1200)
    assert log[-1][2] is False  # refused at once, unbatched
    log2: list = []
    ask(env, server, "p=1/d.parquet.marker.CREATE", log2, instant="20260101000001000")
    env.run(until=1400)  # another folder: watched afresh, the finding cleared
    assert log2[0][2] is True and server.early_conflict.watched == "20260101000001000"
