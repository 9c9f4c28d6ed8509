"""Tests for models/format/commit_metadata.py and models/format/avro_schemas.py against real Hudi tables.

Every instant file of every fixture table is read; what the metadata says is checked against the
data files on disk and against the other instants (compaction plan vs compaction commit, clustering
plan vs replacecommit, rollback plan vs rollback). What we write is read back by us, by fastavro
with Hudi's own embedded schema as reader schema (the way Java resolves it), and by hudi-rs.
"""

from __future__ import annotations

import copy
import io
import json
import pickle
import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fastavro.schema import parse_schema, to_parsing_canonical_form

from models.format import avro_schemas
from models.format.commit_metadata import (
    CommitMetadata,
    WriteStat,
    read_commit_metadata,
    write_commit_metadata,
)
from models.format.compaction_plan import (
    CompactionOperation,
    CompactionPlan,
    read_compaction_plan,
    write_compaction_plan,
)
from models.format.instant_serde import (
    AVRO_MAGIC,
    FrozenMap,
    MetadataFormatError,
    content_kind,
    read_instant_record,
)
from models.format.requested_replace import (
    ClusteringGroup,
    ClusteringSlice,
    RequestedReplaceMetadata,
    read_requested_replace_metadata,
    write_requested_replace_metadata,
)
from models.format.rollback_metadata import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
    read_rollback_metadata,
    read_rollback_plan,
    write_rollback_metadata,
    write_rollback_plan,
)

V9_TXNS = "sample_table_mor_avro_v9_txns_simple_nometa"
V9_ROLLBACK = "sample_table_mor_avro_v9_nonpartitioned_rollback"
V8_TRIPS = "quickstart_trips_table_mor_avro_v8_trips_8i3u1d"
V8_COW = "sample_table_cow_v8_nonpartitioned"
V8_COW_PARTITIONED = "sample_table_cow_v8_simplekeygen_nonhivestyle"
V6_COW = "sample_table_cow_v6_nonpartitioned"
V6_MOR_PARQUET = "sample_table_mor_parquet_v6_nonpartitioned"
V6_TRIPS = "quickstart_trips_table_mor_avro_v6_trips_8i1u"

# <requested>[_<completion>].<action>[.<state>]; a bare "<t>.inflight" is the commit action.
INSTANT_NAME = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.(requested|inflight))?$")
COMMIT_ACTIONS = {"commit", "deltacommit", "replacecommit"}
LOG_NAME = re.compile(r"^\.(.+)_(\d+)\.log\.(\d+)_(\d+-\d+-\d+)$")


class Instant:
    """One instant file of a fixture table, parsed from its name."""

    def __init__(self, path: Path) -> None:
        match = INSTANT_NAME.match(path.name)
        assert match, path.name
        self.path = path
        self.requested, self.completed_at, action, state = match.groups()
        if action == "inflight":  # "<t>.inflight" is an inflight commit
            action, state = "commit", "inflight"
        self.action = action
        self.state = state or "completed"

    @property
    def data(self) -> bytes:
        return self.path.read_bytes()

    def __repr__(self) -> str:
        return self.path.name


class Table:
    def __init__(self, root: Path) -> None:
        self.root = root
        timeline = root / ".hoodie" / "timeline"
        self.layout = 2 if timeline.is_dir() else 1
        self.timeline = timeline if self.layout == 2 else root / ".hoodie"
        self.instants = sorted(
            (
                Instant(p)
                for p in self.timeline.iterdir()
                if p.is_file() and INSTANT_NAME.match(p.name)
            ),
            key=lambda i: (i.requested, i.path.name),
        )

    def completed(self, *actions: str) -> list[Instant]:
        return [i for i in self.instants if i.state == "completed" and i.action in actions]

    def find(self, requested: str, action: str, state: str) -> Instant:
        (hit,) = [
            i
            for i in self.instants
            if i.requested == requested and i.action == action and i.state == state
        ]
        return hit

    def partition_dir(self, partition: str) -> Path:
        return self.root / partition if partition else self.root


@pytest.fixture(scope="session")
def hudi_tables(fixture_tables: dict[str, Path]) -> dict[str, Table]:
    """Zip stem -> parsed table (the shared unzip in tests/conftest.py)."""
    return {name: Table(path) for name, path in fixture_tables.items()}


