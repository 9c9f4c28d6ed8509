"""Decimal strings in Arrow arrays, built and parsed straight from Arrow's buffers with numpy.

Record keys (``k00001234``), partition values (``p3``) and Hudi's commit sequence numbers
(``<instant>_<task>_<n>``) are a prefix plus a decimal number. The simulation makes and reads them
for every source batch (each 100 simulated ms) and every file it writes, in batches of a few
hundred rows, where the fixed cost of a chain of Arrow compute calls (cast, pad, join, slice)
exceeds the work on the rows. A digit matrix in numpy does the same in a few array operations.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_POWERS_OF_TEN = 10 ** np.arange(19, dtype=np.int64)  # every power that fits in an int64


def decimal_strings(prefix: str, values: np.ndarray, width: int) -> pa.Array:
    """``prefix`` + each non-negative integer in decimal, zero-padded to at least ``width`` digits
    (``f"{prefix}{v:0{width}d}"``), as one Arrow string array.

    Built straight into Arrow's buffers from a digit matrix: the source makes a batch every 100
    simulated ms, where a chain of Arrow compute calls costs more than the rows."""
    values = np.asarray(values, np.int64)
    n = len(values)
    if n == 0:
        return pa.array([], pa.string())
    if values.min() < 0:
        raise ValueError("decimal_strings takes non-negative integers")
    head = np.frombuffer(prefix.encode(), np.uint8)
    largest = int(values.max())
    most = max(width, len(str(largest)))
    if n * (len(head) + most) >= 2**31:
        raise ValueError("more characters than one Arrow string array holds (2**31)")
    matrix = np.empty((n, len(head) + most), np.uint8)
    matrix[:, : len(head)] = head
    computed = min(most, len(_POWERS_OF_TEN))  # an int64 has at most 19 digits
    matrix[:, len(head) : matrix.shape[1] - computed] = ord("0")  # padding beyond them
    np.remainder(
        values[:, None] // _POWERS_OF_TEN[computed - 1 :: -1],
        10,
        out=matrix[:, matrix.shape[1] - computed :],
        casting="unsafe",
    )
    matrix[:, matrix.shape[1] - computed :] += ord("0")
    if most == width:  # every value has ``width`` digits
        offsets = np.arange(0, (n + 1) * matrix.shape[1], matrix.shape[1], dtype=np.int32)
        data = matrix.tobytes()
    else:  # keep each row's prefix and its last ``digits`` digits
        digits = np.maximum(np.searchsorted(_POWERS_OF_TEN, values, side="right"), width)
        offsets = np.zeros(n + 1, np.int32)
        np.cumsum(len(head) + digits, out=offsets[1:])
        keep = np.ones_like(matrix, bool)
        keep[:, len(head) :] = np.arange(most) >= (most - digits)[:, None]
        data = matrix[keep].tobytes()
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def decimal_suffixes(strings: pa.ChunkedArray | pa.Array, skip: int) -> np.ndarray:
    """The integers written in decimal after the first ``skip`` characters of each string (the
    inverse of :func:`decimal_strings`), as int64.

    Strings of one length (every key ``k<8 digits>``, every partition ``p<i>`` with < 10
    partitions) are read straight from Arrow's data buffer; anything else goes through Arrow
    compute (which also raises for text that is not a number)."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.chunk(0) if strings.num_chunks == 1 else strings.combine_chunks()
    n = len(strings)
    if n == 0:
        return np.zeros(0, np.int64)
    if strings.type == pa.string() and strings.null_count == 0:
        _, offsets_buffer, data_buffer = strings.buffers()
        offsets = np.frombuffer(offsets_buffer, np.int32, n + 1, strings.offset * 4)
        begin, end = int(offsets[0]), int(offsets[-1])
        width = (end - begin) // n
        if (
            skip < width <= skip + 18
            and end - begin == n * width
            and (np.diff(offsets) == width).all()
        ):
            text = np.frombuffer(data_buffer, np.uint8, end - begin, begin).reshape(n, width)
            digits = text[:, skip:] - np.uint8(_ZERO)  # wraps around below "0": > 9 as well
            if digits.max() <= 9:
                return digits @ _POWERS_OF_TEN[width - skip - 1 :: -1]
    sliced = pc.utf8_slice_codeunits(strings, skip)
    return pc.cast(sliced, pa.int64()).to_numpy(zero_copy_only=False)


_ZERO = ord("0")


_DIGIT_BLOCKS: list[np.ndarray] = []
"""Block ``d - 1`` holds the digits of the ``d``-digit numbers (``0..9`` for ``d = 1``) as an
``(count, d)`` uint8 matrix; built on first use."""


