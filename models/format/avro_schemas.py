"""Avro schemas of the timeline instant files Hudi 1.x writes (table versions 8 and 9).

Hudi generates Java classes from the ``*.avsc`` files in ``hudi-common/src/main/avro`` and writes
every instant file of timeline layout 2 as an Avro object container holding one record of one of
these classes (``CommitMetadataSerDeV2.serializeAvroMetadata``). Java readers resolve the *writer*
schema embedded in the file against the class's *reader* schema, and hudi-rs deserializes by field
name, so what we write is readable by both exactly when our record names, field names, field
order, types and defaults match Hudi's. The dicts below are written by hand to match:

- the writer schemas that Hudi 1.0 / 1.1 embedded in the fixture tables (``fixtures/hudi-tables``:
  v8 COW/MOR and v9 MOR files; one identical variant of each record across all of them), which is
  the authority because it is what Hudi's generated classes carry today, and
- the ``.avsc`` files of apache/hudi (``HoodieCommitMetadata.avsc``,
  ``HoodieReplaceCommitMetadata.avsc``, ``HoodieCompactionOperation.avsc`` (which defines
  ``HoodieCompactionPlan``), ``HoodieRollbackMetadata.avsc``, ``HoodieRollbackPlan.avsc``,
  ``HoodieRequestedReplaceMetadata.avsc``, ``HoodieClusteringPlan.avsc``), whose older revisions
  lack the fields 1.x added to ``HoodieWriteStat`` (``logVersion`` ... ``numUpdates``) and to the
  compaction plan (``strategy``, ``preserveHoodieMetadata``, ``missingSchedulePartitions``).

Hudi's Java-only ``"avro.java.string": "String"`` properties are left out: they only tell the Java
code generator to use ``java.lang.String``; schema resolution ignores them.

Each function returns a fresh dict because a top-level schema defines its named sub-records
(``HoodieWriteStat``, ``HoodieInstantInfo`` ...) inline, and fastavro parses each schema on its own.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "org.apache.hudi.avro.model"

Schema = dict[str, Any]

# Short names of the top-level records, as found in a file's writer schema (without namespace).
COMMIT_METADATA = "HoodieCommitMetadata"
REPLACE_COMMIT_METADATA = "HoodieReplaceCommitMetadata"
COMPACTION_PLAN = "HoodieCompactionPlan"
ROLLBACK_METADATA = "HoodieRollbackMetadata"
ROLLBACK_PLAN = "HoodieRollbackPlan"
REQUESTED_REPLACE_METADATA = "HoodieRequestedReplaceMetadata"
INDEX_PLAN = "HoodieIndexPlan"
INDEX_COMMIT_METADATA = "HoodieIndexCommitMetadata"

_STRING_ARRAY: Schema = {"type": "array", "items": "string"}


def _nullable(name: str, type_: Any) -> Schema:
    """A ``["null", T]`` field defaulting to null: the shape of almost every Hudi metadata field."""
    return {"name": name, "type": ["null", type_], "default": None}


def _nullable_no_default(name: str, type_: Any) -> Schema:
    """A ``["null", T]`` field *without* a default (Hudi's ``baseInstantTime`` and ``fileId``)."""
    return {"name": name, "type": ["null", type_]}


def _version(default: int = 1) -> Schema:
    """Hudi's ``version`` field: ``["int", "null"]`` defaulting to 1 (int first, so 1 is legal)."""
    return {"name": "version", "type": ["int", "null"], "default": default}


def _string_map() -> Schema:
    return {"type": "map", "values": "string"}


def _record(name: str, fields: list[Schema], *, namespace: bool = False) -> Schema:
    record: Schema = {"type": "record", "name": name, "fields": fields}
    if namespace:
        record["namespace"] = NAMESPACE
    return record


def write_stat_schema() -> Schema:
    """``HoodieWriteStat`` (defined inside ``HoodieCommitMetadata.avsc``), Hudi 1.x field order."""
    runtime_stats = _record(
        "HoodieRuntimeStats",
        [
            _nullable("totalScanTime", "long"),
            _nullable("totalCreateTime", "long"),
            _nullable("totalUpsertTime", "long"),
        ],
    )
    return _record(
        "HoodieWriteStat",
        [
            _nullable("fileId", "string"),
            _nullable("path", "string"),
            _nullable("prevCommit", "string"),
            _nullable("numWrites", "long"),
            _nullable("numDeletes", "long"),
            _nullable("numUpdateWrites", "long"),
            _nullable("totalWriteBytes", "long"),
            _nullable("totalWriteErrors", "long"),
            _nullable("partitionPath", "string"),
            _nullable("totalLogRecords", "long"),
            _nullable("totalLogFiles", "long"),
            _nullable("totalUpdatedRecordsCompacted", "long"),
            _nullable("numInserts", "long"),
            _nullable("totalLogBlocks", "long"),
            _nullable("totalCorruptLogBlock", "long"),
            _nullable("totalRollbackBlocks", "long"),
            _nullable("fileSizeInBytes", "long"),
            _nullable("logVersion", "int"),
            _nullable("logOffset", "long"),
            _nullable("baseFile", "string"),
            _nullable("logFiles", dict(_STRING_ARRAY)),
            _nullable("cdcStats", {"type": "map", "values": "long"}),
            _nullable("prevBaseFile", "string"),
            _nullable("minEventTime", "long"),
            _nullable("maxEventTime", "long"),
            _nullable("runtimeStats", runtime_stats),
            _nullable("totalLogFilesCompacted", "long"),
            _nullable("totalLogReadTimeMs", "long"),
            _nullable("totalLogSizeCompacted", "long"),
            _nullable("tempPath", "string"),
            _nullable("numUpdates", "long"),
        ],
    )


def _commit_fields() -> list[Schema]:
    return [
        _nullable(
            "partitionToWriteStats",
            {"type": "map", "values": {"type": "array", "items": write_stat_schema()}},
        ),
        _nullable("compacted", "boolean"),
        _nullable("extraMetadata", _string_map()),
        _version(),
        _nullable("operationType", "string"),
    ]


def commit_metadata_schema() -> Schema:
    """``HoodieCommitMetadata``: completed and inflight commit / deltacommit files."""
    return _record(COMMIT_METADATA, _commit_fields(), namespace=True)


def replace_commit_metadata_schema() -> Schema:
    """``HoodieReplaceCommitMetadata``: completed replacecommit (insert overwrite, clustering).

    The commit fields plus ``partitionToReplaceFileIds`` (partition -> replaced file ids), which
    is how both Hudi and hudi-rs learn which file groups a replacecommit retired.
    """
    fields = _commit_fields()
    fields.append(_nullable("partitionToReplaceFileIds", {"type": "map", "values": _STRING_ARRAY}))
    return _record(REPLACE_COMMIT_METADATA, fields, namespace=True)


def compaction_plan_schema() -> Schema:
    """``HoodieCompactionPlan`` (file ``HoodieCompactionOperation.avsc``): ``.compaction.requested``.

    ``baseInstantTime`` and ``fileId`` have no default in Hudi's schema; kept that way.
    """
    operation = _record(
        "HoodieCompactionOperation",
        [
            _nullable_no_default("baseInstantTime", "string"),
            _nullable("deltaFilePaths", dict(_STRING_ARRAY)),
            _nullable("dataFilePath", "string"),
            _nullable_no_default("fileId", "string"),
            _nullable("partitionPath", "string"),
            _nullable("metrics", {"type": "map", "values": "double"}),
            _nullable("bootstrapFilePath", "string"),
        ],
    )
    strategy = _record(
        "HoodieCompactionStrategy",
        [
            _nullable("compactorClassName", "string"),
            _nullable("strategyParams", _string_map()),
            _version(),
        ],
    )
    return _record(
        COMPACTION_PLAN,
        [
            _nullable("operations", {"type": "array", "items": operation}),
            _nullable("extraMetadata", _string_map()),
            _version(),
            _nullable("strategy", strategy),
            {"name": "preserveHoodieMetadata", "type": ["boolean", "null"], "default": False},
            _nullable("missingSchedulePartitions", dict(_STRING_ARRAY)),
        ],
        namespace=True,
    )


def _instant_info_schema() -> Schema:
    return _record(
        "HoodieInstantInfo",
        [{"name": "commitTime", "type": "string"}, {"name": "action", "type": "string"}],
    )


def rollback_metadata_schema() -> Schema:
    """``HoodieRollbackMetadata``: completed ``rollback`` files.

    Unlike the commit schemas most fields here are required (not unions), as in Hudi's avsc.
    """
    partition = _record(
        "HoodieRollbackPartitionMetadata",
        [
            {"name": "partitionPath", "type": "string"},
            {"name": "successDeleteFiles", "type": dict(_STRING_ARRAY)},
            {"name": "failedDeleteFiles", "type": dict(_STRING_ARRAY)},
            _nullable("rollbackLogFiles", {"type": "map", "values": "long"}),
            _nullable("logFilesFromFailedCommit", {"type": "map", "values": "long"}),
        ],
    )
    return _record(
        ROLLBACK_METADATA,
        [
            {"name": "startRollbackTime", "type": "string"},
            {"name": "timeTakenInMillis", "type": "long"},
            {"name": "totalFilesDeleted", "type": "int"},
            {"name": "commitsRollback", "type": dict(_STRING_ARRAY)},
            {"name": "partitionMetadata", "type": {"type": "map", "values": partition}},
            _version(),
            {
                "name": "instantsRollback",
                "type": {"type": "array", "items": _instant_info_schema()},
                "default": [],
            },
        ],
        namespace=True,
    )


def rollback_plan_schema() -> Schema:
    """``HoodieRollbackPlan``: ``.rollback.requested`` (the instant to roll back, files to delete).

    The array field really is spelled ``RollbackRequests`` (capital R) in Hudi's schema.
    """
    request = _record(
        "HoodieRollbackRequest",
        [
            {"name": "partitionPath", "type": "string"},
            _nullable("fileId", "string"),
            _nullable("latestBaseInstant", "string"),
            {"name": "filesToBeDeleted", "type": dict(_STRING_ARRAY), "default": []},
            _nullable("logBlocksToBeDeleted", {"type": "map", "values": "long"}),
        ],
    )
    return _record(
        ROLLBACK_PLAN,
        [
            _nullable("instantToRollback", _instant_info_schema()),
            _nullable("RollbackRequests", {"type": "array", "items": request}),
            _version(),
        ],
        namespace=True,
    )


def requested_replace_metadata_schema() -> Schema:
    """``HoodieRequestedReplaceMetadata``: ``.replacecommit.requested`` / ``.clustering.requested``.

    Embeds ``HoodieClusteringPlan`` -> ``HoodieClusteringGroup`` -> ``HoodieSliceInfo`` and
    ``HoodieClusteringStrategy`` exactly as Hudi 1.x writes them.
    """
    slice_info = _record(
        "HoodieSliceInfo",
        [
            _nullable("dataFilePath", "string"),
            _nullable("deltaFilePaths", dict(_STRING_ARRAY)),
            _nullable_no_default("fileId", "string"),
            _nullable("partitionPath", "string"),
            _nullable("bootstrapFilePath", "string"),
            _version(),
        ],
    )
    group = _record(
        "HoodieClusteringGroup",
        [
            _nullable("slices", {"type": "array", "items": slice_info}),
            _nullable("metrics", {"type": "map", "values": "double"}),
            {"name": "numOutputFileGroups", "type": ["int", "null"], "default": 1},
            _nullable("extraMetadata", _string_map()),
            _version(),
        ],
    )
    strategy = _record(
        "HoodieClusteringStrategy",
        [
            _nullable("strategyClassName", "string"),
            _nullable("strategyParams", _string_map()),
            _version(),
        ],
    )
    plan = _record(
        "HoodieClusteringPlan",
        [
            _nullable("inputGroups", {"type": "array", "items": group}),
            _nullable("strategy", strategy),
            _nullable("extraMetadata", _string_map()),
            _version(),
            _nullable("preserveHoodieMetadata", "boolean"),
            _nullable("missingSchedulePartitions", dict(_STRING_ARRAY)),
        ],
    )
    return _record(
        REQUESTED_REPLACE_METADATA,
        [
            _nullable("operationType", "string"),
            _nullable("clusteringPlan", plan),
            _nullable("extraMetadata", _string_map()),
            _version(),
        ],
        namespace=True,
    )


def all_schemas() -> dict[str, Schema]:
    """Every schema this module defines, by short record name (for tests and tooling)."""
    return {
        COMMIT_METADATA: commit_metadata_schema(),
        REPLACE_COMMIT_METADATA: replace_commit_metadata_schema(),
        COMPACTION_PLAN: compaction_plan_schema(),
        ROLLBACK_METADATA: rollback_metadata_schema(),
        ROLLBACK_PLAN: rollback_plan_schema(),
        REQUESTED_REPLACE_METADATA: requested_replace_metadata_schema(),
    }
