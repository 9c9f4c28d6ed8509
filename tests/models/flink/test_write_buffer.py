"""A write task's buffer (models/flink/write_buffer.py): Hudi's sizes and flush rules, and the
column-wise buffer against a record-at-a-time reference of ``StreamWriteFunction#bufferRecord``."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from models.flink.write_buffer import (
    BufferOptions,
    BufferTooSmallError,
    WriteBuffer,
    binary_row_sizes_bytes,
)
from models.table_errors import HoodieException

MB = 1024 * 1024


def numbered(n: int) -> pa.Table:
    return pa.table({"n": pa.array(range(n), pa.int64())})


def flushed_numbers(tables: list[pa.Table]) -> list[list[int]]:
    return [t.column("n").to_pylist() for t in tables]


# --- sizes ---------------------------------------------------------------------------------------


def test_row_size_is_flinks_binary_row_size():
    """Hudi's test rows (uuid, name, age, ts, partition) are 48 bytes each
    (``TestWriteCopyOnWrite.BATCH_SIZE_MB``'s comment): 8 bytes of null bits and header, 8 a
    field, short strings inline; the delete marker is the row kind, not a field."""
    rows = pa.table(
        {
            "uuid": ["id1", "id2"],
            "name": ["Danny", "Stephen"],
            "age": pa.array([23, 33], pa.int32()),
            "ts": pa.array([1, 2], pa.int64()),
            "partition": ["par1", "par1"],
            "_hoodie_is_deleted": [False, False],
        }
    )
    assert binary_row_sizes_bytes(rows).tolist() == [48, 48]
    longer = rows.set_column(1, "name", pa.array(["Danny", "Stephen-the-eighth"]))
    assert binary_row_sizes_bytes(longer).tolist() == [48, 48 + 24]  # 18 bytes in 3 words
    assert binary_row_sizes_bytes(rows, payload_bytes=1000).tolist() == [1048, 1048]


def test_pool_pages_and_hudis_check():
    assert BufferOptions().pool_pages == 824 * MB // 32768
    small = BufferOptions(write_task_max_size_mb=200.0003, write_memory_segment_page_size_bytes=64)
    assert small.pool_pages == 4  # (long) (0.0003 MB) = 314 bytes
    with pytest.raises(HoodieException, match="should be at least greater than"):
        _ = BufferOptions(write_task_max_size_mb=200).pool_pages


# --- Hudi's own cases ----------------------------------------------------------------------------


def test_three_records_from_five_trigger_a_mini_batch():
    """``testInsertWithMiniBatches``: write.batch.size 0.00013 MB (136 bytes), 48-byte records;
    the third record makes the bucket hold 144 bytes, it is flushed, two stay."""
    for batched in (True, False):
        buffer = WriteBuffer(BufferOptions(write_batch_size_mb=0.00013))
        rows, sizes, buckets = numbered(5), np.full(5, 48), np.zeros(5, np.int64)
        if batched:
            out = buffer.add(rows, buckets, sizes)
        else:
            out = [
                t for i in range(5) for t in buffer.add(rows.slice(i, 1), buckets[:1], sizes[:1])
            ]
        assert flushed_numbers(out) == [[0, 1, 2]]
        assert buffer.bucket_records() == {0: 2}


def test_an_exhausted_pool_flushes_before_the_record_goes_in():
    """``testInsertWithSmallBufferSize``: 64-byte pages, 4 of them: the index page and three
    record pages hold three records; the fourth does not fit, the bucket is flushed first."""
    options = BufferOptions(
        write_task_max_size_mb=200.0003, write_memory_segment_page_size_bytes=64
    )
    buffer = WriteBuffer(options)
    out = buffer.add(numbered(5), np.zeros(5, np.int64), np.full(5, 48))
    assert flushed_numbers(out) == [[0, 1, 2]]
    assert buffer.bucket_records() == {0: 2}


def test_the_largest_bucket_goes_first_ties_to_the_oldest():
    """Six 64-byte pages; a bucket of one record takes two, a new bucket needs three free."""
    options = BufferOptions(
        write_task_max_size_mb=200.0004, write_memory_segment_page_size_bytes=64
    )
    assert options.pool_pages == 6
    buffer = WriteBuffer(options)
    out = buffer.add(numbered(4), np.array([7, 3, 3, 5]), np.full(4, 48))
    assert flushed_numbers(out) == [[1, 2]]  # bucket 5 finds one free page: 3 holds the most
    assert buffer.bucket_records() == {7: 1, 5: 1}
    buffer = WriteBuffer(options)
    out = buffer.add(numbered(3), np.array([7, 3, 5]), np.full(3, 48))
    assert flushed_numbers(out) == [[0]]  # 7 and 3 hold as much: the older goes
    assert buffer.bucket_records() == {3: 1, 5: 1}


def test_a_record_larger_than_the_pool_fails_the_task():
    options = BufferOptions(
        write_task_max_size_mb=200.0003, write_memory_segment_page_size_bytes=64
    )
    with pytest.raises(BufferTooSmallError, match="too small to hold a single record"):
        WriteBuffer(options).add(numbered(1), np.zeros(1, np.int64), np.array([500]))


def test_the_record_cap_of_older_scenarios_flushes_the_largest_bucket():
    buffer = WriteBuffer(BufferOptions(max_records=4))
    out = buffer.add(numbered(6), np.array([1, 2, 2, 1, 2, 1]), np.full(6, 100))
    # the fourth record brings 4: 1 and 2 tie, 1 is older; the sixth brings 4 again: 2 holds 3
    assert flushed_numbers(out) == [[0, 3], [1, 2, 4]]
    assert buffer.bucket_records() == {1: 1}  # bucket 1 was made again
    assert flushed_numbers(buffer.take_all()) == [[5]]
    assert buffer.records == 0 and buffer.take_all() == []


# --- the column-wise buffer is the record-at-a-time rule -----------------------------------------


def reference(options: BufferOptions, buckets: list[int], sizes: list[int]) -> list[list[int]]:
    """``bufferRecord`` one record at a time, as Hudi's loop runs it."""
    page, pool = options.write_memory_segment_page_size_bytes, options.pool_pages
    held: dict[int, list[int]] = {}  # bucket -> row numbers
    size = {key: 0 for key in set(buckets)}

    def pages(rows: list[int]) -> int:
        if not rows:
            return 0
        serialized = sum(sizes[r] + 4 for r in rows)
        return max(1, math.ceil(8 * len(rows) / page)) + max(1, math.ceil(serialized / page))

    def fits(row: int) -> bool:
        key = buckets[row]
        used = sum(pages(rows) for rows in held.values())
        if key not in held and pool - used < 3:
            return False
        grown = pages([*held.get(key, []), row]) - pages(held.get(key, []))
        return used + grown <= pool

    out: list[list[int]] = []

    def flush(key: int) -> None:
        out.append(held.pop(key))
        size[key] = 0

    for row, key in enumerate(buckets):
        if not fits(row):
            if not held:
                raise BufferTooSmallError
            flush(max(held, key=lambda k: size[k]))
            if not fits(row):
                raise BufferTooSmallError
        held.setdefault(key, []).append(row)
        size[key] += sizes[row]
        if size[key] > options.batch_size_bytes:
            flush(key)
        elif options.max_records and sum(map(len, held.values())) >= options.max_records:
            flush(max(held, key=lambda k: size[k]))
    return out


@given(
    data=st.lists(st.tuples(st.integers(0, 4), st.integers(16, 300)), max_size=60),
    batch_bytes=st.integers(100, 3000),
    pool_bytes=st.integers(200, 4000),
    page=st.sampled_from([64, 128, 512]),
    cap=st.integers(0, 12),
    cuts=st.lists(st.integers(0, 60), max_size=4),
)
@example(data=[(0, 48)] * 5, batch_bytes=136, pool_bytes=10**6, page=64, cap=0, cuts=[])
def test_column_wise_equals_record_at_a_time(data, batch_bytes, pool_bytes, page, cap, cuts):
    options = BufferOptions(
        write_batch_size_mb=batch_bytes / MB,
        write_task_max_size_mb=200 + pool_bytes / MB,
        write_memory_segment_page_size_bytes=page,
        max_records=cap,
    )
    buckets = [b for b, _ in data]
    sizes = [s for _, s in data]
    try:
        expected: list[list[int]] | None = reference(options, buckets, sizes)
    except BufferTooSmallError:
        expected = None
    buffer, got = WriteBuffer(options), []
    bounds = sorted({0, len(data), *(c for c in cuts if c <= len(data))})
    try:
        for start, end in itertools.pairwise(bounds):
            got += buffer.add(
                numbered(len(data)).slice(start, end - start),
                np.array(buckets[start:end], np.int64),
                np.array(sizes[start:end], np.int64),
            )
    except BufferTooSmallError:
        assert expected is None
        return
    assert expected is not None
    assert flushed_numbers(got) == expected
    left = sorted(n for t in buffer.take_all() for n in t.column("n").to_pylist())
    assert left == sorted(set(range(len(data))) - {n for f in expected for n in f})
