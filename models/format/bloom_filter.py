"""Hudi's record-key bloom filter, as base files carry it in their parquet footer.

Hudi builds one filter per base file (``HoodieFileWriterFactory#createBloomFilter``, called by
the Flink row-data writer ``HoodieRowDataFileWriterFactory#newParquetFileWriter`` for every
parquet base file) with ``BloomFilterFactory#createBloomFilter`` and the storage config's
defaults: type ``DYNAMIC_V0`` (``hoodie.bloom.index.filter.type``), 60,000 entries
(``hoodie.index.bloom.num_entries``), false-positive rate 1e-9 (``hoodie.index.bloom.fpp``),
at most 100,000 entries (``hoodie.bloom.index.filter.dynamic.max.entries``).

``DYNAMIC_V0`` is ``HoodieDynamicBoundedBloomFilter``: an ``InternalDynamicBloomFilter``
(Hadoop's ``DynamicBloomFilter`` bounded by the maximum entries) of rows of Hadoop
``BloomFilter``\\s, each key hashed by Hadoop's ``HashFunction`` with ``MurmurHash`` (each of the
``nbHash`` positions seeds the next hash with the previous one). ``serializeToString`` is the
Base64 of the filter's ``write(DataOutput)``: the ``Filter`` header (version -1, nbHash,
hashType, vectorSize), then nr, currentNbRecord, the number of rows, and each row's header and
bit vector (bit ``i`` in byte ``i / 8``, mask ``1 << i % 8``). Hudi's ``TestBloomFilter
#testDeserialize`` asserts the bytes equal Hadoop's.
"""

from __future__ import annotations

import base64
import math
import struct
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

TYPE_CODE = "DYNAMIC_V0"
"""``BloomFilterTypeCode.DYNAMIC_V0``, the default filter type."""
MURMUR_HASH = 1
"""``Hash.MURMUR_HASH``: the hash type Hudi's filters use."""
FILTER_VERSION = -1
"""``Filter.VERSION`` written first by ``Filter#write``."""
_M = np.uint32(0x5BD1E995)
_LOG2_SQUARED = math.log(2) * math.log(2)


@dataclass(frozen=True)
class BloomFilterConfig:
    """``HoodieStorageConfig``'s bloom filter options, with Hudi's defaults."""

    num_entries: int = 60_000
    fpp: float = 0.000000001
    dynamic_max_entries: int = 100_000

    @property
    def shape(self) -> FilterShape:
        """The filter these options make (``HoodieDynamicBoundedBloomFilter``'s constructor):
        ``BloomFilterUtils#getBitSize`` bits per row, ``#getNumHashes`` hash functions."""
        bits = math.ceil(self.num_entries * (-math.log(self.fpp) / _LOG2_SQUARED))
        hashes = math.ceil(math.log(2) * bits / self.num_entries)
        return FilterShape(bits, hashes, self.num_entries, self.dynamic_max_entries)


@dataclass(frozen=True)
class FilterShape:
    """What ``InternalDynamicBloomFilter`` is built with: bits per row (``vectorSize``), hash
    functions (``nbHash``), keys per row (``nr``), and the bound on keys (``maxNr``, not
    serialized: 0 in a filter read back)."""

    vector_size: int
    nb_hash: int
    nr: int
    max_nr: int


