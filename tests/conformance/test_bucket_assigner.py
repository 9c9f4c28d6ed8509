"""Hudi's ``TestBucketAssigner`` ported onto :mod:`models.flink.bucket_assigner`.

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/sink/partitioner/
TestBucketAssigner.java`` (``read_file`` id ``1108694511``, the newest stored version; the steps
are the same from 0.14). ``MockBucketAssigner`` is the model's assigner with max parallelism 1024
and ``MockWriteProfile``'s small files; the table is empty, so the average record size is
``hoodie.copyonwrite.record.size.estimate`` (1024 bytes) and the parquet max file size the
default 120 MB. Ported: the eight assigner tests, ``testWriteProfileReload`` and
``testWriteProfileMetadataCache``, whose
``TestData.writeData`` is a write pipeline of :mod:`tests.conformance.harness` (one checkpoint,
committed) and whose ``WriteProfile`` is the model's over that table's committed view; its
assertions on the profile's meta client (``getLastCompleteInstant(writeProfile)``) read the
timeline the profile's view was taken from, which the model's profile does not keep, so they
stand as assertions on the small files' instants. A ported test that fails is a finding about
the model, fixed in the model.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from models.flink.bucket_assigner import (
    INSERT_SPLIT_SIZE,
    RECORD_SIZE_ESTIMATE_BYTES,
    BucketAssigner,
    BucketInfo,
    BucketType,
    SmallFile,
)
from models.flink.write_profile import (
    TableWriteProfile,
    commit_metadata_safely,
    completed_commits,
)
from models.format.properties import COPY_ON_WRITE
from models.view.fsview import latest_file_slices
from tests.conformance.harness import DATA_SET_INSERT, Conf, TableBase, TestHarness, partition_path

MAX_PARALLELISM = 1024


def uuids(seed: int = 0) -> Callable[[], str]:
    """``FSUtils#createNewFileIdPfx``: random UUIDs (seeded)."""
    rng = random.Random(seed)
    return lambda: str(uuid.UUID(int=rng.getrandbits(128), version=4))


@dataclass
class MockWriteProfile:
    """``MockWriteProfile``: the given small files per partition; an empty table otherwise."""

    small_files_map: dict[str, list[SmallFile]] = field(default_factory=dict)
    records_per_bucket: int = INSERT_SPLIT_SIZE
    avg_size: int = RECORD_SIZE_ESTIMATE_BYTES

    def small_files(self, partition_path: str) -> Sequence[SmallFile]:
        return self.small_files_map.get(partition_path, [])

    def reload(self, checkpoint_id: int) -> None:
        pass


def mock_bucket_assigner(
    task_id: int = 0,
    num_tasks: int = 1,
    small_files_map: dict[str, list[SmallFile]] | None = None,
    *,
    insert_split_size: int = INSERT_SPLIT_SIZE,
) -> BucketAssigner:
    """``new MockBucketAssigner(taskID, numTasks, context, config, smallFilesMap)``."""
    profile = MockWriteProfile(small_files_map or {}, records_per_bucket=insert_split_size)
    return BucketAssigner(task_id, num_tasks, profile, uuids(task_id), MAX_PARALLELISM)


def small_file(file_id: str, size_bytes: int) -> SmallFile:
    """``new SmallFile()`` at ``new HoodieRecordLocation("t0", fileId)``."""
    return SmallFile("t0", file_id, size_bytes)


F0 = small_file("f0", 12)
F1 = small_file("f1", 122879)  # "no left space to append new records to this bucket"
F2 = small_file("f2", 56)


def assert_bucket_equals(
    bucket_info: BucketInfo, partition: str, bucket_type: BucketType, file_id: str | None = None
) -> None:
    """``assertBucketEquals``: the whole bucket with a file id, else partition and type."""
    if file_id is not None:
        assert bucket_info == BucketInfo(bucket_type, file_id, partition)
    else:
        assert bucket_info.partition_path == partition
        assert bucket_info.bucket_type == bucket_type


