"""Content of log delete blocks: the deleted keys with their ordering values.

DELETE_BLOCK (1), ``HoodieDeleteBlock``: int32 content version, int32 length, then for version 3
the Avro binary of a ``HoodieDeleteRecordList`` (``deleteRecordList``: array of records
``recordKey``/``partitionPath`` (nullable strings) and ``orderingVal``). Versions 1-2 are Java
(Kryo) serialized objects and are refused with :class:`UnsupportedLogBlockError`.
``orderingVal`` is a union of null and *wrapper records* (``HoodieAvroWrapperUtils
.wrapValueIntoAvro``; schema ``HoodieDeleteRecordList.avsc``, wrappers from
``HoodieMetadata.avsc``)::

    0 null   1 BooleanWrapper  2 IntWrapper   3 LongWrapper  4 FloatWrapper  5 DoubleWrapper
    6 BytesWrapper  7 StringWrapper  8 DateWrapper (epoch days)  9 DecimalWrapper (bytes,
    decimal(30,15))  10 TimeMicrosWrapper  11 TimestampMicrosWrapper  [12 ArrayWrapper, 1.1+]

A SQL ``DELETE`` writes IntWrapper 0 (``DEFAULT_ORDERING_VALUE``): bytes ``04 00`` in every
fixture. (Some hudi-rs sources declare this union as ``null, int, long, float, ...``, which reads
IntWrapper 0 as long 0 but misaligns other branches, hudi-rs PR #663; the ``hudi`` 0.5.0 package
used as the test oracle reads LongWrapper values correctly, see tests/models/format/test_log_format.py.)
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pyarrow as pa

from models.format.log_blocks import DeleteBlock, RawLogBlock, delete_keys_schema
from models.format.log_format import (
    BLOCK_CONTENT_VERSION,
    INT32,
    Cursor,
    LogFormatError,
    UnsupportedLogBlockError,
)

_NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {
        "type": "record",
        "name": name,
        "namespace": _NS,
        "fields": [{"name": "value", "type": value_type}],
    }


# (wrapper record name, Arrow type of ordering_value), in union order after "null". The Avro value
# types are Hudi's (HoodieMetadata.avsc); DateWrapper, TimeMicrosWrapper and TimestampMicrosWrapper
# carry plain int/long there (or time-micros, read here as plain long: same bytes).
_ORDERING_WRAPPERS: tuple[tuple[str, Any, pa.DataType], ...] = (
    ("BooleanWrapper", "boolean", pa.bool_()),
    ("IntWrapper", "int", pa.int32()),
    ("LongWrapper", "long", pa.int64()),
    ("FloatWrapper", "float", pa.float32()),
    ("DoubleWrapper", "double", pa.float64()),
    ("BytesWrapper", "bytes", pa.binary()),
    ("StringWrapper", "string", pa.string()),
    ("DateWrapper", "int", pa.date32()),
    (
        "DecimalWrapper",
        {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
        pa.decimal128(30, 15),
    ),
    ("TimeMicrosWrapper", "long", pa.time64("us")),
    ("TimestampMicrosWrapper", "long", pa.timestamp("us", tz="UTC")),
)
_ORDERING_STORAGE: dict[str, pa.DataType] = {
    "DateWrapper": pa.int32(),
    "TimeMicrosWrapper": pa.int64(),
    "TimestampMicrosWrapper": pa.int64(),
}
_WRAPPER_BY_FULL_NAME = {f"{_NS}.{name}": (name, t) for name, _, t in _ORDERING_WRAPPERS}
_ARRAY_WRAPPER = f"{_NS}.ArrayWrapper"


def _delete_record_list_schema() -> dict[str, Any]:
    """HoodieDeleteRecordList.avsc as of Hudi 1.1, ArrayWrapper included so it can be recognized.

    Writers use the same union; branches 0-11 encode identically in Hudi 0.15, 1.0 and 1.1.
    """
    wrappers = [_wrapper(name, avro_t) for name, avro_t, _ in _ORDERING_WRAPPERS]
    local_date = _wrapper("LocalDateWrapper", "int")
    array_items = ["null", *(f"{_NS}.{name}" for name, _, _ in _ORDERING_WRAPPERS), local_date]
    array_wrapper = {
        "type": "record",
        "name": "ArrayWrapper",
        "namespace": _NS,
        "fields": [
            {
                "name": "wrappedValues",
                "type": ["null", {"type": "array", "items": array_items}],
                "default": None,
            }
        ],
    }
    return {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": _NS,
        "fields": [
            {
                "name": "deleteRecordList",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "HoodieDeleteRecord",
                        "fields": [
                            {"name": "recordKey", "type": ["null", "string"], "default": None},
                            {"name": "partitionPath", "type": ["null", "string"], "default": None},
                            {
                                "name": "orderingVal",
                                "type": ["null", *wrappers, array_wrapper],
                                "default": None,
                            },
                        ],
                    },
                },
            }
        ],
    }


_DELETE_LIST_SCHEMA = fastavro.parse_schema(_delete_record_list_schema())


def decode_delete(raw: RawLogBlock) -> pa.Table:
    """The keys of a delete block (columns of :func:`delete_keys_schema`)."""
    where = f"delete block at byte {raw.offset}"
    records = _delete_records(raw, where)
    ordering_array = _ordering_values(records, where, raw.content_offset)
    return pa.Table.from_arrays(
        [
            pa.array([r["recordKey"] for r in records], type=pa.string()),
            pa.array([r["partitionPath"] for r in records], type=pa.string()),
            ordering_array,
        ],
        schema=delete_keys_schema(ordering_array.type),
    )


def _delete_records(raw: RawLogBlock, where: str) -> list[dict[str, Any]]:
    """The ``deleteRecordList`` of a version 3 delete block, its framing checked."""
    base = raw.content_offset
    cur = Cursor(raw.content, 0, len(raw.content), where)
    version = cur.int32("content version")
    length_pos = cur.pos
    length = cur.int32("serialized length")
    if version in (1, 2):
        raise UnsupportedLogBlockError(
            f"{where}: content version {version} holds Kryo-serialized keys (older Hudi "
            "releases); only version 3 (Avro HoodieDeleteRecordList) is supported",
            base,
        )
    if version != BLOCK_CONTENT_VERSION:
        raise LogFormatError(f"{where}: unknown delete block content version {version}", base)
    if length != cur.end - cur.pos:
        raise LogFormatError(
            f"{where}: serialized length {length} but {cur.end - cur.pos} bytes follow",
            base + length_pos,
        )
    buffer = io.BytesIO(raw.content)
    buffer.seek(cur.pos)
    try:
        decoded = fastavro.schemaless_reader(
            buffer, _DELETE_LIST_SCHEMA, None, return_record_name=True
        )
    except Exception as exc:  # fastavro raises EOFError, ValueError, IndexError, ...
        raise LogFormatError(
            f"{where}: not a valid HoodieDeleteRecordList: {exc!r}", base + cur.pos
        ) from exc
    if buffer.tell() != cur.end:
        raise LogFormatError(
            f"{where}: {cur.end - buffer.tell()} bytes follow the HoodieDeleteRecordList",
            base + buffer.tell(),
        )
    assert isinstance(decoded, dict)
    return decoded["deleteRecordList"]


def _ordering_values(records: list[dict[str, Any]], where: str, base: int) -> pa.Array:
    """The unwrapped ``orderingVal`` of every record, as one Arrow array of the wrapper's type."""
    wrapper_names: set[str] = set()
    values: list[Any] = []
    for record in records:
        ordering = record["orderingVal"]
        if ordering is None:
            values.append(None)
            continue
        full_name, wrapped = ordering
        if full_name == _ARRAY_WRAPPER:
            raise UnsupportedLogBlockError(
                f"{where}: multi-field ordering values (ArrayWrapper, Hudi 1.1 multiple "
                "ordering fields) are not supported",
                base,
            )
        wrapper_names.add(full_name)
        values.append(wrapped["value"])
    if len(wrapper_names) > 1:
        raise UnsupportedLogBlockError(
            f"{where}: ordering values of several types {sorted(wrapper_names)} in one block",
            base,
        )
    if not wrapper_names:
        return pa.nulls(len(values))
    name, arrow_type = _WRAPPER_BY_FULL_NAME[wrapper_names.pop()]
    storage = _ORDERING_STORAGE.get(name, arrow_type)
    ordering_array = pa.array(values, type=storage)
    if storage != arrow_type:
        ordering_array = ordering_array.cast(arrow_type)
    return ordering_array


