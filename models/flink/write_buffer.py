"""A write task's record buffer as Hudi's ``StreamWriteFunction`` keeps it (1.1 and later).

Records are buffered per **bucket** (one file group: partition path and file id, Hudi's
``getBucketID``), each bucket a ``RowDataBucket`` over Flink's ``BinaryInMemorySortBuffer``, every
bucket of the task drawing fixed-size pages from one heap memory pool
(``MemorySegmentPoolFactory#createMemorySegmentPool``). ``StreamWriteFunction#bufferRecord``,
per record:

1. append the record to its bucket (a new bucket needs at least 3 free pages,
   ``BufferUtils.MIN_REQUIRED_BUFFERS``);
2. if the pool is exhausted, flush the bucket holding the most bytes (the first of equals, in
   creation order), then append again; a record that still does not fit fails the task with
   "Buffer is too small to hold a single record.";
3. if the record's bucket now holds more than ``write.batch.size`` bytes
   (``BufferSizeDetector#isFull``), flush that bucket.

At the checkpoint barrier ``flushRemaining`` writes every bucket (:meth:`WriteBuffer.take_all`).

Sizes are bytes: a record weighs its Flink ``BinaryRowData#getSizeInBytes``
(:func:`binary_row_sizes_bytes`). The pool holds
``(write.task.max.size - 100 MB merge reader - write.merge.max_memory)`` in pages of
``write.memory.segment.page.size``; a bucket's pages are its serialized records (each with
``BinaryRowDataSerializer``'s 4-byte length) and its index entries (8 bytes a record, no
normalized key), each at least one page. Flink does not let a record's fixed part straddle two
pages; the model packs records densely, which is the same count whenever a page holds whole
records of equal size (Hudi's ``testInsertWithSmallBufferSize``: 64-byte pages, 48-byte
records, 3 fit).

``max_records`` is not Hudi's: a cap on the task's buffered records that older scenario files set
(``buffer_records``); a record that brings the buffer to it (and fills no bucket) makes the task
flush its largest bucket, the earlier model's eager flush.

Everything is column-wise: the next flush point of a batch is found with numpy over the whole
batch, and the batch is cut there, so a flush costs one pass over the rows left, never Python per
record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.table_errors import HoodieException

MB = 1024 * 1024
MERGE_READER_MB = 100
"""``MemorySegmentPoolFactory``: the merge reader's memory, a constant 100 MB."""
MIN_REQUIRED_PAGES = 3
"""``BufferUtils.MIN_REQUIRED_BUFFERS``: free pages a new bucket needs."""
INDEX_ENTRY_BYTES = 8
"""``BinaryIndexedSortable``: a record's index entry, its offset (no normalized key)."""
LENGTH_PREFIX_BYTES = 4
"""``BinaryRowDataSerializer#serializeToPages``: the length written before each record."""
FIXED_FIELD_BYTES = 8
"""``BinaryRowData``: every field takes 8 bytes of the fixed part."""
MAX_FIX_PART_DATA_SIZE = 7
"""``BinaryRowData``: a string of at most 7 bytes lives in its field's 8 bytes."""
ROW_KIND_COLUMN = "_hoodie_is_deleted"
"""The delete marker travels as the row's ``RowKind``, in the header byte, not as a field."""


class BufferTooSmallError(HoodieException):
    """``StreamWriteFunction#bufferRecord``: a record that does not fit an emptied pool."""


@dataclass(frozen=True)
class BufferOptions:
    """The Flink options that size a write task's buffer, with Hudi's defaults
    (``FlinkOptions``)."""

    write_batch_size_mb: float = 256.0
    """``write.batch.size``: a bucket holding more bytes than this is flushed."""
    write_task_max_size_mb: float = 1024.0
    """``write.task.max.size``: the task's memory, of which the buffers get what the merge
    reader and ``write.merge.max_memory`` leave."""
    write_merge_max_memory_mb: float = 100.0
    """``write.merge.max_memory``."""
    write_memory_segment_page_size_bytes: int = 32768
    """``write.memory.segment.page.size``."""
    max_records: int = 0
    """Not Hudi's: a cap on the task's buffered records (0: none)."""

    @property
    def batch_size_bytes(self) -> float:
        return self.write_batch_size_mb * MB

    @property
    def pool_pages(self) -> int:
        """``HeapMemorySegmentPool``: whole pages in the buffer memory."""
        memory = self.write_task_max_size_mb - MERGE_READER_MB - self.write_merge_max_memory_mb
        if memory <= 0:
            raise HoodieException(
                "'write.task.max.size' should be at least greater than 'write.merge.max_memory' "
                "plus merge reader memory(constant 100MB now)"
            )
        return int(memory * MB) // self.write_memory_segment_page_size_bytes


