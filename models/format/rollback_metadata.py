"""Rollback plans and rollback metadata: ``HoodieRollbackPlan`` and ``HoodieRollbackMetadata``.

A rollback writes its plan into ``<t>.rollback.requested`` and what it did into the completed
``rollback`` file, both one Avro record in every table version (docs/protocol.md section 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from models.format import avro_schemas
from models.format.instant_serde import (
    FrozenMap,
    MetadataFormatError,
    encode_avro,
    expect_record,
    frozen_map,
    read_instant_record,
    read_int,
    read_map,
    read_num_map,
    read_str,
    read_str_list,
    set_field,
    sorted_map,
)


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
        set_field(self, "success_delete_files", tuple(sorted(self.success_delete_files)))
        set_field(self, "failed_delete_files", tuple(sorted(self.failed_delete_files)))
        set_field(self, "rollback_log_files", frozen_map(self.rollback_log_files.items()))
        set_field(
            self,
            "log_files_from_failed_commit",
            frozen_map(self.log_files_from_failed_commit.items()),
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
        set_field(self, "commits_rollback", tuple(sorted(self.commits_rollback)))
        set_field(self, "instants_rollback", tuple(sorted(self.instants_rollback)))
        set_field(self, "partition_metadata", frozen_map(self.partition_metadata.items()))
        if self.total_files_deleted is None:
            set_field(self, "total_files_deleted", len(self.deleted_files()))

    def deleted_files(self) -> tuple[str, ...]:
        """Every successfully deleted file, sorted."""
        return tuple(
            sorted(f for pm in self.partition_metadata.values() for f in pm.success_delete_files)
        )


def _instant_info(rec: Any, what: str) -> InstantInfo:
    if not isinstance(rec, dict):
        raise MetadataFormatError(f"{what} is not a HoodieInstantInfo record")
    return InstantInfo(
        commit_time=read_str(rec.get("commitTime"), f"{what}.commitTime") or "",
        action=read_str(rec.get("action"), f"{what}.action") or "",
    )


def read_rollback_metadata(data: bytes) -> RollbackMetadata:
    """Read a completed ``rollback`` file (Avro ``HoodieRollbackMetadata``)."""
    if not data.strip():
        raise MetadataFormatError("rollback metadata is empty (0 bytes)")
    rec = expect_record(
        "rollback metadata", read_instant_record(data), avro_schemas.ROLLBACK_METADATA
    )
    partitions = {}
    for partition, pm in read_map(rec.get("partitionMetadata"), "partitionMetadata").items():
        if not isinstance(pm, dict):
            raise MetadataFormatError(
                f"rollback metadata of partition {partition!r} is not a record"
            )
        partitions[partition] = RollbackPartitionMetadata(
            partition_path=read_str(pm.get("partitionPath"), "partitionPath") or "",
            success_delete_files=read_str_list(pm.get("successDeleteFiles"), "successDeleteFiles"),
            failed_delete_files=read_str_list(pm.get("failedDeleteFiles"), "failedDeleteFiles"),
            rollback_log_files=read_num_map(pm.get("rollbackLogFiles"), "rollbackLogFiles", int),
            log_files_from_failed_commit=read_num_map(
                pm.get("logFilesFromFailedCommit"), "logFilesFromFailedCommit", int
            ),
        )
    instants = rec.get("instantsRollback") or []
    if not isinstance(instants, list):
        raise MetadataFormatError("instantsRollback must be a list")
    return RollbackMetadata(
        start_rollback_time=read_str(rec.get("startRollbackTime"), "startRollbackTime") or "",
        commits_rollback=read_str_list(rec.get("commitsRollback"), "commitsRollback"),
        partition_metadata=partitions,
        instants_rollback=tuple(_instant_info(i, "instantsRollback[]") for i in instants),
        time_taken_ms=read_int(rec.get("timeTakenInMillis"), "timeTakenInMillis"),
        total_files_deleted=read_int(rec.get("totalFilesDeleted"), "totalFilesDeleted"),
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
                "rollbackLogFiles": sorted_map(pm.rollback_log_files),
                "logFilesFromFailedCommit": sorted_map(pm.log_files_from_failed_commit),
            }
            for p, pm in meta.partition_metadata.items()
        },
        "version": 1,
        "instantsRollback": [
            {"commitTime": i.commit_time, "action": i.action} for i in meta.instants_rollback
        ],
    }
    return encode_avro(avro_schemas.rollback_metadata_schema(), record)


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
        set_field(self, "files_to_be_deleted", tuple(sorted(self.files_to_be_deleted)))
        set_field(
            self, "log_blocks_to_be_deleted", frozen_map(self.log_blocks_to_be_deleted.items())
        )

    def sort_key(self) -> tuple[str, str, str]:
        return (self.partition_path, self.file_id or "", self.latest_base_instant or "")


@dataclass(frozen=True)
class RollbackPlan:
    """Content of ``<t>.rollback.requested`` (``HoodieRollbackPlan``)."""

    instant_to_rollback: InstantInfo | None
    requests: tuple[RollbackRequest, ...] = ()

    def __post_init__(self) -> None:
        set_field(self, "requests", tuple(sorted(self.requests, key=RollbackRequest.sort_key)))

    def files_to_delete(self) -> tuple[str, ...]:
        return tuple(sorted(f for r in self.requests for f in r.files_to_be_deleted))


def read_rollback_plan(data: bytes) -> RollbackPlan:
    """Read a ``.rollback.requested`` file (Avro ``HoodieRollbackPlan``)."""
    if not data.strip():
        raise MetadataFormatError("rollback plan is empty (0 bytes)")
    rec = expect_record("a rollback plan", read_instant_record(data), avro_schemas.ROLLBACK_PLAN)
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
                partition_path=read_str(req.get("partitionPath"), "partitionPath") or "",
                file_id=read_str(req.get("fileId"), "fileId"),
                latest_base_instant=read_str(req.get("latestBaseInstant"), "latestBaseInstant"),
                files_to_be_deleted=read_str_list(req.get("filesToBeDeleted"), "filesToBeDeleted"),
                log_blocks_to_be_deleted=read_num_map(
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
                "logBlocksToBeDeleted": sorted_map(r.log_blocks_to_be_deleted),
            }
            for r in plan.requests
        ],
        "version": 1,
    }
    return encode_avro(avro_schemas.rollback_plan_schema(), record)
