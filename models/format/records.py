"""The records a simulated source emits: a pure function of (seed, job, offset).

Why a function and not a log of records: the ground-truth ledger then only needs to say which
offset ranges each job's source emitted and which offset each checkpoint covered; any checker can
regenerate the exact rows (and the model of the table they imply) without a multi-gigabyte record
log, and a replay after failover re-reads byte-identical records, as a Kafka source would.

Everything is computed column-wise with numpy (a splitmix64 hash per offset), never one Python
object per record.

Columns (the table's data columns; Hudi adds its meta columns in front):

``key``        record key. ``upsert``: ``k<id>`` with ``id`` drawn over ``key_space`` keys, so keys
               repeat and later versions overwrite earlier ones. ``insert``: unique per job and
               offset (``j<job>-<offset>``), so a record written twice shows up twice.
``part``       partition value ``p<i>``; a key always lives in one partition (partition path
               ``part=p<i>``, Hive style).
``ts``         the ordering (precombine) value: the record's event time in ms since the scenario
               start, late by up to ``lateness_ms``, scaled and salted with the offset and job so
               that no two versions of a key tie (ties would make the winner depend on commit order,
               which the ledger alone cannot know).
``offset``     the source offset (Kafka-like, per job), which identifies a record across rewrites.
``job``        index of the job that emitted it.
``value``      a payload derived from the offset.

A source of a multi-stream partial-update table (docs/protocol.md section 5.3, :mod:`models.view.partial_update`) writes
one *column group* instead of ``value``: its own ordering field (the group's event time, equal to
``ts``) and its columns (payloads derived from the offset, one hash stream per column). ``key``,
``part``, ``ts``, ``offset`` and ``job`` stay: they are the record-level columns every stream
carries (:func:`column_group_schema`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
import pyarrow as pa

from models.format.arrow_strings import decimal_strings, java_string_hashes

OPERATIONS = ("upsert", "insert")
PARTITION_FIELD = "part"
RECORD_KEY_FIELD = "key"
ORDERING_FIELD = "ts"
_TS_SCALE = 1_000_000  # ts = event_ms * scale + (offset % 10_000) * 100 + job

SCHEMA = pa.schema(
    [
        pa.field(RECORD_KEY_FIELD, pa.string(), nullable=False),
        pa.field(PARTITION_FIELD, pa.string(), nullable=False),
        pa.field(ORDERING_FIELD, pa.int64(), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),
        pa.field("job", pa.int32(), nullable=False),
        pa.field("value", pa.int64(), nullable=False),
    ]
)


def splitmix64(x: np.ndarray) -> np.ndarray:
    """Vectorized splitmix64 finalizer: a fast, well-mixed, platform-independent 64-bit hash.

    uint64 arithmetic in numpy wraps modulo 2**64, which is exactly the hash's arithmetic, so no
    masking is needed; the steps work in place on one fresh array."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64)  # always a copy, so the caller's array is never touched
        z += _GOLDEN_GAMMA
        z ^= z >> _SHIFT_30
        z *= _MIX_1
        z ^= z >> _SHIFT_27
        z *= _MIX_2
        z ^= z >> _SHIFT_31
        return z


_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
_SHIFT_30, _SHIFT_27, _SHIFT_31 = np.uint64(30), np.uint64(27), np.uint64(31)


@cache
def _salt(seed: int, job_index: int, stream: int) -> np.uint64:
    """The per-(seed, job, stream) salt of the record hashes (a constant per source)."""
    # modulo 2**64: the same bits as before for small seeds, no overflow for any 63-bit seed
    mixed = (seed * 1_000_003 + job_index * 101 + stream) % 2**64
    return splitmix64(np.array([mixed], dtype=np.uint64))[0]


def partition_path(part: str) -> str:
    """Hive-style partition path of a partition value."""
    return f"{PARTITION_FIELD}={part}"


def partition_value(path: str) -> str:
    """The partition value of a Hive-style partition path (:func:`partition_path`'s inverse)."""
    return path.split("=", 1)[1]


