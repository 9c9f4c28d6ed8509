"""Tests for invariants/no_data_loss.py on tiny tables written directly with models.write.writer.

The end: the history is hand-built (a setup event, an emit, a completed checkpoint), the table
holds exactly the rows a test chooses, and each kind of difference must produce its own
violation: a missing key (data loss), an extra key (never checkpointed), a wrong version of a
key, and duplicate keys (committed twice).

Time travel: a compaction whose base file lost records is caught as of its completion (and not
before); whole runs: the real protocol under faults passes at every sampled bound, the 0.x
``base_instant`` slicing is caught at the end and at time-travel bounds.
"""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from invariants.committed import load_committed
from invariants.ledger import build_ledger
from invariants.no_data_loss import check_no_data_loss
from invariants.time_travel import travel_points
from models.format.records import partition_path
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.truetime import make_time_generator
from models.view.table import HudiTable
from models.write.table_init import create_table
from models.write.writer import TableWriter
from tests.invariants.test_committed import SimTable
from tests.invariants.test_ledger import History, source
from tests.sim.test_world import ALL_FAULTS, cached_run, scenario_toml

START_MS = 1_767_225_600_000


def write_table(*commits: pa.Table) -> HudiTable:
    """A MERGE_ON_READ table with one deltacommit per argument; each commit writes its rows as
    new base files (one per partition), so nothing merges across commits."""
    storage = InMemoryStorage()
    table = create_table(
        storage,
        name="t",
        record_key_field="key",
        ordering_field="ts",
        partition_fields=("part",),
    )
    clock = FakeClock(FakeWorld(START_MS))
    writer = TableWriter(table, make_time_generator("truetime", clock=clock, lock=LocalLock()))
    for n, rows in enumerate(commits):
        instant = run(writer.start_commit(), clock)
        stats = []
        for p, part in enumerate(sorted(set(rows.column("part").to_pylist()))):
            chunk = rows.filter(pc.equal(rows.column("part"), part))
            file_id = f"{n:08d}-0000-4000-8000-{p:012d}-0"
            stats.append(writer.write_base_file(instant, partition_path(part), file_id, chunk))
        run(writer.commit(instant, stats), clock)
    return table


def checkpointed(operation: str, *, emitted: int = 60, covered: int = 50) -> History:
    h = History()
    h.setup(source(0, operation=operation, key_space=30))
    h.emit("job0", 0, emitted)
    h.checkpoint("job0", 1, covered)
    return h


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


def test_a_table_holding_exactly_the_model_passes():
    for operation in ("upsert", "insert"):
        h = checkpointed(operation)
        verdict = check_no_data_loss(h.events, write_table(build_ledger(h.events).model()))
        assert verdict.name == "no_data_loss"
        assert verdict.ok, whys(verdict)


def test_the_model_split_over_several_commits_passes():
    h = checkpointed("insert")
    model = build_ledger(h.events).model()
    assert check_no_data_loss(h.events, write_table(model.slice(0, 20), model.slice(20))).ok


def test_a_missing_key_is_data_loss():
    h = checkpointed("upsert")
    model = build_ledger(h.events).model()
    lost = model.column("key")[3].as_py()
    table = write_table(model.filter(pc.not_equal(model.column("key"), lost)))
    verdict = check_no_data_loss(h.events, table)
    (violation,) = verdict.violations
    assert violation.why.startswith(
        f"1 of {model.num_rows} records covered by completed checkpoints are missing"
    )
    assert f"(e.g. {lost})" in violation.why and "data loss" in violation.why
    assert violation.events == (h.events[-1].index,)  # the completed checkpoint


def test_an_extra_key_was_never_checkpointed():
    h = checkpointed("insert", emitted=60, covered=50)
    ledger = build_ledger(h.events)
    beyond = ledger.records(covered_only=False).slice(55, 1)  # emitted, not covered
    extra = beyond.column("key")[0].as_py()
    verdict = check_no_data_loss(h.events, write_table(ledger.model(), beyond))
    (violation,) = verdict.violations
    assert violation.why == (
        f"1 records in the snapshot were never covered by a completed checkpoint (e.g. {extra})"
    )


def test_a_wrong_version_of_a_key_is_reported():
    h = checkpointed("upsert")
    ledger = build_ledger(h.events)
    records, model = ledger.records(), ledger.model()
    winners = set(
        zip(model.column("key").to_pylist(), model.column("offset").to_pylist(), strict=True)
    )
    # a key written more than once: put one of its losing versions in place of the winner
    loser = next(row for row in records.to_pylist() if (row["key"], row["offset"]) not in winners)
    stale = model.filter(pc.not_equal(model.column("key"), loser["key"]))
    stale = pa.concat_tables([stale, pa.Table.from_pylist([loser], schema=model.schema)])
    verdict = check_no_data_loss(h.events, write_table(stale))
    (violation,) = verdict.violations
    assert violation.why == (
        f"1 keys hold a different version than the merge rule picks (e.g. {loser['key']})"
    )


def test_duplicate_keys_were_committed_twice():
    h = checkpointed("insert")
    model = build_ledger(h.events).model()
    twice = model.slice(10, 3)
    verdict = check_no_data_loss(h.events, write_table(model, twice))
    violation, final = verdict.violations  # no version check on duplicated data
    keys = ", ".join(twice.column("key").to_pylist())
    assert violation.why == (
        f"3 record keys appear more than once in the snapshot (e.g. {keys}): "
        "records were committed twice"
    )
    # the commits were upserts, so against the merge of the committed writes too
    assert final.why.startswith("at the end (the final snapshot, deltacommit")
    assert final.why.endswith(
        "the reader's snapshot differs from the EVENT_TIME_ORDERING merge of the records "
        "committed by then: 3 records returned more than once (e.g. part=p0/j0-000000000010, "
        "part=p1/j0-000000000011, part=p1/j0-000000000012)"
    )