def _commit_like(table: Table) -> list[Instant]:
    return [i for i in table.instants if i.action in COMMIT_ACTIONS and i.state != "requested"]


# --------------------------------------------------------------------------------------------
# Reading every fixture instant
# --------------------------------------------------------------------------------------------


def test_every_instant_file_of_every_table_reads(hudi_tables: dict[str, Table]) -> None:
    kinds: dict[str, int] = {}
    for table in hudi_tables.values():
        for inst in table.instants:
            data = inst.data
            kind = content_kind(data)
            kinds[kind] = kinds.get(kind, 0) + 1
            if table.layout == 2:
                assert kind in ("avro", "empty"), inst
            if inst.action in COMMIT_ACTIONS and inst.state != "requested":
                meta = read_commit_metadata(data)
                assert meta.operation_type != "UNKNOWN" or not data, inst
            elif inst.action in ("commit", "deltacommit") and inst.state == "requested":
                assert data == b"" and read_commit_metadata(data) == CommitMetadata()
            elif inst.action == "compaction" and inst.state == "requested":
                assert read_compaction_plan(data).operations, inst
            elif inst.action in ("replacecommit", "clustering") and inst.state == "requested":
                read_requested_replace_metadata(data)
            elif inst.action == "rollback" and inst.state == "requested":
                assert read_rollback_plan(data).instant_to_rollback is not None
            elif inst.action == "rollback" and inst.state == "completed":
                assert read_rollback_metadata(data).commits_rollback
            elif data:
                assert read_instant_record(data).schema_name.startswith("HoodieIndex"), inst
    assert kinds.keys() == {"avro", "json", "empty"}


@pytest.mark.parametrize(
    "name",
    [V8_COW, V8_COW_PARTITIONED, V8_TRIPS, V9_TXNS, V9_ROLLBACK, V6_COW, V6_MOR_PARQUET, V6_TRIPS],
)
def test_completed_write_stats_name_files_that_exist(
    hudi_tables: dict[str, Table], name: str
) -> None:
    table = hudi_tables[name]
    completed = table.completed(*COMMIT_ACTIONS)
    assert completed
    for inst in completed:
        meta = read_commit_metadata(inst.data)
        assert meta.write_stats(), inst
        assert meta.schema is not None and json.loads(meta.schema)["type"] == "record"
        for partition, stats in meta.partition_to_write_stats.items():
            for stat in stats:
                assert stat.partition_path == partition
                assert stat.file_id and stat.path, inst
                assert (table.root / stat.path).is_file(), f"{inst}: {stat.path} missing"
                assert Path(stat.path).parent == Path(partition)
                if stat.is_log_write:
                    log = LOG_NAME.match(stat.file_name)
                    assert log and log.group(1) == stat.file_id
                    assert stat.log_files == (stat.file_name,)
                    # v8+: a log is named by its deltacommit's requested time; v6: by the base
                    # instant of the slice it targets (docs/protocol.md section 3).
                    if table.layout == 2:
                        assert log.group(2) == inst.requested
                        assert stat.base_file == ""
                    else:
                        assert stat.base_file and stat.base_file.endswith(
                            f"_{log.group(2)}.parquet"
                        )
                else:
                    assert stat.file_name.startswith(stat.file_id + "_")
                    assert stat.file_name.endswith(f"_{inst.requested}.parquet")
                    assert stat.file_size_in_bytes == (table.root / stat.path).stat().st_size


def test_inflight_files_hold_commit_metadata_workload_profiles(
    hudi_tables: dict[str, Table],
) -> None:
    """Inflight commit-like files are HoodieCommitMetadata; new inserts have an empty file id."""
    table = hudi_tables[V9_TXNS]
    inflights = [i for i in table.instants if i.state == "inflight" and i.action in COMMIT_ACTIONS]
    assert len(inflights) >= 10
    for inst in inflights:
        assert read_instant_record(inst.data).schema_name == "HoodieCommitMetadata"
        meta = read_commit_metadata(inst.data)
        assert meta.schema is None
        completed = read_commit_metadata(table.find(inst.requested, inst.action, "completed").data)
        assert meta.operation_type == completed.operation_type
        assert set(meta.file_groups()) <= set(completed.file_groups())


