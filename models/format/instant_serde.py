"""The bytes of timeline instant files: which encoding each table version uses, read and written.

Which bytes sit in which instant file (docs/protocol.md section 2), as confirmed on the fixture tables:

- Table versions 8/9 (timeline layout 2, ``.hoodie/timeline/``): every non-empty instant file is an
  Avro object container (codec null, magic ``Obj\\x01``) with exactly one record. Completed
  ``commit``/``deltacommit`` files and the inflight ``commit``/``deltacommit``/``replacecommit``
  files hold ``HoodieCommitMetadata`` (the inflight ones carry the workload profile: write stats
  with empty ``fileId``/null ``path``); completed ``replacecommit`` files (insert overwrite and
  finished clustering) hold ``HoodieReplaceCommitMetadata``; ``.compaction.requested`` holds a
  ``HoodieCompactionPlan``; ``.replacecommit.requested``/``.clustering.requested`` a
  ``HoodieRequestedReplaceMetadata``; ``.rollback.requested`` a ``HoodieRollbackPlan`` and the
  completed ``rollback`` a ``HoodieRollbackMetadata``; ``indexing`` files hold
  ``HoodieIndexPlan``/``HoodieIndexCommitMetadata`` (read generically here). Requested commit and
  deltacommit files and ``.compaction.inflight`` are empty.
- Table version 6 (layout 1, ``.hoodie/``): commit-like files (completed and inflight) are pretty
  printed JSON of the Java POJO; compaction plans are Avro as in layout 2.

Hudi reads these with ``CommitMetadataSerDeV2`` (Avro, via the generated classes, then converted to
the POJO) or ``CommitMetadataSerDeV1`` (JSON); an empty file reads as an empty instance. hudi-rs
reads completed ``commit``/``deltacommit``/``replacecommit`` files only (``timeline/loader.rs``:
Avro for layout 2, JSON for layout 1) and needs at least one record in the Avro file.

This module holds what every kind of instant content shares: telling the encodings apart, the
one-record Avro container (``TimelineMetadataUtils.serializeAvroMetadata`` /
``deserializeAvroMetadata``), the typed field readers that turn a decoded record into frozen
dataclasses, and :class:`FrozenMap`. Writing is deterministic: maps are written with sorted keys,
and the Avro sync marker (random in both Java and fastavro by default) is derived from the encoded
record, so the same metadata always yields byte-identical files.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import fastavro
import fastavro.validation

from models.format import avro_schemas
from models.table_errors import HoodieException

AVRO_MAGIC = b"Obj\x01"


ContentKind = Literal["empty", "json", "avro"]


class MetadataFormatError(HoodieException, ValueError):
    """Instant file content that is corrupt, truncated, of the wrong kind or otherwise unreadable."""


V = TypeVar("V")


class FrozenMap(Mapping[str, V]):
    """A read-only, hashable, picklable mapping whose keys iterate in sorted order.

    Used for every map inside the metadata dataclasses so that they stay frozen *and* hashable
    (``types.MappingProxyType`` is neither hashable nor picklable, and the simulator and the Spark
    replay ship these objects between processes), and so that iteration order, and with it the
    written bytes, never depends on the order the caller built the map in. Compares equal to any
    mapping with the same items, plain dicts included.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        pairs = dict(items)
        self._items: dict[str, V] = dict(sorted(pairs.items(), key=lambda kv: kv[0]))

    def __getitem__(self, key: str) -> V:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __repr__(self) -> str:
        return f"FrozenMap({self._items!r})"

    def __reduce__(self) -> tuple[type, tuple[dict[str, V]]]:
        return (FrozenMap, (self._items,))


def frozen_map(items: Iterable[tuple[str, Any]]) -> FrozenMap[Any]:
    """Normalise a map given to a dataclass into a :class:`FrozenMap`."""
    return FrozenMap(items)


def set_field(obj: object, name: str, value: object) -> None:
    """Assign inside ``__post_init__`` of a frozen dataclass (normalisation only)."""
    object.__setattr__(obj, name, value)


def content_kind(data: bytes) -> ContentKind:
    """Tell what an instant file holds: nothing, JSON (layout 1) or an Avro container (layout 2).

    Whitespace-only content counts as empty, as in ``CommitMetadataSerDeV1.fromJsonString``.
    """
    if not data.strip():
        return "empty"
    if data.startswith(AVRO_MAGIC):
        return "avro"
    if data.lstrip()[:1] == b"{":
        return "json"
    raise MetadataFormatError(
        f"instant content is neither an Avro container (magic {AVRO_MAGIC!r}) nor a JSON object "
        f"(starts with {bytes(data[:8])!r})"
    )


