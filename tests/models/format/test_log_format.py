"""Hudi log files (models/format/log_format.py, log_blocks, log_reader, log_writer, log_data_block)
and the Avro <-> Arrow mapping (models/format/avro_arrow.py, avro_to_arrow, arrow_to_avro), against
real Hudi tables.

The fixture tables (``tests/fixtures/hudi-tables``, written by Hudi 0.15/1.0/1.1) are the
ground truth for the byte layout; hudi-rs (the ``hudi`` package) is the independent reader that
must accept what this module writes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import shutil
import struct
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.format.arrow_to_avro import avro_schema_for
from models.format.avro_arrow import arrow_schema_for
from models.format.avro_to_arrow import AvroArrowError
from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock, delete_keys_schema
from models.format.log_format import (
    MAGIC,
    BlockType,
    HeaderKey,
    LogFormatError,
    UnsupportedLogBlockError,
)
from models.format.log_reader import decode_block, read_log_blocks, read_log_frames
from models.format.log_writer import encode_block, write_log_blocks

V6_TRIPS = "quickstart_trips_table_mor_avro_v6_trips_8i1u"
V8_TRIPS = "quickstart_trips_table_mor_avro_v8_trips_8i3u1d"
V9_TXNS = "sample_table_mor_avro_v9_txns_simple_nometa"
V6_PARQUET = "sample_table_mor_parquet_v6_nonpartitioned"

# Blocks in each table's data log files (metadata table excluded), by kind.
EXPECTED_BLOCKS = {
    V6_TRIPS: {"avro": 1},
    V8_TRIPS: {"avro": 3, "delete": 2},
    V9_TXNS: {"avro": 3, "delete": 2},
    V6_PARQUET: {"parquet": 1},
}
# A read whose result depends on the log files: the v9 table's latest slices were compacted and
# clustered, so read it as of the last deltacommit before the replacecommit.
ORACLE_READS = {
    V6_TRIPS: None,
    V8_TRIPS: None,
    V9_TXNS: "20260307135836829",
    V6_PARQUET: None,
}


@pytest.fixture(scope="session")
def hudi_tables(fixture_tables: dict[str, Path]) -> dict[str, Path]:
    """Zip stem -> table base path (the shared unzip in tests/conftest.py)."""
    return fixture_tables


def data_logs(table: Path) -> list[Path]:
    """The table's log files, metadata table excluded."""
    return sorted(p for p in table.rglob(".*.log.*") if ".hoodie" not in p.relative_to(table).parts)


def metadata_logs(table: Path) -> list[Path]:
    return sorted((table / ".hoodie" / "metadata").rglob(".*.log.*"))


def log_write_stats(table: Path) -> dict[str, list[tuple[str, int, int, int]]]:
    """Log file name -> [(deltacommit instant, numWrites, numDeletes, fileSizeInBytes)].

    Read from the completed deltacommits: Avro in ``.hoodie/timeline`` (v8/v9), JSON in
    ``.hoodie`` (v6).
    """
    commits: list[tuple[str, dict[str, Any]]] = []
    timeline = table / ".hoodie" / "timeline"
    if timeline.is_dir():
        for path in sorted(timeline.glob("*_*.deltacommit")):
            with path.open("rb") as fh:
                commits += [(path.name.split("_")[0], rec) for rec in fastavro.reader(fh)]
    else:
        for path in sorted((table / ".hoodie").glob("*.deltacommit")):
            commits.append((path.name.split(".")[0], json.loads(path.read_text())))
    stats: dict[str, list[tuple[str, int, int, int]]] = {}
    for instant, meta in commits:
        for partition_stats in (meta.get("partitionToWriteStats") or {}).values():
            for s in partition_stats:
                name = Path(s["path"]).name
                if ".log." in name:
                    stats.setdefault(name, []).append(
                        (instant, s["numWrites"], s["numDeletes"], s["fileSizeInBytes"])
                    )
    return stats


