"""Avro schemas mapped to Arrow types: what readers of Avro data blocks get.

Hudi stores a data block's writer schema as an Avro schema string in the block header (header key
``SCHEMA``); the rest of the testbed works with ``pyarrow`` tables. This module walks an Avro
schema and yields, per node, the logical Arrow type, the integer storage type fastavro decodes
into, and the schema handed to fastavro (see :mod:`models.format.avro_arrow` for why).

Type mapping (Avro -> Arrow): ``null`` -> null, ``boolean`` -> bool, ``int`` -> int32, ``long`` ->
int64, ``float`` -> float32, ``double`` -> float64, ``bytes`` -> binary, ``string``/``enum`` ->
string, ``fixed`` -> fixed_size_binary, ``record`` -> struct, ``array`` -> list (item field
``element``, as parquet-avro names it), ``map`` -> map<string, V>, ``["null", T]`` -> nullable T,
``date`` -> date32, ``time-millis`` -> time32[ms], ``time-micros`` -> time64[us],
``timestamp-millis|micros|nanos`` -> timestamp[ms|us|ns, tz=UTC],
``local-timestamp-millis|micros|nanos`` -> timestamp without zone, ``decimal`` -> decimal128 (or
decimal256 above precision 38), ``uuid`` -> string. Unions of two or more non-null branches have no
faithful Arrow counterpart used by Hudi and are rejected.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from models.table_errors import HoodieException

# A parsed Avro schema node in its JSON form.
AvroNode = str | Mapping[str, Any] | Sequence[Any]

_PRIMITIVES: dict[str, pa.DataType] = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}

# Logical types over int/long whose values fastavro would turn into Python objects. They are
# stripped from the schema given to fastavro; the value is (base type, logical Arrow type).
_INT_LOGICAL: dict[str, tuple[str, pa.DataType]] = {
    "date": ("int", pa.date32()),
    "time-millis": ("int", pa.time32("ms")),
    "time-micros": ("long", pa.time64("us")),
    "timestamp-millis": ("long", pa.timestamp("ms", tz="UTC")),
    "timestamp-micros": ("long", pa.timestamp("us", tz="UTC")),
    "timestamp-nanos": ("long", pa.timestamp("ns", tz="UTC")),
    "local-timestamp-millis": ("long", pa.timestamp("ms")),
    "local-timestamp-micros": ("long", pa.timestamp("us")),
    "local-timestamp-nanos": ("long", pa.timestamp("ns")),
}

_NAMED = ("record", "enum", "fixed")


_ITEM_FIELD = "element"


class AvroArrowError(HoodieException, ValueError):
    """An Avro schema, Arrow schema or value that has no faithful mapping to the other side."""


@dataclass(frozen=True)
class Mapped:
    """One Avro node mapped to Arrow: the logical type, its storage type, and fastavro's schema."""

    logical: pa.DataType
    storage: pa.DataType
    nullable: bool
    plain: Any  # the node as given to fastavro (non-decimal logical types removed)


