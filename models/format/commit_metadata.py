"""Commit metadata: the content of commit, deltacommit and replacecommit instants.

``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata`` and their ``HoodieWriteStat`` entries,
read from any table version (JSON in timeline layout 1, Avro in layout 2,
docs/protocol.md section 2; ``CommitMetadataSerDeV1``/``CommitMetadataSerDeV2``) and written as
Hudi 1.x writes them; plus the check that a completed instant's file decodes at all. The
encodings themselves are in :mod:`models.format.instant_serde`.

Everything here is pure: bytes in, frozen dataclasses out, and back. Writing is deterministic:
maps are written with sorted keys and write stats in sorted order, so the same metadata always
yields byte-identical files.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from models.format import avro_schemas
from models.format.instant_serde import (
    FrozenMap,
    MetadataFormatError,
    content_kind,
    encode_avro,
    expect_record,
    frozen_map,
    read_instant_record,
    read_int,
    read_map,
    read_opt_int,
    read_str,
    read_str_list,
    read_str_map,
    set_field,
    sorted_map,
)
from models.format.rollback_metadata import read_rollback_metadata

# HoodieWriteStat.NULL_COMMIT: Hudi writes the *string* "null" as prevCommit of a new file group.
NULL_COMMIT = "null"

# WriteOperationType.UNKNOWN: what Hudi's POJO reports when operationType is absent.
UNKNOWN_OPERATION = "UNKNOWN"


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
        set_field(self, "log_files", tuple(self.log_files))
        if self.prev_commit == NULL_COMMIT:
            set_field(self, "prev_commit", None)

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
    partition_path = read_str(rec.get("partitionPath"), f"{where}: partitionPath")
    return WriteStat(
        file_id=read_str(rec.get("fileId"), f"{where}: fileId") or "",
        path=read_str(rec.get("path"), f"{where}: path") or "",
        partition_path=partition if partition_path is None else partition_path,
        prev_commit=read_str(rec.get("prevCommit"), f"{where}: prevCommit"),
        num_writes=read_int(rec.get("numWrites"), f"{where}: numWrites"),
        num_deletes=read_int(rec.get("numDeletes"), f"{where}: numDeletes"),
        num_update_writes=read_int(rec.get("numUpdateWrites"), f"{where}: numUpdateWrites"),
        num_inserts=read_int(rec.get("numInserts"), f"{where}: numInserts"),
        total_write_bytes=read_int(rec.get("totalWriteBytes"), f"{where}: totalWriteBytes"),
        file_size_in_bytes=read_int(rec.get("fileSizeInBytes"), f"{where}: fileSizeInBytes"),
        base_file=read_str(rec.get("baseFile"), f"{where}: baseFile"),
        log_files=read_str_list(rec.get("logFiles"), f"{where}: logFiles"),
        total_write_errors=read_int(rec.get("totalWriteErrors"), f"{where}: totalWriteErrors"),
        log_version=read_opt_int(rec.get("logVersion"), f"{where}: logVersion"),
        log_offset=read_opt_int(rec.get("logOffset"), f"{where}: logOffset"),
        prev_base_file=read_str(rec.get("prevBaseFile"), f"{where}: prevBaseFile"),
        total_log_records=read_int(rec.get("totalLogRecords"), f"{where}: totalLogRecords"),
        total_log_blocks=read_int(rec.get("totalLogBlocks"), f"{where}: totalLogBlocks"),
        total_corrupt_log_block=read_int(
            rec.get("totalCorruptLogBlock"), f"{where}: totalCorruptLogBlock"
        ),
        total_rollback_blocks=read_int(
            rec.get("totalRollbackBlocks"), f"{where}: totalRollbackBlocks"
        ),
        total_updated_records_compacted=read_int(
            rec.get("totalUpdatedRecordsCompacted"), f"{where}: totalUpdatedRecordsCompacted"
        ),
        total_log_files_compacted=read_int(
            rec.get("totalLogFilesCompacted"), f"{where}: totalLogFilesCompacted"
        ),
        total_log_size_compacted=read_int(
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
        set_field(
            self,
            "partition_to_write_stats",
            frozen_map(
                (p, tuple(sorted(stats, key=WriteStat.sort_key)))
                for p, stats in self.partition_to_write_stats.items()
            ),
        )
        set_field(self, "extra_metadata", frozen_map(self.extra_metadata.items()))
        set_field(
            self,
            "partition_to_replace_file_ids",
            frozen_map(
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
        """``fetchTotalRecordsWritten``: the stats' ``numWrites``."""
        return sum(s.num_writes for s in self.write_stats())

    def total_bytes_written(self) -> int:
        """``fetchTotalBytesWritten``: the stats' ``totalWriteBytes``."""
        return sum(s.total_write_bytes for s in self.write_stats())


def _commit_from_record(rec: Mapping[str, Any]) -> CommitMetadata:
    stats_by_partition = read_map(rec.get("partitionToWriteStats"), "partitionToWriteStats")
    partition_to_write_stats: dict[str, tuple[WriteStat, ...]] = {}
    for partition, stats in stats_by_partition.items():
        if not isinstance(partition, str) or not isinstance(stats, list):
            raise MetadataFormatError("partitionToWriteStats must map partitions to lists")
        partition_to_write_stats[partition] = tuple(
            _write_stat_from_record(s, partition) for s in stats
        )
    replaced = read_map(rec.get("partitionToReplaceFileIds"), "partitionToReplaceFileIds")
    compacted = rec.get("compacted")
    if compacted is not None and not isinstance(compacted, bool):
        raise MetadataFormatError("compacted must be a boolean")
    return CommitMetadata(
        partition_to_write_stats=partition_to_write_stats,
        compacted=bool(compacted),
        operation_type=read_str(rec.get("operationType"), "operationType") or UNKNOWN_OPERATION,
        extra_metadata=read_str_map(rec.get("extraMetadata"), "extraMetadata"),
        partition_to_replace_file_ids={
            p: read_str_list(ids, f"partitionToReplaceFileIds[{p!r}]")
            for p, ids in replaced.items()
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
    rec = expect_record(
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
        "extraMetadata": sorted_map(meta.extra_metadata),
        "version": None,
        "operationType": meta.operation_type,
    }
    if replace:
        record["partitionToReplaceFileIds"] = {
            p: list(ids) for p, ids in meta.partition_to_replace_file_ids.items()
        }
        return encode_avro(avro_schemas.replace_commit_metadata_schema(), record)
    return encode_avro(avro_schemas.commit_metadata_schema(), record)


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
