"""Tests for invariants/slicing.py.

Hand-built tables with the interleaving that makes file slicing matter (a deltacommit requested
before a compaction and completed after it), read through the real rule and through each
known-bad variant of the view: the 0.x ``base_instant`` rule, the ``earliest_log`` anchor
(apache/hudi#19774), and a compaction plan that leaves out a committed log. Whole runs: the real
protocol (NBCC, faults) passes; the ``earliest_log`` anchor, ``archived_completion_lookup =
false`` with archiving on (apache/hudi#14365) and ``base_instant`` slicing are caught.
"""

from __future__ import annotations

from dataclasses import replace

import pyarrow.compute as pc
import pytest

from invariants.committed import load_committed
from invariants.slicing import MAX_POINT_VIOLATIONS, check_slicing, expected_slicing
from models.flink.write_files import bucket_file_id
from models.format.compaction_plan import (
    CompactionPlan,
    read_compaction_plan,
    write_compaction_plan,
)
from models.ports import run
from tests.invariants.test_committed import SimTable
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


def legacy_logs(t: SimTable, instant, rows, base_instant: str) -> list:
    """A 0.x writer's logs: named after the base instant of the slice it read when it started."""
    stats = []
    for part in ("p0", "p1"):
        chunk = rows.filter(pc.equal(rows.column("part"), part))
        file_id = bucket_file_id(int(part[1:]), 0)
        stats.append(
            t.writer.append_log_file(
                instant, f"part={part}", file_id, chunk, name_instant=base_instant
            )
        )
    return stats


def interleaved(protocol: dict | None = None, *, legacy_names: bool = False):
    """D1 committed; D2 requested, compaction C scheduled, then D2 committed (it completes after C
    was requested, so its logs belong to C's slice); C executed; D3 committed.

    ``legacy_names``: D2 and D3 name their logs after the base instant they saw when they started
    (0.x): D2 the slice D1 anchors, D3 the slice C opened."""
    t = SimTable(key_space=100_000, protocol=protocol)
    t.checkpoint(60)
    d1 = t.write(t.records(0, 20))
    d2 = t.start()
    rows = t.records(20, 40)
    stats = legacy_logs(t, d2, rows, d1.requested_time) if legacy_names else t.files(d2, rows)
    scheduled = run(t.writer.schedule_compaction(), t.clock)
    t.history.add(
        "job0/coordinator", "ok", "schedule_compaction", {"instant": scheduled.requested_time}
    )
    d2 = t.commit(d2, stats)
    compaction = run(t.writer.run_compaction(scheduled), t.clock)
    t.history.add(
        "job0/compactor",
        "ok",
        "compaction",
        {"instant": compaction.requested_time, "completion": compaction.completion_time},
    )
    d3 = t.start()
    rows = t.records(40, 60)
    if legacy_names:
        d3 = t.commit(d3, legacy_logs(t, d3, rows, compaction.requested_time))
    else:
        d3 = t.commit(d3, t.files(d3, rows))
    return t, d1, d2, compaction, d3


def test_a_log_completing_after_a_compaction_was_requested_goes_to_its_slice():
    t, d1, d2, compaction, d3 = interleaved()
    assert d2.requested_time < compaction.requested_time < d2.completion_time
    groups = expected_slicing(load_committed(t.table), None)
    assert len(groups) == 2
    for g in groups.values():
        slices = {}
        for path, slice_ in g.logs.items():
            slices[g.deltacommits[path].requested] = slice_
        assert slices == {
            d1.requested_time: d1.requested_time,  # anchored on the earliest completed log
            d2.requested_time: compaction.requested_time,
            d3.requested_time: compaction.requested_time,
        }
        assert g.barriers == [d1.requested_time, compaction.requested_time]
    verdict = check_slicing(t.events, t.table)
    assert verdict.name == "slicing"
    assert verdict.ok, whys(verdict)


def test_legacy_base_instant_slicing_puts_the_log_in_the_compacted_slice():
    """0.x: D2 named its logs after D1's slice, which C already planned: the log lands in a slice
    nobody reads any more."""
    t, d1, d2, compaction, _ = interleaved({"file_slicing": "base_instant"}, legacy_names=True)
    verdict = check_slicing(t.events, t.table)
    end = verdict.violations[0]
    assert end.why.startswith(
        "at the end the file slicing breaks the completion-time rule: 2 committed logs in another "
        "slice than the rule names (e.g. "
    )
    assert (
        f"_{d1.requested_time}.log.2_0-1-0 of deltacommit {d2.requested_time} (completed "
        f"{d2.completion_time}) is in slice {d1.requested_time}, the rule names "
        f"{compaction.requested_time}"
    ) in end.why
    assert end.events == (t.event_of(d2),)


def test_an_uncommitted_earliest_log_must_not_anchor_the_file_group():
    """apache/hudi#19774: D1 wrote logs but never completed; D2 completed. Anchored on D1's log,
    D2's committed logs sit in an uncommitted slice, invisible."""
    for anchor, ok in (("earliest_completed", True), ("earliest_log", False)):
        t = SimTable(key_space=100_000, protocol={"slice_anchor": anchor})
        t.checkpoint(40)
        d1 = t.write(t.records(0, 20), commit=False)
        d2 = t.write(t.records(20, 40))
        verdict = check_slicing(t.events, t.table)
        assert verdict.ok is ok, whys(verdict)
        if not ok:
            (violation,) = verdict.violations
            assert violation.why.startswith(
                "at the end the file slicing breaks the completion-time rule: 2 committed logs "
                "in another slice than the rule names"
            )
            assert (
                f"of deltacommit {d2.requested_time} (completed {d2.completion_time}) is in slice "
                f"{d1.requested_time}, the rule names {d2.requested_time}"
            ) in violation.why
            assert violation.events == (t.event_of(d2),)