# ------------------------------------------------------------------------------------------
# Reading the fixtures
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("table_name", sorted(EXPECTED_BLOCKS))
def test_fixture_logs_match_commit_metadata(hudi_tables: dict[str, Path], table_name: str) -> None:
    """Block kinds, instants and record counts agree with what the deltacommits recorded."""
    table = hudi_tables[table_name]
    stats = log_write_stats(table)
    kinds: Counter[str] = Counter()
    logs = data_logs(table)
    assert logs
    for log in logs:
        data = log.read_bytes()
        blocks = read_log_blocks(data)
        assert log.name in stats, f"no deltacommit mentions {log.name}"
        instants = {instant for instant, *_ in stats[log.name]}
        assert {b.instant_time for b in blocks} == instants
        writes = sum(b.records.num_rows for b in blocks if isinstance(b, DataBlock))
        deletes = sum(b.keys.num_rows for b in blocks if isinstance(b, DeleteBlock))
        assert writes == sum(s[1] for s in stats[log.name])
        assert deletes == sum(s[2] for s in stats[log.name])
        assert len(data) == stats[log.name][-1][3]
        for b in blocks:
            kinds[b.format if isinstance(b, DataBlock) else "delete"] += 1
            if isinstance(b, DataBlock):
                assert b.records.schema.equals(arrow_schema_for(b.schema)) or b.format == "parquet"
                assert b.records.column("_hoodie_commit_time").to_pylist() == [b.instant_time] * (
                    b.records.num_rows
                )
    assert dict(kinds) == EXPECTED_BLOCKS[table_name]


def test_fixture_framing(hudi_tables: dict[str, Path]) -> None:
    """Every log file Hudi wrote, metadata table included, frames as documented."""
    seen: Counter[BlockType] = Counter()
    for table in hudi_tables.values():
        for log in data_logs(table) + metadata_logs(table):
            data = log.read_bytes()
            frames = read_log_frames(data)
            assert frames
            for raw in frames:
                seen[raw.block_type] += 1
                assert raw.format_version == 1
                assert raw.footer == {}
                (length,) = struct.unpack_from(">q", data, raw.offset + 6)
                end = raw.offset + 14 + length
                assert struct.unpack_from(">q", data, end - 8)[0] == length + 6
                if raw.block_type == BlockType.HFILE_DATA:
                    with pytest.raises(UnsupportedLogBlockError):
                        decode_block(raw)
                else:
                    decode_block(raw)
    assert set(seen) == {
        BlockType.AVRO_DATA,
        BlockType.PARQUET_DATA,
        BlockType.DELETE,
        BlockType.HFILE_DATA,
    }


def test_fixture_delete_blocks_hold_sql_delete_keys(hudi_tables: dict[str, Path]) -> None:
    """A SQL DELETE writes IntWrapper(0) ordering values; the block header carries the schema."""
    log = next(p for p in data_logs(hudi_tables[V9_TXNS]) if "20260307135832616" in p.name)
    (block,) = read_log_blocks(log.read_bytes())
    assert isinstance(block, DeleteBlock)
    assert block.instant_time == "20260307135832616"
    assert block.keys.schema == delete_keys_schema(pa.int32())
    assert block.keys.to_pylist() == [
        {"record_key": "TXN-002", "partition_path": "region=us", "ordering_value": 0}
    ]
    assert block.schema is not None and "txn_id" in block.schema
    # empty metadata-table delete blocks: no schema header, zero keys, null ordering type
    empty = next(p for p in metadata_logs(hudi_tables[V8_TRIPS]) if "00000000000000000" in p.name)
    (block,) = read_log_blocks(empty.read_bytes())
    assert isinstance(block, DeleteBlock)
    assert block.schema is None and block.keys.num_rows == 0
    assert block.keys.schema == delete_keys_schema()


def test_avro_schema_for_reproduces_hudi_schema(hudi_tables: dict[str, Path]) -> None:
    """Deriving the Avro schema from the parquet block's Arrow schema gives Hudi's own schema."""
    (block,) = read_log_blocks(data_logs(hudi_tables[V6_PARQUET])[0].read_bytes())
    assert isinstance(block, DataBlock) and block.format == "parquet"
    derived = avro_schema_for(
        block.records.schema, "v6_nonpartitioned_record", "hoodie.v6_nonpartitioned"
    )
    assert json.loads(derived) == json.loads(block.schema)
    assert arrow_schema_for(block.schema).equals(block.records.schema.remove_metadata())


# ------------------------------------------------------------------------------------------
# Round trips
# ------------------------------------------------------------------------------------------