def _ordering_wrapper(arrow_type: pa.DataType) -> tuple[str, pa.DataType] | None:
    """(wrapper full name, type to cast to) for an ordering_value column type; None for null."""
    t = arrow_type
    if pa.types.is_dictionary(t):
        t = t.value_type
    if pa.types.is_null(t):
        return None
    table: list[tuple[Any, str]] = [
        (pa.types.is_boolean, "BooleanWrapper"),
        (lambda x: pa.types.is_integer(x) and x.bit_width <= 16, "IntWrapper"),
        (lambda x: x == pa.int32(), "IntWrapper"),
        (lambda x: x in (pa.int64(), pa.uint32()), "LongWrapper"),
        (lambda x: pa.types.is_float16(x) or pa.types.is_float32(x), "FloatWrapper"),
        (pa.types.is_float64, "DoubleWrapper"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), "BytesWrapper"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "StringWrapper"),
        (pa.types.is_date, "DateWrapper"),
        (pa.types.is_decimal, "DecimalWrapper"),
        (pa.types.is_time, "TimeMicrosWrapper"),
        (pa.types.is_timestamp, "TimestampMicrosWrapper"),
    ]
    for test, name in table:
        if test(t):
            target = next(at for n, _, at in _ORDERING_WRAPPERS if n == name)
            return f"{_NS}.{name}", _ORDERING_STORAGE.get(name, target)
    raise ValueError(f"ordering_value type {arrow_type} has no Hudi ordering wrapper")


