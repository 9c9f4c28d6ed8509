"""Storage profiles (sim/storage_profiles.py) as SimStorage charges them: the local profile is
a flat latency per request plus 1 ms per MB written; the object-store profile prices each request
kind and moves bytes both ways at its bandwidth; ``result.json``'s ``storage`` counts them."""

from __future__ import annotations

import pytest

from models.storage import InMemoryStorage
from sim.rng import Rng
from sim.storage import SimStorage
from sim.storage_profiles import (
    OBJECT_STORE,
    REQUEST_KINDS,
    StorageProfile,
    local_profile,
    storage_profile,
)
from tests.sim.test_storage import Now
from tests.sim.test_world import make_scenario, run_world


def storage_with(profile: StorageProfile | None, latency_ms: int = 5) -> SimStorage:
    return SimStorage(
        InMemoryStorage(), now=Now(), rng=Rng(1), latency_ms=latency_ms, profile=profile
    )


def some_requests(storage: SimStorage) -> None:
    storage.create_if_absent("a/x", b"1" * 3_000_000)
    storage.write("a/y", b"2" * 10)
    storage.read("a/x")
    storage.exists("a/y")
    storage.list_dir("a")
    storage.delete("a/y")


def test_the_local_profile_is_a_flat_latency_and_1_ms_per_mb_written():
    storage = storage_with(None, latency_ms=7)
    mark = storage.usage()
    some_requests(storage)
    assert storage.latency_since(mark) == 6 * 7 + 3_000_010 // 1_000_000
    assert storage.latency_for(2_500_000) == 7 + 2
    assert storage.profile == local_profile(7)


def test_the_object_store_prices_each_kind_and_moves_reads_too():
    storage = storage_with(OBJECT_STORE)
    mark = storage.usage()
    some_requests(storage)
    requests = 50 + 50 + 30 + 20 + 50 + 30  # conditional PUT, PUT, GET, HEAD, LIST, DELETE
    assert storage.latency_since(mark) == requests + (3_000_010 + 3_000_000) // 100_000
    assert storage.latency_for(1_000_000) == 50 + 10


def test_the_summary_counts_requests_and_their_time_by_kind():
    storage = storage_with(OBJECT_STORE)
    some_requests(storage)
    summary = storage.summary()
    assert summary["profile"] == "object_store"
    assert summary["requests"]["read"] == 1 and summary["requests"]["list_subdirs"] == 0
    assert summary["request_time_ms"]["create_if_absent"] == 50
    assert summary["bytes_written"] == 3_000_010 and summary["bytes_read"] == 3_000_000


def test_a_profile_prices_every_kind_and_names_are_checked():
    with pytest.raises(ValueError, match="every request kind"):
        StorageProfile("x", {"read": 1}, 1, charge_reads=False)
    with pytest.raises(ValueError, match="unknown storage profile"):
        storage_profile("s3", 5)
    assert set(OBJECT_STORE.latency_ms) == set(REQUEST_KINDS)


def flush_ms(outcome) -> list[int]:
    """How long each flush of task 0 took (invoke to ok)."""
    started, took = None, []
    for e in outcome.history.events:
        if e.f == "flush" and e.process.endswith("task-0"):
            if e.type == "invoke":
                started = e.time
            elif e.type == "ok" and started is not None:
                took.append(e.time - started)
    return took


def test_an_object_store_run_waits_longer_for_its_writes_and_reports_its_requests():
    outcomes = {
        profile: run_world(make_scenario(duration_s=10, table={"storage_profile": profile}))
        for profile in ("local", "object_store")
    }
    local, remote = flush_ms(outcomes["local"]), flush_ms(outcomes["object_store"])
    assert local and remote
    assert min(remote) > max(local)  # a PUT of 50 ms against 5 ms
    assert outcomes["object_store"].storage.summary()["profile"] == "object_store"