def test_small_files_of_this_task():
    """``testSmallFilesOfThisTask``: file ids a task creates shuffle to itself."""
    assigner1 = mock_bucket_assigner()
    file_id1 = assigner1.create_file_id_of_this_task()
    small_files1 = assigner1.small_files_of_this_task([SmallFile("t0", file_id1, 123)])
    assert len(small_files1) == 1
    # modify the parallelism and test again
    assigner2 = mock_bucket_assigner(123, 200)
    file_id2 = assigner2.create_file_id_of_this_task()
    file_id3 = assigner2.create_file_id_of_this_task()
    assert assigner2.file_id_of_this_task(file_id2) and assigner2.file_id_of_this_task(file_id3)
    small_files2 = assigner1.small_files_of_this_task(
        [SmallFile("t0", file_id2, 123), SmallFile("t0", file_id3, 456)]
    )
    assert len(small_files2) == 2


def test_add_update():
    assigner = mock_bucket_assigner()
    assert_bucket_equals(
        assigner.add_update("par1", "file_id_0"), "par1", BucketType.UPDATE, "file_id_0"
    )
    assigner.add_update("par1", "file_id_0")
    bucket_info = assigner.add_update("par1", "file_id_0")
    assert_bucket_equals(bucket_info, "par1", BucketType.UPDATE, "file_id_0")
    assigner.add_update("par1", "file_id_1")
    bucket_info = assigner.add_update("par1", "file_id_1")
    assert_bucket_equals(bucket_info, "par1", BucketType.UPDATE, "file_id_1")
    bucket_info = assigner.add_update("par2", "file_id_0")
    assert_bucket_equals(bucket_info, "par2", BucketType.UPDATE, "file_id_0")
    bucket_info = assigner.add_update("par3", "file_id_2")
    assert_bucket_equals(bucket_info, "par3", BucketType.UPDATE, "file_id_2")


def test_add_insert():
    assigner = mock_bucket_assigner()
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.INSERT)
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.INSERT)
    assigner.add_insert("par2")
    assert_bucket_equals(assigner.add_insert("par2"), "par2", BucketType.INSERT)
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)


def test_insert_over_bucket_assigned():
    """``testInsertOverBucketAssigned``: ``hoodie.copyonwrite.insert.split.size`` = 2."""
    assigner = mock_bucket_assigner(insert_split_size=2)
    bucket_info1 = assigner.add_insert("par1")
    assert_bucket_equals(bucket_info1, "par1", BucketType.INSERT)
    bucket_info2 = assigner.add_insert("par1")
    assert_bucket_equals(bucket_info2, "par1", BucketType.INSERT)
    assert bucket_info1 == bucket_info2
    bucket_info3 = assigner.add_insert("par1")
    assert_bucket_equals(bucket_info3, "par1", BucketType.INSERT)
    assert bucket_info1 != bucket_info3


def test_insert_with_small_files():
    assigner = mock_bucket_assigner(small_files_map={"par1": [F0, F1], "par2": [F2]})
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner.add_insert("par2")
    assert_bucket_equals(assigner.add_insert("par2"), "par2", BucketType.UPDATE, "f2")
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)


