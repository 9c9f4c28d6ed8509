"""Hudi's ``TestBloomFilter`` ported onto :mod:`models.format.bloom_filter`.

apache/hudi ``hudi-common/src/test/java/org/apache/hudi/common/bloom/TestBloomFilter.java``
(``read_file`` id ``268608466``). ``testDeserialize`` asserts that a ``DYNAMIC_V0`` filter Hudi
serializes is byte for byte the one Hadoop's ``DynamicBloomFilter`` serializes for the same keys
(with the murmur hash, below the bound on entries); its reference files were written by Hadoop.
Here the reference is Hadoop itself: the ``org.apache.hadoop.util.bloom`` classes in PySpark's
``hadoop-client-api`` jar, driven through a py4j gateway, for the test's keys (UUIDs, as
``all_10000.keys.data`` holds) and for keys of every length mod 4 and non-ASCII ones (which
exercise the murmur hash's tail). ``testAddKey`` and ``testSerialize`` are ported as written
(the DYNAMIC_V0 type; SIMPLE is not modelled: Hudi never writes it by default).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest

from models.format.bloom_filter import BloomFilterConfig, DynamicBloomFilter, murmur_hash


@pytest.fixture(scope="module")
def hadoop() -> Iterator[object]:
    """The JVM of a py4j gateway with PySpark's classpath (Hadoop's bloom filter in it)."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway()
    yield gateway.jvm
    gateway.shutdown()
    gateway.proc.stdin.close()
    gateway.proc.wait()


def hadoop_serialized(jvm, keys: list[str], config: BloomFilterConfig) -> str:
    """Hadoop's ``DynamicBloomFilter`` of ``keys``, written and Base64-encoded as Hudi's
    ``serializeToString`` does."""
    shape = config.shape
    bloom = jvm.org.apache.hadoop.util.bloom
    hadoop_filter = bloom.DynamicBloomFilter(shape.vector_size, shape.nb_hash, 1, shape.nr)
    for key in keys:
        hadoop_filter.add(bloom.Key(key.encode()))
    sink = jvm.java.io.ByteArrayOutputStream()
    hadoop_filter.write(jvm.java.io.DataOutputStream(sink))
    return base64.b64encode(bytes(sink.toByteArray())).decode()


def uuids(count: int, seed: int) -> list[str]:
    """``count`` distinct UUID strings, the same for the same ``seed``."""
    spread = [(i * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(count)]
    return [str(uuid.UUID(int=(seed << 64) | low)) for low in spread]


@pytest.mark.parametrize(
    ("num_entries", "count"),
    [(200, 150), (200, 1000), (1000, 1000), (5000, 800)],
    ids=["one-row", "five-rows", "full-row", "partly-full"],
)
def test_deserialize_hadoop_filter_equals_hudi_filter(hadoop, num_entries, count):
    """``testDeserialize`` (lib = hadoop, murmur): the serialized filters are equal, and the
    filter read back holds every key."""
    config = BloomFilterConfig(num_entries, 0.000001, 1_000_000)
    keys = uuids(count, num_entries)
    serialized = DynamicBloomFilter.of_keys(pa.array(keys), config).serialize_to_string()
    assert serialized == hadoop_serialized(hadoop, keys, config)
    assert DynamicBloomFilter.from_string(serialized).might_contain_each(pa.array(keys)).all()


def test_every_tail_length_and_non_ascii_keys_hash_as_hadoop(hadoop):
    """Keys of every length mod 4, non-ASCII ones among them (Hadoop's tail bytes are signed)."""
    keys = [("é" if i % 3 == 0 else "k") * (1 + i % 7) + str(i) for i in range(600)]
    config = BloomFilterConfig(100, 0.001, 1_000_000)
    assert DynamicBloomFilter.of_keys(pa.array(keys), config).serialize_to_string() == (
        hadoop_serialized(hadoop, keys, config)
    )
    murmur = hadoop.org.apache.hadoop.util.hash.MurmurHash.getInstance()
    for key in keys[:40]:
        assert murmur_hash(key.encode(), 7) == murmur.hash(key.encode(), 7)


def test_hudi_default_filter_equals_hadoop(hadoop):
    """The footer's filter: Hudi's defaults (60,000 entries, fpp 1e-9)."""
    keys = [f"k{i:08d}" for i in range(1000)]
    config = BloomFilterConfig()
    assert DynamicBloomFilter.of_keys(pa.array(keys), config).serialize_to_string() == (
        hadoop_serialized(hadoop, keys, config)
    )


@pytest.mark.parametrize("size", [100, 1000, 10000])
def test_add_key(size):
    """``testAddKey``: every added key might be contained."""
    keys = uuids(size, 1)
    bloom = DynamicBloomFilter.of_keys(pa.array(keys), BloomFilterConfig(size, 0.000001, size * 10))
    assert all(bloom.might_contain(key) for key in keys[:100])
    assert bloom.might_contain_each(pa.array(keys)).all()


@pytest.mark.parametrize("size", [100, 1000, 10000])
def test_serialize(size):
    """``testSerialize``: the filter read back from its string holds every key."""
    keys = uuids(size, 2)
    config = BloomFilterConfig(size, 0.000001, size * 10)
    recreated = DynamicBloomFilter.from_string(
        DynamicBloomFilter.of_keys(pa.array(keys), config).serialize_to_string()
    )
    assert recreated.might_contain_each(pa.array(keys)).all()
