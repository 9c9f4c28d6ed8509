"""``EventBuffers`` as Hudi 1.1 files events (models/flink/event_buffers.py, note §4): events
merge per instant, bootstrap events overwrite their slot in the buffer of their checkpoint id,
an empty bootstrap clears a task's slots at and after its checkpoint."""

from __future__ import annotations

import pytest

from models.flink.event_buffers import EventBuffer, EventBufferError, EventBuffers
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.commit_metadata import WriteStat

I1, I2 = "20260101000000100", "20260101000000200"


def stat(name: str) -> WriteStat:
    return WriteStat(file_id=f"fg-{name}", path=f"part=p0/{name}", partition_path="part=p0")


def event(task: int, instant: str | None, ckp: int, *names: str, last: bool = True):
    return WriteMetadataEvent(task, instant, ckp, tuple(stat(n) for n in names), last, len(names))


def test_an_event_of_another_instant_replaces_the_slot_one_of_the_same_merges():
    buffer = EventBuffer(0, I1, (None, None))
    buffer = buffer.with_event(event(0, I1, 0, "a", last=False))
    buffer = buffer.with_event(event(0, I1, 0, "b"))
    assert [s.path for s in buffer.write_stats] == ["part=p0/a", "part=p0/b"]
    assert not buffer.complete and buffer.has_events and not buffer.is_empty
    replaced = buffer.with_event(event(0, I2, 0, "c"))
    assert [s.path for s in replaced.write_stats] == ["part=p0/c"]
    with pytest.raises(EventBufferError, match="no slot"):
        buffer.with_event(event(2, I1, 0, "d"))


def test_snapshot_filters():
    empty = EventBuffer(0, I1, (None, None))
    assert empty.last_batches_only and not empty.complete
    eager = empty.with_event(event(0, I1, 0, "a", last=False))
    assert not eager.last_batches_only
    full = empty.with_event(event(0, I1, 0, "a")).with_event(event(1, I1, 0, "b"))
    assert full.complete and full.last_batches_only


def test_bootstrap_events_file_under_their_checkpoint_and_complete_when_every_slot_has_one():
    buffers = EventBuffers()
    first = buffers.add_bootstrap(event(0, I1, -1, "a"), parallelism=2)
    assert first.has_bootstrap and not first.all_bootstrap
    again = buffers.add_bootstrap(event(0, I1, -1, "b"), parallelism=2)  # overwrites, no merge
    assert [s.path for s in again.write_stats] == ["part=p0/b"]
    done = buffers.add_bootstrap(event(1, I1, -1, "c"), parallelism=2)
    assert done.all_bootstrap and buffers.checkpoint_ids() == [-1]


def test_a_bootstrap_event_needs_an_instant():
    with pytest.raises(EventBufferError, match="without an instant"):
        EventBuffers().add_bootstrap(event(1, None, 4), parallelism=2)


def test_an_empty_bootstrap_clears_the_tasks_slots_from_its_checkpoint_on():
    buffers = EventBuffers()
    for ckp, instant in ((1, I1), (2, I2)):
        buffer = EventBuffer(ckp, instant, (None, None))
        buffers.put(
            buffer.with_event(event(0, instant, ckp, "a")).with_event(event(1, instant, ckp))
        )
    buffers.clean_legacy_events(BootstrapEvent(0, 2, clears=True))
    assert buffers[1].events[0] is not None  # covered by the restored checkpoint: kept
    assert buffers[2].events[0] is None and buffers[2].events[1] is not None
    assert [b.checkpoint_id for b in buffers.values()] == [1, 2] and buffers.by_instant(I2)
    buffers.reset(1)
    assert buffers.checkpoint_ids() == [2] and 1 not in buffers