def test_insert_with_partial_small_files():
    """``testInsertWithPartialSmallFiles``: only part of the small files belong to a task."""
    small_files_map = {"par1": [F0, F1, F2]}
    assigner = mock_bucket_assigner(0, 2, small_files_map)
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f2")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f2")
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)
    assert_bucket_equals(assigner.add_insert("par3"), "par3", BucketType.INSERT)
    assigner2 = mock_bucket_assigner(1, 2, small_files_map)
    assert_bucket_equals(assigner2.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner2.add_insert("par1")
    assert_bucket_equals(assigner2.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assert_bucket_equals(assigner2.add_insert("par3"), "par3", BucketType.INSERT)
    assert_bucket_equals(assigner2.add_insert("par3"), "par3", BucketType.INSERT)


def test_update_and_insert_with_small_files():
    assigner = mock_bucket_assigner(small_files_map={"par1": [F0, F1], "par2": [F2]})
    assigner.add_update("par1", "f0")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner.add_update("par1", "f2")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner.add_update("par2", "f0")
    assigner.add_insert("par2")
    assert_bucket_equals(assigner.add_insert("par2"), "par2", BucketType.UPDATE, "f2")


def test_update_and_insert_with_partial_small_files():
    """``testUpdateAndInsertWithPartialSmallFiles``."""
    small_files_map = {"par1": [F0, F1, F2]}
    assigner = mock_bucket_assigner(0, 2, small_files_map)
    assigner.add_update("par1", "f0")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f2")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f2")
    assigner.add_update("par1", "f2")
    assigner.add_insert("par1")
    assert_bucket_equals(assigner.add_insert("par1"), "par1", BucketType.UPDATE, "f2")
    assigner2 = mock_bucket_assigner(1, 2, small_files_map)
    assigner2.add_update("par1", "f0")
    assert_bucket_equals(assigner2.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner2.add_insert("par1")
    assert_bucket_equals(assigner2.add_insert("par1"), "par1", BucketType.UPDATE, "f0")
    assigner2.add_update("par1", "f2")
    assigner2.add_insert("par1")
    assert_bucket_equals(assigner2.add_insert("par1"), "par1", BucketType.UPDATE, "f0")


def write_data(base: TableBase, checkpoint_id: int) -> None:
    """``TestData.writeData(DATA_SET_INSERT, conf)``: one checkpoint of the data, committed."""
    (
        TestHarness.instance(base)
        .prepare_pipeline(Conf(table_type=COPY_ON_WRITE))
        .consume(DATA_SET_INSERT)
        .checkpoint(checkpoint_id)
        .assert_next_event()
        .checkpoint_complete(checkpoint_id)
        .end()
    )


def test_write_profile_reload():
    """``testWriteProfileReload``: the profile answers from the view of its last reload."""
    base = TableBase(COPY_ON_WRITE)
    par1 = partition_path("par1")
    profile = TableWriteProfile(
        lambda: latest_file_slices(base.table.file_groups()[1]), is_mor=False
    )
    assert not profile.small_files(par1), "Should have no small files"
    write_data(base, 1)
    assert not profile.small_files(par1), "the profile was not reloaded"
    profile.reload(1)
    instant1 = base.last_complete_instant()
    assert instant1 is not None
    small_files2 = profile.small_files(par1)
    assert len(small_files2) == 1, "Should have 1 small file"
    assert small_files2[0].instant == instant1, (
        "Small file should have same timestamp as last complete instant"
    )
    write_data(base, 2)
    small_files3 = profile.small_files(par1)
    assert len(small_files3) == 1, "Should have 1 small file"
    assert small_files3[0].instant == instant1, (
        "Non-reloaded write profile has the same base file view as before"
    )
    profile.reload(2)
    instant2 = base.last_complete_instant()
    assert instant2 != instant1, "Should have new complete instant"
    small_files4 = profile.small_files(par1)
    assert len(small_files4) == 1, "Should have 1 small file"
    assert small_files4[0].instant == instant2, (
        "Small file should have same timestamp as last complete instant"
    )


def test_write_profile_metadata_cache():
    """``testWriteProfileMetadataCache``: the record profile reads each commit's metadata once
    and the small-file profile reuses it."""
    base = TableBase(COPY_ON_WRITE)
    profile = TableWriteProfile(
        lambda: latest_file_slices(base.table.file_groups()[1]),
        is_mor=False,
        completed_commits=lambda: completed_commits(base.table),
        commit_metadata=lambda instant: commit_metadata_safely(base.table, instant),
    )
    assert not profile.metadata_cache, "Empty table should no have any instant metadata"
    for checkpoint_id in range(1, 4):  # write 3 instants of data
        write_data(base, checkpoint_id)
    profile.reload(1)  # the record profile triggers the metadata loading
    assert len(profile.metadata_cache) == 3, (
        "Metadata cache should have same number entries as timeline instants"
    )
    profile.small_files(partition_path("par1"))
    assert len(profile.metadata_cache) == 3, "The metadata should be reused"
