"""Tests for sim/flink/bucket_assign.py: a task loads a partition's bucket file ids when its first
records for it arrive, from the committed view and (adopted) the coordinator's pending ids plus
what it re-sent in its bootstrap; minted UUIDs come from the run's seeded stream."""

from __future__ import annotations

import uuid

import pyarrow as pa

from models.flink.bucket_index import BucketIndex, new_file_id
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.commit_metadata import WriteStat
from sim.flink.bucket_assign import TaskBucketIndex, owned_buckets, uuid_source
from sim.rng import Rng

A = new_file_id(0, str(uuid.UUID(int=1, version=4)))
B = new_file_id(1, str(uuid.UUID(int=2, version=4)))


def rows(*partitions: str) -> pa.Table:
    return pa.table({"part": list(partitions), "key": [f"k{i}" for i in range(len(partitions))]})


def stat(file_id: str, partition: str = "part=p0") -> WriteStat:
    return WriteStat(file_id=file_id, path=f"{partition}/{file_id}.log", partition_path=partition)


def task_index(*, pending: list[str] | None) -> tuple[TaskBucketIndex, list[str]]:
    asked: list[str] = []

    def committed(partition: str) -> list[str]:
        asked.append(partition)
        return [A]

    ix = TaskBucketIndex(
        BucketIndex(nbcc=False, owns=lambda p, b: True, mint_uuid=uuid_source(Rng(1))),
        committed=committed,
        pending=None if pending is None else (lambda partition: pending),
    )
    return ix, asked


def test_each_partition_loads_once_when_its_first_records_arrive():
    ix, asked = task_index(pending=None)
    ix.on_records(rows("p0", "p0"))
    ix.on_records(rows("p0", "p1"))
    assert asked == ["part=p0", "part=p1"]
    assert ix.index.file_id("part=p0", 0) == A


def test_pending_ids_count_only_when_adopted_and_include_the_resent_bootstrap():
    ignored, _ = task_index(pending=None)
    ignored.resent(BootstrapEvent(0, 1, (WriteMetadataEvent(0, "i", -1, (stat(B),)),)))
    ignored.on_records(rows("p0"))
    assert ignored.index.file_id("part=p0", 1) != B
    adopted, _ = task_index(pending=[])
    adopted.resent(BootstrapEvent(0, 1, (WriteMetadataEvent(0, "i", -1, (stat(B),)),)))
    adopted.on_records(rows("p0"))
    assert adopted.index.file_id("part=p0", 1) == B


def test_minted_uuids_are_version_4_and_reproducible():
    first, again = uuid_source(Rng(7)), uuid_source(Rng(7))
    drawn = [first() for _ in range(3)]
    assert drawn == [again() for _ in range(3)] and len(set(drawn)) == 3
    assert all(uuid.UUID(u).version == 4 for u in drawn)


def test_owned_buckets_follow_the_routing():
    owns = owned_buckets(buckets_per_partition=4, parallelism=3, task_id=1)
    assert [b for b in range(4) if owns(0, b)] == [1]
    assert [b for b in range(4) if owns(1, b)] == [0, 3]