def encode_delete(block: DeleteBlock) -> bytes:
    keys = block.keys
    ordering = keys.column("ordering_value")
    wrapper = _ordering_wrapper(ordering.type)
    if wrapper is None:
        ordering_values: list[Any] = [None] * keys.num_rows
    else:
        full_name, storage = wrapper
        if pa.types.is_timestamp(ordering.type) and ordering.type.unit != "us":
            ordering = ordering.cast(pa.timestamp("us", tz=ordering.type.tz))
        if pa.types.is_time(ordering.type) and ordering.type != pa.time64("us"):
            ordering = ordering.cast(pa.time64("us"))
        if pa.types.is_date(ordering.type) and ordering.type != pa.date32():
            ordering = ordering.cast(pa.date32())
        if pa.types.is_decimal(ordering.type):
            ordering = ordering.cast(pa.decimal128(30, 15))  # tryUpcastDecimal; safe cast
        ordering_values = [
            None if v is None else (full_name, {"value": v})
            for v in ordering.cast(storage).to_pylist()
        ]
    record_keys = keys.column("record_key").cast(pa.string()).to_pylist()
    partitions = keys.column("partition_path").cast(pa.string()).to_pylist()
    delete_list = {
        "deleteRecordList": [
            {"recordKey": k, "partitionPath": p, "orderingVal": o}
            for k, p, o in zip(record_keys, partitions, ordering_values, strict=True)
        ]
    }
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, _DELETE_LIST_SCHEMA, delete_list, strict=True)
    serialized = buffer.getvalue()
    return INT32.pack(BLOCK_CONTENT_VERSION) + INT32.pack(len(serialized)) + serialized