@dataclass(frozen=True)
class RecordSource:
    """One job's source: which record sits at each offset and when it becomes available."""

    seed: int
    job_index: int
    key_space: int
    partitions: int
    records_per_s: float
    operation: str = "upsert"
    lateness_ms: int = 0
    columns: tuple[str, ...] = ()
    """The column group this source writes (multi-stream partial updates); empty: whole records
    (``value``)."""
    ordering_field: str = ORDERING_FIELD
    """The column holding the group's ordering value (only with ``columns``)."""
    partition_period_ms: int = 0
    """Upsert: records are partitioned by event time in periods of this many ms, a key's home
    partition (its id modulo the partitions) shifted by one every period, so every key moves to
    the next partition at each period's start (a table partitioned by update time); 0: a key
    stays in its home partition."""

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise ValueError(f"operation must be one of {OPERATIONS}, not {self.operation!r}")
        if self.columns or self.ordering_field != ORDERING_FIELD:
            column_group_schema(self.columns, self.ordering_field)  # validates the names
            if self.operation != "upsert":
                raise ValueError("a column group updates keys: its operation must be upsert")
        if self.key_space < 1 or self.partitions < 1 or self.records_per_s <= 0:
            raise ValueError("key_space, partitions and records_per_s must be positive")
        if not 0 <= self.job_index < 100:
            raise ValueError("job_index must be in [0, 100)")
        if self.partition_period_ms < 0 or (
            self.partition_period_ms and self.operation != "upsert"
        ):
            raise ValueError("partition_period_ms must be >= 0, and moves only upsert keys")

    def available(self, elapsed_ms: int) -> int:
        """How many records the upstream (a Kafka topic) holds ``elapsed_ms`` after the start."""
        return int(elapsed_ms * self.records_per_s // 1000)

    def arrival_ms(self, offsets: np.ndarray) -> np.ndarray:
        """When each offset became available upstream, in ms since the start."""
        return (np.asarray(offsets, np.int64) * 1000 // self.records_per_s).astype(np.int64)

    @property
    def schema(self) -> pa.Schema:
        """The columns of this source's records."""
        if not self.columns:
            return SCHEMA
        return column_group_schema(self.columns, self.ordering_field)

    def _hash(self, offsets: np.ndarray, stream: int) -> np.ndarray:
        return splitmix64(offsets.astype(np.uint64) ^ _salt(self.seed, self.job_index, stream))

    def batch(self, start: int, stop: int) -> pa.Table:
        """The records at offsets ``[start, stop)`` as one Arrow table (schema :data:`SCHEMA`).

        A simulated source reads ~100 records per tick, where building the columns costs far more
        than the rows; so records are generated :data:`BLOCK_RECORDS` offsets at a time (every
        column is a function of its own offset only, so a slice of a block is the same rows) and
        the last few blocks are kept.
        """
        if not 0 <= start <= stop:
            raise ValueError(f"bad offset range [{start}, {stop})")
        if start == stop:
            return self.schema.empty_table()
        first, last = start // BLOCK_RECORDS, (stop - 1) // BLOCK_RECORDS
        if last - first > 1:  # a long range: build it directly
            return self._records(start, stop)
        parts = [
            _block(self, block).slice(
                max(start - block * BLOCK_RECORDS, 0),
                min(stop, (block + 1) * BLOCK_RECORDS) - max(start, block * BLOCK_RECORDS),
            )
            for block in range(first, last + 1)
        ]
        return parts[0] if len(parts) == 1 else pa.concat_tables(parts).combine_chunks()

    def key_ids(self, offsets: np.ndarray) -> np.ndarray:
        """The number each record's key is built from, without building a key: the id of a
        ``k<id>`` key (upsert: a hash of the offset modulo the key space), the offset itself for
        a ``j<job>-<offset>`` key (insert). Two records share a key exactly when their sources
        are both upsert and their ids are equal, or both are the same insert job's same offset:
        what lets a reader group records by key (``replay/verify.py``'s key shards) before
        generating them."""
        offsets = np.asarray(offsets, np.int64)
        if self.operation == "upsert":
            return (self._hash(offsets, 1) % np.uint64(self.key_space)).astype(np.int64)
        return offsets

    def _records(self, start: int, stop: int) -> pa.Table:
        """The records at offsets ``[start, stop)`` (``start < stop``)."""
        return self.records_at(np.arange(start, stop, dtype=np.int64))

    def records_at(self, offsets: np.ndarray) -> pa.Table:
        """The records at ``offsets`` (any int64 offsets, in the order given), built
        column-wise: every column is a function of its own offset, so these are the rows
        :meth:`batch` has at those offsets."""
        offsets = np.asarray(offsets, np.int64)
        if len(offsets) == 0:
            return self.schema.empty_table()
        key_ids = self.key_ids(offsets)
        late = (
            (self._hash(offsets, 2) % np.uint64(self.lateness_ms + 1)).astype(np.int64)
            if self.lateness_ms
            else np.zeros(len(offsets), np.int64)
        )
        event_ms = np.maximum(self.arrival_ms(offsets) - late, 0)
        if self.operation == "upsert":
            keys = decimal_strings("k", key_ids, 8)
            part_ids = key_ids % self.partitions
            if self.partition_period_ms:
                part_ids = (part_ids + event_ms // self.partition_period_ms) % self.partitions
        else:
            keys = decimal_strings(f"j{self.job_index}-", offsets, 12)
            part_ids = (self._hash(offsets, 1) % np.uint64(self.partitions)).astype(np.int64)
        parts = decimal_strings("p", part_ids, 1)
        ts = event_ms * _TS_SCALE + (offsets % 10_000) * 100 + self.job_index
        common = [
            keys,
            parts,
            pa.array(ts, pa.int64()),
            pa.array(offsets, pa.int64()),
            pa.array(np.full(len(offsets), self.job_index, np.int32), pa.int32()),
        ]
        if self.columns:
            # the group's ordering value is the record's event time; each column its own hash
            payloads = [
                pa.array((self._hash(offsets, _COLUMN_STREAM + i) >> np.uint64(1)).astype(np.int64))
                for i in range(len(self.columns))
            ]
            return pa.Table.from_arrays([*common, common[2], *payloads], schema=self.schema)
        value = (self._hash(offsets, 3) >> np.uint64(1)).astype(np.int64)
        return pa.Table.from_arrays([*common, pa.array(value, pa.int64())], schema=SCHEMA)


_COLUMN_STREAM = 16
"""Hash stream of a column group's first column (streams 1-3 are key, lateness and value)."""
RECORD_LEVEL_FIELDS = (RECORD_KEY_FIELD, PARTITION_FIELD, ORDERING_FIELD, "offset", "job")
"""Columns every record carries, whole or one column group."""
_COLUMN_NAME = re.compile(r"^[a-z][a-z0-9_]*\Z")


def column_group_schema(columns: tuple[str, ...], ordering_field: str) -> pa.Schema:
    """The records of a source writing one column group: the record-level columns, then the
    group's ordering field, then its columns (all int64); raises ValueError for a bad name."""
    names = [ordering_field, *columns]
    for name in names:
        if not _COLUMN_NAME.match(name) or name in (*RECORD_LEVEL_FIELDS, "value"):
            raise ValueError(
                f"column name {name!r} is not a lower-case identifier or is reserved "
                f"({', '.join((*RECORD_LEVEL_FIELDS, 'value'))})"
            )
    if not columns or len(set(names)) != len(names):
        raise ValueError(f"a column group needs distinct columns besides {ordering_field!r}")
    fields = [SCHEMA.field(name) for name in RECORD_LEVEL_FIELDS]
    return pa.schema([*fields, *(pa.field(name, pa.int64(), nullable=False) for name in names)])


BLOCK_RECORDS = 4096
"""Offsets generated at once by :meth:`RecordSource.batch` (a few hundred KB per block)."""


@lru_cache(maxsize=32)
def _block(source: RecordSource, index: int) -> pa.Table:
    """Block ``index`` of ``source``: offsets ``[index, index + 1) * BLOCK_RECORDS``."""
    return source._records(index * BLOCK_RECORDS, (index + 1) * BLOCK_RECORDS)


def bucket_id_str(file_id: str) -> str:
    """A file id's first 8 characters, which the bucket index reads as the zero-padded bucket
    number (Hudi's ``BucketIdentifier#bucketIdStrFromFileId``); any file id has them."""
    return file_id[:8]


def bucket_of(file_id: str) -> int:
    """The bucket a bucket-index file id belongs to (Hudi's ``BucketIdentifier
    #bucketIdFromFileId``, ``Integer.parseInt`` of :func:`bucket_id_str`): ValueError for a file
    id that is not a bucket's (an append-mode file group's UUID)."""
    return int(bucket_id_str(file_id))


def bucket_ids(keys: pa.ChunkedArray | pa.Array, buckets: int) -> np.ndarray:
    """Hudi's simple bucket index of each record key (``BucketIdentifier#getBucketId``): the hash
    of the one-element list of hash-key values (a simple key is its own, ``KeyGenUtils
    #extractRecordKeysByFields``), ``31 * 1 + key.hashCode()``, with the sign bit cleared
    (``& Integer.MAX_VALUE``), modulo the bucket count. Every job and every restart agrees on it,
    which NBCC relies on (a key always maps to one file group)."""
    if len(keys) == 0:
        return np.zeros(0, np.int64)
    list_hash = (np.uint64(31) + java_string_hashes(keys)) & np.uint64(0x7FFFFFFF)
    return (list_hash % np.uint64(buckets)).astype(np.int64)
