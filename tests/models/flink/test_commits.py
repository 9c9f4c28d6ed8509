"""The commit of an instant whose write statuses hold error records (models/flink/commits.py):
Hudi's ``StreamWriteOperatorCoordinator#doCommit`` rolls it back and throws unless
``write.ignore.failed``; the buffer stays for the restart, which fails the same way without a
second rollback (apache/hudi#18051)."""

from __future__ import annotations

import pytest

from models.flink.commits import CommitRolledBackError
from models.flink.coordinator import WriteCoordinator
from models.flink.write_events import WriteMetadataEvent
from models.timeline.instant import State
from tests.models.flink.test_coordinator import Pipeline


def errored_pipeline(*, ignore_failed: bool = False) -> tuple[Pipeline, str]:
    """Checkpoint 1 taken, its instant's buffer holding one error record from task 0."""
    pipeline = Pipeline()
    pipeline.coordinator = WriteCoordinator(
        pipeline.writer, parallelism=pipeline.parallelism, write_ignore_failed=ignore_failed
    )
    pipeline.ingest(20)
    pipeline.checkpoint(1)
    (buffer,) = pipeline.coordinator.buffers.values()
    failed = WriteMetadataEvent(0, buffer.instant, buffer.checkpoint_id, (), True, error_records=1)
    pipeline.coordinator.buffers.put(buffer.with_event(failed))
    return pipeline, buffer.instant


def rollbacks(pipeline: Pipeline) -> list[str]:
    return [i.requested_time for i in pipeline.writer.timeline.load() if i.action == "rollback"]


def test_error_records_roll_the_instant_back_and_fail_the_commit() -> None:
    pipeline, instant = errored_pipeline()
    written = pipeline.data_files()
    assert written
    message = rf"Commit instant \[{instant}\] failed and rolled back !"
    with pytest.raises(CommitRolledBackError, match=message):
        pipeline.notify(2)
    timeline = pipeline.writer.timeline.load()
    assert timeline.get(instant) is None  # requested and inflight files deleted
    assert len(rollbacks(pipeline)) == 1
    assert pipeline.data_files() == set()  # the instant's files are gone
    assert pipeline.coordinator.pending_instants == [instant]  # the buffer is kept


def test_the_kept_buffer_fails_again_without_a_second_rollback() -> None:
    pipeline, _ = errored_pipeline()
    with pytest.raises(CommitRolledBackError):
        pipeline.notify(2)
    with pytest.raises(CommitRolledBackError):
        pipeline.notify(3)
    assert len(rollbacks(pipeline)) == 1
    assert [i.action for i in pipeline.completed()] == ["rollback"]


def test_write_ignore_failed_commits_without_the_failed_records() -> None:
    pipeline, instant = errored_pipeline(ignore_failed=True)
    (result,) = pipeline.notify(2)
    assert result.instant.requested_time == instant
    assert result.instant.state is State.COMPLETED
    assert rollbacks(pipeline) == []
    assert pipeline.coordinator.pending_instants == []


def test_error_records_are_summed_per_buffer_and_merged_per_task() -> None:
    first = WriteMetadataEvent(0, "1", 0, (), False, 3, error_records=1)
    second = WriteMetadataEvent(0, "1", 0, (), True, 2, error_records=2)
    merged = first.merge(second)
    assert merged.error_records == 3 and merged.records == 5
    assert merged.summary()["error_records"] == 3
    assert "error_records" not in WriteMetadataEvent(0, "1", 0, (), True, 2).summary()
