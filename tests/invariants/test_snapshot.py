"""Tests for invariants/snapshot.py on tiny tables written directly with models.writer.

The history is hand-built (a setup event, an emit, a completed checkpoint), the table holds
exactly the rows a test chooses, and each kind of difference must produce its own violation:
a missing key (data loss), an extra key (never checkpointed), a wrong version of a key, and
duplicate keys (committed twice).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from invariants.ledger import build_ledger
from invariants.snapshot import check_snapshot
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.records import partition_path
from models.storage import InMemoryStorage
from models.table import HudiTable
from models.truetime import make_time_generator
from models.writer import TableWriter, create_table
from tests.invariants.test_ledger import History, source

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
        verdict = check_snapshot(h.events, write_table(build_ledger(h.events).model()))
        assert verdict.name == "no_data_loss"
        assert verdict.ok, whys(verdict)


def test_the_model_split_over_several_commits_passes():
    h = checkpointed("insert")
    model = build_ledger(h.events).model()
    assert check_snapshot(h.events, write_table(model.slice(0, 20), model.slice(20))).ok


def test_a_missing_key_is_data_loss():
    h = checkpointed("upsert")
    model = build_ledger(h.events).model()
    lost = model.column("key")[3].as_py()
    table = write_table(model.filter(pc.not_equal(model.column("key"), lost)))
    verdict = check_snapshot(h.events, table)
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
    verdict = check_snapshot(h.events, write_table(ledger.model(), beyond))
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
    verdict = check_snapshot(h.events, write_table(stale))
    (violation,) = verdict.violations
    assert violation.why == (
        f"1 keys hold a different version than the merge rule picks (e.g. {loser['key']})"
    )


def test_duplicate_keys_were_committed_twice():
    h = checkpointed("insert")
    model = build_ledger(h.events).model()
    twice = model.slice(10, 3)
    verdict = check_snapshot(h.events, write_table(model, twice))
    (violation,) = verdict.violations  # no version check on duplicated data
    keys = ", ".join(twice.column("key").to_pylist())
    assert violation.why == (
        f"3 record keys appear more than once in the snapshot (e.g. {keys}): "
        "records were committed twice"
    )


def test_several_differences_are_reported_separately():
    h = checkpointed("insert", emitted=60, covered=50)
    ledger = build_ledger(h.events)
    model = ledger.model()
    table = write_table(model.slice(1), ledger.records(covered_only=False).slice(58, 2))
    reasons = whys(check_snapshot(h.events, table))
    assert len(reasons) == 2
    assert "missing from the snapshot" in reasons[0]
    assert "never covered by a completed checkpoint" in reasons[1]


def test_an_empty_table_against_an_empty_and_a_full_model():
    empty_model = checkpointed("upsert", covered=0)
    assert check_snapshot(empty_model.events, write_table()).ok
    full = checkpointed("upsert")
    (violation,) = check_snapshot(full.events, write_table()).violations
    assert "missing from the snapshot" in violation.why