def test_several_differences_are_reported_separately():
    h = checkpointed("insert", emitted=60, covered=50)
    ledger = build_ledger(h.events)
    model = ledger.model()
    table = write_table(model.slice(1), ledger.records(covered_only=False).slice(58, 2))
    reasons = whys(check_no_data_loss(h.events, table))
    assert len(reasons) == 2
    assert "missing from the snapshot" in reasons[0]
    assert "never covered by a completed checkpoint" in reasons[1]


def test_an_empty_table_against_an_empty_and_a_full_model():
    empty_model = checkpointed("upsert", covered=0)
    assert check_no_data_loss(empty_model.events, write_table()).ok
    full = checkpointed("upsert")
    (violation,) = check_no_data_loss(full.events, write_table()).violations
    assert "missing from the snapshot" in violation.why


# --- time travel -----------------------------------------------------------------------------


def test_a_compaction_that_drops_records_is_caught_from_its_completion_on():
    t = SimTable(key_space=100_000)
    t.checkpoint(60)
    before = t.write(t.records(0, 40))
    compaction = t.compact()
    after = t.write(t.records(40, 60))
    assert check_no_data_loss(t.events, t.table).ok
    # damage the compacted base file of partition p0: two records vanish
    committed = load_committed(t.table)
    base = next(f for f in committed.get(compaction.requested_time).files if f.partition)
    rows = pq.read_table(io.BytesIO(t.storage.read(base.path)))
    lost = rows.column("key").to_pylist()[:2]
    sink = io.BytesIO()
    pq.write_table(rows.slice(2), sink)
    t.storage.write(base.path, sink.getvalue())
    reasons = whys(verdict := check_no_data_loss(t.events, t.table))
    assert reasons[0].startswith("2 of 60 records covered by completed checkpoints are missing")
    travel = verdict.violations[1:]
    bounds = [v.why.split(" (")[0] for v in travel]
    assert bounds == [f"as of {compaction.completion_time}", "at the end"]
    assert travel[0].why == (
        f"as of {compaction.completion_time} (completion of compaction "
        f"{compaction.requested_time}, compaction {compaction.requested_time} (completed "
        f"{compaction.completion_time})) the reader's snapshot differs from the "
        "EVENT_TIME_ORDERING merge of the records committed by then: 2 records missing "
        f"(e.g. part=p0/{lost[0]}, part=p0/{lost[1]})"
    )
    assert travel[0].events == (t.event_of(compaction, "compaction"),)
    assert travel[1].events == (t.event_of(after),)
    assert before.completion_time < compaction.completion_time


def test_time_travel_reads_use_the_commit_order_under_commit_time_ordering():
    t = SimTable(key_space=5, merge_mode="COMMIT_TIME_ORDERING")
    t.checkpoint(30)
    t.write(t.records(0, 15))
    t.compact()
    t.write(t.records(15, 30))
    verdict = check_no_data_loss(t.events, t.table)
    assert verdict.ok, whys(verdict)


@pytest.mark.parametrize("seed", [7, 14])
def test_real_protocol_under_faults_passes_at_every_sampled_bound(seed):
    outcome = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS))
    committed = load_committed(outcome.table)
    # a small table: every completed instant is a time-travel bound
    assert len(travel_points(committed)) == len(committed.completed()) >= 8
    verdict = check_no_data_loss(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


def base_instant_run(compaction_every_commits: int):
    """The catalog's base_instant_slicing shape, shrunk (tests/sim/test_job.py)."""
    common = {"writers": 2, "records_per_s": 500, "buffer_records": 500, "key_space": 50_000}
    jobs = (
        {
            **common,
            "name": "ingest_a",
            "checkpoint_interval_s": 3,
            "table_services": True,
            "compaction_every_commits": compaction_every_commits,
        },
        {**common, "name": "ingest_b", "table_services": False},
    )
    return cached_run(
        scenario_toml(seed=1, duration_s=20, jobs=jobs, protocol={"file_slicing": "base_instant"})
    )


def test_base_instant_slicing_loses_data_at_time_travel_bounds_too():
    outcome = base_instant_run(1)
    reasons = whys(check_no_data_loss(outcome.history.events, outcome.table))
    assert any("data loss" in why for why in reasons), reasons
    travel = [why for why in reasons if why.startswith("as of ")]
    assert travel and all("records missing" in why for why in travel), reasons


@pytest.mark.slow  # a run of its own
def test_base_instant_slicing_hides_committed_logs_even_without_compaction():
    """The end is right without compaction (tests/sim/test_job.py), but in between: job b names
    its logs after the slice job a's first, still pending, deltacommit opened, so while that one
    is pending b's committed records are invisible."""
    outcome = base_instant_run(10_000)
    events = outcome.history.events
    assert not [e for e in events if e.f == "compaction" and e.type == "ok"]
    verdict = check_no_data_loss(events, outcome.table)
    assert verdict.violations, "nothing caught"
    assert all(
        v.why.startswith("as of ") and "an earlier write instant was still pending" in v.why
        for v in verdict.violations
    ), whys(verdict)
