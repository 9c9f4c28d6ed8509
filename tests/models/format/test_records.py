"""The simulated source (models/format/records.py): records are a pure function of (seed, job, offset),
batches compose, keys/partitions/ordering values have the properties the ledger relies on, and the
bucket hash is a fixed function of the key."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.format.records import (
    BLOCK_RECORDS,
    ORDERING_FIELD,
    PARTITION_FIELD,
    RECORD_KEY_FIELD,
    SCHEMA,
    RecordSource,
    bucket_ids,
    partition_path,
)


def source(**kw) -> RecordSource:
    args = dict(seed=11, job_index=0, key_space=50, partitions=3, records_per_s=1000.0)
    args.update(kw)
    return RecordSource(**args)


sources = st.builds(
    RecordSource,
    seed=st.integers(0, 2**31),
    job_index=st.integers(0, 99),
    key_space=st.integers(1, 200),
    partitions=st.integers(1, 8),
    records_per_s=st.sampled_from([0.5, 1.0, 2.5, 3.0, 7.0, 100.0, 1000.0, 33333.0]),
    operation=st.sampled_from(["upsert", "insert"]),
    lateness_ms=st.sampled_from([0, 5, 500]),
)


def test_schema_and_columns():
    b = source(lateness_ms=100).batch(10, 60)
    assert b.schema == SCHEMA
    assert b.num_rows == 50
    assert b.column("offset").to_pylist() == list(range(10, 60))
    assert set(b.column("job").to_pylist()) == {0}
    assert b.column(RECORD_KEY_FIELD).null_count == 0
    assert all(v >= 0 for v in b.column("value").to_pylist())
    assert all(ts >= 0 for ts in b.column(ORDERING_FIELD).to_pylist())
    assert partition_path("p3") == f"{PARTITION_FIELD}=p3"
    assert source().batch(5, 5).num_rows == 0
    assert source().batch(5, 5).schema == SCHEMA


@pytest.mark.parametrize(
    "kw",
    [
        dict(operation="delete"),
        dict(key_space=0),
        dict(partitions=0),
        dict(records_per_s=0),
        dict(job_index=100),
        dict(job_index=-1),
    ],
)
def test_rejects_bad_parameters(kw):
    with pytest.raises(ValueError):
        source(**kw)


def test_rejects_bad_range():
    with pytest.raises(ValueError):
        source().batch(5, 4)
    with pytest.raises(ValueError):
        source().batch(-1, 4)


@settings(max_examples=40)
@given(sources, st.integers(0, 500), st.integers(0, 300), st.integers(0, 300))
def test_deterministic_and_composable(src, a, d1, d2):
    b, c = a + d1, a + d1 + d2
    again = RecordSource(**{f: getattr(src, f) for f in src.__dataclass_fields__})
    assert src.batch(a, c).equals(again.batch(a, c))
    assert pa.concat_tables([src.batch(a, b), src.batch(b, c)]).equals(src.batch(a, c))


def test_seed_and_job_change_the_records():
    a = source().batch(0, 100)
    assert not a.column("key").equals(source(seed=12).batch(0, 100).column("key"))
    other_job = source(job_index=1).batch(0, 100)
    assert not a.column("key").equals(other_job.column("key"))
    assert set(other_job.column("job").to_pylist()) == {1}


@settings(max_examples=40)
@given(sources, st.integers(0, 2000), st.integers(1, 400))
def test_upsert_keys_in_key_space_and_fixed_partition(src, start, n):
    if src.operation != "upsert":
        src = RecordSource(**{**_fields(src), "operation": "upsert"})
    b = src.batch(start, start + n)
    key_of = {}
    for key, part in zip(b.column("key").to_pylist(), b.column("part").to_pylist(), strict=True):
        assert key.startswith("k")
        kid = int(key[1:])
        assert 0 <= kid < src.key_space
        # the partition is a function of the key alone (the same for every job and seed)
        assert part == f"p{kid % src.partitions}"
        assert key_of.setdefault(key, part) == part


def test_upsert_keys_repeat_and_other_jobs_share_them():
    a = source(key_space=20).batch(0, 200)
    keys = a.column("key").to_pylist()
    assert len(set(keys)) < len(keys)  # versions overwrite each other
    b = source(key_space=20, job_index=7, seed=3).batch(0, 200)
    parts_a = dict(zip(keys, a.column("part").to_pylist(), strict=True))
    for key, part in zip(b.column("key").to_pylist(), b.column("part").to_pylist(), strict=True):
        if key in parts_a:
            assert parts_a[key] == part


def test_insert_keys_unique_across_ranges_and_jobs():
    a = source(operation="insert").batch(0, 500)
    b = source(operation="insert", job_index=1).batch(0, 500)
    keys = a.column("key").to_pylist() + b.column("key").to_pylist()
    assert len(set(keys)) == len(keys) == 1000
    parts = set(a.column("part").to_pylist())
    assert parts <= {"p0", "p1", "p2"} and len(parts) == 3


@settings(max_examples=40)
@given(sources, st.integers(0, 3000), st.integers(1, 600))
def test_ordering_values_unique_per_key(src, start, n):
    b = src.batch(start, start + n)
    seen: dict[str, set[int]] = {}
    for key, ts in zip(b.column("key").to_pylist(), b.column("ts").to_pylist(), strict=True):
        assert ts not in seen.setdefault(key, set()), (key, ts)
        seen[key].add(ts)


def test_ordering_values_unique_per_key_across_jobs():
    rows = pa.concat_tables(
        [source(job_index=j, key_space=10, lateness_ms=50).batch(0, 3000) for j in range(3)]
    )
    pairs = list(zip(rows.column("key").to_pylist(), rows.column("ts").to_pylist(), strict=True))
    assert len(set(pairs)) == len(pairs)


def test_ordering_is_event_time():
    """Without lateness, ts follows the arrival order; lateness only ever makes records older."""
    src = source()
    b = src.batch(0, 2000)
    ts = np.array(b.column("ts").to_pylist())
    assert (np.diff(ts) > 0).all()
    late = source(lateness_ms=300).batch(0, 2000)
    late_ts = np.array(late.column("ts").to_pylist())
    assert (late_ts <= ts).all() and (late_ts < ts).any()
    event_ms = late_ts // 1_000_000
    arrival = src.arrival_ms(np.arange(2000))
    assert ((arrival - event_ms) <= 300).all()


@settings(max_examples=60)
@given(
    st.sampled_from([0.3, 0.5, 1.0, 2.5, 3.0, 7.0, 333.3, 1000.0, 1500.0, 250_000.0]),
    st.integers(0, 100_000),
)
def test_available_and_arrival_agree(rate, t):
    """A record is never read before it arrived: every offset below ``available(t)`` has arrived
    by ``t``, arrival times never decrease, and offsets arrive (at the latest) when they become
    available, give or take one record interval."""
    src = source(records_per_s=rate)
    n = src.available(t)
    assert n == src.available(t)  # a pure function
    assert src.available(t + 1) >= n
    offsets = np.arange(max(0, n - 50), n + 50, dtype=np.int64)
    arrival = src.arrival_ms(offsets)
    assert arrival.dtype == np.int64
    assert (np.diff(arrival) >= 0).all()
    read = offsets < n
    assert (arrival[read] <= t).all(), (rate, t, n, offsets[read], arrival[read])
    interval = int(np.ceil(1000 / rate)) + 1
    not_yet = offsets >= n
    assert (arrival[not_yet] >= t - interval).all()


def test_available_counts():
    src = source(records_per_s=1000.0)
    assert [src.available(t) for t in (0, 1, 999, 1000, 5000)] == [0, 1, 999, 1000, 5000]
    slow = source(records_per_s=2.5)
    assert [slow.available(t) for t in (0, 399, 400, 4000)] == [0, 0, 1, 10]
    assert list(src.arrival_ms(np.arange(4))) == [0, 1, 2, 3]


@settings(max_examples=30)
@given(st.integers(1, 64), st.integers(0, 5000), st.integers(1, 300))
def test_bucket_ids_stable_and_in_range(buckets, start, n):
    keys = source(key_space=1000).batch(start, start + n).column("key")
    ids = bucket_ids(keys, buckets)
    assert ids.dtype == np.int64 and len(ids) == n
    assert ((ids >= 0) & (ids < buckets)).all()
    # a key always maps to the same bucket, whatever batch (or chunking) it arrives in
    per_key = {}
    for key, b in zip(keys.to_pylist(), ids.tolist(), strict=True):
        assert per_key.setdefault(key, b) == b
    single = [int(bucket_ids(pa.array([k]), buckets)[0]) for k in per_key]
    assert single == list(per_key.values())
    chunked = pa.chunked_array(
        [keys.combine_chunks().slice(0, n // 2), keys.combine_chunks().slice(n // 2)]
    )
    assert (bucket_ids(chunked, buckets) == ids).all()


def test_bucket_ids_spread_and_empty():
    keys = pa.array([f"k{i:08d}" for i in range(2000)])
    counts = np.bincount(bucket_ids(keys, 4), minlength=4)
    assert counts.min() > 350  # a reasonable hash, not everything in one bucket
    assert len(bucket_ids(pa.array([], pa.string()), 4)) == 0
    assert len(bucket_ids(pa.chunked_array([], pa.string()), 4)) == 0


def _fields(src: RecordSource) -> dict:
    return {f: getattr(src, f) for f in src.__dataclass_fields__}


@pytest.mark.parametrize("operation", ["upsert", "insert"])
def test_batches_cut_from_cached_blocks_equal_freshly_built_records(operation):
    s = source(operation=operation, lateness_ms=7, records_per_s=333.0)
    edge = BLOCK_RECORDS
    for start, stop in [(0, 1), (edge - 1, edge + 1), (5, 3 * edge + 2), (2 * edge, 3 * edge)]:
        got = s.batch(start, stop)
        assert got.equals(s._records(start, stop))
        assert all(column.num_chunks == 1 for column in got.columns)


@settings(max_examples=40)
@given(sources, st.integers(0, 3000), st.integers(1, 400), st.integers(0, 2**32))
def test_records_at_any_offsets_are_the_batch_rows_at_those_offsets(src, start, n, pick):
    """``records_at`` builds exactly the rows ``batch`` has at the chosen offsets (in the given
    order), and ``key_ids`` names each row's key without building it."""
    rows = src.batch(start, start + n)
    chosen = np.random.default_rng(pick).permutation(n)[: max(1, n // 3)]
    offsets = start + chosen
    got = src.records_at(offsets)
    assert got.equals(rows.take(pa.array(chosen)))
    ids = src.key_ids(offsets)
    keys = got.column(RECORD_KEY_FIELD).to_pylist()
    if src.operation == "upsert":
        assert keys == [f"k{i:08d}" for i in ids.tolist()]
    else:
        assert (ids == offsets).all() and keys == [f"j{src.job_index}-{o:012d}" for o in offsets]
    assert src.records_at(np.zeros(0, np.int64)).equals(src.schema.empty_table())


def test_records_at_a_column_group():
    s = source(columns=("a", "b"), ordering_field="ts_ab")
    rows = s.batch(100, 160)
    assert s.records_at(np.array([159, 100])).equals(rows.take(pa.array([59, 0])))


def test_bucket_ids_are_hudis():
    # BucketIdentifier#getBucketId: (List.of("k1").hashCode() & Integer.MAX_VALUE) % n, where
    # List.of("k1").hashCode() = 31 * 1 + "k1".hashCode() = 31 + (107 * 31 + 49) = 3397
    assert bucket_ids(pa.array(["k1"]), 4).tolist() == [3397 % 4]
    assert bucket_ids(pa.array(["k1"]), 7).tolist() == [3397 % 7]
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE: + 31, then the sign bit cleared
    assert bucket_ids(pa.array(["polygenelubricants"]), 1000).tolist() == [31 % 1000]


def test_a_partition_period_moves_every_key_to_the_next_partition_at_each_period():
    """``partition_period_ms``: a key's home partition (its id modulo the partitions) shifted by
    the periods elapsed at the record's event time."""
    src = source(partitions=3, records_per_s=100.0, partition_period_ms=1000)
    rows = src.batch(0, 500)
    ids = src.key_ids(np.arange(500))
    periods = src.arrival_ms(np.arange(500)) // 1000
    expected = [f"p{p}" for p in ((ids % 3 + periods) % 3).tolist()]
    assert rows.column(PARTITION_FIELD).to_pylist() == expected
    assert set(periods.tolist()) == {0, 1, 2, 3, 4}
    still = source(partitions=3, records_per_s=100.0).batch(0, 500)
    assert rows.column(RECORD_KEY_FIELD).equals(still.column(RECORD_KEY_FIELD))


def test_only_upsert_keys_move():
    with pytest.raises(ValueError, match="partition_period_ms"):
        source(operation="insert", partition_period_ms=1000)
    with pytest.raises(ValueError, match="partition_period_ms"):
        source(partition_period_ms=-1)
