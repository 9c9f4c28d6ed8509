"""Flink's assignment of a keyed stream's keys to operator subtasks, for string keys.

``KeyGroupRangeAssignment#assignKeyToParallelOperator(key, maxParallelism, parallelism)``: the
key's key group is ``MathUtils#murmurHash(key.hashCode()) % maxParallelism``, and the subtask is
``keyGroup * parallelism / maxParallelism`` (``computeOperatorIndexForKeyGroup``). Hudi's bucket
assigner uses it twice: a record key picks the assigner task (``keyBy(recordKey)``), and a file id
is "of this task" when it maps to the task (``BucketAssigner#fileIdOfThisTask``, which also
decides which small files a task may fill). ``KeyGroupRangeAssignment#computeDefaultMaxParallelism``
gives the max parallelism Flink uses when the job sets none.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from models.format.arrow_strings import java_string_hash, java_string_hashes

INT_MASK = 0xFFFFFFFF
INT_MIN = 0x80000000
DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128
UPPER_BOUND_MAX_PARALLELISM = 32768


def _rotate_left(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & INT_MASK


def murmur_hash(code: int) -> int:
    """``MathUtils#murmurHash(int)``: one murmur3 block (seed 0, length 4) and its finaliser,
    made non-negative (``Integer.MIN_VALUE`` becomes 0)."""
    h = (code * 0xCC9E2D51) & INT_MASK
    h = _rotate_left(h, 15)
    h = (h * 0x1B873593) & INT_MASK
    h = _rotate_left(h, 13)
    h = (h * 5 + 0xE6546B64) & INT_MASK
    h ^= 4
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & INT_MASK
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & INT_MASK
    h ^= h >> 16
    if h < INT_MIN:
        return h
    return 0 if h == INT_MIN else (1 << 32) - h


def key_group(key: str, max_parallelism: int) -> int:
    """``KeyGroupRangeAssignment#assignToKeyGroup`` of a string key."""
    return murmur_hash(java_string_hash(key)) % max_parallelism


def operator_index(key: str, max_parallelism: int, parallelism: int) -> int:
    """``KeyGroupRangeAssignment#assignKeyToParallelOperator`` of a string key."""
    return key_group(key, max_parallelism) * parallelism // max_parallelism


def operator_indexes(
    keys: pa.Array | pa.ChunkedArray, max_parallelism: int, parallelism: int
) -> np.ndarray:
    """:func:`operator_index` of every key, column-wise (the keyed shuffle of a whole batch)."""
    mask = np.uint64(INT_MASK)
    h = (java_string_hashes(keys) * np.uint64(0xCC9E2D51)) & mask
    h = ((h << np.uint64(15)) | (h >> np.uint64(17))) & mask
    h = (h * np.uint64(0x1B873593)) & mask
    h = ((h << np.uint64(13)) | (h >> np.uint64(19))) & mask
    h = ((h * np.uint64(5)) + np.uint64(0xE6546B64)) & mask
    h ^= np.uint64(4)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & mask
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & mask
    h ^= h >> np.uint64(16)
    signed = h.astype(np.int64)
    positive = np.where(signed < INT_MIN, signed, (1 << 32) - signed)
    positive[signed == INT_MIN] = 0
    groups = positive % max_parallelism
    return (groups * parallelism // max_parallelism).astype(np.int64)


def default_max_parallelism(parallelism: int) -> int:
    """``KeyGroupRangeAssignment#computeDefaultMaxParallelism``: ``1.5 * parallelism`` rounded up
    to a power of two, within [128, 32768]."""
    wanted = parallelism + parallelism // 2
    power = 1
    while power < wanted:
        power *= 2
    return min(max(power, DEFAULT_LOWER_BOUND_MAX_PARALLELISM), UPPER_BOUND_MAX_PARALLELISM)


__all__ = [
    "default_max_parallelism",
    "key_group",
    "murmur_hash",
    "operator_index",
    "operator_indexes",
]