@dataclass(frozen=True)
class AvroInstantRecord:
    """The single record of an Avro instant file, with the short name of its writer schema."""

    schema_name: str
    record: Mapping[str, Any]


def read_instant_record(data: bytes) -> AvroInstantRecord:
    """Decode an Avro instant file generically (any schema, e.g. ``HoodieIndexPlan``).

    Hudi writes exactly one record per instant file (``serializeAvroMetadata``); anything else is
    reported as corrupt rather than silently using the first record.
    """
    if not data.startswith(AVRO_MAGIC):
        raise MetadataFormatError(
            f"not an Avro object container file (expected magic {AVRO_MAGIC!r}, got "
            f"{bytes(data[:4])!r})"
        )
    try:
        reader = fastavro.reader(io.BytesIO(data))
        writer_schema = reader.writer_schema
        records = list(reader)
    except Exception as err:  # fastavro raises many types (EOFError, ValueError, KeyError ...)
        raise MetadataFormatError(
            f"corrupt Avro instant file: {type(err).__name__}: {err}"
        ) from err
    name = writer_schema.get("name", "") if isinstance(writer_schema, dict) else ""
    short_name = str(name).rsplit(".", 1)[-1]
    if len(records) != 1 or not isinstance(records[0], dict):
        raise MetadataFormatError(
            f"Avro instant file with schema {short_name or '?'} holds {len(records)} records; "
            "Hudi writes exactly one"
        )
    return AvroInstantRecord(short_name, records[0])


def expect_record(kind: str, got: AvroInstantRecord, *names: str) -> Mapping[str, Any]:
    if got.schema_name not in names:
        raise MetadataFormatError(
            f"expected {kind} ({' or '.join(names)}) but the file holds {got.schema_name or '?'}"
        )
    return got.record


def encode_avro(schema: avro_schemas.Schema, record: Mapping[str, Any]) -> bytes:
    """One-record Avro container, codec null, with a sync marker derived from the content.

    Java's ``DataFileWriter`` and fastavro both draw a random 16-byte sync marker; readers only
    compare it against itself, so deriving it from a hash of the encoded record is as valid and
    makes the output a pure function of the input.
    """
    parsed = fastavro.parse_schema(schema)
    body = io.BytesIO()
    try:
        # strict encoding refuses what validation would; validating only on failure keeps the
        # precise error message without paying for it on every commit (~4x faster)
        fastavro.schemaless_writer(body, parsed, dict(record), strict=True)
    except (ValueError, TypeError, KeyError, AttributeError) as encode_error:
        try:
            fastavro.validation.validate(record, parsed, raise_errors=True)
        except fastavro.validation.ValidationError as err:
            raise MetadataFormatError(
                f"cannot encode {schema['name']}: value does not match the schema ({err})"
            ) from err
        raise MetadataFormatError(
            f"cannot encode {schema['name']}: {encode_error}"
        ) from encode_error
    marker = hashlib.blake2b(
        schema["name"].encode() + b"\0" + body.getvalue(), digest_size=16
    ).digest()
    out = io.BytesIO()
    fastavro.writer(out, parsed, [dict(record)], codec="null", sync_marker=marker)
    return out.getvalue()


def read_str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MetadataFormatError(f"{what} must be a string, got {type(value).__name__}")


def read_int(value: Any, what: str) -> int:
    """A counter: absent/null reads as 0, like Jackson filling Hudi's primitive ``long`` fields."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise MetadataFormatError(f"{what} must be an integer, got {type(value).__name__}")
    return value


def read_opt_int(value: Any, what: str) -> int | None:
    return None if value is None else read_int(value, what)


def read_str_list(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MetadataFormatError(f"{what} must be a list of strings")
    return tuple(value)


def read_map(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MetadataFormatError(f"{what} must be a map, got {type(value).__name__}")
    return value


def read_str_map(value: Any, what: str) -> Mapping[str, str]:
    items = read_map(value, what)
    for key, val in items.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise MetadataFormatError(f"{what} must map strings to strings")
    return frozen_map(items.items())


def read_num_map(value: Any, what: str, kind: type) -> Mapping[str, Any]:
    items = read_map(value, what)
    for key, val in items.items():
        if not isinstance(key, str) or isinstance(val, bool) or not isinstance(val, int | float):
            raise MetadataFormatError(f"{what} must map strings to numbers")
    return frozen_map((k, kind(v)) for k, v in items.items())


def sorted_map(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Avro maps are written in iteration order; sorting keeps the bytes deterministic."""
    return dict(sorted(mapping.items()))