def test_fixture_round_trip(hudi_tables: dict[str, Path]) -> None:
    """read(write(read(x))) == read(x); Avro/delete content is re-encoded byte for byte."""
    for table_name in EXPECTED_BLOCKS:
        for log in data_logs(hudi_tables[table_name]):
            data = log.read_bytes()
            blocks = read_log_blocks(data)
            rewritten = write_log_blocks(blocks)
            assert read_log_blocks(rewritten) == blocks
            for old, new in zip(read_log_frames(data), read_log_frames(rewritten), strict=True):
                assert (old.block_type, dict(old.header), dict(old.footer)) == (
                    new.block_type,
                    dict(new.header),
                    dict(new.footer),
                )
                if old.block_type != BlockType.PARQUET_DATA:
                    # Only the header entry order (a Java HashMap's) may differ.
                    assert old.content == new.content
                    assert len(data) == len(rewritten)


def test_command_block_round_trip_and_hudi_layout() -> None:
    """A rollback block laid out as Hudi wrote one (hudi-rs fixture valid_log_rollback)."""

    def entry(key: int, value: str) -> bytes:
        return struct.pack(">ii", key, len(value)) + value.encode()

    header = (
        struct.pack(">i", 3)
        + entry(0, "20250126040936578")
        + entry(3, "0")
        + entry(1, "20250126040826878")
    )
    body = struct.pack(">ii", 1, 0) + header + struct.pack(">q", 0) + struct.pack(">i", 0)
    length = len(body) + 8
    data = MAGIC + struct.pack(">q", length) + body + struct.pack(">q", length + 6)
    assert len(data) == 105 and length == 91  # the size of the Hudi-written file
    (block,) = read_log_blocks(data)
    assert block == CommandBlock("20250126040936578", "20250126040826878")
    rewritten = encode_block(block)
    assert len(rewritten) == len(data)
    assert read_log_blocks(rewritten) == [block]


def test_extra_header_keys_are_preserved() -> None:
    table = pa.table({"k": pa.array(["x"]), "v": pa.array([1], pa.int64())})
    block = DataBlock(
        instant_time="20240101000000000",
        schema=avro_schema_for(table.schema, "t_record", "hoodie.t"),
        records=table,
        extra_header={HeaderKey.IS_PARTIAL: "true", 42: "future key"},
    )
    (back,) = read_log_blocks(encode_block(block))
    assert isinstance(back, DataBlock)
    assert dict(back.extra_header) == {7: "true", 42: "future key"}
    assert back.header[HeaderKey.SCHEMA] == block.schema
    assert back.records.equals(table.cast(arrow_schema_for(block.schema)))
    with pytest.raises(ValueError, match="modelled as fields"):
        DataBlock("1", block.schema, table, extra_header={0: "dup"})


RICH_AVRO_SCHEMA = {
    "type": "record",
    "name": "rich",
    "namespace": "hoodie.t",
    "fields": [
        {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "BLUE"]}},
        {"name": "f", "type": {"type": "fixed", "name": "Four", "size": 4}},
        {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "ts_ms", "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}]},
        {"name": "lts", "type": {"type": "long", "logicalType": "local-timestamp-micros"}},
        {
            "name": "dec",
            "type": {"type": "bytes", "logicalType": "decimal", "precision": 40, "scale": 3},
        },
        {"name": "again", "type": ["null", "hoodie.t.Four"], "default": None},
        {"name": "m", "type": {"type": "map", "values": {"type": "array", "items": "long"}}},
        {"name": "bad_logical", "type": {"type": "string", "logicalType": "date"}},
    ],
}


