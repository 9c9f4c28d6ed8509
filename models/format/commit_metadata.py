"""Content of timeline instant files: commit metadata, compaction plans, rollbacks, clustering.

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

Everything here is pure: bytes in, frozen dataclasses out, and back. Writing is deterministic: maps
are written with sorted keys, write stats in sorted order, and the Avro sync marker (random in both
Java and fastavro by default) is derived from the encoded record, so the same metadata always
yields byte-identical files.
"""

from __future__ import annotations

import hashlib
import io
import json
import posixpath
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import fastavro
import fastavro.validation

from models.format import avro_schemas

AVRO_MAGIC = b"Obj\x01"

# HoodieWriteStat.NULL_COMMIT: Hudi writes the *string* "null" as prevCommit of a new file group.
NULL_COMMIT = "null"

# WriteOperationType.UNKNOWN: what Hudi's POJO reports when operationType is absent.
UNKNOWN_OPERATION = "UNKNOWN"

# CompactionUtils.LATEST_COMPACTION_METADATA_VERSION: version 2 plans name files by file name only
# (relative to the partition); version 1 plans stored full paths.
COMPACTION_PLAN_VERSION = 2

ContentKind = Literal["empty", "json", "avro"]


class MetadataFormatError(ValueError):
    """Instant file content that is corrupt, truncated, of the wrong kind or otherwise unreadable."""


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


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


def _frozen_map(items: Iterable[tuple[str, Any]]) -> FrozenMap[Any]:
    """Normalise a map given to a dataclass into a :class:`FrozenMap`."""
    return FrozenMap(items)


def _set(obj: object, name: str, value: object) -> None:
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


def _expect(kind: str, got: AvroInstantRecord, *names: str) -> Mapping[str, Any]:
    if got.schema_name not in names:
        raise MetadataFormatError(
            f"expected {kind} ({' or '.join(names)}) but the file holds {got.schema_name or '?'}"
        )
    return got.record


def _encode_avro(schema: avro_schemas.Schema, record: Mapping[str, Any]) -> bytes:
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