def test_v6_json_commit_values(hudi_tables: dict[str, Table]) -> None:
    """The same values hudi-rs asserts for this commit (crates/core metadata/commit.rs tests)."""
    table = hudi_tables[V6_COW]
    inst = table.find("20240418173551906", "commit", "completed")
    assert content_kind(inst.data) == "json"
    meta = read_commit_metadata(inst.data)
    assert meta.operation_type == "UPSERT" and meta.compacted is False
    (stat,) = meta.partition_to_write_stats[""]
    assert stat.file_id == "a079bdb3-731c-4894-b855-abfcd6921007-0"
    assert (stat.num_writes, stat.num_inserts, stat.num_deletes) == (4, 1, 0)
    assert (stat.num_update_writes, stat.total_write_bytes) == (1, 441520)
    assert stat.prev_commit == "20240418173550988"
    first = read_commit_metadata(table.find("20240418173550988", "commit", "completed").data)
    assert first.write_stats()[0].prev_commit is None  # Hudi's "null" string


def test_compaction_plans_match_files_and_the_compaction_commit(
    hudi_tables: dict[str, Table],
) -> None:
    checked = 0
    for table in (hudi_tables[V8_TRIPS], hudi_tables[V9_TXNS]):
        completion = {i.requested: i.completed_at for i in table.completed("deltacommit")}
        for inst in [
            i for i in table.instants if i.action == "compaction" and i.state == "requested"
        ]:
            plan = read_compaction_plan(inst.data)
            assert plan.version == 2
            for op in plan.operations:
                part = table.partition_dir(op.partition_path)
                assert op.data_file_path and (part / op.data_file_path).is_file()
                assert op.data_file_path.startswith(op.file_id + "_")
                assert op.data_file_path.endswith(f"_{op.base_instant_time}.parquet")
                assert op.metrics["TOTAL_LOG_FILES"] == len(op.delta_file_paths)
                for delta in op.delta_file_paths:
                    assert (part / delta).is_file()
                    log = LOG_NAME.match(delta)
                    assert log and log.group(1) == op.file_id
                    # completion-time slicing: the plan takes the logs that completed before
                    # the compaction was requested (docs/protocol.md section 4)
                    assert completion[log.group(2)] < inst.requested
            # a completed compaction is written as a commit with the same requested time
            done = read_commit_metadata(table.find(inst.requested, "commit", "completed").data)
            assert done.compacted and done.operation_type == "COMPACT"
            assert done.file_groups() == plan.file_groups()
            for stat in done.write_stats():
                op = plan.operation_for(stat.partition_path, stat.file_id)
                assert op is not None and stat.prev_base_file == op.data_file_path
                assert stat.total_log_files_compacted == len(op.delta_file_paths)
            checked += 1
    assert checked == 2


def test_replacecommits_name_the_replaced_file_groups(hudi_tables: dict[str, Table]) -> None:
    table = hudi_tables[V9_TXNS]
    overwrite, clustering = table.completed("replacecommit")
    meta = read_commit_metadata(overwrite.data)
    assert read_instant_record(overwrite.data).schema_name == "HoodieReplaceCommitMetadata"
    assert meta.operation_type == "INSERT_OVERWRITE"
    assert meta.replaced_file_groups() == (
        ("region=eu", "be8660fe-da4e-43c3-80cf-4fccb89ab0cc-0"),
        ("region=eu", "c06fe141-9f11-46fb-aa70-d7f9d2dcca2f-0"),
    )
    assert meta.replaced_file_ids() == tuple(fid for _, fid in meta.replaced_file_groups())
    requested = read_requested_replace_metadata(
        table.find(overwrite.requested, "replacecommit", "requested").data
    )
    assert requested == RequestedReplaceMetadata() and not requested.has_plan

    # clustering: the plan's input file groups are exactly what the replacecommit retires
    plan = read_requested_replace_metadata(
        table.find(clustering.requested, "clustering", "requested").data
    )
    assert plan.operation_type == "CLUSTER" and plan.has_plan and len(plan.input_groups) == 3
    done = read_commit_metadata(clustering.data)
    assert done.operation_type == "CLUSTER"
    assert done.replaced_file_groups() == plan.file_groups()
    assert not set(done.file_groups()) & set(done.replaced_file_groups())

    # every replaced file group was written by an earlier completed instant and still has files
    for inst in (overwrite, clustering):
        replaced = read_commit_metadata(inst.data).replaced_file_groups()
        for partition, file_id in replaced:
            assert list(table.partition_dir(partition).glob(f"{file_id}_*.parquet"))
            writers = [
                e
                for e in table.completed(*COMMIT_ACTIONS)
                if e.requested < inst.requested
                and (partition, file_id) in read_commit_metadata(e.data).file_groups()
            ]
            assert writers, (partition, file_id)


