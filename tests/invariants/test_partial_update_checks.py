"""The checkers on multi-stream partial updates (docs/protocol.md section 5.3): the per-column-group merge spec of
invariants/merging.py, the ledger's model (invariants/ledger.py), merge_convergence and
no_data_loss on whole runs of the real rule (never flagged) and of the whole-row variant (caught).
"""

from __future__ import annotations

import tomllib
from functools import cache

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants import no_uncommitted_read
from invariants.checks import check_all
from invariants.ledger import build_ledger, column_groups_of
from invariants.merge_convergence import check_merge_convergence
from invariants.merging import IDENT, Identified, PartialUpdateMerge, compare, merge_spec_for
from invariants.no_data_loss import check_no_data_loss
from models.format.parquet_files import base_file_parquet, read_parquet
from models.format.properties import TableConfig
from models.storage import join
from models.view.fsview import latest_file_slices
from models.view.partial_update import ColumnGroup, merge_column_groups
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from scenarios import catalog_dir
from scenarios.schema import scenario_from_dict
from sim.world import World

ORDERS = ColumnGroup("orders_ts", ("amount", "qty"))
PAYMENTS = ColumnGroup("payments_ts", ("paid",))
SPEC = PartialUpdateMerge((ORDERS, PAYMENTS), "ts")

# --- the merge spec -----------------------------------------------------------------------------


def identified_rows(rows: list[dict]) -> Identified:
    """Committed rows as the checkers hold them: identity, commit time, delete flag, data."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    table = pa.Table.from_pylist([{name: row.get(name) for name in names} for row in rows])
    keys = table.column("key")
    table = table.append_column(IDENT, keys).append_column(
        "_c_commit_time", pa.array([str(1000 + i) for i in range(len(rows))])
    )
    codes = np.unique(keys.to_numpy(zero_copy_only=False), return_inverse=True)[1]
    deleted = np.array([bool(row.get("deleted")) for row in rows])
    return Identified(table, codes.astype(np.int64), deleted)


def o(key: str, ts: int, amount: int) -> dict:
    return {"key": key, "ts": ts, "job": 0, "orders_ts": ts, "amount": amount}


def p(key: str, ts: int, paid: int) -> dict:
    return {"key": key, "ts": ts, "job": 1, "payments_ts": ts, "paid": paid}


def test_the_spec_merges_each_group_by_its_own_ordering_value():
    ids = identified_rows([o("k1", 10, 1), p("k1", 5, 2), o("k1", 8, 3), p("k2", 1, 4)])
    every = np.arange(4)
    merged = SPEC.merge(ids, every, every)
    rows = {r["key"]: r for r in merged.to_pylist()}
    assert (rows["k1"]["amount"], rows["k1"]["paid"], rows["k1"]["job"]) == (1, 2, 0)
    assert (rows["k2"]["amount"], rows["k2"]["paid"], rows["k2"]["job"]) == (None, 4, 1)
    assert rows["k1"]["_c_commit_time"] == "1000"  # the first group's winner stands for the row
    assert SPEC.winners(ids, every, every).tolist() == [0, 1, 3]


def test_the_spec_folds_like_a_compaction():
    ids = identified_rows([o("k1", 10, 1), p("k1", 5, 2), o("k1", 12, 3), p("k1", 4, 9)])
    first = SPEC.winners(ids, np.arange(2), np.arange(2))
    folded = np.concatenate([first, [2, 3]])
    again = SPEC.merge(ids, folded, folded)
    assert again.to_pylist() == SPEC.merge(ids, np.arange(4), np.arange(4)).to_pylist()


def test_a_delete_winning_a_group_deletes_the_record():
    rows = [o("k1", 10, 1), p("k1", 10, 2), {"key": "k1", "ts": 11, "deleted": True}]
    ids = identified_rows(rows)
    every = np.arange(3)
    assert SPEC.merge(ids, every, every).num_rows == 0
    ids = identified_rows([*rows, p("k1", 20, 3), o("k1", 20, 4)])  # newer in both groups
    every = np.arange(5)
    assert SPEC.merge(ids, every, every).column("paid").to_pylist() == [3]


@st.composite
def histories(draw) -> list[dict]:
    out = []
    for i in range(draw(st.integers(1, 20))):
        key = f"k{draw(st.integers(0, 3))}"
        ts = draw(st.integers(0, 50)) * 100 + i  # unique: no ties, so order cannot matter
        kind = draw(st.sampled_from(["o", "p", "o", "p", "delete"]))
        if kind == "delete":
            out.append({"key": key, "ts": ts, "deleted": True})
        else:
            out.append((o if kind == "o" else p)(key, ts, draw(st.integers(0, 9))))
    return out


@settings(max_examples=120, deadline=None)
@given(histories(), st.randoms(use_true_random=False))
def test_the_checkers_merge_equals_the_readers_merge_in_any_order(rows, rnd):
    """Two implementations, one rule: the checkers' spec (invariants/merging.py) and the
    reader's (models/view/partial_update.py) agree, and neither depends on arrival order."""
    ids = identified_rows(rows)
    every = np.arange(len(rows))
    expected = SPEC.merge(ids, every, every)
    table = ids.table
    model = merge_column_groups(table, table.column("key"), ids.deleted, SPEC.groups, "ts")
    names = ("ts", "job", "orders_ts", "amount", "payments_ts", "paid")
    columns = [c for c in names if c in table.column_names]
    assert compare(expected, model, columns).empty
    order = np.array(rnd.sample(range(len(rows)), len(rows)))
    assert compare(expected, SPEC.merge(ids, every, order), columns).empty