def _str(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise MetadataFormatError(f"{what} must be a string, got {type(value).__name__}")


def _int(value: Any, what: str) -> int:
    """A counter: absent/null reads as 0, like Jackson filling Hudi's primitive ``long`` fields."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int):
        raise MetadataFormatError(f"{what} must be an integer, got {type(value).__name__}")
    return value


def _opt_int(value: Any, what: str) -> int | None:
    return None if value is None else _int(value, what)


def _str_list(value: Any, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise MetadataFormatError(f"{what} must be a list of strings")
    return tuple(value)


def _dict(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MetadataFormatError(f"{what} must be a map, got {type(value).__name__}")
    return value


def _str_map(value: Any, what: str) -> Mapping[str, str]:
    items = _dict(value, what)
    for key, val in items.items():
        if not isinstance(key, str) or not isinstance(val, str):
            raise MetadataFormatError(f"{what} must map strings to strings")
    return _frozen_map(items.items())


def _num_map(value: Any, what: str, kind: type) -> Mapping[str, Any]:
    items = _dict(value, what)
    for key, val in items.items():
        if not isinstance(key, str) or isinstance(val, bool) or not isinstance(val, int | float):
            raise MetadataFormatError(f"{what} must map strings to numbers")
    return _frozen_map((k, kind(v)) for k, v in items.items())


def _sorted_dict(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Avro maps are written in iteration order; sorting keeps the bytes deterministic."""
    return dict(sorted(mapping.items()))


# --------------------------------------------------------------------------------------------
# Commit metadata
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteStat:
    """One file written by a commit (Hudi's ``HoodieWriteStat`` / ``HoodieDeltaWriteStat``).

    ``path`` is relative to the table base path (``<partition>/<file>``); ``base_file`` and
    ``log_files`` are bare file names and are set by MOR appends only. Hudi 1.x writes
    ``baseFile = ""`` for a log append (the slice is decided by completion time, not by the writer),
    0.x wrote the base file's name. ``prev_commit`` is None for a new file group (stored as Hudi's
    ``"null"`` string). ``path`` is ``""`` where Hudi stores null (inflight workload profiles).
    The counters Hudi always fills default to 0; the optional Avro fields not modelled here
    (``cdcStats``, ``runtimeStats``, event times, ``tempPath``) are written as null.
    """

    file_id: str
    path: str
    partition_path: str
    prev_commit: str | None = None
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    num_inserts: int = 0
    total_write_bytes: int = 0
    file_size_in_bytes: int = 0
    base_file: str | None = None
    log_files: tuple[str, ...] = ()
    total_write_errors: int = 0
    log_version: int | None = None
    log_offset: int | None = None
    prev_base_file: str | None = None
    total_log_records: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    total_updated_records_compacted: int = 0
    total_log_files_compacted: int = 0
    total_log_size_compacted: int = 0

    def __post_init__(self) -> None:
        _set(self, "log_files", tuple(self.log_files))
        if self.prev_commit == NULL_COMMIT:
            _set(self, "prev_commit", None)

    @property
    def file_name(self) -> str:
        """The written file's name (last component of ``path``)."""
        return posixpath.basename(self.path)

    @property
    def is_log_write(self) -> bool:
        """True for a MOR append (the stat lists log files), False for a base-file write."""
        return bool(self.log_files)

    def sort_key(self) -> tuple[str, str, str]:
        return (self.partition_path, self.file_id, self.path)


def _write_stat_from_record(rec: Mapping[str, Any], partition: str) -> WriteStat:
    """Map one Avro or JSON write stat (same field names in both encodings) to a WriteStat."""
    if not isinstance(rec, dict):
        raise MetadataFormatError(f"write stat in partition {partition!r} is not a record")
    where = f"write stat in partition {partition!r}"
    partition_path = _str(rec.get("partitionPath"), f"{where}: partitionPath")
    return WriteStat(
        file_id=_str(rec.get("fileId"), f"{where}: fileId") or "",
        path=_str(rec.get("path"), f"{where}: path") or "",
        partition_path=partition if partition_path is None else partition_path,
        prev_commit=_str(rec.get("prevCommit"), f"{where}: prevCommit"),
        num_writes=_int(rec.get("numWrites"), f"{where}: numWrites"),
        num_deletes=_int(rec.get("numDeletes"), f"{where}: numDeletes"),
        num_update_writes=_int(rec.get("numUpdateWrites"), f"{where}: numUpdateWrites"),
        num_inserts=_int(rec.get("numInserts"), f"{where}: numInserts"),
        total_write_bytes=_int(rec.get("totalWriteBytes"), f"{where}: totalWriteBytes"),
        file_size_in_bytes=_int(rec.get("fileSizeInBytes"), f"{where}: fileSizeInBytes"),
        base_file=_str(rec.get("baseFile"), f"{where}: baseFile"),
        log_files=_str_list(rec.get("logFiles"), f"{where}: logFiles"),
        total_write_errors=_int(rec.get("totalWriteErrors"), f"{where}: totalWriteErrors"),
        log_version=_opt_int(rec.get("logVersion"), f"{where}: logVersion"),
        log_offset=_opt_int(rec.get("logOffset"), f"{where}: logOffset"),
        prev_base_file=_str(rec.get("prevBaseFile"), f"{where}: prevBaseFile"),
        total_log_records=_int(rec.get("totalLogRecords"), f"{where}: totalLogRecords"),
        total_log_blocks=_int(rec.get("totalLogBlocks"), f"{where}: totalLogBlocks"),
        total_corrupt_log_block=_int(
            rec.get("totalCorruptLogBlock"), f"{where}: totalCorruptLogBlock"
        ),
        total_rollback_blocks=_int(rec.get("totalRollbackBlocks"), f"{where}: totalRollbackBlocks"),
        total_updated_records_compacted=_int(
            rec.get("totalUpdatedRecordsCompacted"), f"{where}: totalUpdatedRecordsCompacted"
        ),
        total_log_files_compacted=_int(
            rec.get("totalLogFilesCompacted"), f"{where}: totalLogFilesCompacted"
        ),
        total_log_size_compacted=_int(
            rec.get("totalLogSizeCompacted"), f"{where}: totalLogSizeCompacted"
        ),
    )


def _write_stat_to_record(stat: WriteStat) -> dict[str, Any]:
    """Field for field what Hudi 1.x writes (see the fixtures): counters as numbers, rest null."""
    return {
        "fileId": stat.file_id,
        "path": stat.path or None,
        "prevCommit": NULL_COMMIT if stat.prev_commit is None else stat.prev_commit,
        "numWrites": stat.num_writes,
        "numDeletes": stat.num_deletes,
        "numUpdateWrites": stat.num_update_writes,
        "totalWriteBytes": stat.total_write_bytes,
        "totalWriteErrors": stat.total_write_errors,
        "partitionPath": stat.partition_path,
        "totalLogRecords": stat.total_log_records,
        "totalLogFiles": None,
        "totalUpdatedRecordsCompacted": stat.total_updated_records_compacted,
        "numInserts": stat.num_inserts,
        "totalLogBlocks": stat.total_log_blocks,
        "totalCorruptLogBlock": stat.total_corrupt_log_block,
        "totalRollbackBlocks": stat.total_rollback_blocks,
        "fileSizeInBytes": stat.file_size_in_bytes,
        "logVersion": stat.log_version,
        "logOffset": stat.log_offset,
        "baseFile": stat.base_file,
        "logFiles": list(stat.log_files) if stat.log_files else None,
        "cdcStats": None,
        "prevBaseFile": stat.prev_base_file,
        "minEventTime": None,
        "maxEventTime": None,
        "runtimeStats": None,
        "totalLogFilesCompacted": stat.total_log_files_compacted,
        "totalLogReadTimeMs": 0,
        "totalLogSizeCompacted": stat.total_log_size_compacted,
        "tempPath": None,
        "numUpdates": 0,
    }


@dataclass(frozen=True)
class CommitMetadata:
    """Content of a commit, deltacommit or replacecommit instant (``HoodieCommitMetadata``).

    Normalised on construction so that equal metadata compares equal and writes identical bytes:
    partitions sorted, each partition's write stats sorted by (file id, path), replaced file ids
    sorted. ``operation_type`` is Hudi's ``WriteOperationType`` name (``UPSERT``, ``INSERT``,
    ``COMPACT``, ``CLUSTER``, ``INSERT_OVERWRITE`` ...). ``CommitMetadata()`` is the empty
    metadata an empty instant file stands for.
    """

    partition_to_write_stats: Mapping[str, tuple[WriteStat, ...]] = field(default_factory=FrozenMap)
    compacted: bool = False
    operation_type: str = UNKNOWN_OPERATION
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)
    partition_to_replace_file_ids: Mapping[str, tuple[str, ...]] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _set(
            self,
            "partition_to_write_stats",
            _frozen_map(
                (p, tuple(sorted(stats, key=WriteStat.sort_key)))
                for p, stats in self.partition_to_write_stats.items()
            ),
        )
        _set(self, "extra_metadata", _frozen_map(self.extra_metadata.items()))
        _set(
            self,
            "partition_to_replace_file_ids",
            _frozen_map(
                (p, tuple(sorted(ids))) for p, ids in self.partition_to_replace_file_ids.items()
            ),
        )

    @property
    def schema(self) -> str | None:
        """The Avro schema of the data columns (``extraMetadata["schema"]``), if recorded.

        hudi-rs takes the table schema from this key of the latest completed commit and only
        falls back to reading a data file when it is missing.
        """
        return self.extra_metadata.get("schema") or None

    @property
    def is_empty(self) -> bool:
        return not self.partition_to_write_stats and not self.partition_to_replace_file_ids

    def write_stats(self) -> tuple[WriteStat, ...]:
        """Every write stat, ordered by (partition, file id, path)."""
        return tuple(s for stats in self.partition_to_write_stats.values() for s in stats)

    def __iter__(self) -> Iterator[WriteStat]:
        return iter(self.write_stats())

    def file_groups(self) -> tuple[tuple[str, str], ...]:
        """Sorted distinct (partition, file id) pairs this commit wrote to.

        A file group is identified by partition *and* file id; stats with an empty file id (an
        inflight workload profile's placeholder for new inserts) are left out.
        """
        return tuple(
            sorted(
                {
                    (p, s.file_id)
                    for p, stats in self.partition_to_write_stats.items()
                    for s in stats
                    if s.file_id
                }
            )
        )

    def file_ids(self) -> tuple[str, ...]:
        """Sorted distinct file ids this commit wrote to (see :meth:`file_groups`)."""
        return tuple(sorted({fid for _, fid in self.file_groups()}))

    def replaced_file_groups(self) -> tuple[tuple[str, str], ...]:
        """Sorted (partition, file id) pairs this replacecommit retired."""
        return tuple(
            sorted(
                {(p, fid) for p, ids in self.partition_to_replace_file_ids.items() for fid in ids}
            )
        )

    def replaced_file_ids(self) -> tuple[str, ...]:
        """Sorted distinct file ids retired by this replacecommit (empty for other actions)."""
        return tuple(sorted({fid for _, fid in self.replaced_file_groups()}))

    def total_records_written(self) -> int:
        return sum(s.num_writes for s in self.write_stats())


