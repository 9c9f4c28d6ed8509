"""Arrow schemas mapped to Avro record schemas: what writers put in a data block's header.

Follows the naming conventions of Spark's ``SchemaConverters.toAvroType``, which Hudi uses when it
writes from Spark: nullable -> ``["null", T]`` with default ``null``, nested records named after
their field in the parent record's namespace, decimals as ``fixed`` named ``fixed``; Hudi's meta
columns get an empty ``doc`` (``HoodieAvroUtils.addMetadataFields``). That is what the fixture
tables written by Hudi 0.15/1.x contain.
"""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

import pyarrow as pa

from models.format.avro_to_arrow import AvroArrowError

# Hudi's meta columns; HoodieAvroUtils.addMetadataFields gives them an empty "doc".
_META_FIELDS = frozenset(
    (
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "_hoodie_operation",
    )
)


def _min_bytes_for_precision(precision: int) -> int:
    """Smallest fixed size holding any unscaled value of ``precision`` digits (Spark's rule)."""
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _avro_type(arrow_type: pa.DataType, field_name: str, namespace: str) -> Any:
    """Avro type (JSON) for a non-nullable value of ``arrow_type``.

    ``namespace`` is the full name of the enclosing record; nested named types are placed in it
    (records named after their field, decimal fixed types named ``fixed`` in
    ``<record>.<field>``), as Spark's ``SchemaConverters.toAvroType`` does for Hudi.
    """
    t = arrow_type
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, field_name, namespace)
    scalar = _avro_scalar(t)
    if scalar is not None:
        return scalar
    logical = _avro_logical(t, field_name, namespace)
    if logical is not None:
        return logical
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        return {"type": "array", "items": _avro_field_type(item, field_name, namespace)}
    if pa.types.is_map(t):
        if not pa.types.is_string(t.key_type):
            raise AvroArrowError(f"column {field_name!r}: Avro maps need string keys, got {t}")
        return {"type": "map", "values": _avro_field_type(t.item_field, field_name, namespace)}
    if pa.types.is_struct(t):
        full = f"{namespace}.{field_name}" if namespace else field_name
        return {
            "type": "record",
            "name": field_name,
            "namespace": namespace,
            "fields": [_avro_field(f, full) for f in t],
        }
    raise AvroArrowError(f"column {field_name!r}: Arrow type {t} has no Avro mapping")


def _avro_scalar(t: pa.DataType) -> str | None:
    """The Avro primitive type of a plain Arrow scalar type, else None."""
    if pa.types.is_null(t):
        return "null"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "string"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return "bytes"
    return None


def _avro_logical(t: pa.DataType, field_name: str, namespace: str) -> Any:
    """The Avro type of a fixed, decimal, date, timestamp or time type, else None."""
    if pa.types.is_fixed_size_binary(t):
        return {"type": "fixed", "name": field_name, "namespace": namespace, "size": t.byte_width}
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{namespace}.{field_name}",
            "size": _min_bytes_for_precision(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_timestamp(t):
        if t.unit == "ns":
            raise AvroArrowError(
                f"column {field_name!r}: nanosecond timestamps have no Avro type Hudi reads; "
                "cast to microseconds first"
            )
        unit = "millis" if t.unit in ("s", "ms") else "micros"
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        if t.unit == "ns":
            raise AvroArrowError(f"column {field_name!r}: nanosecond times have no Avro type")
        return {"type": "long", "logicalType": "time-micros"}
    return None


def _avro_field_type(field: pa.Field, name_for_nested: str, namespace: str) -> Any:
    avro_t = _avro_type(field.type, name_for_nested, namespace)
    if field.nullable and avro_t != "null":
        return ["null", avro_t]
    return avro_t


def _avro_field(field: pa.Field, namespace: str) -> dict[str, Any]:
    avro_t = _avro_field_type(field, field.name, namespace)
    out: dict[str, Any] = {"name": field.name, "type": avro_t}
    if field.name in _META_FIELDS:
        out["doc"] = ""
    if isinstance(avro_t, list) or avro_t == "null":
        out["default"] = None
    return out


def avro_schema_for(arrow_schema: pa.Schema, name: str, namespace: str) -> str:
    """An Avro record schema (JSON string) for tables of ``arrow_schema``.

    Hudi names a table's record ``<table>_record`` in namespace ``hoodie.<table>``; pass those to
    get a schema like the ones Hudi writes. Nullable fields become ``["null", T]`` with default
    ``null``. The result maps back to ``arrow_schema`` through :func:`arrow_schema_for`, except
    that narrower types widen (int8/16 -> int32, date64 -> date32, second timestamps -> ms, ...).

    Memoized: every log block a writer appends carries its schema, and a run writes thousands of
    blocks with one schema (the result depends only on names, types and nullability, which Arrow
    schema equality compares).
    """
    return _avro_schema_for(arrow_schema, name, namespace)


@lru_cache(maxsize=256)
def _avro_schema_for(arrow_schema: pa.Schema, name: str, namespace: str) -> str:
    full = f"{namespace}.{name}" if namespace else name
    schema = {
        "type": "record",
        "name": name,
        "namespace": namespace,
        "fields": [_avro_field(f, full) for f in arrow_schema],
    }
    if not namespace:
        del schema["namespace"]
    return json.dumps(schema, separators=(",", ":"))
