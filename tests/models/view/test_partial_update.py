"""Multi-stream partial updates (models/view/partial_update.py): the column-group declaration in
hoodie.properties, the records of a column group (models/format/records.py), the per-group merge, and
the reader and compaction merging through it (models/view/reader.py, models/write/writer.py)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.format.records import ORDERING_FIELD, RecordSource, column_group_schema
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.truetime import make_time_generator
from models.view.partial_update import (
    GROUPS_PROPERTY,
    LEGACY_PAYLOAD_CLASS,
    PAYLOAD_CLASS,
    WHOLE_ROW_PAYLOAD_CLASS,
    ColumnGroup,
    column_groups,
    declare_column_groups,
    declared_groups,
    format_column_groups,
    merge_column_groups,
    parse_column_groups,
    table_schema,
)
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from models.write.table_init import create_table
from models.write.writer import TableWriter

ORDERS = ColumnGroup("orders_ts", ("amount", "qty"))
PAYMENTS = ColumnGroup("payments_ts", ("paid",))
GROUPS = (ORDERS, PAYMENTS)

# --- the declaration ----------------------------------------------------------------------------


def test_groups_are_written_in_hudi_4882_form_and_read_back():
    text = format_column_groups(GROUPS)
    assert text == "orders_ts:amount,qty;payments_ts:paid"
    assert parse_column_groups(text) == GROUPS


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ((), "at least one column group"),
        ((ORDERS, ColumnGroup("payments_ts", ("qty",))), "'qty' is in groups 0 and 1"),
        ((ColumnGroup("ts", ("a",)),), "reserved"),
        ((ColumnGroup("a_ts", ()),), "distinct columns"),
        ((ColumnGroup("a_ts", ("x", "x")),), "distinct columns"),
        ((ColumnGroup("a_ts", ("Bad",)),), "lower-case identifier"),
    ],
)
def test_bad_groups_are_refused(groups, message):
    with pytest.raises(ValueError, match=message):
        format_column_groups(groups)


def test_a_declaration_without_colon_is_refused():
    with pytest.raises(ValueError, match="<ordering field>:<columns>"):
        parse_column_groups("orders_ts")


def new_table() -> HudiTable:
    return create_table(
        InMemoryStorage(),
        name="wide",
        record_key_field="key",
        ordering_field="ts",
        partition_fields=("part",),
    )


def test_declaring_groups_rewrites_the_properties_and_the_config():
    table = new_table()
    assert column_groups(table.config) == () == declared_groups(table.config)
    declare_column_groups(table, GROUPS)
    again = HudiTable(table.storage)  # from storage, as any later reader sees it
    for config in (table.config, again.config):
        assert config.raw[GROUPS_PROPERTY] == "orders_ts:amount,qty;payments_ts:paid"
        assert config.raw[LEGACY_PAYLOAD_CLASS] == PAYLOAD_CLASS
        assert column_groups(config) == GROUPS == declared_groups(config)
        assert config.merge_mode == "EVENT_TIME_ORDERING"  # what RFC-97 maps the payload to
        assert config.ordering_fields == (ORDERING_FIELD,)


def test_the_row_variant_declares_the_columns_but_merges_whole_rows():
    table = new_table()
    declare_column_groups(table, GROUPS, payload_class=WHOLE_ROW_PAYLOAD_CLASS)
    assert declared_groups(table.config) == GROUPS
    assert column_groups(table.config) == ()


def test_table_schema_is_the_record_level_columns_then_every_group():
    assert table_schema(GROUPS).names == [
        "key",
        "part",
        "ts",
        "offset",
        "job",
        "orders_ts",
        "amount",
        "qty",
        "payments_ts",
        "paid",
    ]


# --- the records of a column group --------------------------------------------------------------


def group_source(job_index: int, group: ColumnGroup, **kw) -> RecordSource:
    args = dict(seed=3, job_index=job_index, key_space=40, partitions=2, records_per_s=1000.0)
    args.update(kw)
    return RecordSource(columns=group.columns, ordering_field=group.ordering_field, **args)


def test_a_column_group_source_writes_only_its_group():
    rows = group_source(1, PAYMENTS).batch(0, 500)
    assert rows.schema == column_group_schema(PAYMENTS.columns, PAYMENTS.ordering_field)
    assert rows.column_names == ["key", "part", "ts", "offset", "job", "payments_ts", "paid"]
    assert rows.column("payments_ts").equals(rows.column("ts"))
    assert pc.all(pc.greater_equal(rows.column("paid"), 0)).as_py()
    # a pure function of (seed, job, offset), in any batching
    parts = [group_source(1, PAYMENTS).batch(a, b) for a, b in ((0, 7), (7, 300), (300, 500))]
    assert pa.concat_tables(parts).equals(rows)
    assert group_source(1, PAYMENTS).batch(0, 0).schema == rows.schema


def test_columns_of_one_group_are_different_payloads():
    rows = group_source(0, ORDERS).batch(0, 200)
    assert not rows.column("amount").equals(rows.column("qty"))


def test_a_column_group_source_refuses_inserts_and_bad_names():
    with pytest.raises(ValueError, match="upsert"):
        group_source(0, ORDERS, operation="insert")
    with pytest.raises(ValueError, match="reserved"):
        RecordSource(
            seed=1, job_index=0, key_space=5, partitions=1, records_per_s=1.0, columns=("value",)
        )


# --- the merge ----------------------------------------------------------------------------------


def versions(*rows: dict) -> pa.Table:
    """Versions as streams write them: the columns any of them names, null where one lacks it."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    return pa.Table.from_pylist([{name: row.get(name) for name in names} for row in rows])


