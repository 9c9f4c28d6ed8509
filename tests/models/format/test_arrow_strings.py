"""Decimal strings built and parsed in Arrow buffers (models/format/arrow_strings.py): the same strings
as Python's formatting, for every width and length mix, and a parse that inverts them (slices
and chunked arrays included) or falls back to Arrow compute for anything else."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from models.format.arrow_strings import (
    decimal_strings,
    decimal_suffixes,
    java_string_hashes,
    numbered_strings,
    repeated_string,
)

values_lists = st.lists(st.integers(0, 2**63 - 1), max_size=60)


@given(
    st.sampled_from(["", "k", "p", "j7-", "20250101000000123_3_"]), values_lists, st.integers(1, 24)
)
@example("", [0], 20)  # wider than any int64: padding beyond 19 digits
def test_decimal_strings_match_python_formatting(prefix: str, values: list[int], width: int):
    got = decimal_strings(prefix, np.array(values, np.int64), width)
    assert got.type == pa.string()
    assert got.to_pylist() == [f"{prefix}{v:0{width}d}" for v in values]
    got.validate(full=True)


def test_decimal_strings_mixed_lengths_and_edges():
    values = np.array([0, 9, 10, 99_999_999, 100_000_000, 123], np.int64)
    assert decimal_strings("k", values, 8).to_pylist() == [f"k{v:08d}" for v in values]
    assert decimal_strings("p", np.array([3, 0, 12]), 1).to_pylist() == ["p3", "p0", "p12"]
    assert decimal_strings("x", np.array([], np.int64), 4).to_pylist() == []
    with pytest.raises(ValueError, match="non-negative"):
        decimal_strings("k", np.array([1, -1]), 3)


@given(st.sampled_from(["k", "p", "j12-"]), values_lists, st.integers(1, 12))
def test_decimal_suffixes_invert_decimal_strings(prefix: str, values: list[int], width: int):
    strings = decimal_strings(prefix, np.array(values, np.int64), width)
    assert decimal_suffixes(strings, len(prefix)).tolist() == values
    if len(values) > 2:  # a slice and a chunked array read the same numbers
        assert (
            decimal_suffixes(strings.slice(1, len(values) - 2), len(prefix)).tolist()
            == (values[1:-1])
        )
        chunked = pa.chunked_array([strings.slice(0, 1), strings.slice(1)])
        assert decimal_suffixes(chunked, len(prefix)).tolist() == values


def test_decimal_suffixes_fallback_and_errors():
    assert decimal_suffixes(pa.array(["p1", "p10", "p2"]), 1).tolist() == [1, 10, 2]
    assert decimal_suffixes(pa.array(["k1"], pa.large_string()), 1).tolist() == [1]
    assert decimal_suffixes(pa.chunked_array([], pa.string()), 1).tolist() == []
    with pytest.raises(pa.ArrowInvalid):  # same length but not a number: Arrow's error
        decimal_suffixes(pa.array(["kx1", "k12"]), 1)


def test_numbered_strings_count_from_zero_and_grow():
    assert numbered_strings("a_", 0).to_pylist() == []
    assert numbered_strings("a_", 3).to_pylist() == ["a_0", "a_1", "a_2"]
    assert numbered_strings("t_1_", 2500).to_pylist() == [f"t_1_{i}" for i in range(2500)]
    assert numbered_strings("b", 4).to_pylist() == ["b0", "b1", "b2", "b3"]


@given(st.text(max_size=40), st.integers(0, 300))
@example("", 0)
@example("", 5)
@example("20250101000000123", 1)
def test_repeated_string_equals_arrow_repeat(value: str, n: int):
    built = repeated_string(value, n)
    built.validate(full=True)
    assert built.equals(pa.repeat(pa.scalar(value, pa.string()), n))


def test_repeated_string_refuses_more_than_one_array_holds():
    with pytest.raises(ValueError, match="2\\*\\*31"):
        repeated_string("x" * 1024, 2**21)


def _java_hash(text: str) -> int:
    """Java's ``String.hashCode`` by its definition, ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16
    code units, 32-bit."""
    units = text.encode("utf-16-be")
    codes = [units[i] << 8 | units[i + 1] for i in range(0, len(units), 2)]
    n = len(codes)
    return sum(c * 31 ** (n - 1 - i) for i, c in enumerate(codes)) % 2**32


def test_java_string_hashes_known_values():
    got = java_string_hashes(pa.array(["hello", "polygenelubricants", "", "a", "k00000001"]))
    # "hello".hashCode() == 99162322; "polygenelubricants".hashCode() == Integer.MIN_VALUE
    assert got.tolist() == [99162322, 2**31, 0, 97, _java_hash("k00000001")]
    assert got.dtype == np.uint64


@given(st.lists(st.text(max_size=12), max_size=40), st.integers(0, 5))
@example(["é", "ab", "\U0001f600"], 1)  # non-ASCII: UTF-16 code units, a surrogate pair
def test_java_string_hashes_match_the_definition(texts: list[str], cut: int):
    array = pa.array(texts, pa.string())
    expected = [_java_hash(t) for t in texts]
    assert java_string_hashes(array).tolist() == expected
    sliced = array.slice(min(cut, len(texts)))
    assert java_string_hashes(sliced).tolist() == expected[min(cut, len(texts)) :]
    chunked = pa.chunked_array([array.slice(0, cut), array.slice(cut)], pa.string())
    assert java_string_hashes(chunked).tolist() == expected