def _digit_block(digits: int) -> np.ndarray:
    while len(_DIGIT_BLOCKS) < digits:
        d = len(_DIGIT_BLOCKS) + 1
        low = 0 if d == 1 else 10 ** (d - 1)
        values = np.arange(low, 10**d, dtype=np.int64)
        block = (values[:, None] // _POWERS_OF_TEN[d - 1 :: -1]) % 10 + ord("0")
        _DIGIT_BLOCKS.append(block.astype(np.uint8))
    return _DIGIT_BLOCKS[digits - 1]


def numbered_strings(prefix: str, n: int) -> pa.Array:
    """``prefix + str(i)`` for ``i`` in ``range(n)`` (Hudi's ``_hoodie_commit_seqno`` is
    ``<instant>_<task>_<i>``), built in Arrow's buffers: one flush makes one such column per file,
    where an Arrow compute join costs more than the rows. The numbers of one digit count form a
    fixed-width matrix (prefix columns, then digit columns), written one after the other."""
    if n == 0:
        return pa.array([], pa.string())
    head = np.frombuffer(prefix.encode(), np.uint8)
    width = len(head)
    if n * (width + len(str(n))) >= 2**31:
        raise ValueError("more characters than one Arrow string array holds (2**31)")
    pieces = []
    lengths = []
    low, digits = 0, 1
    while low < n:
        high = min(n, 10**digits)
        matrix = np.empty((high - low, width + digits), np.uint8)
        matrix[:, :width] = head
        matrix[:, width:] = _digit_block(digits)[: high - low]
        pieces.append(matrix.ravel())
        lengths.append(np.full(high - low, width + digits, np.int32))
        low, digits = high, digits + 1
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    data = np.concatenate(pieces)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data))


def repeated_string(value: str, n: int) -> pa.Array:
    """``value`` ``n`` times as an Arrow string array (what ``pa.repeat`` of a string scalar
    gives), straight from buffers: Hudi's meta columns repeat the commit time, partition and file
    name on every row of every file written."""
    encoded = value.encode()
    if n * len(encoded) >= 2**31:
        raise ValueError("more characters than one Arrow string array holds (2**31)")
    offsets = np.arange(0, (n + 1) * len(encoded), len(encoded) or 1, dtype=np.int32)[: n + 1]
    if not encoded:
        offsets = np.zeros(n + 1, np.int32)
    return pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(encoded * n))


_UINT32 = np.uint64(0xFFFFFFFF)


def _powers_of_31(count: int) -> np.ndarray:
    """``31 ** i mod 2 ** 32`` for ``i < count``, as uint64."""
    powers = np.ones(max(count, 1), np.uint64)
    for i in range(1, count):
        powers[i] = (powers[i - 1] * np.uint64(31)) & _UINT32
    return powers


def java_string_hashes(strings: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Java's ``String.hashCode`` of each string (``s[0]*31^(n-1) + ... + s[n-1]``, 32-bit wrap
    around), as unsigned values in a uint64 array, straight from Arrow's buffers.

    ASCII text is hashed column-wise (a byte is its UTF-16 code unit): each byte weighted by
    ``31`` to the power of the characters after it, summed per string with one cumulative sum
    (uint64 arithmetic wraps modulo ``2**64``, a multiple of ``2**32``). Any other text, whose
    UTF-16 code units differ from its bytes, is hashed string by string."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks() if strings.num_chunks else pa.array([], pa.string())
    strings = strings.cast(pa.large_string())
    n = len(strings)
    if n == 0:
        return np.zeros(0, np.uint64)
    if strings.null_count:
        raise ValueError("a record key is never null")
    _, offsets_buffer, data_buffer = strings.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64, n + 1, strings.offset * 8)
    begin, end = int(offsets[0]), int(offsets[-1])
    data = np.frombuffer(data_buffer, np.uint8, end - begin, begin) if end > begin else None
    if data is None:
        return np.zeros(n, np.uint64)
    if data.max() >= 0x80:
        return np.array([java_string_hash(s) for s in strings.to_pylist()], np.uint64)
    lengths = np.diff(offsets)
    owner = np.repeat(np.arange(n), lengths)
    after = (offsets[1:] - begin)[owner] - 1 - np.arange(end - begin)
    weighted = data.astype(np.uint64) * _powers_of_31(int(lengths.max()))[after]
    totals = np.zeros(end - begin + 1, np.uint64)
    np.cumsum(weighted, out=totals[1:])
    return (totals[offsets[1:] - begin] - totals[offsets[:-1] - begin]) & _UINT32


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of one string (UTF-16 code units), unsigned."""
    units = text.encode("utf-16-le")
    h = 0
    for unit in np.frombuffer(units, "<u2").tolist():
        h = (h * 31 + unit) & 0xFFFFFFFF
    return h