def merge(batches: list[pa.Table], groups=GROUPS) -> pa.Table:
    rows = pa.concat_tables(batches, promote_options="permissive")
    deleted = (
        pc.fill_null(rows.column("_hoodie_is_deleted"), False).to_numpy(zero_copy_only=False)
        if "_hoodie_is_deleted" in rows.column_names
        else np.zeros(rows.num_rows, bool)
    )
    return merge_column_groups(rows, rows.column("key"), deleted, groups, "ts")


def o(key: str, ts: int, amount: int, offset: int = 0) -> dict:
    return {"key": key, "ts": ts, "offset": offset, "job": 0, "orders_ts": ts, "amount": amount}


def p(key: str, ts: int, paid: int, offset: int = 0) -> dict:
    return {"key": key, "ts": ts, "offset": offset, "job": 1, "payments_ts": ts, "paid": paid}


def test_each_stream_only_updates_its_own_columns():
    merged = merge([versions(o("k1", 10, 100)), versions(p("k1", 5, 7))])
    assert merged.select(["key", "amount", "paid", "orders_ts", "payments_ts"]).to_pylist() == [
        {"key": "k1", "amount": 100, "paid": 7, "orders_ts": 10, "payments_ts": 5}
    ]


def test_only_a_newer_ordering_value_of_the_group_overwrites_it():
    # a late orders update (ts 8 < 10) loses, though it arrives last; payments' ts is unrelated
    merged = merge(
        [versions(o("k1", 10, 100)), versions(p("k1", 50, 7)), versions(o("k1", 8, 999))]
    )
    assert merged.select(["amount", "paid"]).to_pylist() == [{"amount": 100, "paid": 7}]


def test_a_key_one_stream_never_wrote_has_nulls_in_its_columns():
    merged = merge([versions(o("k1", 1, 1)), versions(p("k2", 2, 2))])
    assert merged.select(["key", "amount", "paid"]).to_pylist() == [
        {"key": "k1", "amount": 1, "paid": None},
        {"key": "k2", "amount": None, "paid": 2},
    ]


def test_record_level_columns_come_from_the_first_group_that_has_a_winner():
    merged = merge([versions(p("k1", 90, 7, offset=5)), versions(o("k1", 10, 100, offset=3))])
    row = merged.to_pylist()[0]
    assert (row["ts"], row["offset"], row["job"]) == (10, 3, 0)  # orders is declared first
    only_payments = merge([versions(p("k2", 90, 7, offset=5))]).to_pylist()[0]
    assert (only_payments["ts"], only_payments["job"]) == (90, 1)


def test_ties_go_to_the_later_version():
    merged = merge([versions(o("k1", 10, 1)), versions(o("k1", 10, 2))])
    assert merged.column("amount").to_pylist() == [2]


def test_a_delete_winning_any_group_deletes_the_row():
    delete = {"key": "k1", "ts": 20, "_hoodie_is_deleted": True}
    kept = {"key": "k2", "ts": 1, "_hoodie_is_deleted": True}  # older than everything of k2
    merged = merge(
        [
            versions(o("k1", 10, 1), o("k2", 10, 1), p("k2", 10, 1)),
            versions(delete, kept),
            versions(p("k1", 30, 5)),  # newer than the delete in payments only
        ]
    )
    assert merged.column("key").to_pylist() == ["k2"]


def test_a_delete_without_ordering_value_deletes_unconditionally():
    merged = merge(
        [versions({"key": "k1", "_hoodie_is_deleted": True}), versions(o("k1", 10**12, 1))]
    )
    assert merged.num_rows == 0


# hypothesis: the merge is independent of arrival order and of batching (docs/protocol.md section 5)