def test_rich_avro_types_round_trip() -> None:
    schema = json.dumps(RICH_AVRO_SCHEMA)
    arrow = arrow_schema_for(schema)
    assert [str(f.type) for f in arrow] == [
        "string",
        "fixed_size_binary[4]",
        "string",
        "time32[ms]",
        "timestamp[ms, tz=UTC]",
        "timestamp[us]",
        "decimal256(40, 3)",
        "fixed_size_binary[4]",
        "map<string, list<element: int64 not null>>",
        "string",
    ]
    assert [f.nullable for f in arrow] == [False] * 4 + [True, False, False, True, False, False]
    rows = {
        "e": ["BLUE"],
        "f": [b"abcd"],
        "u": ["0c3e6c1c-7b36-4f44-9f7a-2f8a4c0e9a11"],
        "tm": [dt.time(1, 2, 3)],
        "ts_ms": [None],
        "lts": [dt.datetime(2024, 2, 29, 12, 0, 0, 1)],
        "dec": [Decimal("12345678901234567890123456789012345.678")],
        "again": [b"wxyz"],
        "m": [[("a", [1, 2]), ("b", [])]],
        "bad_logical": ["not a date"],
    }
    table = pa.Table.from_pydict(rows, schema=arrow)
    block = DataBlock("20240101000000000", schema, table)
    (back,) = read_log_blocks(write_log_blocks([block]))
    assert back == block


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
            st.one_of(st.none(), st.text(max_size=8)),
            st.floats(allow_nan=False, width=64),
            st.booleans(),
            st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
            st.binary(max_size=6),
            st.integers(-(10**6), 10**6),
            st.integers(-(2**50), 2**50),
            st.one_of(st.none(), st.decimals(-(10**7), 10**7, places=2, allow_nan=False)),
        ),
        max_size=12,
    )
)
def test_avro_data_block_round_trip_property(rows: list[tuple[Any, ...]]) -> None:
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in range(9)]
    table = pa.table(
        {
            "id": pa.array(cols[0], pa.int64()),
            "name": pa.array(cols[1], pa.string()),
            "x": pa.array(cols[2], pa.float64()),
            "flag": pa.array(cols[3], pa.bool_()),
            "n32": pa.array(cols[4], pa.int32()),
            "blob": pa.array(cols[5], pa.binary()),
            "day": pa.array(cols[6], pa.int32()).cast(pa.date32()),
            "at": pa.array(cols[7], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "amount": pa.array(cols[8], pa.decimal128(12, 2)),
        }
    )
    schema = avro_schema_for(table.schema, "t_record", "hoodie.t")
    assert arrow_schema_for(schema).equals(table.schema)
    for fmt in ("avro", "parquet"):
        block = DataBlock("20240101000000000", schema, table, format=fmt)
        assert read_log_blocks(encode_block(block)) == [block]


def test_schema_mapping_errors() -> None:
    with pytest.raises(AvroArrowError, match="non-null branches"):
        arrow_schema_for(
            {"type": "record", "name": "r", "fields": [{"name": "a", "type": ["int", "string"]}]}
        )
    with pytest.raises(AvroArrowError, match="recursive"):
        arrow_schema_for(
            {
                "type": "record",
                "name": "node",
                "fields": [{"name": "next", "type": ["null", "node"]}],
            }
        )
    with pytest.raises(AvroArrowError, match="record schema"):
        arrow_schema_for('"string"')
    with pytest.raises(AvroArrowError, match="nanosecond"):
        avro_schema_for(pa.schema([("t", pa.timestamp("ns"))]), "r", "")
    with pytest.raises(AvroArrowError, match="columns not in the Avro schema"):
        schema = avro_schema_for(pa.schema([("a", pa.int64())]), "r", "ns")
        encode_block(DataBlock("1", schema, pa.table({"a": [1], "b": [2]})))
    with pytest.raises(AvroArrowError, match="not in range"):
        schema = avro_schema_for(pa.schema([("a", pa.int32())]), "r", "ns")
        encode_block(DataBlock("1", schema, pa.table({"a": pa.array([2**40], pa.int64())})))


# ------------------------------------------------------------------------------------------
# Corrupt, truncated and unsupported input
# ------------------------------------------------------------------------------------------


def _small_fixture_logs(hudi_tables: dict[str, Path]) -> list[bytes]:
    logs = data_logs(hudi_tables[V8_TRIPS])
    avro = next(p for p in logs if "20251220210127080" in p.name).read_bytes()
    delete = next(p for p in logs if "20251220210128625" in p.name).read_bytes()
    return [avro, delete]


def test_every_truncation_is_reported(hudi_tables: dict[str, Path]) -> None:
    assert read_log_blocks(b"") == []
    for data in _small_fixture_logs(hudi_tables):
        two = data + data
        for cut in range(1, len(two)):
            if cut == len(data):
                assert len(read_log_blocks(two[:cut])) == 1
                continue
            with pytest.raises(LogFormatError) as info:
                read_log_blocks(two[:cut])
            assert info.value.offset is not None
            assert "at byte" in str(info.value)


def test_every_byte_flip_is_caught_or_harmless(hudi_tables: dict[str, Path]) -> None:
    """Corrupting any single byte yields a LogFormatError or a still-valid read, nothing else."""
    for data in _small_fixture_logs(hudi_tables):
        for i in range(len(data)):
            damaged = bytearray(data)
            damaged[i] ^= 0x5A
            with contextlib.suppress(LogFormatError):
                read_log_blocks(bytes(damaged))


def _frame_bytes(
    block_type: int,
    header: dict[int, str],
    content: bytes,
    *,
    version: int = 1,
    trailer_delta: int = 0,
    junk: bytes = b"",
) -> bytes:
    def meta(entries: dict[int, str]) -> bytes:
        out = struct.pack(">i", len(entries))
        for k, v in entries.items():
            out += struct.pack(">ii", k, len(v.encode())) + v.encode()
        return out

    body = (
        struct.pack(">ii", version, block_type)
        + meta(header)
        + struct.pack(">q", len(content))
        + content
        + meta({})
        + junk
    )
    length = len(body) + 8
    return MAGIC + struct.pack(">q", length) + body + struct.pack(">q", length + 6 + trailer_delta)


INSTANT = {0: "20240101000000000"}


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (b"#HUDX#" + bytes(40), LogFormatError, "expected magic"),
        (MAGIC + struct.pack(">q", 10**6) + bytes(40), LogFormatError, "runs past the end"),
        (MAGIC + struct.pack(">q", 3) + bytes(3), LogFormatError, "below the minimum"),
        (_frame_bytes(0, INSTANT, b"", trailer_delta=1), LogFormatError, "trailer says"),
        (_frame_bytes(9, INSTANT, b""), LogFormatError, "unknown block type 9"),
        (_frame_bytes(0, INSTANT, b"", version=0), UnsupportedLogBlockError, "format version 0"),
        (_frame_bytes(0, INSTANT, b"", version=2), LogFormatError, "format version 2"),
        (_frame_bytes(0, INSTANT, b"", junk=b"xx"), LogFormatError, "do not belong"),
        (_frame_bytes(2, INSTANT, b""), LogFormatError, "CORRUPT_BLOCK"),
        (_frame_bytes(4, INSTANT, b""), UnsupportedLogBlockError, "HFILE_DATA"),
        (_frame_bytes(6, INSTANT, b""), UnsupportedLogBlockError, "CDC_DATA"),
        (_frame_bytes(0, {0: "1", 1: "2", 3: "1"}, b""), UnsupportedLogBlockError, "command"),
        (_frame_bytes(0, {0: "1", 3: "0"}, b""), LogFormatError, "TARGET_INSTANT_TIME"),
        (_frame_bytes(3, {2: '"int"'}, b""), LogFormatError, "no INSTANT_TIME"),
        (
            _frame_bytes(1, INSTANT, struct.pack(">ii", 2, 4) + b"kryo"),
            UnsupportedLogBlockError,
            "Kryo",
        ),
        (
            _frame_bytes(1, INSTANT, struct.pack(">ii", 3, 5) + b"\x00"),
            LogFormatError,
            "serialized length 5",
        ),
        (
            _frame_bytes(3, {0: "1", 2: '{"type":"record","name":"r","fields":[]}'}, b"\0" * 8),
            LogFormatError,
            "unknown Avro data block content version 0",
        ),
        (
            _frame_bytes(
                3,
                {0: "1", 2: '{"type":"record","name":"r","fields":[]}'},
                struct.pack(">ii", 3, 2) + struct.pack(">i", 0),
            ),
            LogFormatError,
            "length of record 1",
        ),
        (_frame_bytes(5, {0: "1", 2: "{}"}, b"PAR1nope"), LogFormatError, "not a parquet file"),
        (_frame_bytes(3, {0: "1", 2: "{oops"}, b""), LogFormatError, "SCHEMA header"),
    ],
)
def test_malformed_blocks(data: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message) as info:
        read_log_blocks(data)
    assert info.value.offset is not None  # type: ignore[attr-defined]