def test_the_spec_comes_from_the_history_whatever_the_table_declares():
    whole_rows = TableConfig({"hoodie.table.precombine.field": "ts"})
    assert merge_spec_for(whole_rows).name == "EVENT_TIME_ORDERING"
    spec = merge_spec_for(whole_rows, (ORDERS, PAYMENTS))
    assert isinstance(spec, PartialUpdateMerge) and spec.groups == (ORDERS, PAYMENTS)


# --- whole runs ---------------------------------------------------------------------------------


def _raw(stem: str) -> dict:
    return tomllib.loads((catalog_dir() / f"{stem}.toml").read_text())


@cache
def run(stem: str, merge: str = "", duration_s: float = 30, payments_keys: int = 0):
    data = _raw(stem)
    data["scenario"]["duration_s"] = duration_s
    if merge:
        data["protocol"] = {"partial_update_merge": merge}
    if payments_keys:
        data["jobs"][1]["key_space"] = payments_keys
    outcome = World(scenario_from_dict(data, stem)).run()
    return outcome.history.events, HudiTable(outcome.storage)


def test_the_ledger_reads_the_column_groups_from_the_history():
    events, _ = run("partial_updates_two_streams", payments_keys=500)
    ledger = build_ledger(events)
    assert ledger.column_groups == (ORDERS, PAYMENTS)
    model = ledger.model()
    only_orders = model.filter(pa.compute.is_null(model.column("paid")))
    assert only_orders.num_rows > 0  # keys payments never drew: null in its columns
    assert only_orders.column("orders_ts").null_count == 0
    both = model.filter(pa.compute.is_valid(model.column("paid")))
    assert both.column("amount").null_count < both.num_rows


def test_the_real_rule_converges_and_loses_nothing():
    events, table = run("partial_updates_two_streams", payments_keys=500)
    assert check_merge_convergence(events, table).ok
    assert check_no_data_loss(events, table).ok
    assert any(e.f == "compaction" and e.type == "ok" for e in events)  # compacted mid-run
    snapshot = read_snapshot(table)
    both = pa.compute.and_(
        pa.compute.is_valid(snapshot.column("amount")), pa.compute.is_valid(snapshot.column("paid"))
    )
    assert pa.compute.sum(both).as_py() > 0


def test_every_other_invariant_holds_on_the_real_rule():
    events, table = run("partial_updates_two_streams")
    verdicts = check_all(events, table)
    assert {name for name, v in verdicts.items() if not v.ok} == set()


def test_the_whole_row_merge_is_caught():
    events, table = run("partial_updates_two_streams", merge="row")
    convergence = check_merge_convergence(events, table)
    loss = check_no_data_loss(events, table)
    assert not convergence.ok and not loss.ok
    why = convergence.violations[-1].why
    assert "per-column-group partial-update merge" in why
    assert "=None" in why  # the other stream's columns, wiped by a whole row
    assert convergence.violations[-1].events  # the commits involved
    assert any("different version" in v.why for v in loss.violations)


# --- no_uncommitted_read, one column group at a time ----------------------------------------------


def test_no_uncommitted_read_accepts_rows_built_from_several_committed_versions():
    events, table = run("partial_updates_two_streams")
    assert no_uncommitted_read.check_no_uncommitted_read(events, table).ok


def test_no_uncommitted_read_catches_a_group_value_no_stream_committed():
    """A compacted base file whose ``paid`` value no payments commit ever wrote: the row's
    record-level columns and its orders group still match committed rows, the payments group
    does not, and that alone must be reported."""
    events, table = run.__wrapped__("partial_updates_two_streams")
    _, groups = table.file_groups()
    # MOR upserts write logs only: every base file is a compaction's, which no write instant lists
    compacted = [s for s in latest_file_slices(groups) if s.base_file is not None]
    for file_slice in compacted:
        path = join(file_slice.partition, file_slice.base_file.name)
        rows = read_parquet(table.storage.read(path))
        paid = rows.column("paid")
        if paid.null_count < rows.num_rows:
            break
    else:
        raise AssertionError("no base file holds a payments value in this run")
    first = pa.compute.index(pa.compute.is_valid(paid), True).as_py()
    changed = pa.array(
        [v + 1_000_000 if i == first else v for i, v in enumerate(paid.to_pylist())], paid.type
    )
    rows = rows.set_column(rows.schema.get_field_index("paid"), "paid", changed)
    table.storage.write(path, base_file_parquet(rows))
    verdict = no_uncommitted_read.check_no_uncommitted_read(events, HudiTable(table.storage))
    assert not verdict.ok
    assert "1 uncommitted records" in verdict.violations[-1].why, verdict.violations[-1].why


def test_no_uncommitted_read_marks_a_missing_column_as_null():
    key = pa.chunked_array([["k1"]])
    missing = no_uncommitted_read._fingerprint(key, key, key, [None])
    null = no_uncommitted_read._fingerprint(key, key, key, [pa.chunked_array([[None]], pa.int64())])
    assert missing.equals(null)


def test_column_groups_need_only_the_start_events():
    events, _ = run("partial_updates_two_streams", payments_keys=500)
    starts = [e for e in events if e.f == "start"]
    assert column_groups_of(starts) == (ORDERS, PAYMENTS) == build_ledger(events).column_groups
    assert column_groups_of([]) == ()
