"""Write-metadata and bootstrap events (models/flink/write_events.py): Hudi's ``mergeWith`` semantics."""

from __future__ import annotations

import pytest

from models.flink.write_events import BootstrapEvent, WriteMetadataEvent, merge_write_stats
from models.format.commit_metadata import WriteStat


def stat(name: str) -> WriteStat:
    return WriteStat(file_id=f"fg-{name}", path=f"part=p0/{name}", partition_path="part=p0")


def test_merge_statuses_of_the_same_file_are_merged_others_kept():
    """Hudi 1.1 ``mergeWith`` (HUDI-9762): one status per file, counts summed; the model keeps
    the statuses of different files of one file group apart (each flush is its own log)."""
    same = WriteStat(file_id="fg", path="part=p0/f", partition_path="part=p0", num_writes=2)
    again = WriteStat(file_id="fg", path="part=p0/f", partition_path="part=p0", num_writes=3)
    other = WriteStat(file_id="fg", path="part=p0/g", partition_path="part=p0", num_writes=1)
    a = WriteMetadataEvent(1, "20260101000000000", 3, [same], records=2)
    m = a.merge(WriteMetadataEvent(1, "20260101000000000", 3, [again, other], records=4))
    assert [(s.path, s.num_writes) for s in m.write_stats] == [("part=p0/f", 5), ("part=p0/g", 1)]
    assert merge_write_stats((same, other)) == (same, other)


def test_merge_concatenates_ors_and_sums():
    a = WriteMetadataEvent(1, "20260101000000000", 3, [stat("a")], last_batch=False, records=5)
    b = WriteMetadataEvent(1, "20260101000000000", 4, [stat("b"), stat("c")], True, records=7)
    m = a.merge(b)
    assert m.write_stats == (stat("a"), stat("b"), stat("c"))
    assert m.last_batch is True
    assert m.checkpoint_id == 4
    assert m.records == 12
    assert (m.task_id, m.instant) == (1, "20260101000000000")
    # the inputs are untouched (frozen values)
    assert a.write_stats == (stat("a"),) and a.last_batch is False
    # last_batch is ORed, not taken from the later event
    assert b.merge(a).last_batch is True
    assert b.merge(a).checkpoint_id == 4
    assert not a.merge(a).last_batch


@pytest.mark.parametrize(
    "other",
    [
        WriteMetadataEvent(2, "20260101000000000", 3),
        WriteMetadataEvent(1, "20260101000000001", 3),
        WriteMetadataEvent(1, None, 3),
    ],
)
def test_merge_refuses_other_task_or_instant(other):
    with pytest.raises(ValueError):
        WriteMetadataEvent(1, "20260101000000000", 3).merge(other)


def test_empty_tuple_coercion_and_summary():
    e = WriteMetadataEvent(0, None, -1, [])
    assert e.is_empty and e.write_stats == ()
    full = WriteMetadataEvent(0, "20260101000000000", 2, [stat("x")], True, 9)
    assert not full.is_empty
    assert isinstance(full.write_stats, tuple)
    assert full.summary() == {
        "task": 0,
        "instant": "20260101000000000",
        "checkpoint": 2,
        "files": ["part=p0/x"],
        "last_batch": True,
        "records": 9,
    }
    with pytest.raises(AttributeError):
        full.instant = "x"  # type: ignore[misc]
    assert hash(full) == hash(WriteMetadataEvent(0, "20260101000000000", 2, (stat("x"),), True, 9))


def test_bootstrap_event():
    e = WriteMetadataEvent(3, "20260101000000000", 1, [stat("x")])
    b = BootstrapEvent(3, 2, [e])
    assert b.events == (e,) and not b.is_empty and not b.clears
    assert BootstrapEvent(3, -1).events == ()
    assert BootstrapEvent(3, 2, clears=True).is_empty
