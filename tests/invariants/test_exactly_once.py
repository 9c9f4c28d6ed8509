"""Tests for invariants/exactly_once.py.

Hand-built tables (:class:`tests.invariants.test_committed.SimTable`) with exactly the commits a
test needs: records committed twice, covered records never committed, records committed beyond
the last completed checkpoint; then whole runs: the real protocol under every fault, mini-batch
inserts and upserts after failed checkpoints (at-least-once), and HUDI-9570's lost write metadata.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from invariants.committed import load_committed
from invariants.exactly_once import check_exactly_once, outranked, required_offsets
from invariants.ledger import build_ledger
from models.format.properties import COPY_ON_WRITE
from tests.invariants.test_committed import SimTable
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


# --- hand-built tables -----------------------------------------------------------------------


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_every_covered_record_committed_once_passes(operation):
    t = SimTable(operation=operation)
    t.checkpoint(50)
    t.write(t.records(0, 20))
    t.write(t.records(20, 50))
    verdict = check_exactly_once(t.events, t.table)
    assert verdict.name == "exactly_once"
    assert verdict.ok, whys(verdict)


def test_records_in_two_instants_are_duplicates_naming_both_commits():
    t = SimTable(operation="insert")
    t.checkpoint(50)
    first = t.write(t.records(0, 50))
    again = t.write(t.records(10, 20))  # a re-written batch, committed a second time
    (violation,) = check_exactly_once(t.events, t.table).violations
    assert violation.why == (
        f"10 records of job job0 (offsets 10-19) were committed by instants "
        f"{first.requested_time} and {again.requested_time}: duplicates, not exactly-once"
    )
    assert violation.events == (t.event_of(first), t.event_of(again))


def test_a_record_twice_in_one_instant_is_a_duplicate():
    t = SimTable(operation="insert")
    t.checkpoint(30)
    instant = t.start()
    stats = t.files(instant, t.records(0, 30)) + t.files(instant, t.records(5, 7), task=1)
    done = t.commit(instant, stats)
    (violation,) = check_exactly_once(t.events, t.table).violations
    assert violation.why.startswith("2 records of job job0 (offsets 5-6) were committed 2 times")
    assert f"by instant {done.requested_time}" in violation.why
    assert violation.events == (t.event_of(done),)


def test_a_covered_insert_never_committed_is_loss():
    t = SimTable(operation="insert")
    anchor_offset = 40
    t.checkpoint(anchor_offset)
    rows = t.records(0, anchor_offset)
    t.write(rows.filter(pc.invert(pc.is_in(rows.column("offset"), pa.array([3, 4, 5, 17])))))
    (violation,) = check_exactly_once(t.events, t.table).violations
    assert violation.why == (
        "4 of the 40 records that job job0's completed checkpoints covered (offsets below 40) "
        "are in no completed instant (offsets 3-5, 17): data loss"
    )
    checkpoint = next(e.index for e in t.events if e.f == "checkpoint")
    assert violation.events == (checkpoint,)


def test_upserts_need_only_the_winning_version_of_each_key():
    """Pre-combining drops superseded versions inside a batch; that is no loss. Dropping the
    winner is."""
    t = SimTable(operation="upsert", key_space=10)
    t.checkpoint(60)
    rows = t.records(0, 60)
    required = required_offsets(build_ledger(t.events).jobs[0], "EVENT_TIME_ORDERING")
    assert 0 < len(required) <= 10 < 60
    winners = rows.filter(pc.is_in(rows.column("offset"), pa.array(required)))
    t.write(winners)
    assert check_exactly_once(t.events, t.table).ok
    lost = int(required[0])
    t2 = SimTable(operation="upsert", key_space=10)
    t2.checkpoint(60)
    t2.write(rows.filter(pc.not_equal(rows.column("offset"), lost)))  # every version but one
    (violation,) = check_exactly_once(t2.events, t2.table).violations
    assert violation.why.startswith(
        f"1 of the {len(required)} latest versions per key (by the merge rule) that job job0's"
    )
    assert f"(offsets {lost}): data loss" in violation.why


def test_upserts_need_the_winner_of_every_completed_checkpoint():
    """A checkpoint's winning version of a key is written by that checkpoint's instant even when
    a later checkpoint holds a newer version: losing it is loss, though the final snapshot
    (the later winner) looks right."""
    t = SimTable(operation="upsert", key_space=10)
    t.checkpoint(30, checkpoint=1)
    t.checkpoint(60, checkpoint=2)
    job = build_ledger(t.events).jobs[0]
    required = required_offsets(job, "EVENT_TIME_ORDERING")
    first, second = required[required < 30], required[required >= 30]
    assert len(first) and len(second)  # winners in both spans
    rows = t.records(0, 60)
    lost = int(first[0])
    t.write(rows.filter(pc.not_equal(rows.column("offset"), lost)))
    (violation,) = check_exactly_once(t.events, t.table).violations
    assert f"(offsets {lost}): data loss" in violation.why


def test_commit_time_ordering_requires_the_last_offset_per_key():
    t = SimTable(operation="upsert", key_space=10, merge_mode="COMMIT_TIME_ORDERING")
    t.checkpoint(60)
    job = build_ledger(t.events).jobs[0]
    required = required_offsets(job, "COMMIT_TIME_ORDERING")
    rows = t.records(0, 60)
    last = rows.group_by("key").aggregate([("offset", "max")]).column("offset_max")
    assert sorted(required.tolist()) == sorted(last.to_pylist())


def test_records_beyond_the_last_completed_checkpoint_were_committed():
    t = SimTable(operation="insert")
    t.checkpoint(30)
    t.write(t.records(0, 30))
    late = t.write(t.records(30, 36))  # flushed for a checkpoint that failed
    (violation,) = check_exactly_once(t.events, t.table).violations
    assert violation.why == (
        f"6 records of job job0 at or beyond offset 30, which no completed checkpoint covered, "
        f"were committed by instants {late.requested_time} (offsets 30-35)"
    )
    checkpoint = next(e.index for e in t.events if e.f == "checkpoint")
    assert violation.events == (checkpoint, t.event_of(late))


def test_copy_on_write_rewrites_are_not_duplicates():
    """A copy-on-write commit rewrites the file group's old records into its new base file; those
    copies keep their commit time and are not committed again."""
    t = SimTable(table_type=COPY_ON_WRITE, key_space=100_000)
    t.checkpoint(40)
    t.write(t.records(0, 25))
    t.write(t.records(25, 40))
    assert check_exactly_once(t.events, t.table).ok


def test_pending_instants_commit_nothing():
    t = SimTable(operation="insert")
    t.checkpoint(20)
    t.write(t.records(0, 20))
    t.write(t.records(0, 20), commit=False)  # a failed attempt, never completed
    assert check_exactly_once(t.events, t.table).ok


# --- whole runs ------------------------------------------------------------------------------

INSERT_JOB = {**JOB, "operation": "insert", "records_per_s": 500, "buffer_records": 1000}
FAILED_CHECKPOINTS = {"checkpoint_failure": 0.2, "ack_delay_ms": 3000}


def mode_run(mode: str, operation: str, seed: int):
    """The runs of tests/sim/test_job.py (same text, so the same cached run)."""
    job = {**INSERT_JOB, "instant_generation": mode, "operation": operation}
    return cached_run(scenario_toml(seed=seed, jobs=(job,), faults=FAILED_CHECKPOINTS))


@pytest.mark.parametrize("seed", [7, 24])
def test_real_protocol_under_every_fault_is_exactly_once(seed):
    outcome = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS))
    verdict = check_exactly_once(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_async_with_failed_checkpoints_is_exactly_once(operation):
    outcome = mode_run("async", operation, 1)
    verdict = check_exactly_once(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


MINIBATCH_JOB = {
    "writers": 4,
    "instant_generation": "minibatch",
    "checkpoint_interval_s": 5,
    "records_per_s": 2000,
    "buffer_records": 1000,
    "key_space": 5000,
}
"""The catalog's minibatch_insert/minibatch_upsert shape, 30 s (seed 4 re-writes a batch)."""


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_minibatch_commits_rewritten_batches_twice(operation):
    """Mini-batch is at-least-once for inserts and upserts alike: a batch re-written after a
    failed checkpoint is committed again. Upserts hide it in the snapshot, not in the commits."""
    job = {**MINIBATCH_JOB, "operation": operation}
    outcome = cached_run(
        scenario_toml(seed=4, duration_s=30, jobs=(job,), faults=FAILED_CHECKPOINTS)
    )
    events = outcome.history.events
    verdict = check_exactly_once(events, outcome.table)
    assert not verdict.ok
    assert all("duplicates, not exactly-once" in why for why in whys(verdict)), whys(verdict)
    commits = {e.index for e in events if e.f == "commit" and e.type == "ok"}
    for violation in verdict.violations:
        assert len(violation.events) == 2 and set(violation.events) <= commits