def test_unsupported_is_also_not_implemented() -> None:
    with pytest.raises(NotImplementedError):
        read_log_blocks(_frame_bytes(4, INSTANT, b""))


# ------------------------------------------------------------------------------------------
# hudi-rs reads what this module writes
# ------------------------------------------------------------------------------------------


def _hudi_read(base: Path, as_of: str | None) -> pa.Table:
    hudi = pytest.importorskip("hudi")
    options = hudi.HudiReadOptions()
    if as_of is not None:
        options = options.with_as_of_timestamp(as_of)
    batches = hudi.HudiTableBuilder.from_base_uri(str(base)).build().read(options)
    return pa.Table.from_batches(batches).sort_by("_hoodie_record_key")


def _rewrite_logs(table: Path, change: Any = None) -> None:
    for log in data_logs(table):
        blocks = read_log_blocks(log.read_bytes())
        log.write_bytes(write_log_blocks(change(blocks) if change else blocks))


@pytest.mark.oracle
@pytest.mark.parametrize("table_name", sorted(ORACLE_READS))
def test_hudi_rs_reads_rewritten_logs_identically(
    hudi_tables: dict[str, Path], tmp_path: Path, table_name: str
) -> None:
    as_of = ORACLE_READS[table_name]
    pristine = tmp_path / "pristine"
    shutil.copytree(hudi_tables[table_name], pristine)
    before = _hudi_read(pristine, as_of)

    # Emptied (not deleted: the v8 table lists files through its metadata table) log files.
    without_logs = tmp_path / "without_logs"
    shutil.copytree(pristine, without_logs)
    _rewrite_logs(without_logs, lambda blocks: [])
    assert not _hudi_read(without_logs, as_of).equals(before), "the read must depend on the logs"

    rewritten = tmp_path / "rewritten"
    shutil.copytree(pristine, rewritten)
    _rewrite_logs(rewritten)
    assert _hudi_read(rewritten, as_of).equals(before)

    swapped = tmp_path / "swapped"  # Avro blocks written as parquet blocks and vice versa
    shutil.copytree(pristine, swapped)
    _rewrite_logs(
        swapped,
        lambda blocks: [
            dataclasses.replace(b, format="parquet" if b.format == "avro" else "avro")
            if isinstance(b, DataBlock)
            else b
            for b in blocks
        ],
    )
    assert _hudi_read(swapped, as_of).equals(before)


