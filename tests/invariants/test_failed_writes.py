"""Tests for invariants/failed_writes.py on hand-built tables and histories: a pending write whose
writer is gone is flagged once the table-services job completed enough checkpoints after it
failed; a live writer, a rolled-back instant, too few checkpoints, failed cleans, EAGER cleaning
and a run without a table-services job are not."""

from __future__ import annotations

from invariants.failed_writes import CHECKPOINTS_TO_CLEAN, check_failed_writes_rolled_back
from models.write import heartbeat
from models.write.rollback import rollback
from tests.invariants.test_committed import START_MS, SimTable, run

INTERVAL_MS = 1000
MISSES = 2


def table(*, policy: str = "LAZY", table_services: bool = True) -> SimTable:
    t = SimTable(protocol={"failed_writes_cleaning": policy})
    setup = t.events[0].value
    setup["heartbeat"] = {"interval_ms": INTERVAL_MS, "tolerable_misses": MISSES}
    setup["time"] = {"clock_skew_ms": 0}
    setup["jobs"][0]["table_services"] = table_services
    return t


def failed_write(t: SimTable, *, beat_at_ms: int | None) -> str:
    """A write left inflight at 1 s, its heartbeat last beaten at ``beat_at_ms`` (None: stopped)."""
    t.storage.now_ms = START_MS + 1000
    instant = t.write(t.records(0, 20), commit=False)
    t.history.flush("job0", instant.requested_time, 1)
    if beat_at_ms is not None:
        t.storage.now_ms = START_MS + beat_at_ms
        heartbeat.refresh(t.storage, instant.requested_time, t.storage.now_ms)
    return instant.requested_time


def checkpoints(t: SimTable, count: int, *, from_ms: int) -> None:
    for n in range(count):
        t.history.add(
            "job0/checkpoint",
            "ok",
            "checkpoint",
            {"checkpoint": n + 1, "source_offset": 0},
            time=from_ms + 1000 * n,
        )


def test_an_abandoned_write_is_flagged_after_enough_checkpoints() -> None:
    t = table()
    instant = failed_write(t, beat_at_ms=2000)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=4500)  # expiry at 2 s + 2 x 1 s
    verdict = check_failed_writes_rolled_back(t.events, t.table)
    assert verdict.name == "failed_writes_rolled_back"
    (violation,) = verdict.violations
    assert violation.why.startswith(f"write instant {instant} is still pending")
    assert "its heartbeat expired, so it failed by 4.00 s" in violation.why
    flush = next(e.index for e in t.events if e.f == "flush")
    assert violation.events[0] == flush and violation.events[-1] == t.events[-1].index


def test_checkpoints_before_the_heartbeat_expired_do_not_count() -> None:
    t = table()
    failed_write(t, beat_at_ms=2000)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=2000)  # at 2 to 5 s: one after the expiry
    assert check_failed_writes_rolled_back(t.events, t.table).ok
    checkpoints(t, CHECKPOINTS_TO_CLEAN - 1, from_ms=6000)
    assert not check_failed_writes_rolled_back(t.events, t.table).ok


def test_a_stopped_heartbeat_fails_the_write_at_its_last_sign_of_life() -> None:
    t = table()
    failed_write(t, beat_at_ms=None)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=3000)
    (violation,) = check_failed_writes_rolled_back(t.events, t.table).violations
    assert "its heartbeat was stopped" in violation.why


def test_a_live_heartbeat_is_a_write_in_progress() -> None:
    t = table()
    failed_write(t, beat_at_ms=9000)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=5000)
    assert check_failed_writes_rolled_back(t.events, t.table).ok


def test_each_failed_clean_needs_one_more_checkpoint() -> None:
    t = table()
    failed_write(t, beat_at_ms=2000)
    t.history.add("job0/clean_commits", "info", "clean_failed", {"error": "x"}, time=4500)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=5000)
    assert check_failed_writes_rolled_back(t.events, t.table).ok
    checkpoints(t, 1, from_ms=9000)
    assert not check_failed_writes_rolled_back(t.events, t.table).ok


def test_a_rolled_back_write_is_fine() -> None:
    t = table()
    instant = failed_write(t, beat_at_ms=2000)
    pending = next(i for i in t.table.timeline().pending().instants)
    assert pending.requested_time == instant
    run(rollback(t.table, t.writer, pending, t.writer.time_generator), t.clock)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=5000)
    assert check_failed_writes_rolled_back(t.events, t.table).ok


def test_eager_runs_and_runs_without_table_services_are_not_judged() -> None:
    for t in (table(policy="EAGER"), table(table_services=False)):
        failed_write(t, beat_at_ms=2000)
        checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=5000)
        assert check_failed_writes_rolled_back(t.events, t.table).ok


def test_a_history_without_heartbeat_settings_is_not_judged() -> None:
    t = SimTable(protocol={"failed_writes_cleaning": "LAZY"})
    failed_write(t, beat_at_ms=2000)
    checkpoints(t, CHECKPOINTS_TO_CLEAN, from_ms=5000)
    assert check_failed_writes_rolled_back(t.events, t.table).ok
