"""Flink's key -> subtask assignment (models/flink/key_groups.py), checked against values Hudi's
``TestBucketAssigner`` relies on (max parallelism 1024, two tasks: ``f0`` and ``f1`` go to task
1, ``f2`` to task 0) and Java's ``String.hashCode``."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from models.flink.key_groups import (
    default_max_parallelism,
    key_group,
    murmur_hash,
    operator_index,
    operator_indexes,
)
from models.format.arrow_strings import java_string_hash


def test_string_hash_code_is_javas():
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == 2**31  # Integer.MIN_VALUE
    assert java_string_hash("") == 0


def test_key_groups_of_hudis_test_file_ids():
    assert [key_group(f, 1024) for f in ("f0", "f1", "f2", "file_id_0")] == [846, 683, 356, 662]
    assert [operator_index(f, 1024, 2) for f in ("f0", "f1", "f2")] == [1, 1, 0]


@given(st.text(max_size=20), st.integers(1, 300))
def test_every_key_maps_to_a_subtask(key, parallelism):
    max_parallelism = default_max_parallelism(parallelism)
    assert max_parallelism >= parallelism
    assert 0 <= key_group(key, max_parallelism) < max_parallelism
    assert 0 <= operator_index(key, max_parallelism, parallelism) < parallelism


@given(st.integers(0, 2**32 - 1))
def test_murmur_hash_is_non_negative(code):
    assert 0 <= murmur_hash(code) < 2**31


def test_default_max_parallelism():
    assert default_max_parallelism(1) == 128
    assert default_max_parallelism(100) == 256  # 150 rounded up to a power of two
    assert default_max_parallelism(40000) == 32768


@given(st.lists(st.text(max_size=12), max_size=30), st.integers(1, 64))
def test_operator_indexes_of_a_batch_match_one_by_one(keys, parallelism):
    max_parallelism = default_max_parallelism(parallelism)
    got = operator_indexes(pa.array(keys, pa.string()), max_parallelism, parallelism)
    assert got.tolist() == [operator_index(k, max_parallelism, parallelism) for k in keys]