def test_rollback_plan_and_metadata(hudi_tables: dict[str, Table]) -> None:
    table = hudi_tables[V9_ROLLBACK]
    (done,) = table.completed("rollback")
    meta = read_rollback_metadata(done.data)
    plan = read_rollback_plan(table.find(done.requested, "rollback", "requested").data)
    assert meta.start_rollback_time == done.requested
    assert meta.commits_rollback == ("20260403184242950",)
    assert meta.instants_rollback == (InstantInfo("20260403184242950", "deltacommit"),)
    assert plan.instant_to_rollback == meta.instants_rollback[0]
    assert meta.total_files_deleted == len(meta.deleted_files()) == 1
    assert set(plan.files_to_delete()) == set(meta.deleted_files())
    for path in meta.deleted_files():
        assert not (table.root / Path(path).name).exists()
    # the rolled-back instant left no instant file behind
    assert not [i for i in table.instants if i.requested == "20260403184242950"]


# --------------------------------------------------------------------------------------------
# Schemas: ours against what Hudi embedded in the fixture files
# --------------------------------------------------------------------------------------------


def _normalise_schema(node: Any) -> Any:
    """Drop Java-only props and docs, collapse ``{"type": X}`` to X, drop defaults on types."""
    if isinstance(node, list):
        return [_normalise_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {
        k: _normalise_schema(v)
        for k, v in node.items()
        if k not in ("avro.java.string", "doc") and not (k == "default" and "name" not in node)
    }
    if out.get("type") == "record":
        out.pop("default", None)
    if set(out) == {"type"}:
        return out["type"]
    return out


def _fixture_schemas(hudi_tables: dict[str, Table]) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for table in hudi_tables.values():
        for inst in table.instants:
            data = inst.data
            if data.startswith(AVRO_MAGIC):
                reader = fastavro.reader(io.BytesIO(data))
                found[reader.writer_schema["name"].rsplit(".", 1)[-1]] = json.loads(
                    reader.metadata["avro.schema"]
                )
    return found


def test_our_schemas_equal_the_schemas_hudi_embeds(hudi_tables: dict[str, Table]) -> None:
    embedded = _fixture_schemas(hudi_tables)
    ours = avro_schemas.all_schemas()
    assert set(ours) <= set(embedded)
    for name, schema in ours.items():
        theirs = embedded[name]
        assert to_parsing_canonical_form(parse_schema(schema)) == to_parsing_canonical_form(
            parse_schema(theirs)
        ), name
        # canonical form ignores defaults; compare them (and everything else) too
        assert _normalise_schema(schema) == _normalise_schema(theirs), name


def _raw(data: bytes, reader_schema: dict | None = None) -> tuple[str, dict]:
    reader = fastavro.reader(io.BytesIO(data), reader_schema=reader_schema)
    (record,) = list(reader)
    return reader.writer_schema["name"], record


def test_written_avro_resolves_against_hudis_schema(hudi_tables: dict[str, Table]) -> None:
    """Read our files with Hudi's embedded schema as reader schema, as Java's reader does."""
    embedded = _fixture_schemas(hudi_tables)
    table = hudi_tables[V9_TXNS]
    overwrite = table.completed("replacecommit")[0]
    meta = read_commit_metadata(overwrite.data)
    ours = write_commit_metadata(meta, replace=True)
    name, record = _raw(ours, embedded["HoodieReplaceCommitMetadata"])
    assert name == "org.apache.hudi.avro.model.HoodieReplaceCommitMetadata"
    _, theirs = _raw(overwrite.data)
    assert record["partitionToReplaceFileIds"] == {
        p: sorted(ids) for p, ids in theirs["partitionToReplaceFileIds"].items()
    }
    assert list(record) == [f["name"] for f in embedded["HoodieReplaceCommitMetadata"]["fields"]]
    for partition, stats in record["partitionToWriteStats"].items():
        for ours_stat, their_stat in zip(
            stats,
            sorted(theirs["partitionToWriteStats"][partition], key=lambda s: s["fileId"]),
            strict=True,
        ):
            for key in (
                "fileId",
                "path",
                "prevCommit",
                "numWrites",
                "numInserts",
                "partitionPath",
                "fileSizeInBytes",
                "totalWriteBytes",
                "baseFile",
                "logFiles",
            ):
                assert ours_stat[key] == their_stat[key], key

    deltacommit = table.completed("deltacommit")[1]
    ours = write_commit_metadata(read_commit_metadata(deltacommit.data))
    name, record = _raw(ours, embedded["HoodieCommitMetadata"])
    assert name == "org.apache.hudi.avro.model.HoodieCommitMetadata"
    _, theirs = _raw(deltacommit.data)
    assert record["extraMetadata"] == theirs["extraMetadata"]
    assert record["operationType"] == theirs["operationType"] == "UPSERT_PREPPED"

    plan_file = table.find("20260307135839895", "compaction", "requested")
    ours = write_compaction_plan(read_compaction_plan(plan_file.data))
    _, record = _raw(ours, embedded["HoodieCompactionPlan"])
    _, theirs = _raw(plan_file.data)
    key = lambda op: op["fileId"]  # noqa: E731
    assert sorted(record["operations"], key=key) == sorted(theirs["operations"], key=key)
    assert {k: v for k, v in record.items() if k != "operations"} == {
        k: v for k, v in theirs.items() if k != "operations"
    }

    rollback = hudi_tables[V9_ROLLBACK].completed("rollback")[0]
    _, record = _raw(
        write_rollback_metadata(read_rollback_metadata(rollback.data)),
        embedded["HoodieRollbackMetadata"],
    )
    assert record == _raw(rollback.data)[1]


# --------------------------------------------------------------------------------------------
# Round trips and determinism
# --------------------------------------------------------------------------------------------


def test_round_trip_every_fixture_instant(hudi_tables: dict[str, Table]) -> None:
    for table in hudi_tables.values():
        for inst in table.instants:
            data = inst.data
            if inst.action in COMMIT_ACTIONS and inst.state != "requested":
                meta = read_commit_metadata(data)
                is_replace = inst.action == "replacecommit" and inst.state == "completed"
                out = write_commit_metadata(meta, replace=is_replace)
                again = read_commit_metadata(out)
                assert again == meta, inst
                assert write_commit_metadata(again, replace=is_replace) == out, inst
                expected = "HoodieReplaceCommitMetadata" if is_replace else "HoodieCommitMetadata"
                assert read_instant_record(out).schema_name == expected
            elif inst.action == "compaction" and inst.state == "requested":
                plan = read_compaction_plan(data)
                assert read_compaction_plan(write_compaction_plan(plan)) == plan
            elif inst.action == "rollback" and inst.state == "completed":
                meta = read_rollback_metadata(data)
                assert read_rollback_metadata(write_rollback_metadata(meta)) == meta
            elif inst.action == "rollback" and inst.state == "requested":
                plan = read_rollback_plan(data)
                assert read_rollback_plan(write_rollback_plan(plan)) == plan
            elif inst.action in ("replacecommit", "clustering") and inst.state == "requested":
                req = read_requested_replace_metadata(data)
                out = write_requested_replace_metadata(req)
                assert read_requested_replace_metadata(out) == req
                if not req.has_plan:
                    # byte-for-byte Hudi's record (all null), only the container header differs
                    assert _raw(out)[1] == _raw(data)[1]


def _sample_commit() -> CommitMetadata:
    stats = {
        "p=2": (
            WriteStat("fg-b", "p=2/fg-b_0-1-1_20250101000000001.parquet", "p=2", num_writes=3),
            WriteStat(
                "fg-a",
                "p=2/.fg-a_20250101000000001.log.1_0-1-2",
                "p=2",
                prev_commit="20250101000000001",
                num_writes=1,
                num_update_writes=1,
                base_file="",
                log_files=(".fg-a_20250101000000001.log.1_0-1-2",),
                log_version=1,
                log_offset=0,
            ),
        ),
        "p=1": (WriteStat("fg-c", "p=1/fg-c_0-1-3_20250101000000001.parquet", "p=1"),),
    }
    return CommitMetadata(
        partition_to_write_stats=stats,
        operation_type="UPSERT",
        extra_metadata={"schema": '{"type":"record","name":"r","fields":[]}', "b": "2"},
    )


def test_write_is_deterministic_and_order_independent() -> None:
    meta = _sample_commit()
    shuffled = CommitMetadata(
        partition_to_write_stats={
            p: tuple(reversed(s)) for p, s in reversed(list(meta.partition_to_write_stats.items()))
        },
        operation_type="UPSERT",
        extra_metadata=dict(reversed(list(meta.extra_metadata.items()))),
    )
    assert shuffled == meta
    out = write_commit_metadata(meta)
    assert write_commit_metadata(shuffled) == out == write_commit_metadata(meta)
    assert list(meta.partition_to_write_stats) == ["p=1", "p=2"]
    assert [s.file_id for s in meta] == ["fg-c", "fg-a", "fg-b"]
    # the sync marker follows the content instead of being random
    other = write_commit_metadata(replace(meta, operation_type="INSERT"))
    assert out[-16:] != other[-16:]
    assert out.startswith(AVRO_MAGIC) and read_commit_metadata(out) == meta


def test_commit_metadata_helpers() -> None:
    meta = _sample_commit()
    assert meta.schema == '{"type":"record","name":"r","fields":[]}'
    assert CommitMetadata().schema is None and CommitMetadata().is_empty
    assert meta.file_groups() == (("p=1", "fg-c"), ("p=2", "fg-a"), ("p=2", "fg-b"))
    assert meta.file_ids() == ("fg-a", "fg-b", "fg-c")
    assert meta.replaced_file_ids() == () and meta.total_records_written() == 4
    replaced = replace(meta, partition_to_replace_file_ids={"p=2": ("x", "a"), "p=1": ("x",)})
    assert replaced.replaced_file_ids() == ("a", "x")
    assert replaced.replaced_file_groups() == (("p=1", "x"), ("p=2", "a"), ("p=2", "x"))
    out = write_commit_metadata(replaced)
    assert read_instant_record(out).schema_name == "HoodieReplaceCommitMetadata"
    assert read_commit_metadata(out) == replaced
    with pytest.raises(MetadataFormatError):
        write_commit_metadata(replaced, replace=False)
    # a replacecommit that replaced nothing still uses the replace record when asked to
    assert read_instant_record(write_commit_metadata(meta, replace=True)).schema_name == (
        "HoodieReplaceCommitMetadata"
    )
    with pytest.raises(TypeError):
        meta.partition_to_write_stats["p=3"] = ()  # type: ignore[index]
    stat = meta.write_stats()[1]
    assert stat.is_log_write and stat.file_name == ".fg-a_20250101000000001.log.1_0-1-2"


def test_metadata_objects_are_hashable_and_picklable(hudi_tables: dict[str, Table]) -> None:
    """The simulator keys on them and the Spark replay ships them between processes."""
    table = hudi_tables[V9_TXNS]
    objects = [
        _sample_commit(),
        read_commit_metadata(table.completed("replacecommit")[1].data),
        read_compaction_plan(table.find("20260307135839895", "compaction", "requested").data),
        read_requested_replace_metadata(
            table.find("20260307135840454", "clustering", "requested").data
        ),
        read_rollback_metadata(hudi_tables[V9_ROLLBACK].completed("rollback")[0].data),
        read_rollback_plan(
            hudi_tables[V9_ROLLBACK].find("20260403184259077", "rollback", "requested").data
        ),
    ]
    for obj in objects:
        clone = pickle.loads(pickle.dumps(obj))
        assert clone == obj and hash(clone) == hash(obj)
        assert copy.deepcopy(obj) == obj
    assert len(set(objects)) == len(objects)
    assert FrozenMap({"b": 1, "a": 2}) == {"a": 2, "b": 1}
    assert list(FrozenMap({"b": 1, "a": 2})) == ["a", "b"]


def test_written_commit_has_hudis_null_conventions() -> None:
    _, record = _raw(write_commit_metadata(_sample_commit()))
    stat = record["partitionToWriteStats"]["p=1"][0]
    assert stat["prevCommit"] == "null"  # HoodieWriteStat.NULL_COMMIT
    assert stat["logFiles"] is None and stat["baseFile"] is None
    assert stat["numInserts"] == 0 and stat["runtimeStats"] is None
    assert record["version"] is None and record["compacted"] is False
    _, empty = _raw(write_commit_metadata(CommitMetadata()))
    assert empty["partitionToWriteStats"] == {} and empty["extraMetadata"] == {}
    assert empty["operationType"] == "UNKNOWN"


def test_other_records_round_trip_from_scratch() -> None:
    plan = CompactionPlan(
        operations=(
            CompactionOperation("002", "p", "fg-2", None, (".fg-2_003.log.1_0-1-1",)),
            CompactionOperation(
                "001", "p", "fg-1", "fg-1_0-1-1_001.parquet", (), {"TOTAL_LOG_FILES": 0}
            ),
        ),
    )
    out = write_compaction_plan(plan)
    assert read_compaction_plan(out) == plan and plan.file_groups() == (
        ("p", "fg-1"),
        ("p", "fg-2"),
    )
    assert write_compaction_plan(read_compaction_plan(out)) == out
    assert plan.operation_for("p", "fg-9") is None

    rollback = RollbackMetadata(
        start_rollback_time="005",
        commits_rollback=("004",),
        partition_metadata={
            "p": RollbackPartitionMetadata("p", ("p/b.parquet", "p/a.parquet")),
        },
        instants_rollback=(InstantInfo("004", "deltacommit"),),
        time_taken_ms=12,
    )
    assert rollback.total_files_deleted == 2
    assert read_rollback_metadata(write_rollback_metadata(rollback)) == rollback

    rollback_plan = RollbackPlan(
        InstantInfo("004", "commit"), (RollbackRequest("p", "", "", ("p/a.parquet",)),)
    )
    assert read_rollback_plan(write_rollback_plan(rollback_plan)) == rollback_plan

    clustering = RequestedReplaceMetadata(
        operation_type="CLUSTER",
        input_groups=(
            ClusteringGroup((ClusteringSlice("p", "fg-1", "p/fg-1_0-1-1_001.parquet"),)),
        ),
        strategy_class_name="org.apache.hudi.client.clustering.run.strategy.X",
    )
    out = write_requested_replace_metadata(clustering)
    assert read_requested_replace_metadata(out) == clustering
    assert clustering.file_groups() == (("p", "fg-1"),)


# --------------------------------------------------------------------------------------------
# Bad content
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_avro() -> bytes:
    return write_commit_metadata(_sample_commit())


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda b: b[: len(b) // 2], id="truncated"),
        pytest.param(lambda b: b[:-10], id="truncated-tail"),
        pytest.param(lambda b: b[:4] + b"\xff" * 40 + b[44:], id="header-garbage"),
        pytest.param(lambda b: b"garbage that is not metadata", id="garbage"),
        pytest.param(lambda b: b'{"partitionToWriteStats": ', id="bad-json"),
        pytest.param(lambda b: b'{"partitionToWriteStats": []}', id="json-wrong-type"),
        pytest.param(lambda b: b'{"compacted": "yes"}', id="json-wrong-bool"),
        pytest.param(
            lambda b: b'{"partitionToWriteStats": {"": [{"numWrites": "4"}]}}', id="json-bad-int"
        ),
        pytest.param(lambda b: b"\xff\xfe{", id="binary"),
    ],
)
def test_corrupt_commit_metadata_raises(good_avro: bytes, mutate: Any) -> None:
    with pytest.raises(MetadataFormatError) as info:
        read_commit_metadata(mutate(good_avro))
    assert "\n" not in str(info.value) and str(info.value)