@st.composite
def stream_versions(draw) -> list[dict]:
    n = draw(st.integers(1, 24))
    out = []
    for i in range(n):
        key = f"k{draw(st.integers(0, 4))}"
        ts = draw(st.integers(0, 6)) * 10 + i % 2  # repeats: ties across streams and keys
        if draw(st.booleans()):
            out.append(o(key, ts, draw(st.integers(0, 9)), offset=i))
        else:
            out.append(p(key, ts, draw(st.integers(0, 9)), offset=i))
    return out


def fold(batches: list[list[dict]]) -> pa.Table:
    """Merge batch by batch into the result so far, as compactions do."""
    result: pa.Table | None = None
    for batch in batches:
        parts = [versions(*batch)] if result is None else [result, versions(*batch)]
        result = merge(parts)
    assert result is not None
    return result


def canonical(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["key"])


@settings(max_examples=150, deadline=None)
@example(rows=[o("k0", 10, 1, 0), p("k0", 20, 2, 1), o("k0", 30, 3, 2)], seed=1, cuts=[1]).via(
    "regression: a later group update over a folded base row"
)
@given(stream_versions(), st.integers(0, 2**32 - 1), st.lists(st.integers(1, 23), max_size=4))
def test_the_merge_is_independent_of_order_and_batching(rows, seed, cuts):
    # distinct ordering values per key and group, so "later wins a tie" cannot matter
    unique: dict[tuple, dict] = {}
    for row in rows:
        unique.setdefault((row["key"], row["job"], row["ts"]), row)
    rows = list(unique.values())
    expected = canonical(merge([versions(*rows)]))
    shuffled = [rows[i] for i in np.random.default_rng(seed).permutation(len(rows))]
    assert canonical(merge([versions(*shuffled)])) == expected
    edges = sorted({c for c in cuts if c < len(rows)})
    batches = [rows[a:b] for a, b in zip([0, *edges], [*edges, len(rows)], strict=True)]
    assert canonical(fold(batches)) == expected


# --- the reader and compaction ------------------------------------------------------------------


def table_with_writer() -> tuple[HudiTable, TableWriter, FakeClock]:
    table = new_table()
    declare_column_groups(table, GROUPS)
    clock = FakeClock(FakeWorld(1_767_225_600_000))
    generator = make_time_generator(
        "truetime", clock=clock, lock=LocalLock(), max_expected_clock_skew_ms=1
    )
    return table, TableWriter(table, generator, data_schema=table_schema(GROUPS)), clock


def write(writer: TableWriter, clock: FakeClock, rows: pa.Table, task: int = 0) -> None:
    instant = run(writer.start_commit(), clock)
    stat = writer.append_log_file(instant, "part=p0", "f1", rows, task_id=task)
    run(writer.commit(instant, [stat]), clock)


def stream_rows(source: RecordSource, start: int, stop: int) -> pa.Table:
    rows = source.batch(start, stop)
    rows = rows.filter(pc.equal(rows.column("part"), "p0"))
    # one version per key, as a write task pre-combines its buffer
    order = pc.sort_indices(rows, [("key", "ascending"), ("ts", "descending")])
    rows = rows.take(order)
    keys = rows.column("key").to_numpy(zero_copy_only=False)
    first = np.ones(len(keys), bool)
    first[1:] = keys[1:] != keys[:-1]
    return rows.filter(pa.array(first))


def test_the_reader_merges_logs_of_two_streams_per_group_before_and_after_compaction():
    table, writer, clock = table_with_writer()
    orders, payments = group_source(0, ORDERS), group_source(1, PAYMENTS)
    batches = [
        stream_rows(orders, 0, 300),
        stream_rows(payments, 0, 200),
        stream_rows(orders, 300, 600),
        stream_rows(payments, 200, 500),
    ]
    for i, rows in enumerate(batches[:2]):
        write(writer, clock, rows, task=i)
    before = read_snapshot(table)
    compaction = run(writer.schedule_compaction(), clock)
    run(writer.run_compaction(compaction), clock)
    assert (
        read_snapshot(table)
        .drop_columns(["_hoodie_file_name"])
        .equals(before.drop_columns(["_hoodie_file_name"]))
    )
    for i, rows in enumerate(batches[2:]):
        write(writer, clock, rows, task=i)
    after = read_snapshot(table)
    wanted = merge(batches)  # everything merged at once: no compaction in between
    got = after.select(wanted.column_names)
    assert canonical(got) == canonical(wanted)
    both = pc.and_(pc.is_valid(after.column("amount")), pc.is_valid(after.column("paid")))
    assert pc.sum(both).as_py() > 0  # the wide rows really stitch both streams


def test_a_snapshot_has_every_declared_column_before_every_stream_wrote():
    table, writer, clock = table_with_writer()
    write(writer, clock, stream_rows(group_source(0, ORDERS), 0, 100))
    snapshot = read_snapshot(table)
    assert {"payments_ts", "paid"} <= set(snapshot.column_names)
    assert snapshot.column("paid").null_count == snapshot.num_rows
