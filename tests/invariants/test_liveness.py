"""Tests for invariants/liveness.py on hand-built histories: a drained run is live, a run whose
jobs did not drain names exactly the stuck jobs and points at the drain and end events, and a
history that never ended is a violation of its own."""

from __future__ import annotations

from invariants.liveness import check_liveness
from tests.invariants.test_ledger import History, source


def ended(*, drained_jobs: tuple[str, ...], all_drained: bool, with_drain: bool = True) -> History:
    h = History()
    h.setup(source(0), source(1), names=("a", "b"))
    h.emit("a", 0, 10)
    if with_drain:
        h.add("world", "info", "drain", {"source_offsets": {"a": 10, "b": 0}})
    for job in drained_jobs:
        h.add(job, "info", "drained", {"source_offset": 10})
    h.add(
        "world",
        "info",
        "end",
        {"drained": all_drained, "source_offsets": {"b": 0, "a": 10}, "completed_checkpoints": {}},
    )
    return h


def test_a_drained_run_is_live():
    verdict = check_liveness(ended(drained_jobs=("a", "b"), all_drained=True).events)
    assert verdict.name == "liveness"
    assert verdict.ok
    assert verdict.to_json() == {"ok": True, "violations": []}


def test_a_stuck_job_is_named_with_the_drain_and_end_events():
    h = ended(drained_jobs=("a",), all_drained=False)
    verdict = check_liveness(h.events)
    (violation,) = verdict.violations
    assert violation.why.startswith("jobs b did not commit everything they emitted")
    assert "drain timeout" in violation.why
    drain = next(e for e in h.events if e.f == "drain")
    assert violation.events == (drain.index, h.events[-1].index)
    assert verdict.to_json()["violations"] == [
        {"why": violation.why, "events": [drain.index, h.events[-1].index]}
    ]


def test_every_stuck_job_is_named_in_sorted_order():
    (violation,) = check_liveness(ended(drained_jobs=(), all_drained=False).events).violations
    assert violation.why.startswith("jobs a, b did not commit")


def test_without_a_drain_event_the_violation_points_at_the_end():
    h = ended(drained_jobs=(), all_drained=False, with_drain=False)
    (violation,) = check_liveness(h.events).violations
    assert violation.events == (h.events[-1].index,)


def test_a_history_without_an_end_event_did_not_finish():
    h = History()
    h.setup()
    h.emit("job0", 0, 10)
    (violation,) = check_liveness(h.events).violations
    assert "no end event" in violation.why
    assert violation.events == ()
    assert not check_liveness([]).ok


def test_only_the_worlds_end_event_counts():
    h = ended(drained_jobs=(), all_drained=False)
    h.add("job0", "info", "end", {"drained": True})  # not the world's
    assert not check_liveness(h.events).ok