def _commit_from_record(rec: Mapping[str, Any]) -> CommitMetadata:
    stats_by_partition = _dict(rec.get("partitionToWriteStats"), "partitionToWriteStats")
    partition_to_write_stats: dict[str, tuple[WriteStat, ...]] = {}
    for partition, stats in stats_by_partition.items():
        if not isinstance(partition, str) or not isinstance(stats, list):
            raise MetadataFormatError("partitionToWriteStats must map partitions to lists")
        partition_to_write_stats[partition] = tuple(
            _write_stat_from_record(s, partition) for s in stats
        )
    replaced = _dict(rec.get("partitionToReplaceFileIds"), "partitionToReplaceFileIds")
    compacted = rec.get("compacted")
    if compacted is not None and not isinstance(compacted, bool):
        raise MetadataFormatError("compacted must be a boolean")
    return CommitMetadata(
        partition_to_write_stats=partition_to_write_stats,
        compacted=bool(compacted),
        operation_type=_str(rec.get("operationType"), "operationType") or UNKNOWN_OPERATION,
        extra_metadata=_str_map(rec.get("extraMetadata"), "extraMetadata"),
        partition_to_replace_file_ids={
            p: _str_list(ids, f"partitionToReplaceFileIds[{p!r}]") for p, ids in replaced.items()
        },
    )


