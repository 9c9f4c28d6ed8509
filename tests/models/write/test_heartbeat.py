"""Heartbeats (modification time of ``.hoodie/.heartbeat/<instant>``) and which failed writes the
EAGER and LAZY policies roll back."""

from __future__ import annotations

import pytest

from models.storage import InMemoryStorage, LocalStorage
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.write import heartbeat
from models.write.heartbeat import instants_to_roll_back, is_expired, last_heartbeat_ms

INTERVAL_MS = 1_000
MISSES = 2


def t(n: int) -> str:
    return f"2026010100{n:07d}"


def pending(n: int, action: str = "deltacommit", state: State = State.INFLIGHT) -> Instant:
    return Instant(t(n), state, action)


def done(n: int, action: str = "deltacommit") -> Instant:
    return Instant(t(n), State.COMPLETED, action, t(n + 1))


def beat(storage: InMemoryStorage, n: int, at_ms: int) -> None:
    storage.now_ms = at_ms
    heartbeat.refresh(storage, t(n), now_ms=at_ms)


def test_the_heartbeat_is_the_files_modification_time_as_storage_reports_it():
    storage = InMemoryStorage()
    storage.now_ms = 5_000
    heartbeat.start(storage, t(1), now_ms=4_900)  # the writer's clock is 100 ms behind storage
    assert storage.exists(f".hoodie/.heartbeat/{t(1)}")
    assert last_heartbeat_ms(storage, t(1)) == 5_000
    beat(storage, 1, 6_000)
    assert last_heartbeat_ms(storage, t(1)) == 6_000
    heartbeat.stop(storage, t(1))
    assert last_heartbeat_ms(storage, t(1)) == 0
    heartbeat.stop(storage, t(1))  # stopping twice is fine


def test_expiry_needs_strictly_more_than_interval_times_misses():
    storage = InMemoryStorage()
    beat(storage, 1, 10_000)
    limit = 10_000 + INTERVAL_MS * MISSES
    assert not is_expired(storage, t(1), limit, INTERVAL_MS, MISSES)
    assert is_expired(storage, t(1), limit + 1, INTERVAL_MS, MISSES)
    beat(storage, 1, limit)  # a refresh keeps it alive
    assert not is_expired(storage, t(1), limit + 1, INTERVAL_MS, MISSES)


def test_a_missing_heartbeat_is_expired():
    assert is_expired(InMemoryStorage(), t(1), 1, INTERVAL_MS, MISSES)


def test_the_checking_process_clock_decides():
    """Hudi compares its own clock with the storage's mtime: a checker whose clock runs ahead
    declares a live writer dead."""
    storage = InMemoryStorage()
    beat(storage, 1, 10_000)
    real_now = 10_500
    assert not is_expired(storage, t(1), real_now, INTERVAL_MS, MISSES)
    assert is_expired(storage, t(1), real_now + 2_000, INTERVAL_MS, MISSES)  # skewed +2 s


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError, match="positive"):
        is_expired(InMemoryStorage(), t(1), 0, 0, MISSES)


def test_heartbeats_work_on_local_storage(tmp_path):
    storage = LocalStorage(tmp_path)
    heartbeat.start(storage, t(1), now_ms=123)
    assert last_heartbeat_ms(storage, t(1)) > 0
    assert (tmp_path / ".hoodie" / ".heartbeat" / t(1)).read_text() == "123"


def table_state() -> tuple[Timeline, InMemoryStorage]:
    """Pending writes 10 (alive), 20 (dead: stale heartbeat), 30 (no heartbeat at all), 40 (ours),
    a pending compaction and a pending clustering plan (table services, never rolled back as
    failed writes), and completed instants."""
    timeline = Timeline(
        (
            done(5),
            pending(10),
            pending(20, "commit"),
            pending(25, "compaction", State.REQUESTED),
            pending(30, "replacecommit", State.REQUESTED),
            pending(35, "clustering"),
            pending(40),
            done(50),
        )
    )
    storage = InMemoryStorage()
    beat(storage, 20, 1_000)
    beat(storage, 10, 9_000)
    beat(storage, 40, 9_500)
    return timeline, storage


def test_eager_rolls_back_every_other_pending_write_newest_first():
    timeline, storage = table_state()
    chosen = instants_to_roll_back(
        timeline,
        storage,
        "EAGER",
        10_000,
        own_instants=[t(40)],
        interval_ms=INTERVAL_MS,
        tolerable_misses=MISSES,
    )
    assert [i.requested_time for i in chosen] == [t(30), t(20), t(10)]


def test_lazy_rolls_back_only_expired_or_missing_heartbeats():
    timeline, storage = table_state()
    chosen = instants_to_roll_back(
        timeline,
        storage,
        "LAZY",
        10_000,
        own_instants=[t(40)],
        interval_ms=INTERVAL_MS,
        tolerable_misses=MISSES,
    )
    assert [i.requested_time for i in chosen] == [t(30), t(20)]
    later = instants_to_roll_back(
        timeline, storage, "LAZY", 20_000, interval_ms=INTERVAL_MS, tolerable_misses=MISSES
    )
    assert [i.requested_time for i in later] == [t(40), t(30), t(20), t(10)]


def test_never_rolls_back_nothing_and_unknown_policies_are_refused():
    timeline, storage = table_state()
    assert instants_to_roll_back(timeline, storage, "NEVER", 10**9) == []
    with pytest.raises(ValueError, match="EAGER, LAZY, NEVER"):
        instants_to_roll_back(timeline, storage, "eager", 0)
