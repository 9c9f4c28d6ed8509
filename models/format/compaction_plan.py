"""Compaction plans: the content of ``<t>.compaction.requested`` (``HoodieCompactionPlan``).

Plans are Avro in every table version (docs/protocol.md section 2). Version 2 plans name files
by file name relative to the partition; version 1 plans stored full paths and are reduced to
file names on reading, as Hudi's ``CompactionV1MigrationHandler`` does.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field

from models.format import avro_schemas
from models.format.instant_serde import (
    FrozenMap,
    MetadataFormatError,
    encode_avro,
    expect_record,
    frozen_map,
    read_instant_record,
    read_int,
    read_num_map,
    read_str,
    read_str_list,
    read_str_map,
    set_field,
    sorted_map,
)

# CompactionUtils.LATEST_COMPACTION_METADATA_VERSION: version 2 plans name files by file name only
# (relative to the partition); version 1 plans stored full paths.
COMPACTION_PLAN_VERSION = 2


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
        set_field(self, "delta_file_paths", tuple(self.delta_file_paths))
        set_field(self, "metrics", frozen_map((k, float(v)) for k, v in self.metrics.items()))

    def sort_key(self) -> tuple[str, str]:
        return (self.partition_path, self.file_id)


@dataclass(frozen=True)
class CompactionPlan:
    """Content of ``<t>.compaction.requested`` (``HoodieCompactionPlan``), operations sorted."""

    operations: tuple[CompactionOperation, ...] = ()
    version: int = COMPACTION_PLAN_VERSION
    extra_metadata: Mapping[str, str] = field(default_factory=FrozenMap)

    def __post_init__(self) -> None:
        set_field(
            self, "operations", tuple(sorted(self.operations, key=CompactionOperation.sort_key))
        )
        set_field(self, "extra_metadata", frozen_map(self.extra_metadata.items()))

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
    rec = expect_record(
        "a compaction plan", read_instant_record(data), avro_schemas.COMPACTION_PLAN
    )
    version = rec.get("version")
    version = 1 if version is None else read_int(version, "version")
    ops_raw = rec.get("operations") or []
    if not isinstance(ops_raw, list):
        raise MetadataFormatError("compaction plan operations must be a list")
    operations = []
    for op in ops_raw:
        if not isinstance(op, dict):
            raise MetadataFormatError("compaction operation is not a record")
        data_file = read_str(op.get("dataFilePath"), "dataFilePath") or None
        deltas = read_str_list(op.get("deltaFilePaths"), "deltaFilePaths")
        if version < COMPACTION_PLAN_VERSION:
            data_file = posixpath.basename(data_file) if data_file else None
            deltas = tuple(posixpath.basename(d) for d in deltas)
        operations.append(
            CompactionOperation(
                base_instant_time=read_str(op.get("baseInstantTime"), "baseInstantTime"),
                partition_path=read_str(op.get("partitionPath"), "partitionPath") or "",
                file_id=read_str(op.get("fileId"), "fileId") or "",
                data_file_path=data_file,
                delta_file_paths=deltas,
                metrics=read_num_map(op.get("metrics"), "metrics", float),
            )
        )
    return CompactionPlan(
        operations=tuple(operations),
        version=max(version, COMPACTION_PLAN_VERSION),
        extra_metadata=read_str_map(rec.get("extraMetadata"), "extraMetadata"),
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
                "metrics": sorted_map(op.metrics),
                "bootstrapFilePath": None,
            }
            for op in plan.operations
        ],
        "extraMetadata": sorted_map(plan.extra_metadata),
        "version": plan.version,
        "strategy": None,
        "preserveHoodieMetadata": False,
        "missingSchedulePartitions": [],
    }
    return encode_avro(avro_schemas.compaction_plan_schema(), record)