def test_unpersisted_write_metadata_loses_records():
    """HUDI-9570 (the runs of tests/sim/test_job.py): a lost notification, then a job manager
    crash."""
    faults = {"ack_loss": 0.5, "coordinator_crash_per_hour": 360}
    lost = cached_run(scenario_toml(seed=2, faults=faults, protocol={"persist_write_meta": False}))
    verdict = check_exactly_once(lost.history.events, lost.table)
    assert any("data loss" in why for why in whys(verdict)), whys(verdict)
    kept = cached_run(scenario_toml(seed=2, faults=faults, protocol={"persist_write_meta": True}))
    verdict = check_exactly_once(kept.history.events, kept.table)
    assert verdict.ok, whys(verdict)


COW_OCC_JOB = {
    "writers": 2,
    "instant_generation": "blocking",
    "records_per_s": 500,
    "key_space": 1000,
    "concurrency": "occ",
}


def test_a_version_outranked_by_another_jobs_committed_one_is_not_lost():
    """Two COPY_ON_WRITE jobs share file groups (ingest_b's job manager restarts after
    ingest_a's first commit, so its writers load ingest_a's file ids). ingest_b's merge keeps
    ingest_a's version where its ordering value is greater and never writes its own: no loss.
    ingest_a's own last checkpoint, never committed (a conflict restarts it forever), is."""
    jobs = (
        {**COW_OCC_JOB, "name": "ingest_a", "checkpoint_interval_s": 5},
        {**COW_OCC_JOB, "name": "ingest_b", "checkpoint_interval_s": 7},
    )
    crash = {"at_s": 6, "kind": "crash", "target": "ingest_b/coordinator"}
    outcome = cached_run(
        scenario_toml(
            seed=18,
            duration_s=60,
            jobs=jobs,
            table={"type": "COPY_ON_WRITE", "partitions": 1, "buckets_per_partition": 4},
            faults={"schedule": [crash]},
        )
    )
    events = outcome.history.events
    first_a = next(e for e in events if e.f == "commit" and e.type == "ok")
    restart_b = [e for e in events if e.f == "start" and e.process == "ingest_b"][1]
    assert first_a.process == "ingest_a/coordinator" and first_a.index < restart_b.index
    (violation,) = check_exactly_once(events, outcome.table).violations
    assert "that job ingest_a's completed checkpoints covered" in violation.why
    ledger = build_ledger(events)
    job_b = ledger.jobs[1]
    rows = load_committed(outcome.table).rows.table
    committed_b = pc.equal(rows.column("job"), 1)
    offsets_b = rows.filter(committed_b).column("offset").to_numpy()
    required = required_offsets(job_b, ledger.merge_mode)
    missing = required[~np.isin(required, offsets_b)]
    assert len(missing) > 0  # ingest_b's winners its merges never wrote...
    assert outranked(job_b, missing, rows).all()  # ...outranked