@pytest.mark.oracle
@pytest.mark.parametrize(
    ("ordering", "deleted"),
    [
        (pa.array([0], pa.int32()), True),  # SQL DELETE: natural order, always wins
        (pa.array([None], pa.int64()), True),  # no ordering value: natural order
        (pa.array([1_800_000_000_000], pa.int64()), True),  # newer than txn_ts 1700000000003
        (pa.array([5], pa.int64()), False),  # older than the stored record: ignored
    ],
)
def test_hudi_rs_honours_written_delete_block(
    hudi_tables: dict[str, Path], tmp_path: Path, ordering: pa.Array, deleted: bool
) -> None:
    table = tmp_path / "t"
    shutil.copytree(hudi_tables[V9_TXNS], table)
    as_of = ORACLE_READS[V9_TXNS]
    log = next(p for p in data_logs(table) if "20260307135830801" in p.name)
    blocks = read_log_blocks(log.read_bytes())
    keys = pa.table(
        {"record_key": ["TXN-003"], "partition_path": ["region=us"], "ordering_value": ordering}
    )
    assert "TXN-003" in _hudi_read(table, as_of).column("txn_id").to_pylist()
    log.write_bytes(
        write_log_blocks([*blocks, DeleteBlock(blocks[0].instant_time, keys, blocks[0].schema)])
    )
    present = "TXN-003" in _hudi_read(table, as_of).column("txn_id").to_pylist()
    assert present is not deleted


@pytest.mark.oracle
@pytest.mark.parametrize("separate_file", [False, True])
def test_hudi_rs_honours_written_rollback_block(
    hudi_tables: dict[str, Path], tmp_path: Path, separate_file: bool
) -> None:
    """A rollback command block hides the target instant's blocks (table version 6 style)."""
    table = tmp_path / "t"
    shutil.copytree(hudi_tables[V6_TRIPS], table)
    (log,) = data_logs(table)
    (update,) = read_log_blocks(log.read_bytes())
    assert isinstance(update, DataBlock)
    key = update.records.column("_hoodie_record_key")[0].as_py()

    def commit_time_of_key() -> str:
        result = _hudi_read(table, None)
        (row,) = [r for r in result.to_pylist() if r["_hoodie_record_key"] == key]
        return str(row["_hoodie_commit_time"])

    assert commit_time_of_key() == update.instant_time
    rollback = CommandBlock("20250331030700000", target_instant_time=update.instant_time)
    if separate_file:
        # the next log version of the same file group, as a rollback appends it
        name = log.name.replace(".log.1_", ".log.2_")
        (log.parent / name).write_bytes(write_log_blocks([rollback]))
    else:
        log.write_bytes(write_log_blocks([update, rollback]))
    assert commit_time_of_key() != update.instant_time
