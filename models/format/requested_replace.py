"""Requested replace metadata: the plan of an insert overwrite or a clustering.

The content of ``.replacecommit.requested`` / ``.clustering.requested``
(``HoodieRequestedReplaceMetadata`` holding a ``HoodieClusteringPlan``), one Avro record in every
table version (docs/protocol.md section 2). Its input groups name the file groups pending
clustering (``ClusteringUtils.getAllFileGroupsInPendingClusteringPlans``).
"""

from __future__ import annotations

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
    read_str,
    read_str_list,
    read_str_map,
    set_field,
    sorted_map,
)


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
        set_field(self, "delta_file_paths", tuple(self.delta_file_paths))


@dataclass(frozen=True)
class ClusteringGroup:
    """A set of slices rewritten together into ``num_output_file_groups`` new file groups."""

    slices: tuple[ClusteringSlice, ...]
    num_output_file_groups: int = 1

    def __post_init__(self) -> None:
        set_field(
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
        set_field(self, "input_groups", tuple(self.input_groups))
        set_field(self, "extra_metadata", frozen_map(self.extra_metadata.items()))
        if self.input_groups:
            set_field(self, "has_plan", True)

    def file_groups(self) -> tuple[tuple[str, str], ...]:
        """Sorted (partition, file id) pairs the clustering plan takes as input."""
        return tuple(
            sorted({(s.partition_path, s.file_id) for g in self.input_groups for s in g.slices})
        )


def read_requested_replace_metadata(data: bytes) -> RequestedReplaceMetadata:
    """Read a requested replacecommit/clustering file; empty content means "no plan"."""
    if not data.strip():
        return RequestedReplaceMetadata()
    rec = expect_record(
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
                    partition_path=read_str(s.get("partitionPath"), "partitionPath") or "",
                    file_id=read_str(s.get("fileId"), "fileId") or "",
                    data_file_path=read_str(s.get("dataFilePath"), "dataFilePath") or None,
                    delta_file_paths=read_str_list(s.get("deltaFilePaths"), "deltaFilePaths"),
                )
                for s in group.get("slices") or []
            )
            count = group.get("numOutputFileGroups")
            groups.append(
                ClusteringGroup(
                    slices, 1 if count is None else read_int(count, "numOutputFileGroups")
                )
            )
        strategy = plan.get("strategy") or {}
        strategy_class = read_str(strategy.get("strategyClassName"), "strategyClassName")
    return RequestedReplaceMetadata(
        operation_type=read_str(rec.get("operationType"), "operationType"),
        input_groups=tuple(groups),
        strategy_class_name=strategy_class,
        extra_metadata=read_str_map(rec.get("extraMetadata"), "extraMetadata"),
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
        "extraMetadata": sorted_map(meta.extra_metadata) if meta.extra_metadata else None,
        "version": 1 if meta.has_plan else None,
    }
    return encode_avro(avro_schemas.requested_replace_metadata_schema(), record)