def read_commit_metadata(data: bytes) -> CommitMetadata:
    """Read a commit/deltacommit/replacecommit file of any table version.

    Detects the encoding from the bytes: empty -> ``CommitMetadata()``; ``{`` -> layout 1 JSON
    (v6, read only); Avro magic -> layout 2 (``HoodieCommitMetadata`` or
    ``HoodieReplaceCommitMetadata``). Unknown JSON keys (Jackson also serialises derived getters
    such as ``fileIdAndRelativePaths``) and Avro fields not modelled are ignored.
    """
    kind = content_kind(data)
    if kind == "empty":
        return CommitMetadata()
    if kind == "json":
        try:
            rec = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise MetadataFormatError(f"corrupt JSON commit metadata: {err}") from err
        if not isinstance(rec, dict):
            raise MetadataFormatError("JSON commit metadata must be an object")
        return _commit_from_record(rec)
    rec = _expect(
        "commit metadata",
        read_instant_record(data),
        avro_schemas.COMMIT_METADATA,
        avro_schemas.REPLACE_COMMIT_METADATA,
    )
    return _commit_from_record(rec)


def write_commit_metadata(meta: CommitMetadata, *, replace: bool | None = None) -> bytes:
    """Encode commit metadata as Hudi 1.x does for layout 2 (Avro container, one record).

    ``replace`` picks the record: ``HoodieReplaceCommitMetadata`` (what Hudi reads a completed
    ``replacecommit`` with, even one that replaced nothing) or ``HoodieCommitMetadata`` (commit,
    deltacommit, and every *inflight* file, replacecommit included). ``None`` chooses
    ``HoodieReplaceCommitMetadata`` exactly when there are replaced file ids; pass ``True`` when
    completing a replacecommit. ``partitionToWriteStats`` and ``extraMetadata`` are always written
    as (possibly empty) maps, never null: ``CommitMetadataSerDeV2`` calls
    ``getPartitionToWriteStats().remove(null)`` on what it reads. ``version`` is null as Hudi 1.x
    writes it.
    """
    if replace is None:
        replace = bool(meta.partition_to_replace_file_ids)
    if meta.partition_to_replace_file_ids and not replace:
        raise MetadataFormatError(
            "HoodieCommitMetadata has no partitionToReplaceFileIds; write replaced file ids "
            "with replace=True"
        )
    record: dict[str, Any] = {
        "partitionToWriteStats": {
            p: [_write_stat_to_record(s) for s in stats]
            for p, stats in meta.partition_to_write_stats.items()
        },
        "compacted": meta.compacted,
        "extraMetadata": _sorted_dict(meta.extra_metadata),
        "version": None,
        "operationType": meta.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()
        }
        return _encode_avro(avro_schemas.replace_commit_metadata_schema(), record)
    return _encode_avro(avro_schemas.commit_metadata_schema(), record)