def binary_row_sizes_bytes(rows: pa.Table, payload_bytes: int = 0) -> np.ndarray:
    """Each row's ``BinaryRowData#getSizeInBytes``: the null bit set (with the header byte) in
    words, 8 bytes a field, and every string longer than 7 bytes in whole words; plus
    ``payload_bytes`` for columns a record carries that the model does not write."""
    fields = [name for name in rows.column_names if name != ROW_KIND_COLUMN]
    bit_set = ((len(fields) + 63 + 8) // 64) * 8
    sizes = np.full(rows.num_rows, bit_set + FIXED_FIELD_BYTES * len(fields) + payload_bytes)
    for name in fields:
        column = rows.column(name)
        if pa.types.is_string(column.type) or pa.types.is_binary(column.type):
            lengths = pc.binary_length(column).to_numpy(zero_copy_only=False).astype(np.int64)
            sizes += np.where(lengths > MAX_FIX_PART_DATA_SIZE, (lengths + 7) // 8 * 8, 0)
    return sizes.astype(np.int64)


@dataclass
class _Bucket:
    """One ``RowDataBucket``: its records (Arrow slices, in arrival order) and its sizes."""

    chunks: list[pa.Table] = field(default_factory=list)
    records: int = 0
    size_bytes: int = 0  # BufferSizeDetector.totalSize
    serialized_bytes: int = 0  # with the length prefixes: what the record pages hold


def _pages(records: np.ndarray, serialized: np.ndarray, page: int) -> np.ndarray:
    """Pages a bucket of ``records`` records and ``serialized`` bytes holds (none when empty)."""
    index = np.maximum(1, -(-(records * INDEX_ENTRY_BYTES) // page))
    data = np.maximum(1, -(-serialized // page))
    return np.where(records > 0, index + data, 0)


_FULL, _EXHAUSTED, _CAPPED = "full", "exhausted", "capped"


class WriteBuffer:
    """A task's buckets; :meth:`add` returns the buckets the records made it flush."""

    def __init__(self, options: BufferOptions) -> None:
        self.options = options
        self._pool_pages = options.pool_pages
        self._buckets: dict[int, _Bucket] = {}  # creation order, as Hudi's LinkedHashMap

    @property
    def records(self) -> int:
        return sum(b.records for b in self._buckets.values())

    def bucket_records(self) -> dict[int, int]:
        """Records per bucket (Hudi's ``getDataBuffer`` sizes)."""
        return {key: b.records for key, b in self._buckets.items()}

    def add(self, rows: pa.Table, buckets: np.ndarray, sizes: np.ndarray) -> list[pa.Table]:
        """Buffer ``rows`` (``buckets[i]`` the bucket of row ``i``, ``sizes[i]`` its bytes) and
        return the rows of each bucket flushed on the way, in flush order."""
        flushed: list[pa.Table] = []
        start, total, retried = 0, rows.num_rows, False
        while start < total:
            cut, event = self._next_event(buckets[start:], sizes[start:])
            if event is None:
                self._append(rows.slice(start), buckets[start:], sizes[start:])
                break
            if event in (_FULL, _CAPPED):  # the row at ``cut`` goes in, then a bucket out
                end = start + cut + 1
                self._append(rows.slice(start, cut + 1), buckets[start:end], sizes[start:end])
                full = int(buckets[start + cut]) if event == _FULL else self._largest()
                flushed.append(self._remove(full))
                start, retried = end, False
                continue
            if cut == 0 and (retried or not self._buckets):
                raise BufferTooSmallError("Buffer is too small to hold a single record.")
            end = start + cut  # the row at ``cut`` does not fit: flush the largest bucket first
            self._append(rows.slice(start, cut), buckets[start:end], sizes[start:end])
            flushed.append(self._remove(self._largest()))
            start, retried = end, True
        return flushed

    def take_all(self) -> list[pa.Table]:
        """Every bucket's rows, in creation order, and an empty buffer (``flushRemaining``)."""
        out = [pa.concat_tables(b.chunks) for b in self._buckets.values() if b.records]
        self._buckets = {}
        return out

    # --- internals ----------------------------------------------------------------------------

    def _largest(self) -> int:
        return max(self._buckets, key=lambda key: self._buckets[key].size_bytes)

    def _remove(self, key: int) -> pa.Table:
        return pa.concat_tables(self._buckets.pop(key).chunks)

    def _append(self, rows: pa.Table, buckets: np.ndarray, sizes: np.ndarray) -> None:
        if rows.num_rows == 0:
            return
        order = np.argsort(buckets, kind="stable")
        keys, starts = np.unique(buckets[order], return_index=True)
        ends = np.r_[starts[1:], len(order)]
        first_seen = np.argsort(order[starts], kind="stable")
        grouped = rows.take(pa.array(order))  # one take; each bucket's rows are a slice of it
        for i in first_seen.tolist():  # new buckets in the order their first record came
            rows_of = order[starts[i] : ends[i]]
            bucket = self._buckets.setdefault(int(keys[i]), _Bucket())
            bucket.chunks.append(grouped.slice(int(starts[i]), len(rows_of)))
            bucket.records += len(rows_of)
            added = int(sizes[rows_of].sum())
            bucket.size_bytes += added
            bucket.serialized_bytes += added + LENGTH_PREFIX_BYTES * len(rows_of)

    def _next_event(self, buckets: np.ndarray, sizes: np.ndarray) -> tuple[int, str | None]:
        """The first row at which the pool runs out (before it goes in) or a bucket grows past
        ``write.batch.size`` (after it goes in), assuming no flush before it."""
        count = len(buckets)
        order = np.argsort(buckets, kind="stable")
        keys, starts, inverse = np.unique(buckets[order], return_index=True, return_inverse=True)
        prior = [self._buckets.get(int(k), _Bucket()) for k in keys]
        prior_records = np.array([b.records for b in prior], np.int64)
        prior_size = np.array([b.size_bytes for b in prior], np.int64)
        prior_serialized = np.array([b.serialized_bytes for b in prior], np.int64)
        sorted_sizes = sizes[order]
        position = np.arange(count) - starts[inverse] + 1  # the row's rank in its bucket
        within = np.cumsum(sorted_sizes)
        within -= (within - sorted_sizes)[starts][inverse]
        records_after = np.empty(count, np.int64)
        size_after = np.empty(count, np.int64)
        serialized_after = np.empty(count, np.int64)
        records_after[order] = prior_records[inverse] + position
        size_after[order] = prior_size[inverse] + within
        serialized_after[order] = (
            prior_serialized[inverse] + within + LENGTH_PREFIX_BYTES * position
        )
        page = self.options.write_memory_segment_page_size_bytes
        grown = _pages(records_after, serialized_after, page) - _pages(
            records_after - 1, serialized_after - sizes - LENGTH_PREFIX_BYTES, page
        )
        used_before = self._used_pages() + np.cumsum(grown) - grown
        needed = np.where(records_after == 1, np.maximum(grown, MIN_REQUIRED_PAGES), grown)
        exhausted = used_before + needed > self._pool_pages
        full = size_after > self.options.batch_size_bytes
        capped = np.zeros(count, bool)
        if self.options.max_records:
            capped = self.records + np.arange(1, count + 1) >= self.options.max_records
        firsts = [int(np.argmax(flags)) if flags.any() else count for flags in (exhausted, full)]
        first_capped = int(np.argmax(capped & ~full)) if (capped & ~full).any() else count
        first = min(*firsts, first_capped)
        if first == count:
            return count, None
        if firsts[0] == first:  # before the row goes in
            return first, _EXHAUSTED
        return first, _FULL if firsts[1] == first else _CAPPED

    def _used_pages(self) -> int:
        page = self.options.write_memory_segment_page_size_bytes
        records = np.array([b.records for b in self._buckets.values()], np.int64)
        serialized = np.array([b.serialized_bytes for b in self._buckets.values()], np.int64)
        return int(_pages(records, serialized, page).sum())
