"""Hudi's ``TestBucketStreamWriteRecommitRace`` ported onto the models.

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/sink/bucket/
TestBucketStreamWriteRecommitRace.java`` (master, commit ``03d0a190``; ``read_file`` id
``69031300347``): the regression test of apache/hudi#19907 on a MERGE_ON_READ table with one
bucket. The write function is the harness's with the bucket index of
:mod:`sim.flink.bucket_assign` (``Conf.bucket_index``) under the master rule
(``pending_file_ids = "adopted"``); ``pipeline.getCoordinator().handleEventFromOperator`` is the
driver's ``handle_event``. A ported test that fails is a finding about the model, fixed in the
model.
"""

from __future__ import annotations

import pytest

from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.format.properties import MERGE_ON_READ
from tests.conformance.harness import Conf, TableBase, TestHarness, WritePipeline, insert_row

FIRST_BATCH = [insert_row("id1", "Danny", 23, 1, "par1")]
SECOND_BATCH = [insert_row("id2", "Stephen", 33, 2, "par1")]


def file_id_of(event: WriteMetadataEvent | BootstrapEvent) -> str:
    """``((WriteMetadataEvent) event).getWriteStatuses().get(0).getFileId()``."""
    assert isinstance(event, WriteMetadataEvent)
    return event.write_stats[0].file_id


class TestBucketStreamWriteRecommitRace:
    """``TestBucketStreamWriteRecommitRace extends TestWriteBase`` (MOR, bucket index, one
    bucket, ``write.commit.ack.timeout`` 1 ms)."""

    @pytest.fixture(autouse=True)
    def before(self) -> None:
        self.conf = Conf(table_type=MERGE_ON_READ, bucket_index=True, commit_ack_timeout_ms=1)
        self.base = TableBase(MERGE_ON_READ)

    def open_pipeline(self) -> WritePipeline:
        """``new BucketStreamWriteFunctionWrapper(path, conf)`` + ``openFunction()``."""
        return TestHarness.instance(self.base).prepare_pipeline(self.conf).pipeline

    def invoke(self, pipeline: WritePipeline, rows: list) -> None:
        for row in rows:
            pipeline.invoke(row)

    def first_write(self, pipeline: WritePipeline) -> str:
        """Step 1 of both tests: the first batch, ``checkpointFunction(1)``, its flush event
        handed to the coordinator (not committed); fileId-A."""
        self.invoke(pipeline, FIRST_BATCH)
        pipeline.checkpoint_function(1)
        flush_event = pipeline.next_event()
        pipeline.driver.handle_event(flush_event)
        return file_id_of(flush_event)

    def test_reuse_pending_file_id_avoids_duplicate_after_recommit_race(self) -> None:
        """``#testReusePendingFileIdAvoidsDuplicateAfterRecommitRace``: a task-level failover
        while the coordinator keeps fileId-A buffered; the new record adopts it."""
        pipeline = self.open_pipeline()
        # Step 1: first write; checkpoint(1) flushes fileId-A, handled but not committed
        file_id_a = self.first_write(pipeline)
        # Step 2: task-level failover (attempt 1): only an empty bootstrap event, held
        pipeline.subtask_fails(0, 1)
        bootstrap_event = pipeline.next_event()
        # Step 3: a new record for the same bucket adopts the pending fileId-A
        self.invoke(pipeline, SECOND_BATCH)
        # Step 4: the bootstrap is handled, checkpoint(2) flushes the second record into fileId-A
        pipeline.driver.handle_event(bootstrap_event)
        pipeline.checkpoint_function(2)
        flush_event2 = pipeline.next_event()
        assert file_id_of(flush_event2) == file_id_a, (
            "the second record must reuse the pending fileId-A adopted from the coordinator"
        )
        pipeline.driver.handle_event(flush_event2)
        pipeline.checkpoint_complete(2)
        # Step 5: a later restart bootstraps cleanly: the bucket owns exactly one file id
        pipeline.subtask_fails(0, 2)
        pipeline.driver.handle_event(pipeline.next_event())
        self.invoke(pipeline, FIRST_BATCH)  # triggers bootstrapIndexIfNeed for par1

    def test_adopt_committed_file_id_when_recommit_precedes_bootstrap(self) -> None:
        """``#testAdoptCommittedFileIdWhenRecommitPrecedesBootstrap``: a full restart (attempt
        0) re-sends fileId-A's event, the recommit commits it before the next record, which
        loads fileId-A from the committed view."""
        pipeline = self.open_pipeline()
        file_id_a = self.first_write(pipeline)
        pipeline.subtask_fails(0, 0)
        pipeline.driver.handle_event(pipeline.next_event())
        self.invoke(pipeline, SECOND_BATCH)
        pipeline.checkpoint_function(2)
        assert file_id_of(pipeline.next_event()) == file_id_a, (
            "the second record must reuse the committed fileId-A after the recommit"
        )