def murmur_hash(data: bytes, seed: int) -> int:
    """Hadoop's ``MurmurHash#hash(byte[], int length, int seed)`` of one key, a Java int.

    A scalar reference for :func:`key_positions`. Unlike MurmurHash2's C code, Hadoop's takes
    the 1 to 3 tail bytes from the end (``data[length - 1]`` unshifted, ``data[length - 2] << 8``,
    ``data[length - 3] << 16``), each a Java signed byte."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    h = (seed ^ len(data)) & mask
    blocks = len(data) >> 2
    for i in range(blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> 24
        k = (k * m) & mask
        h = ((h * m) & mask) ^ k
    tail = [b - 256 if b >= 128 else b for b in data[4 * blocks :]]
    if tail:
        for shift, value in enumerate(reversed(tail)):
            h ^= (value << (8 * shift)) & mask
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


@dataclass(frozen=True)
class _KeyWords:
    """What :func:`murmur_hash` takes from keys of one length, whatever the seed: each 4-byte
    block mixed (``k *= m; k ^= k >>> 24; k *= m``) and the tail bytes folded into one word."""

    length: int
    mixed: list[np.ndarray]
    tail: np.ndarray | None

    @classmethod
    def of(cls, matrix: np.ndarray) -> _KeyWords:
        length = matrix.shape[1]
        blocks = length >> 2
        mixed = []
        if blocks:
            words = np.ascontiguousarray(matrix[:, : 4 * blocks]).view("<u4")
            for i in range(blocks):
                k = words[:, i] * _M
                k ^= k >> np.uint32(24)
                mixed.append(k * _M)
        left = length - 4 * blocks
        tail = None
        if left:
            signed = matrix[:, 4 * blocks :].view(np.int8).astype(np.int32)
            tail = np.zeros(len(matrix), np.uint32)
            for j in range(left):
                tail ^= (signed[:, j] << (8 * (left - 1 - j))).astype(np.uint32)
        return cls(length, mixed, tail)

    def hash(self, seeds: np.ndarray) -> np.ndarray:
        """:func:`murmur_hash` of each key with its seed (uint32 in and out)."""
        h = seeds ^ np.uint32(self.length)
        for k in self.mixed:
            h = (h * _M) ^ k
        if self.tail is not None:
            h = (h ^ self.tail) * _M
        h ^= h >> np.uint32(13)
        h = h * _M
        h ^= h >> np.uint32(15)
        return h


def key_positions(keys: pa.Array, shape: FilterShape) -> np.ndarray:
    """The bit positions ``HashFunction#hash(Key)`` gives each UTF-8 key: an (n, nbHash) array
    of ``Math.abs(h_i % vectorSize)`` where ``h_i = murmur(key, h_(i-1))``, ``h_(-1) = 0``."""
    keys = keys.cast(pa.large_string())
    n = len(keys)
    positions = np.empty((n, shape.nb_hash), np.int64)
    if n == 0:
        return positions
    _, offsets_buffer, data_buffer = keys.buffers()
    offsets = np.frombuffer(offsets_buffer, np.int64, n + 1, keys.offset * 8)
    data = (
        np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    )
    lengths = np.diff(offsets)
    if lengths.min() == 0:
        raise ValueError("HashFunction#hash refuses an empty key")
    for length in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == length)
        words = _KeyWords.of(data[offsets[rows][:, None] + np.arange(length)])
        h = np.zeros(len(rows), np.uint32)
        hashes = np.empty((len(rows), shape.nb_hash), np.uint32)
        for i in range(shape.nb_hash):
            h = hashes[:, i] = words.hash(h)
        positions[rows] = np.abs(hashes.view(np.int32).astype(np.int64)) % shape.vector_size
    return positions


def row_of_each_key(count: int, shape: FilterShape) -> np.ndarray:
    """The row of the dynamic filter each of ``count`` keys (in insertion order) goes to
    (``InternalDynamicBloomFilter#getActiveStandardBF``): ``nr`` keys per row while the rows
    hold fewer than the maximum entries, then round robin, the first row twice at the switch."""
    nr = shape.nr
    most_rows = max(1, math.ceil(shape.max_nr / nr))
    index = np.arange(count, dtype=np.int64)
    rows = index // nr
    past = index - most_rows * nr
    return np.where(past < 0, rows, np.where(past == 0, 0, (past - 1) % most_rows))


@dataclass
class DynamicBloomFilter:
    """``HoodieDynamicBoundedBloomFilter``: rows of bit vectors, and the keys in the last row."""

    shape: FilterShape
    rows: list[np.ndarray]
    current_nb_record: int

    @classmethod
    def of_keys(cls, keys: pa.Array, config: BloomFilterConfig | None = None) -> DynamicBloomFilter:
        """The filter after ``add`` of each key in order."""
        shape = (config or BloomFilterConfig()).shape
        n = len(keys)
        row_of = row_of_each_key(n, shape)
        count = 1 if n == 0 else int(row_of.max()) + 1
        positions = key_positions(keys, shape)
        rows = []
        for row in range(count):
            bits = np.zeros(shape.vector_size, bool)
            bits[positions[row_of == row].ravel()] = True
            rows.append(bits)
        current = 0 if n == 0 else n - shape.nr * (count - 1)
        return cls(shape, rows, current)

    def might_contain(self, key: str) -> bool:
        """``membershipTest``: every position of the key set in some row."""
        return bool(self.might_contain_each(pa.array([key], pa.string()))[0])

    def might_contain_each(self, keys: pa.Array) -> np.ndarray:
        """:meth:`might_contain` of each key, as a bool array."""
        positions = key_positions(keys, self.shape)
        found = np.zeros(len(keys), bool)
        for bits in self.rows:
            found |= bits[positions].all(axis=1)
        return found

    def serialize_to_string(self) -> str:
        """``HoodieDynamicBoundedBloomFilter#serializeToString``."""
        shape = self.shape
        header = struct.pack(">iiBi", FILTER_VERSION, shape.nb_hash, MURMUR_HASH, shape.vector_size)
        parts = [header, struct.pack(">iii", shape.nr, self.current_nb_record, len(self.rows))]
        for bits in self.rows:
            parts.append(header)
            parts.append(np.packbits(bits, bitorder="little").tobytes())
        return base64.b64encode(b"".join(parts)).decode("ascii")

    @classmethod
    def from_string(cls, text: str) -> DynamicBloomFilter:
        """``HoodieDynamicBoundedBloomFilter(String)``: the filter a footer holds."""
        data = base64.b64decode(text, validate=True)
        version, nb_hash, hash_type, vector_size = struct.unpack_from(">iiBi", data, 0)
        if version != FILTER_VERSION or hash_type != MURMUR_HASH:
            raise ValueError(f"not a murmur bloom filter of version -1: {version}, {hash_type}")
        nr, current, count = struct.unpack_from(">iii", data, 13)
        at, size = 25, (vector_size + 7) // 8
        rows = []
        for _ in range(count):
            at += 13
            packed = np.frombuffer(data, np.uint8, size, at)
            rows.append(np.unpackbits(packed, count=vector_size, bitorder="little").astype(bool))
            at += size
        if at != len(data):
            raise ValueError(f"bloom filter of {len(data)} bytes, {at} expected")
        return cls(FilterShape(vector_size, nb_hash, nr, 0), rows, current)