# --------------------------------------------------------------------------------------------
# Compaction plan
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompactionOperation:
    """One file slice to compact (``HoodieCompactionOperation``).

    ``base_instant_time`` is the slice's base instant; ``data_file_path`` the base file's name
    (None for a file group with only log files) and ``delta_file_paths`` the log file names, both
    relative to the partition as in plan version 2. ``metrics`` are the planner's estimates
    (``TOTAL_LOG_FILES``, ``TOTAL_LOG_FILES_SIZE``, ``TOTAL_IO_MB`` ...).
    """

    base_instant_time: str | None
    partition_path: str
    file_id: str
    data_file_path: str | None = None
    delta_file_paths: tuple[str, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _set(self, "delta_file_paths", tuple(self.delta_file_paths))
        _set(self, "metrics", _frozen_map((k, float(v)) for k, v in self.metrics.items()))

    def sort_key(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)


@dataclass(frozen=True)
class CompactionPlan:
    """Content of ``<t>.compaction.requested`` (``HoodieCompactionPlan``), operations sorted."""

    operations: tuple[CompactionOperation, ...] = ()
    version: int = COMPACTION_PLAN_VERSION
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _set(self, "operations", tuple(sorted(self.operations, key=CompactionOperation.sort_key)))
        _set(self, "extra_metadata", _frozen_map(self.extra_metadata.items()))

    def file_groups(self) -> tuple[tuple[str, str], ...]:
        """Sorted (partition, file id) pairs the plan compacts."""
        return tuple(op.sort_key() for op in self.operations)

    def operation_for(self, partition_path: str, file_id: str) -> CompactionOperation | None:
        for op in self.operations:
            if op.partition_path == partition_path and op.file_id == file_id:
                return op
        return None


def read_compaction_plan(data: bytes) -> CompactionPlan:
    """Read a ``.compaction.requested`` (or ``.logcompaction.requested``) file, any table version.

    Plans are Avro in every layout. Version-1 plans stored full paths; they are reduced to file
    names as Hudi's ``CompactionV1MigrationHandler`` does when upgrading to version 2. An empty
    file is an error, not an empty plan: Hudi always writes the plan into the requested file, and
    treating a lost plan as "compact nothing" would hide the loss.
    """
    if not data.strip():
        raise MetadataFormatError("compaction plan is empty (0 bytes); Hudi always writes one")
    rec = _expect("a compaction plan", read_instant_record(data), avro_schemas.COMPACTION_PLAN)
    version = rec.get("version")
    version = 1 if version is None else _int(version, "version")
    ops_raw = rec.get("operations") or []
    if not isinstance(ops_raw, list):
        raise MetadataFormatError("compaction plan operations must be a list")
    operations = []
    for op in ops_raw:
        if not isinstance(op, dict):
            raise MetadataFormatError("compaction operation is not a record")
        data_file = _str(op.get("dataFilePath"), "dataFilePath") or None
        deltas = _str_list(op.get("deltaFilePaths"), "deltaFilePaths")
        if version < COMPACTION_PLAN_VERSION:
            data_file = posixpath.basename(data_file) if data_file else None
            deltas = tuple(posixpath.basename(d) for d in deltas)
        operations.append(
            CompactionOperation(
                base_instant_time=_str(op.get("baseInstantTime"), "baseInstantTime"),
                partition_path=_str(op.get("partitionPath"), "partitionPath") or "",
                file_id=_str(op.get("fileId"), "fileId") or "",
                data_file_path=data_file,
                delta_file_paths=deltas,
                metrics=_num_map(op.get("metrics"), "metrics", float),
            )
        )
    return CompactionPlan(
        operations=tuple(operations),
        version=max(version, COMPACTION_PLAN_VERSION),
        extra_metadata=_str_map(rec.get("extraMetadata"), "extraMetadata"),
    )


def write_compaction_plan(plan: CompactionPlan) -> bytes:
    """Encode a compaction plan as Hudi 1.x writes it (version 2, no strategy, empty lists)."""
    record = {
        "operations": [
            {
                "baseInstantTime": op.base_instant_time,
                "deltaFilePaths": list(op.delta_file_paths),
                "dataFilePath": op.data_file_path,
                "fileId": op.file_id,
                "partitionPath": op.partition_path,
                "metrics": _sorted_dict(op.metrics),
                "bootstrapFilePath": None,
            }
            for op in plan.operations
        ],
        "extraMetadata": _sorted_dict(plan.extra_metadata),
        "version": plan.version,
        "strategy": None,
        "preserveHoodieMetadata": False,
        "missingSchedulePartitions": [],
    }
    return _encode_avro(avro_schemas.compaction_plan_schema(), record)


# --------------------------------------------------------------------------------------------
# Rollback plan and metadata
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class InstantInfo:
    """``HoodieInstantInfo``: an instant's requested time and action."""

    commit_time: str
    action: str


@dataclass(frozen=True)
class RollbackPartitionMetadata:
    """What a rollback did in one partition (``HoodieRollbackPartitionMetadata``).

    ``rollback_log_files`` maps log files that received a rollback command block to their size;
    ``log_files_from_failed_commit`` maps the failed instant's own log files to their size.
    Deleted file entries are stored as Hudi gives them (full paths in the fixtures).
    """

    partition_path: str
    success_delete_files: tuple[str, ...] = ()
    failed_delete_files: tuple[str, ...] = ()
    rollback_log_files: Mapping[str, int] = field(default_factory=FrozenMap)
    log_files_from_failed_commit: Mapping[str, int] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _set(self, "success_delete_files", tuple(sorted(self.success_delete_files)))
        _set(self, "failed_delete_files", tuple(sorted(self.failed_delete_files)))
        _set(self, "rollback_log_files", _frozen_map(self.rollback_log_files.items()))
        _set(
            self,
            "log_files_from_failed_commit",
            _frozen_map(self.log_files_from_failed_commit.items()),
        )


@dataclass(frozen=True)
class RollbackMetadata:
    """Content of a completed ``rollback`` instant (``HoodieRollbackMetadata``).

    ``time_taken_ms`` is given by the caller (``models`` never reads a clock).
    """

    start_rollback_time: str
    commits_rollback: tuple[str, ...]
    partition_metadata: Mapping[str, RollbackPartitionMetadata] = field(default_factory=FrozenMap)
    instants_rollback: tuple[InstantInfo, ...] = ()
    time_taken_ms: int = 0
    total_files_deleted: int | None = None

    def __post_init__(self) -> None:
        _set(self, "commits_rollback", tuple(sorted(self.commits_rollback)))
        _set(self, "instants_rollback", tuple(sorted(self.instants_rollback)))
        _set(self, "partition_metadata", _frozen_map(self.partition_metadata.items()))
        if self.total_files_deleted is None:
            _set(self, "total_files_deleted", len(self.deleted_files()))

    def deleted_files(self) -> tuple[str, ...]:
        """Every successfully deleted file, sorted."""
        return tuple(
            sorted(f for pm in self.partition_metadata.values() for f in pm.success_delete_files)
        )


def _instant_info(rec: Any, what: str) -> InstantInfo:
    if not isinstance(rec, dict):
        raise MetadataFormatError(f"{what} is not a HoodieInstantInfo record")
    return InstantInfo(
        commit_time=_str(rec.get("commitTime"), f"{what}.commitTime") or "",
        action=_str(rec.get("action"), f"{what}.action") or "",
    )


def read_rollback_metadata(data: bytes) -> RollbackMetadata:
    """Read a completed ``rollback`` file (Avro ``HoodieRollbackMetadata``)."""
    if not data.strip():
        raise MetadataFormatError("rollback metadata is empty (0 bytes)")
    rec = _expect("rollback metadata", read_instant_record(data), avro_schemas.ROLLBACK_METADATA)
    partitions = {}
    for partition, pm in _dict(rec.get("partitionMetadata"), "partitionMetadata").items():
        if not isinstance(pm, dict):
            raise MetadataFormatError(
                f"rollback metadata of partition {partition!r} is not a record"
            )
        partitions[partition] = RollbackPartitionMetadata(
            partition_path=_str(pm.get("partitionPath"), "partitionPath") or "",
            success_delete_files=_str_list(pm.get("successDeleteFiles"), "successDeleteFiles"),
            failed_delete_files=_str_list(pm.get("failedDeleteFiles"), "failedDeleteFiles"),
            rollback_log_files=_num_map(pm.get("rollbackLogFiles"), "rollbackLogFiles", int),
            log_files_from_failed_commit=_num_map(
                pm.get("logFilesFromFailedCommit"), "logFilesFromFailedCommit", int
            ),
        )
    instants = rec.get("instantsRollback") or []
    if not isinstance(instants, list):
        raise MetadataFormatError("instantsRollback must be a list")
    return RollbackMetadata(
        start_rollback_time=_str(rec.get("startRollbackTime"), "startRollbackTime") or "",
        commits_rollback=_str_list(rec.get("commitsRollback"), "commitsRollback"),
        partition_metadata=partitions,
        instants_rollback=tuple(_instant_info(i, "instantsRollback[]") for i in instants),
        time_taken_ms=_int(rec.get("timeTakenInMillis"), "timeTakenInMillis"),
        total_files_deleted=_int(rec.get("totalFilesDeleted"), "totalFilesDeleted"),
    )


def write_rollback_metadata(meta: RollbackMetadata) -> bytes:
    """Encode rollback metadata (``HoodieRollbackMetadata``, version 1 as Hudi 1.x writes it)."""
    record = {
        "startRollbackTime": meta.start_rollback_time,
        "timeTakenInMillis": meta.time_taken_ms,
        "totalFilesDeleted": meta.total_files_deleted,
        "commitsRollback": list(meta.commits_rollback),
        "partitionMetadata": {
            p: {
                "partitionPath": pm.partition_path,
                "successDeleteFiles": list(pm.success_delete_files),
                "failedDeleteFiles": list(pm.failed_delete_files),
                "rollbackLogFiles": _sorted_dict(pm.rollback_log_files),
                "logFilesFromFailedCommit": _sorted_dict(pm.log_files_from_failed_commit),
            }
            for p, pm in meta.partition_metadata.items()
        },
        "version": 1,
        "instantsRollback": [
            {"commitTime": i.commit_time, "action": i.action} for i in meta.instants_rollback
        ],
    }
    return _encode_avro(avro_schemas.rollback_metadata_schema(), record)


@dataclass(frozen=True)
class RollbackRequest:
    """One entry of a rollback plan (``HoodieRollbackRequest``): files to delete in a partition.

    Hudi writes ``""`` for ``file_id``/``latest_base_instant`` when a request is not tied to one
    file group (as in the fixture); kept as given.
    """

    partition_path: str
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: tuple[str, ...] = ()
    log_blocks_to_be_deleted: Mapping[str, int] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        _set(self, "files_to_be_deleted", tuple(sorted(self.files_to_be_deleted)))
        _set(self, "log_blocks_to_be_deleted", _frozen_map(self.log_blocks_to_be_deleted.items()))

    def sort_key(self) -> tuple[str, str, str]:
        return (self.partition_path, self.file_id or "", self.latest_base_instant or "")


@dataclass(frozen=True)
class RollbackPlan:
    """Content of ``<t>.rollback.requested`` (``HoodieRollbackPlan``)."""

    instant_to_rollback: InstantInfo | None
    requests: tuple[RollbackRequest, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "requests", tuple(sorted(self.requests, key=RollbackRequest.sort_key)))

    def files_to_delete(self) -> tuple[str, ...]:
        return tuple(sorted(f for r in self.requests for f in r.files_to_be_deleted))


def read_rollback_plan(data: bytes) -> RollbackPlan:
    """Read a ``.rollback.requested`` file (Avro ``HoodieRollbackPlan``)."""
    if not data.strip():
        raise MetadataFormatError("rollback plan is empty (0 bytes)")
    rec = _expect("a rollback plan", read_instant_record(data), avro_schemas.ROLLBACK_PLAN)
    target = rec.get("instantToRollback")
    requests_raw = rec.get("RollbackRequests") or []
    if not isinstance(requests_raw, list):
        raise MetadataFormatError("RollbackRequests must be a list")
    requests = []
    for req in requests_raw:
        if not isinstance(req, dict):
            raise MetadataFormatError("rollback request is not a record")
        requests.append(
            RollbackRequest(
                partition_path=_str(req.get("partitionPath"), "partitionPath") or "",
                file_id=_str(req.get("fileId"), "fileId"),
                latest_base_instant=_str(req.get("latestBaseInstant"), "latestBaseInstant"),
                files_to_be_deleted=_str_list(req.get("filesToBeDeleted"), "filesToBeDeleted"),
                log_blocks_to_be_deleted=_num_map(
                    req.get("logBlocksToBeDeleted"), "logBlocksToBeDeleted", int
                ),
            )
        )
    return RollbackPlan(
        instant_to_rollback=None if target is None else _instant_info(target, "instantToRollback"),
        requests=tuple(requests),
    )


def write_rollback_plan(plan: RollbackPlan) -> bytes:
    """Encode a rollback plan (``HoodieRollbackPlan``, version 1)."""
    target = plan.instant_to_rollback
    record = {
        "instantToRollback": None
        if target is None
        else {"commitTime": target.commit_time, "action": target.action},
        "RollbackRequests": [
            {
                "partitionPath": r.partition_path,
                "fileId": r.file_id,
                "latestBaseInstant": r.latest_base_instant,
                "filesToBeDeleted": list(r.files_to_be_deleted),
                "logBlocksToBeDeleted": _sorted_dict(r.log_blocks_to_be_deleted),
            }
            for r in plan.requests
        ],
        "version": 1,
    }
    return _encode_avro(avro_schemas.rollback_plan_schema(), record)


# --------------------------------------------------------------------------------------------
# Requested replace metadata (insert overwrite, clustering plans)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ClusteringSlice:
    """One input file slice of a clustering group (``HoodieSliceInfo``).

    ``data_file_path`` is stored as Hudi gives it: a full URI in the fixtures (``file:/...``).
    """

    partition_path: str
    file_id: str
    data_file_path: str | None = None
    delta_file_paths: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "delta_file_paths", tuple(self.delta_file_paths))