def test_wrong_kind_of_record_raises(hudi_tables: dict[str, Table], good_avro: bytes) -> None:
    plan = hudi_tables[V9_TXNS].find("20260307135839895", "compaction", "requested").data
    with pytest.raises(MetadataFormatError, match="HoodieCompactionPlan"):
        read_commit_metadata(plan)
    with pytest.raises(MetadataFormatError, match="HoodieCommitMetadata"):
        read_compaction_plan(good_avro)
    with pytest.raises(MetadataFormatError, match="empty"):
        read_compaction_plan(b"")
    with pytest.raises(MetadataFormatError):
        read_rollback_metadata(good_avro)
    with pytest.raises(MetadataFormatError):
        read_instant_record(b'{"a": 1}')


def test_empty_and_record_count() -> None:
    assert read_commit_metadata(b"") == CommitMetadata()
    assert read_commit_metadata(b"  \n") == CommitMetadata()
    assert read_commit_metadata(b"{}") == CommitMetadata()
    schema = parse_schema(avro_schemas.commit_metadata_schema())
    for count in (0, 2):
        buf = io.BytesIO()
        record = {
            "partitionToWriteStats": None,
            "compacted": None,
            "extraMetadata": None,
            "version": None,
            "operationType": None,
        }
        fastavro.writer(buf, schema, [record] * count)
        with pytest.raises(MetadataFormatError, match="exactly one"):
            read_commit_metadata(buf.getvalue())


