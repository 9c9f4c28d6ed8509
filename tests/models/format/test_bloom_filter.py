"""Hudi's record-key bloom filter (models/format/bloom_filter.py): the dynamic filter's rows past
its bound, the vectorized murmur hash against the scalar one, and the serialized layout. Equality
with Hadoop's own filter is in tests/conformance/test_bloom_filter.py."""

from __future__ import annotations

import base64
import struct

import numpy as np
import pyarrow as pa
import pytest

from models.format.bloom_filter import (
    BloomFilterConfig,
    DynamicBloomFilter,
    FilterShape,
    key_positions,
    murmur_hash,
    row_of_each_key,
)


def rows_as_hudi_adds(count: int, nr: int, max_nr: int) -> tuple[list[int], int]:
    """``InternalDynamicBloomFilter#add`` and ``#getActiveStandardBF`` step by step: the row
    each key goes to, and ``currentNbRecord`` at the end."""
    rows, current, reached_max, cur_matrix_index, chosen = 1, 0, False, 0, []
    for _ in range(count):
        if reached_max:
            row = cur_matrix_index % rows
            cur_matrix_index += 1
        elif current >= nr and rows * nr < max_nr:
            rows, current, row = rows + 1, 0, rows
        elif current >= nr:
            reached_max, row = True, 0
        else:
            row = rows - 1
        chosen.append(row)
        current += 1
    return chosen, current


@pytest.mark.parametrize(("nr", "max_nr"), [(2, 5), (2, 6), (3, 2), (4, 4), (1, 3), (5, 100)])
def test_keys_fill_rows_then_go_round_robin_as_hudi_adds_them(nr, max_nr):
    expected, _ = rows_as_hudi_adds(40, nr, max_nr)
    assert row_of_each_key(40, FilterShape(64, 2, nr, max_nr)).tolist() == expected


@pytest.mark.parametrize("count", [0, 1, 5, 6, 7, 11])
def test_the_serialized_filter_counts_rows_and_the_last_rows_keys(count):
    config = BloomFilterConfig(num_entries=2, fpp=0.01, dynamic_max_entries=5)
    keys = pa.array([f"k{i}" for i in range(count)], pa.string())
    data = base64.b64decode(DynamicBloomFilter.of_keys(keys, config).serialize_to_string())
    version, nb_hash, hash_type, vector_size = struct.unpack_from(">iiBi", data, 0)
    nr, current, rows = struct.unpack_from(">iii", data, 13)
    shape = config.shape
    assert (version, nb_hash, hash_type, vector_size) == (-1, shape.nb_hash, 1, shape.vector_size)
    expected_rows = max(1, min(3, -(-count // 2)))
    assert (nr, current, rows) == (2, rows_as_hudi_adds(count, 2, 5)[1], expected_rows)
    assert len(data) == 25 + rows * (13 + (shape.vector_size + 7) // 8)


def test_hudis_default_shape():
    """``BloomFilterUtils`` for 60,000 entries at 1e-9: 2,587,966 bits, 30 hash functions."""
    assert BloomFilterConfig().shape == FilterShape(2_587_966, 30, 60_000, 100_000)


def test_vectorized_positions_are_the_scalar_hash_chain():
    keys = ["a", "ab", "abc", "abcd", "abcde", "ÿÿÿ", "k00000001", "日本語のキー"]
    shape = FilterShape(1_000_003, 5, 10, 10)
    positions = key_positions(pa.array(keys), shape)
    for key, row in zip(keys, positions.tolist(), strict=True):
        h, expected = 0, []
        for _ in range(shape.nb_hash):
            h = murmur_hash(key.encode(), h)
            expected.append(abs(h) % shape.vector_size)
        assert row == expected


def test_an_empty_key_is_refused_as_hadoop_refuses_it():
    with pytest.raises(ValueError, match="empty key"):
        key_positions(pa.array(["a", ""]), FilterShape(64, 2, 2, 2))


def test_a_filter_of_another_hash_type_is_refused():
    header = struct.pack(">iiBi", -1, 2, 0, 64) + struct.pack(">iii", 2, 0, 1)
    with pytest.raises(ValueError, match="murmur"):
        DynamicBloomFilter.from_string(base64.b64encode(header + bytes(13 + 8)).decode())


def test_a_full_filter_still_finds_its_keys():
    """Past the bound the rows saturate but keep every key (false positives rise)."""
    config = BloomFilterConfig(num_entries=20, fpp=0.01, dynamic_max_entries=40)
    keys = [f"key{i}" for i in range(500)]
    bloom = DynamicBloomFilter.of_keys(pa.array(keys), config)
    assert len(bloom.rows) == 2 and all(bloom.might_contain(k) for k in keys)
    assert np.mean([bits.mean() for bits in bloom.rows]) > 0.5