@dataclass(frozen=True)
class ClusteringGroup:
    """A set of slices rewritten together into ``num_output_file_groups`` new file groups."""

    slices: tuple[ClusteringSlice, ...]
    num_output_file_groups: int = 1

    def __post_init__(self) -> None:
        _set(
            self,
            "slices",
            tuple(sorted(self.slices, key=lambda s: (s.partition_path, s.file_id))),
        )


@dataclass(frozen=True)
class RequestedReplaceMetadata:
    """Content of ``.replacecommit.requested`` / ``.clustering.requested``.

    For insert overwrite Hudi writes an all-null record (no plan); for clustering the plan's input
    groups name the file groups that are pending clustering, which writers must not update
    (Hudi's ``ClusteringUtils.getAllFileGroupsInPendingClusteringPlans``).
    """

    operation_type: str | None = None
    input_groups: tuple[ClusteringGroup, ...] = ()
    strategy_class_name: str | None = None
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)
    has_plan: bool = False

    def __post_init__(self) -> None:
        _set(self, "input_groups", tuple(self.input_groups))
        _set(self, "extra_metadata", _frozen_map(self.extra_metadata.items()))
        if self.input_groups:
            _set(self, "has_plan", True)

    def file_groups(self) -> tuple[tuple[str, str], ...]:
        """Sorted (partition, file id) pairs the clustering plan takes as input."""
        return tuple(
            sorted({(s.partition_path, s.file_id) for g in self.input_groups for s in g.slices})
        )


