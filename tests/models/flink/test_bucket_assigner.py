"""The bucket assigner's state over checkpoints (models/flink/bucket_assigner.py), beyond Hudi's
``TestBucketAssigner`` (tests/conformance/test_bucket_assigner.py): a snapshot clears the bucket
map (the new file continues as an UPDATE), a completed checkpoint clears the small-file
assignments and reloads the profile, and only every second one clears the new-file states."""

from __future__ import annotations

from models.flink.bucket_assigner import BucketInfo, BucketType
from tests.conformance.test_bucket_assigner import (
    MockWriteProfile,
    mock_bucket_assigner,
    small_file,
)


def test_a_snapshot_turns_the_new_file_into_an_update():
    assigner = mock_bucket_assigner()
    first = assigner.add_insert("par1")
    assert first.bucket_type is BucketType.INSERT
    assert assigner.add_insert("par1") == first
    assigner.reset()
    assert assigner.add_insert("par1") == BucketInfo(BucketType.UPDATE, first.file_id, "par1")


def test_new_file_states_survive_one_completed_checkpoint_and_not_two():
    assigner = mock_bucket_assigner()
    first = assigner.add_insert("par1")
    assigner.reset()
    assigner.reload(1)
    assert assigner.add_insert("par1").file_id == first.file_id
    assigner.reset()
    assigner.reload(2)
    second = assigner.add_insert("par1")
    assert second.bucket_type is BucketType.INSERT and second.file_id != first.file_id
    assigner.reset()
    assigner.reload(3)
    assert assigner.add_insert("par1").file_id == second.file_id


def test_a_full_small_file_is_skipped_and_a_reload_reads_the_profile_again():
    # room for (120 MB - size) // 1024 records: one record left in "tight"
    tight = small_file("f0", 120 * 1024 * 1024 - 1024)
    assigner = mock_bucket_assigner(small_files_map={"par1": [tight]})
    assert assigner.add_insert("par1") == BucketInfo(BucketType.UPDATE, "f0", "par1")
    assert assigner.add_insert("par1").bucket_type is BucketType.INSERT
    profile = assigner.profile
    assert isinstance(profile, MockWriteProfile)
    profile.small_files_map["par1"] = [small_file("f0", 12)]
    assert assigner.add_insert("par1").file_id != "f0"  # the cached assignment has no room
    assigner.reload(1)
    assert assigner.add_insert("par1") == BucketInfo(BucketType.UPDATE, "f0", "par1")
