"""Tests for sim/history.py: the recorder stamps, validates and freezes what it records, and a
small simulated run with faults reproduces its history byte for byte from its seed."""

from __future__ import annotations

import hashlib
from collections.abc import Generator
from itertools import pairwise

import pytest
import simpy

from models.history import Event, history_digest, read_history, write_history
from sim.history import HistoryRecorder
from sim.network import Channel
from sim.rng import Rng


def test_record_stamps_index_and_true_time():
    env = simpy.Environment()
    history = HistoryRecorder(lambda: env.now)
    first = history.invoke("writer-1", "commit", {"instant": "20240101000000000"})
    env.run(until=25)
    second = history.ok("writer-1", "commit")
    assert first == Event(0, 0, "writer-1", "invoke", "commit", {"instant": "20240101000000000"})
    assert second == Event(1, 25, "writer-1", "ok", "commit", None)
    assert history.events == [first, second]


def test_convenience_methods_set_the_type_and_nemesis_is_an_info_event():
    history = HistoryRecorder(lambda: 0)
    history.invoke("p", "f")
    history.ok("p", "f")
    history.fail("p", "f")
    history.info("p", "f")
    history.nemesis("partition", ["w1", "w2"])
    assert [(e.process, e.type) for e in history.events] == [
        ("p", "invoke"),
        ("p", "ok"),
        ("p", "fail"),
        ("p", "info"),
        ("nemesis", "info"),
    ]
    assert history.events[-1].f == "partition"


def test_time_is_truncated_to_whole_ms():
    history = HistoryRecorder(lambda: 12.9)
    assert history.info("p", "f").time == 12


def test_tuples_become_lists_and_values_are_copied():
    history = HistoryRecorder(lambda: 0)
    value = {"files": ("a", "b"), "nested": [{"k": (1,)}]}
    event = history.ok("p", "write", value)
    assert event.value == {"files": ["a", "b"], "nested": [{"k": [1]}]}
    value["nested"][0]["k"] = "mutated afterwards"
    assert history.events[0].value["nested"][0]["k"] == [1]


def test_non_json_values_are_refused_and_nothing_is_recorded():
    history = HistoryRecorder(lambda: 0)
    with pytest.raises(TypeError, match="set"):
        history.ok("p", "write", {"files": {"b", "a"}})
    with pytest.raises(ValueError, match="type"):
        history.record("p", "done", "write")
    assert history.events == []


def test_time_going_backwards_is_refused():
    now = [10]
    history = HistoryRecorder(lambda: now[0])
    history.info("p", "f")
    now[0] = 9
    with pytest.raises(ValueError, match="backwards"):
        history.info("p", "f")


def test_bytes_digest_and_file_agree(tmp_path):
    history = HistoryRecorder(lambda: 3)
    history.invoke("w", "commit", [1, 2.5, None, True, "é"])
    history.nemesis("drop", {"channel": "acks"})
    data = history.jsonl_bytes()
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    assert history.digest() == "sha256:" + hashlib.sha256(data).hexdigest()
    assert history.digest() == history_digest(history.events)
    path = tmp_path / "history.jsonl"
    write_history(path, history.events)
    assert path.read_bytes() == data
    assert read_history(path) == history.events


# ---------------------------------------------------------------------------------------------
# a small run end to end


def tiny_run(seed: int, *, extra_stream: bool = False) -> HistoryRecorder:
    """Writers send commits over a lossy channel; the coordinator ACKs; faults are recorded."""
    env = simpy.Environment()
    rng = Rng(seed)
    history = HistoryRecorder(lambda: env.now)
    if extra_stream:
        rng.child("something-new").random()
    acks = Channel(
        env,
        "acks",
        rng.child("network").child("acks"),
        delay_ms=(1, 30),
        loss=0.2,
        on_fault=lambda kind, detail: history.nemesis(kind, detail),
    )
    think = rng.child("think")

    def writer(name: str) -> Generator:
        for n in range(5):
            yield env.timeout(think.randint(0, 20))
            history.invoke(name, "commit", {"n": n})
            acked = env.event()
            acks.send((name, n), lambda _m, acked=acked: acked.succeed())
            result = yield acked | env.timeout(50)
            if acked in result:
                history.ok(name, "commit", {"n": n})
            else:
                history.info(name, "commit", {"n": n})  # ACK lost: outcome unknown

    for name in ("w1", "w2", "w3"):
        env.process(writer(name))
    env.run()
    return history


def test_same_seed_same_bytes_different_seed_different():
    one, two = tiny_run(1), tiny_run(1)
    assert one.jsonl_bytes() == two.jsonl_bytes()
    assert one.digest() == two.digest()
    assert tiny_run(2).digest() != one.digest()


def test_an_unrelated_new_stream_does_not_change_the_history():
    assert tiny_run(5).digest() == tiny_run(5, extra_stream=True).digest()


def test_the_tiny_run_has_lost_acks_recorded_as_info():
    events = tiny_run(1).events
    assert [e.index for e in events] == list(range(len(events)))
    assert all(a.time <= b.time for a, b in pairwise(events))
    assert any(e.process == "nemesis" and e.f == "drop" for e in events)
    assert any(e.process != "nemesis" and e.type == "info" for e in events)