def read_requested_replace_metadata(data: bytes) -> RequestedReplaceMetadata:
    """Read a requested replacecommit/clustering file; empty content means "no plan"."""
    if not data.strip():
        return RequestedReplaceMetadata()
    rec = _expect(
        "requested replace metadata",
        read_instant_record(data),
        avro_schemas.REQUESTED_REPLACE_METADATA,
    )
    plan = rec.get("clusteringPlan")
    groups: list[ClusteringGroup] = []
    strategy_class = None
    if plan is not None:
        if not isinstance(plan, dict):
            raise MetadataFormatError("clusteringPlan is not a record")
        for group in plan.get("inputGroups") or []:
            slices = tuple(
                ClusteringSlice(
                    partition_path=_str(s.get("partitionPath"), "partitionPath") or "",
                    file_id=_str(s.get("fileId"), "fileId") or "",
                    data_file_path=_str(s.get("dataFilePath"), "dataFilePath") or None,
                    delta_file_paths=_str_list(s.get("deltaFilePaths"), "deltaFilePaths"),
                )
                for s in group.get("slices") or []
            )
            count = group.get("numOutputFileGroups")
            groups.append(
                ClusteringGroup(slices, 1 if count is None else _int(count, "numOutputFileGroups"))
            )
        strategy = plan.get("strategy") or {}
        strategy_class = _str(strategy.get("strategyClassName"), "strategyClassName")
    return RequestedReplaceMetadata(
        operation_type=_str(rec.get("operationType"), "operationType"),
        input_groups=tuple(groups),
        strategy_class_name=strategy_class,
        extra_metadata=_str_map(rec.get("extraMetadata"), "extraMetadata"),
        has_plan=plan is not None,
    )


