"""Record merging (models/view/reader.py ``merge_versions``, docs/protocol.md section 5): which version of
each key wins under event-time and commit-time ordering, deletes, composite keys, and properties
checked against a brute-force statement of the rules."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from itertools import pairwise

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.format.avro_arrow import arrow_schema_for
from models.format.log_blocks import DataBlock, DeleteBlock, delete_keys_schema
from models.format.log_reader import read_log_blocks
from models.format.log_writer import write_log_blocks
from models.format.properties import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    MERGE_MODE,
    POPULATE_META_FIELDS,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELDS,
    TABLE_NAME,
    TABLE_TYPE,
    TABLE_VERSION,
    TableConfig,
    format_properties,
)
from models.storage import InMemoryStorage
from models.table_errors import CorruptTableError
from models.timeline.active import Timeline
from models.timeline.archiver import archive_instants
from models.timeline.instant import Instant, State
from models.view import reader
from models.view.filenames import parse_log_file_name
from models.view.fsview import FileSlice, LogFile
from models.view.reader import merge_file_slice, merge_versions, read_snapshot
from models.view.table import HudiTable, ReadCache, ViewOptions
from tests.table_harness import TableHarness, rows

KEY = "_hoodie_record_key"
DELETED = "_hoodie_is_deleted"


def make_config(mode: str | None = EVENT_TIME_ORDERING, **extra: str) -> TableConfig:
    raw = {TABLE_NAME: "t", TABLE_VERSION: "8", RECORD_KEY_FIELDS: "id", PRECOMBINE_FIELD: "ts"}
    if mode is not None:
        raw[MERGE_MODE] = mode
    return TableConfig({**raw, **extra})


EVENT = make_config(EVENT_TIME_ORDERING)
COMMIT = make_config(COMMIT_TIME_ORDERING)


def batch(*rows: tuple, deleted: bool = False) -> pa.Table:
    """Rows of (key, ts, val[, is_deleted])."""
    columns = {
        KEY: pa.array([r[0] for r in rows], pa.string()),
        "ts": pa.array([r[1] for r in rows], pa.int64()),
        "val": pa.array([r[2] for r in rows], pa.string()),
    }
    if deleted:
        columns[DELETED] = pa.array([r[3] for r in rows], pa.bool_())
    return pa.table(columns)


def tombstones(*keys: str, ordering=None, ordering_type: pa.DataType | None = None) -> pa.Table:
    columns = {"record_key": pa.array(keys, pa.string())}
    if ordering is not None:
        columns["ordering_value"] = pa.array(ordering, ordering_type or pa.int64())
    return pa.table(columns)


def winners(table: pa.Table) -> dict[str, str]:
    if table.num_rows == 0:
        return {}
    return dict(zip(table.column(KEY).to_pylist(), table.column("val").to_pylist(), strict=True))


# ---------------------------------------------------------------------------------------------
# EVENT_TIME_ORDERING


def test_event_time_greatest_ordering_value_wins():
    out = merge_versions(
        [
            batch(("a", 3, "a3"), ("b", 1, "b1")),
            batch(("a", 5, "a5"), ("b", 0, "b0")),
            batch(("a", 4, "a4")),
        ],
        [],
        EVENT,
    )
    assert out.to_pylist() == [
        {KEY: "a", "ts": 5, "val": "a5"},
        {KEY: "b", "ts": 1, "val": "b1"},
    ]


def test_event_time_ties_go_to_the_later_version():
    assert winners(
        merge_versions([batch(("a", 5, "first")), batch(("a", 5, "second"))], [], EVENT)
    ) == {"a": "second"}
    # within one batch as well
    assert winners(merge_versions([batch(("a", 5, "first"), ("a", 5, "second"))], [], EVENT)) == {
        "a": "second"
    }
    # an earlier, greater value still beats a later tie of smaller ones
    assert winners(
        merge_versions([batch(("a", 7, "big"), ("a", 5, "x"), ("a", 5, "y"))], [], EVENT)
    ) == {"a": "big"}


def test_event_time_is_the_default_with_an_ordering_field():
    config = make_config(mode=None)
    assert winners(
        merge_versions([batch(("a", 9, "old")), batch(("a", 1, "new"))], [], config)
    ) == {"a": "old"}


def test_event_time_without_an_ordering_field_falls_back_to_last_wins():
    config = TableConfig({TABLE_NAME: "t", TABLE_VERSION: "8", MERGE_MODE: EVENT_TIME_ORDERING})
    assert winners(
        merge_versions([batch(("a", 9, "old")), batch(("a", 1, "new"))], [], config)
    ) == {"a": "new"}


def test_output_keeps_exactly_the_input_columns():
    out = merge_versions([batch(("a", 1, "x"), deleted=False)], [tombstones("z")], EVENT)
    assert out.column_names == [KEY, "ts", "val"]
    out = merge_versions([batch(("a", 1, "x", False), deleted=True)], [], EVENT)
    assert out.column_names == [KEY, "ts", "val", DELETED]


def test_event_time_null_ordering_value_loses():
    assert winners(
        merge_versions([batch(("a", 5, "x")), batch(("a", None, "null"))], [], EVENT)
    ) == {"a": "x"}
    # and a delete without an ordering value removes it
    assert winners(merge_versions([batch(("a", None, "null"))], [tombstones("a")], EVENT)) == {}


# ---------------------------------------------------------------------------------------------
# COMMIT_TIME_ORDERING


def test_commit_time_last_version_wins():
    out = merge_versions(
        [batch(("a", 9, "a-first"), ("b", 1, "b-first")), batch(("a", 1, "a-last"))],
        [],
        COMMIT,
    )
    assert out.to_pylist() == [
        {KEY: "a", "ts": 1, "val": "a-last"},
        {KEY: "b", "ts": 1, "val": "b-first"},
    ]


def test_commit_time_is_the_default_without_an_ordering_field():
    config = TableConfig({TABLE_NAME: "t", TABLE_VERSION: "8"})
    assert winners(merge_versions([batch(("a", 9, "old"), ("a", 1, "new"))], [], config)) == {
        "a": "new"
    }


# ---------------------------------------------------------------------------------------------
# delete tombstones


@pytest.mark.parametrize(
    "tomb",
    [
        tombstones("a"),  # no ordering_value column
        tombstones("a", ordering=[None]),
        tombstones("a", ordering=[None], ordering_type=pa.null()),
        tombstones("a", ordering=[0], ordering_type=pa.int32()),  # SQL DELETE writes IntWrapper 0
        tombstones("a", ordering=[0]),
    ],
    ids=["no-column", "null-int64", "null-type", "int32-zero", "int64-zero"],
)
@pytest.mark.parametrize("config", [EVENT, COMMIT], ids=["event", "commit"])
def test_delete_without_ordering_value_is_unconditional(tomb, config):
    out = merge_versions([batch(("a", 100, "a"), ("b", 1, "b"))], [tomb], config)
    assert winners(out) == {"b": "b"}


@pytest.mark.parametrize(
    ("delete_ordering", "expected"),
    [
        (50, {"a": "a100", "b": "b"}),  # an older delete loses to the newer record
        (150, {"b": "b"}),  # a newer delete wins
        (100, {"b": "b"}),  # a tie goes to the later version: the delete comes after the data
    ],
)
def test_delete_with_ordering_value_competes_under_event_time(delete_ordering, expected):
    out = merge_versions(
        [batch(("a", 100, "a100"), ("b", 1, "b"))],
        [tombstones("a", ordering=[delete_ordering])],
        EVENT,
    )
    assert winners(out) == expected


def test_delete_with_ordering_value_always_wins_under_commit_time():
    out = merge_versions([batch(("a", 100, "a100"))], [tombstones("a", ordering=[50])], COMMIT)
    assert winners(out) == {}


def test_deletes_of_absent_keys_change_nothing():
    out = merge_versions(
        [batch(("a", 1, "a"), ("b", 2, "b"))],
        [tombstones("x", "y"), tombstones("z", ordering=[7])],
        EVENT,
    )
    assert winners(out) == {"a": "a", "b": "b"}


def test_several_tombstone_batches():
    out = merge_versions(
        [batch(("a", 1, "a"), ("b", 2, "b"), ("c", 3, "c"))],
        [tombstones("a"), tombstones("c", ordering=[1])],  # c's delete is older than c
        EVENT,
    )
    assert winners(out) == {"b": "b", "c": "c"}


# ---------------------------------------------------------------------------------------------
# _hoodie_is_deleted


def test_is_deleted_column_under_event_time():
    out = merge_versions(
        [
            batch(
                ("a", 1, "a1", False),
                ("b", 3, "b3", True),
                ("c", 1, "c1", True),
                ("d", 1, "d", None),
                deleted=True,
            ),
            batch(("a", 2, "a2", True), ("b", 2, "b2", False), ("c", 2, "c2", False), deleted=True),
        ],
        [],
        EVENT,
    )
    # a: the newer version is a delete; b: the delete has the greater ordering value;
    # c: a newer live version revives the key; d: a null flag is not a delete
    assert out.to_pylist() == [
        {KEY: "c", "ts": 2, "val": "c2", DELETED: False},
        {KEY: "d", "ts": 1, "val": "d", DELETED: None},
    ]


def test_is_deleted_column_under_commit_time():
    out = merge_versions(
        [
            batch(("a", 9, "a", False), ("b", 1, "b", True), deleted=True),
            batch(("a", 1, "a-del", True), ("b", 0, "b-back", False), deleted=True),
        ],
        [],
        COMMIT,
    )
    assert winners(out) == {"b": "b-back"}


def test_batches_with_and_without_the_is_deleted_column():
    out = merge_versions(
        [batch(("a", 1, "a1")), batch(("a", 2, "a2", True), ("b", 1, "b", False), deleted=True)],
        [],
        EVENT,
    )
    assert winners(out) == {"b": "b"}


# ---------------------------------------------------------------------------------------------
# record keys from key fields (no meta columns)

COMPOSITE = TableConfig(
    {
        TABLE_NAME: "t",
        TABLE_VERSION: "9",
        RECORD_KEY_FIELDS: "txn_id,region",
        PRECOMBINE_FIELD: "ts",
        MERGE_MODE: EVENT_TIME_ORDERING,
    }
)


def txns(*rows: tuple) -> pa.Table:
    return pa.table(
        {
            "txn_id": pa.array([r[0] for r in rows], pa.string()),
            "region": pa.array([r[1] for r in rows], pa.string()),
            "ts": pa.array([r[2] for r in rows], pa.int64()),
            "val": pa.array([r[3] for r in rows], pa.string()),
        }
    )


def test_composite_record_keys_group_by_both_fields():
    out = merge_versions(
        [
            txns(("1", "eu", 1, "1eu-old"), ("1", "us", 5, "1us"), ("2", "eu", 1, "2eu")),
            txns(("1", "eu", 2, "1eu-new"), ("2", "eu", 0, "2eu-older")),
        ],
        [],
        COMPOSITE,
    )
    rows = sorted((r["txn_id"], r["region"], r["val"]) for r in out.to_pylist())
    assert rows == [("1", "eu", "1eu-new"), ("1", "us", "1us"), ("2", "eu", "2eu")]
    assert out.column_names == ["txn_id", "region", "ts", "val"]


def test_composite_keys_do_not_collide_on_concatenation():
    # "1" + "12" and "11" + "2" would collide if the fields were simply concatenated
    out = merge_versions([txns(("1", "12", 1, "x"), ("11", "2", 2, "y"))], [], COMPOSITE)
    assert out.num_rows == 2


def test_composite_key_tombstone_deletes():
    out = merge_versions(
        [txns(("1", "eu", 1, "a"), ("1", "us", 1, "b"))],
        [tombstones("txn_id:1,region:eu")],
        COMPOSITE,
    )
    assert [(r["txn_id"], r["region"]) for r in out.to_pylist()] == [("1", "us")]


def test_single_key_field_without_meta_column():
    config = make_config(**{RECORD_KEY_FIELDS: "id"})
    table = pa.table({"id": pa.array([1, 1, 2], pa.int32()), "ts": pa.array([2, 1, 1], pa.int64())})
    out = merge_versions([table], [tombstones("2")], config)
    assert out.to_pylist() == [{"id": 1, "ts": 2}]


def test_meta_column_ignored_when_meta_fields_are_not_populated():
    config = make_config(**{POPULATE_META_FIELDS: "false", RECORD_KEY_FIELDS: "id"})
    table = pa.table(
        {
            KEY: pa.array(["", ""], pa.string()),  # not populated
            "id": pa.array(["a", "b"], pa.string()),
            "ts": pa.array([1, 1], pa.int64()),
        }
    )
    assert merge_versions([table], [], config).column("id").to_pylist() == ["a", "b"]


def test_missing_key_fields_are_a_corrupt_table():
    table = pa.table({"ts": pa.array([1], pa.int64())})
    with pytest.raises(CorruptTableError, match="missing"):
        merge_versions([table], [], make_config(**{RECORD_KEY_FIELDS: "id"}))
    with pytest.raises(CorruptTableError, match="no _hoodie_record_key"):
        merge_versions([table], [], make_config(**{RECORD_KEY_FIELDS: ""}))


# ---------------------------------------------------------------------------------------------
# properties against a brute-force statement of the rules

KEYS = "abcd"


def oracle(rows: list[tuple], tombs: list[tuple], event_time: bool) -> dict[str, str]:
    """rows: (key, ts, val, is_deleted) in merge order; tombs: (key, ordering or None), after."""
    best: dict[str, tuple] = {}
    versions = [(k, ts, val, deleted) for k, ts, val, deleted in rows]
    versions += [(k, o or math.inf, None, True) for k, o in tombs]
    for seq, (key, ts, val, deleted) in enumerate(versions):
        rank = (ts, seq) if event_time else (seq,)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, val, deleted)
    return {k: val for k, (_, val, deleted) in sorted(best.items()) if not deleted}


def split(items: list, cuts: list[int]) -> list[list]:
    bounds = [0, *sorted(set(cuts)), len(items)]
    return [items[a:b] for a, b in pairwise(bounds) if b > a]


rows_strategy = st.lists(
    st.tuples(
        st.sampled_from(KEYS),
        st.integers(1, 6),  # small range: plenty of ties
        st.text("xyz", min_size=1, max_size=3),
        st.booleans(),
    ),
    min_size=1,
    max_size=20,
).map(lambda rows: [(k, ts, f"{i}:{v}", d) for i, (k, ts, v, d) in enumerate(rows)])
tombs_strategy = st.lists(
    st.tuples(st.sampled_from(KEYS), st.none() | st.integers(0, 6)), max_size=5
)


def as_batch(rows: list[tuple]) -> pa.Table:
    return batch(*rows, deleted=True)


def as_tombs(tombs: list[tuple]) -> pa.Table:
    return tombstones(*(k for k, _ in tombs), ordering=[o for _, o in tombs])


@settings(max_examples=100)
@given(
    rows=rows_strategy,
    tombs=tombs_strategy,
    cuts=st.lists(st.integers(0, 20), max_size=5),
    tomb_cuts=st.lists(st.integers(0, 5), max_size=3),
    event_time=st.booleans(),
)
def test_winner_does_not_depend_on_batching(rows, tombs, cuts, tomb_cuts, event_time):
    config = EVENT if event_time else COMMIT
    whole = merge_versions([as_batch(rows)], [as_tombs(tombs)] if tombs else [], config)
    batched = merge_versions(
        [as_batch(part) for part in split(rows, [c for c in cuts if c <= len(rows)])],
        [as_tombs(part) for part in split(tombs, [c for c in tomb_cuts if c <= len(tombs)])],
        config,
    )
    assert batched.to_pylist() == whole.to_pylist()
    assert winners(whole) == oracle(rows, tombs, event_time)


@st.composite
def distinct_ordering_histories(draw):
    """Rows and tombstones whose ordering values are pairwise distinct (tombstones may also have
    none, which deletes unconditionally)."""
    n_rows = draw(st.integers(1, 15))
    n_tombs = draw(st.integers(0, 4))
    values = draw(st.permutations(range(1, n_rows + n_tombs + 1)))
    rows = [
        (draw(st.sampled_from(KEYS)), values[i], f"v{i}", draw(st.booleans()))
        for i in range(n_rows)
    ]
    tombs = [
        (draw(st.sampled_from(KEYS)), draw(st.none() | st.just(values[n_rows + j])))
        for j in range(n_tombs)
    ]
    return rows, tombs


@settings(max_examples=100)
@given(history=distinct_ordering_histories(), data=st.data())
def test_event_time_winner_is_independent_of_arrival_order(history, data):
    rows, tombs = history
    shuffled_rows = data.draw(st.permutations(rows))
    shuffled_tombs = data.draw(st.permutations(tombs))
    cuts = data.draw(st.lists(st.integers(0, len(rows)), max_size=3))
    expected = oracle(rows, tombs, event_time=True)
    in_order = merge_versions([as_batch(rows)], [as_tombs(tombs)] if tombs else [], EVENT)
    shuffled = merge_versions(
        [as_batch(part) for part in split(shuffled_rows, cuts)],
        [as_tombs(shuffled_tombs)] if tombs else [],
        EVENT,
    )
    assert winners(in_order) == expected
    assert shuffled.to_pylist() == in_order.to_pylist()


# ---------------------------------------------------------------------------------------------
# merge order of deletes and data across log blocks (merge_file_slice)

SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": KEY, "type": ["null", "string"]},
            {"name": "ts", "type": ["null", "long"]},
            {"name": "val", "type": ["null", "string"]},
        ],
    }
)


def t(n: int) -> str:
    return f"20240101000000{n:03d}"


def slice_reading(blocks, mode: str) -> pa.Table:
    """Merge one log file holding ``blocks`` (all of them committed) through merge_file_slice."""
    storage = InMemoryStorage()
    props = {
        TABLE_NAME: "t",
        TABLE_VERSION: "8",
        TABLE_TYPE: "MERGE_ON_READ",
        RECORD_KEY_FIELDS: "id",
        PRECOMBINE_FIELD: "ts",
        MERGE_MODE: mode,
    }
    storage.write(".hoodie/hoodie.properties", format_properties(props).encode())
    name = f".fg-0_{t(1)}.log.1_0-1-1"
    storage.create_if_absent(name, write_log_blocks(blocks))
    instants = {b.instant_time for b in blocks}
    timeline = Timeline(
        tuple(Instant(i, State.COMPLETED, "deltacommit", str(int(i) + 100)) for i in instants)
    )
    log = LogFile(name, parse_log_file_name(name), str(int(t(1)) + 100))
    return merge_file_slice(HudiTable(storage), timeline, FileSlice("", "fg-0", t(1), None, (log,)))


def data_block(instant: str, key: str, ts: int, val: str) -> DataBlock:
    records = pa.table(
        {KEY: [key], "ts": pa.array([ts], pa.int64()), "val": [val]},
        schema=arrow_schema_for(SCHEMA),
    )
    return DataBlock(instant, SCHEMA, records)


def delete_block(instant: str, key: str) -> DeleteBlock:
    keys = pa.table(
        {
            "record_key": [key],
            "partition_path": [""],
            "ordering_value": pa.array([None], pa.null()),
        },
        schema=delete_keys_schema(),
    )
    return DeleteBlock(instant, keys)


def test_merge_file_slice_applies_blocks_in_order():
    out = slice_reading(
        [data_block(t(1), "a", 1, "a1"), data_block(t(2), "a", 2, "a2"), delete_block(t(3), "b")],
        COMMIT_TIME_ORDERING,
    )
    assert winners(out) == {"a": "a2"}


def test_merge_file_slice_reinsert_after_delete_survives():
    out = slice_reading(
        [
            data_block(t(1), "a", 1, "first"),
            delete_block(t(2), "a"),
            data_block(t(3), "a", 3, "reinserted"),
        ],
        COMMIT_TIME_ORDERING,
    )
    assert winners(out) == {"a": "reinserted"}


# ---------------------------------------------------------------------------------------------
# ReadCache: many reads of one table (time travel), decoded and merged once per content
# ---------------------------------------------------------------------------------------------


FG = "aaaaaaaa-0000-4000-8000-000000000001-0"
FG_B = "bbbbbbbb-0000-4000-8000-000000000002-0"


class CacheHarness(TableHarness):
    def base(self, ids, v, fg=FG):
        c = self.start()
        return self.commit(c, [self.writer.upsert_base_file(c, "p=1", fg, rows(ids, v, v))])

    def log(self, ids, v, fg=FG):
        c = self.start()
        return self.commit(c, [self.writer.append_log_file(c, "p=1", fg, rows(ids, v, v))])


def late_log_table(path) -> CacheHarness:
    """Two file groups; a deltacommit requested before a compaction and completed after it (its
    log lands in the compaction's slice), more logs after the compaction, and the oldest
    instants archived."""
    h = CacheHarness(path)
    h.base(["a", "b", "c"], 1)
    h.base(["x"], 1, fg=FG_B)
    for v in range(2, 5):
        h.log(["a"], v)
    late = h.start()
    late_stat = h.writer.append_log_file(late, "p=1", FG, rows(["b"], 9, 9))
    compaction = h.schedule()
    h.commit(late, [late_stat])
    h.compact(compaction)
    for v in range(10, 13):
        h.log(["c"], v)
    h.log(["y"], 13, fg=FG_B)
    archive_instants(h.table, max_active=4, min_active=2)
    return h


def bounds(table: HudiTable) -> list[str | None]:
    return [i.completion_time for i in table.timeline().by_completion_time()] + [None]


@pytest.mark.parametrize("lookup", [True, False], ids=["archive", "14365"])
@pytest.mark.parametrize("rule", [None, "base_instant"])
def test_a_read_cache_changes_no_read(tmp_path, lookup, rule):
    h = late_log_table(tmp_path / "t")
    table = HudiTable(h.storage, archive_lookup=lookup)
    options = ViewOptions(rule=rule)
    cache = ReadCache()
    for _ in range(2):  # the second pass answers from the cache
        for bound in bounds(table):
            expected = read_snapshot(table, as_of=bound, options=options)
            assert read_snapshot(table, as_of=bound, options=options, cache=cache).equals(expected)
            groups = table.file_groups(as_of=bound, options=options)[1]
            assert table.file_groups(as_of=bound, options=options, cache=cache)[1] == groups
    assert cache.hits > cache.misses > 0


def test_a_slice_is_merged_once_per_content(tmp_path, monkeypatch):
    h = late_log_table(tmp_path / "t")
    merged = []
    original = reader.merge_batches
    monkeypatch.setattr(reader, "merge_batches", lambda *a: merged.append(1) or original(*a))
    cache = ReadCache()
    first = [read_snapshot(h.table, as_of=b, cache=cache) for b in bounds(h.table)]
    count = len(merged)
    second = [read_snapshot(h.table, as_of=b, cache=cache) for b in bounds(h.table)]
    assert len(merged) == count  # every slice of every bound was merged already
    assert all(a.equals(b) for a, b in zip(first, second, strict=True))
    # file group B's slice is the same at the bounds between its two writes: merged once there
    slices = sum(len(h.table.latest_file_slices(as_of=b)) for b in bounds(h.table))
    assert count < slices


def test_a_file_rewritten_in_place_is_read_again(tmp_path):
    """The cache keys on bytes, never on a path: a file overwritten under the same name (a
    storage without put-if-absent) is decoded and merged anew."""
    h = late_log_table(tmp_path / "t")
    cache = ReadCache()
    before = read_snapshot(h.table, cache=cache)
    (log,) = next(f for f in h.table.latest_file_slices() if f.file_id == FG_B).log_files
    path = f"p=1/{log.name}"
    blocks = read_log_blocks(h.storage.read(path))
    changed = pa.table(
        {c: blocks[0].records.column(c) for c in blocks[0].records.column_names}
    ).set_column(blocks[0].records.column_names.index("value"), "value", pa.array([99], pa.int64()))
    h.storage.write(path, write_log_blocks([replace(blocks[0], records=changed)]))
    after = read_snapshot(h.table, cache=cache)
    assert after.equals(read_snapshot(h.table))
    assert not after.equals(before)
    assert values(after)["y"] == 99


def test_read_cache_keeps_recent_entries_within_its_bound():
    cache = ReadCache(max_bytes=3 * ReadCache.SMALL)
    for key in "abcd":
        assert cache.get(key, lambda key=key: key.upper()) == key.upper()
    assert len(cache) == 3 and cache.nbytes == 3 * ReadCache.SMALL  # "a" was dropped
    assert cache.get("b", lambda: "fresh") == "B"  # kept, and now the most recent
    cache.get("e", lambda: "E")  # drops "c", the least recently used
    assert cache.get("c", lambda: "fresh") == "fresh"
    big = pa.table({"x": pa.array(range(10_000), pa.int64())})
    assert cache.get("big", lambda: big) is big  # larger than the bound: returned, not kept
    assert cache.get("big", lambda: None) is None


def test_read_cache_keeps_nothing_when_the_computation_fails():
    cache = ReadCache()

    def fail():
        raise ValueError("corrupt")

    with pytest.raises(ValueError, match="corrupt"):
        cache.get(b"data", fail)
    assert len(cache) == 0
    assert cache.get(b"data", lambda: 1) == 1


def values(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("id").to_pylist(), table.column("value").to_pylist(), strict=True))