def test_a_compaction_plan_without_a_committed_log_is_caught():
    t = SimTable(key_space=100_000)
    t.checkpoint(40)
    t.write(t.records(0, 20))
    d2 = t.write(t.records(20, 40))
    scheduled = run(t.writer.schedule_compaction(), t.clock)
    t.history.add(
        "job0/coordinator", "ok", "schedule_compaction", {"instant": scheduled.requested_time}
    )
    path = f"{t.table.config.timeline_dir}/{scheduled.requested_time}.compaction.requested"
    plan = read_compaction_plan(t.storage.read(path))
    first, *others = plan.operations
    dropped = [name for name in first.delta_file_paths if d2.requested_time in name]
    kept = tuple(n for n in first.delta_file_paths if n not in dropped)
    damaged = CompactionPlan((replace(first, delta_file_paths=kept), *others))
    t.storage.write(path, write_compaction_plan(damaged))
    (violation,) = check_slicing(t.events, t.table).violations
    assert violation.why == (
        f"compaction {scheduled.requested_time} planned file group {first.partition_path}/"
        f"{first.file_id} against the completion-time rule: it leaves out 1 committed logs "
        f"({dropped[0]})"
    )
    schedule = next(e.index for e in t.events if e.f == "schedule_compaction")
    assert violation.events == tuple(sorted((schedule, t.event_of(d2))))


# --- whole runs ------------------------------------------------------------------------------

NBCC_JOB = {**JOB, "concurrency": "nbcc", "key_space": 2000}


def test_real_protocol_with_two_nbcc_jobs_and_compaction_passes():
    jobs = (
        {**NBCC_JOB, "name": "a", "table_services": True, "compaction_every_commits": 2},
        {**NBCC_JOB, "name": "b", "checkpoint_interval_s": 3},
    )
    outcome = cached_run(scenario_toml(seed=4, duration_s=20, jobs=jobs, faults=ALL_FAULTS))
    assert [e for e in outcome.history.events if e.f == "compaction" and e.type == "ok"]
    verdict = check_slicing(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


def anchor_run(anchor: str):
    """Job a flushes eagerly and checkpoints rarely, so its first instant is requested early and
    completes late; job b checkpoints every second: b's first logs complete while a's first logs,
    the earliest of every file group, are still pending."""
    jobs = (
        {
            **NBCC_JOB,
            "name": "a",
            "checkpoint_interval_s": 5,
            "buffer_records": 50,
            "table_services": True,
            "compaction_every_commits": 1000,
        },
        {**NBCC_JOB, "name": "b", "checkpoint_interval_s": 1},
    )
    return cached_run(
        scenario_toml(seed=1, duration_s=12, jobs=jobs, protocol={"slice_anchor": anchor})
    )


def test_earliest_log_anchor_hides_committed_logs_at_time_travel_bounds():
    bad = anchor_run("earliest_log")
    reasons = whys(check_slicing(bad.history.events, bad.table))
    assert reasons and all(
        why.startswith("as of ") and "committed logs in another slice than the rule names" in why
        for why in reasons
    ), reasons
    real = anchor_run("earliest_completed")
    verdict = check_slicing(real.history.events, real.table)
    assert verdict.ok, whys(verdict)


@pytest.mark.parametrize("lookup", [False, True])
def test_archived_completion_lookup_off_misplaces_archived_logs(lookup):
    job = {**JOB, "key_space": 20_000, "records_per_s": 500, "compaction_every_commits": 2}
    outcome = cached_run(
        scenario_toml(
            seed=1,
            duration_s=30,
            jobs=(job,),
            protocol={"archived_completion_lookup": lookup},
            sim={"archive_max_active": 4, "archive_min_active": 2},
        )
    )
    events = outcome.history.events
    assert [e for e in events if e.f == "archive" and e.type == "ok"], "nothing was archived"
    verdict = check_slicing(events, outcome.table)
    if lookup:
        assert verdict.ok, whys(verdict)
    else:
        assert verdict.violations[0].why.startswith(
            "at the end the file slicing breaks the completion-time rule"
        )


def test_base_instant_slicing_run_is_caught():
    common = {"writers": 2, "records_per_s": 500, "buffer_records": 500, "key_space": 50_000}
    jobs = (
        {
            **common,
            "name": "ingest_a",
            "checkpoint_interval_s": 3,
            "table_services": True,
            "compaction_every_commits": 1,
        },
        {**common, "name": "ingest_b", "table_services": False},
    )
    outcome = cached_run(
        scenario_toml(seed=1, duration_s=20, jobs=jobs, protocol={"file_slicing": "base_instant"})
    )
    reasons = whys(check_slicing(outcome.history.events, outcome.table))
    assert any("in another slice than the rule names" in why for why in reasons), reasons
    assert any(why.startswith("compaction ") and " planned " in why for why in reasons), reasons
    # one per time-travel bound and per compaction at most, each list capped with a count
    assert len(reasons) <= 1 + 2 * (MAX_POINT_VIOLATIONS + 1), reasons