def write_requested_replace_metadata(meta: RequestedReplaceMetadata) -> bytes:
    """Encode requested replace metadata; without a plan this is Hudi's all-null record."""
    plan = None
    if meta.has_plan:
        plan = {
            "inputGroups": [
                {
                    "slices": [
                        {
                            "dataFilePath": s.data_file_path,
                            "deltaFilePaths": list(s.delta_file_paths),
                            "fileId": s.file_id,
                            "partitionPath": s.partition_path,
                            "bootstrapFilePath": "",
                            "version": 1,
                        }
                        for s in g.slices
                    ],
                    "metrics": {},
                    "numOutputFileGroups": g.num_output_file_groups,
                    "extraMetadata": None,
                    "version": 1,
                }
                for g in meta.input_groups
            ],
            "strategy": None
            if meta.strategy_class_name is None
            else {
                "strategyClassName": meta.strategy_class_name,
                "strategyParams": {},
                "version": 1,
            },
            "extraMetadata": {},
            "version": 1,
            "preserveHoodieMetadata": True,
            "missingSchedulePartitions": None,
        }
    record = {
        "operationType": meta.operation_type,
        "clusteringPlan": plan,
        "extraMetadata": _sorted_dict(meta.extra_metadata) if meta.extra_metadata else None,
        "version": 1 if meta.has_plan else None,
    }
    return _encode_avro(avro_schemas.requested_replace_metadata_schema(), record)


# --------------------------------------------------------------------------------------------
# Completed instant files, any action
# --------------------------------------------------------------------------------------------

COMMIT_ACTIONS = ("commit", "deltacommit", "replacecommit")
"""Completed actions whose file holds (replace) commit metadata, JSON in layout 1, else Avro."""


def check_completed_instant(action: str, data: bytes) -> None:
    """Decode the file of a completed instant of ``action``; :class:`MetadataFormatError` if it
    does not decode.

    ``commit``/``deltacommit``/``replacecommit``: :func:`read_commit_metadata`, with 0 bytes
    refused. Hudi's ``CommitMetadataSerDeV2.deserialize`` would read an empty file as empty
    metadata, but no Hudi writer leaves one (``ActiveTimelineV2.transitionStateToComplete`` always
    writes the serialized metadata, JSON in layout 1 too), and hudi-rs refuses it: an empty
    completed file is a torn write. ``rollback``: :func:`read_rollback_metadata`. Every other
    completed action (``clean``, ``savepoint``, ``restore``, ``indexing``, ...) is one Avro record
    in every layout (``TimelineMetadataUtils.deserializeAvroMetadata``), read generically.
    """
    if action in COMMIT_ACTIONS:
        if not data.strip():
            raise MetadataFormatError("completed commit file is empty; Hudi always writes metadata")
        read_commit_metadata(data)
    elif action == "rollback":
        read_rollback_metadata(data)
    else:
        read_instant_record(data)