class AvroToArrow:
    """Walks an Avro schema once, resolving named-type references the way Avro's parser does."""

    def __init__(self) -> None:
        self._named: dict[str, Mapped] = {}
        self._defining: set[str] = set()

    @staticmethod
    def _full_name(node: Mapping[str, Any], namespace: str) -> tuple[str, str]:
        """Return (full name, namespace for children) of a named type definition."""
        name = str(node["name"])
        if "." in name:
            return name, name.rsplit(".", 1)[0]
        own = node.get("namespace", namespace) or ""
        return (f"{own}.{name}" if own else name), own

    def map(self, node: AvroNode, namespace: str) -> Mapped:
        if isinstance(node, str):
            return self._map_name(node, namespace)
        if isinstance(node, Sequence):
            return self._map_union(node, namespace)
        if not isinstance(node, Mapping) or "type" not in node:
            raise AvroArrowError(f"not an Avro schema node: {node!r}")
        kind = node["type"]
        if not isinstance(kind, str):
            # {"type": {...}} or {"type": [...]}: a wrapper around another node.
            return self.map(kind, namespace)
        logical = node.get("logicalType")
        if kind in _PRIMITIVES:
            return self._map_primitive(kind, logical, node)
        if kind == "array":
            item = self.map(node["items"], namespace)
            field_l = pa.field(_ITEM_FIELD, item.logical, item.nullable)
            field_s = pa.field(_ITEM_FIELD, item.storage, item.nullable)
            plain = {"type": "array", "items": item.plain}
            return Mapped(pa.list_(field_l), pa.list_(field_s), False, plain)
        if kind == "map":
            value = self.map(node["values"], namespace)
            logical_t = pa.map_(pa.string(), pa.field("value", value.logical, value.nullable))
            storage_t = pa.map_(pa.string(), pa.field("value", value.storage, value.nullable))
            return Mapped(logical_t, storage_t, False, {"type": "map", "values": value.plain})
        if kind in _NAMED:
            return self._map_named(kind, node, namespace)
        return self._map_name(kind, namespace)

    def _map_primitive(self, kind: str, logical: Any, node: Mapping[str, Any]) -> Mapped:
        if logical in _INT_LOGICAL and _INT_LOGICAL[logical][0] == kind:
            return Mapped(_INT_LOGICAL[logical][1], _PRIMITIVES[kind], False, kind)
        if logical == "decimal" and kind == "bytes":
            decimal_t = _decimal_type(node)
            if decimal_t is not None:
                return Mapped(decimal_t, decimal_t, False, dict(node))
        # Unknown or misplaced logical types fall back to the underlying type (Avro spec 1.11).
        return Mapped(_PRIMITIVES[kind], _PRIMITIVES[kind], False, kind)

    def _map_named(self, kind: str, node: Mapping[str, Any], namespace: str) -> Mapped:
        full, child_ns = self._full_name(node, namespace)
        plain: dict[str, Any] = {"type": kind, "name": full}
        if kind == "fixed":
            size = int(node["size"])
            plain["size"] = size
            decimal_t = _decimal_type(node) if node.get("logicalType") == "decimal" else None
            if decimal_t is not None:
                plain.update(
                    logicalType="decimal", precision=node["precision"], scale=node.get("scale", 0)
                )
                mapped = Mapped(decimal_t, decimal_t, False, plain)
            else:
                mapped = Mapped(pa.binary(size), pa.binary(size), False, plain)
        elif kind == "enum":
            plain["symbols"] = list(node["symbols"])
            mapped = Mapped(pa.string(), pa.string(), False, plain)
        else:
            self._defining.add(full)
            logical_fields: list[pa.Field] = []
            storage_fields: list[pa.Field] = []
            plain_fields: list[dict[str, Any]] = []
            for f in node.get("fields", []):
                m = self.map(f["type"], child_ns)
                logical_fields.append(pa.field(f["name"], m.logical, m.nullable))
                storage_fields.append(pa.field(f["name"], m.storage, m.nullable))
                plain_field = {"name": f["name"], "type": m.plain}
                if "default" in f:
                    plain_field["default"] = f["default"]
                plain_fields.append(plain_field)
            self._defining.discard(full)
            plain["fields"] = plain_fields
            mapped = Mapped(pa.struct(logical_fields), pa.struct(storage_fields), False, plain)
        self._named[full] = mapped
        return mapped

    def _map_name(self, name: str, namespace: str) -> Mapped:
        if name in _PRIMITIVES:
            return Mapped(_PRIMITIVES[name], _PRIMITIVES[name], False, name)
        candidates = [name] if "." in name else [f"{namespace}.{name}" if namespace else name, name]
        for full in candidates:
            if full in self._defining:
                raise AvroArrowError(f"recursive Avro type {full!r} cannot be mapped to Arrow")
            if full in self._named:
                # A reference: fastavro resolves it by full name from the earlier definition.
                m = self._named[full]
                return Mapped(m.logical, m.storage, False, full)
        raise AvroArrowError(f"unknown Avro type {name!r}")

    def _map_union(self, branches: Sequence[Any], namespace: str) -> Mapped:
        mapped = [self.map(b, namespace) for b in branches]
        has_null = any(pa.types.is_null(m.logical) for m in mapped)
        values = [m for m in mapped if not pa.types.is_null(m.logical)]
        plain = [m.plain for m in mapped]
        if not values:
            return Mapped(pa.null(), pa.null(), True, plain)
        if len(values) > 1:
            raise AvroArrowError(
                f"Avro union with {len(values)} non-null branches has no Arrow mapping: {branches!r}"
            )
        return Mapped(values[0].logical, values[0].storage, has_null, plain)


def _decimal_type(node: Mapping[str, Any]) -> pa.DataType | None:
    """Arrow decimal for an Avro decimal node, or None when the annotation is invalid."""
    try:
        precision = int(node["precision"])
        scale = int(node.get("scale", 0))
    except (KeyError, TypeError, ValueError):
        return None
    if precision <= 0 or scale < 0 or scale > precision:
        return None
    if precision <= 38:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


def load_schema(avro_schema: str | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(avro_schema, str):
        try:
            node = json.loads(avro_schema)
        except json.JSONDecodeError as exc:
            raise AvroArrowError(f"Avro schema is not valid JSON: {exc}") from exc
    else:
        node = avro_schema
    if not isinstance(node, Mapping) or node.get("type") != "record":
        raise AvroArrowError("a data block's Avro schema must be a record schema")
    return node