def test_unencodable_values_raise() -> None:
    bad = CommitMetadata(extra_metadata={"schema": 5})  # type: ignore[dict-item]
    with pytest.raises(MetadataFormatError, match="cannot encode"):
        write_commit_metadata(bad)


# --------------------------------------------------------------------------------------------
# hudi-rs reads what we write
# --------------------------------------------------------------------------------------------


def _hudi_view(root: Path, as_of: list[str]) -> dict[str, Any]:
    hudi = pytest.importorskip("hudi")
    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()

    def rows(options: Any) -> list[str]:
        batches = table.read(options)
        return sorted(
            json.dumps(row, sort_keys=True, default=str) for b in batches for row in b.to_pylist()
        )

    timeline = table.get_timeline()
    return {
        "slices": sorted(
            (s.partition_path, s.file_id, s.base_file_name, tuple(s.log_file_names))
            for s in table.get_file_slices()
        ),
        "snapshot": rows(hudi.HudiReadOptions()),
        "as_of": {t: rows(hudi.HudiReadOptions().with_as_of_timestamp(t)) for t in as_of},
        "incremental": rows(
            hudi.HudiReadOptions()
            .with_query_type(hudi.HudiQueryType.Incremental)
            .with_start_timestamp("0")
        ),
        "schema": table.get_schema_in_avro_str(),
        "commits": [(i.timestamp, i.action) for i in timeline.get_completed_commits()],
        "replacecommits": [
            (i.timestamp, i.action) for i in timeline.get_completed_replacecommits()
        ],
        "latest_schema": timeline.get_latest_avro_schema(),
    }


@pytest.mark.oracle
@pytest.mark.parametrize("name", [V9_TXNS, V8_TRIPS, V8_COW_PARTITIONED, V9_ROLLBACK])
def test_hudi_rs_reads_tables_whose_commits_we_rewrote(
    hudi_tables: dict[str, Table], tmp_path: Path, name: str
) -> None:
    """Rewrite every completed commit/deltacommit/replacecommit with our writer: hudi-rs must see
    the same file slices, rows (snapshot, time travel, incremental) and schema as before."""
    original = hudi_tables[name]
    copy_root = tmp_path / original.root.name
    shutil.copytree(original.root, copy_root)
    copy = Table(copy_root)
    rewritten = 0
    for inst in copy.completed(*COMMIT_ACTIONS):
        meta = read_commit_metadata(inst.data)
        out = write_commit_metadata(meta, replace=inst.action == "replacecommit")
        assert out != inst.data
        inst.path.write_bytes(out)
        rewritten += 1
    assert rewritten
    as_of = [i.requested for i in original.completed(*COMMIT_ACTIONS)]
    assert _hudi_view(copy.root, as_of) == _hudi_view(original.root, as_of)
