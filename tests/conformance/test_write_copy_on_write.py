"""Hudi's ``TestWriteCopyOnWrite`` ported onto the models (note §11).

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/sink/
TestWriteCopyOnWrite.java`` at Hudi 1.1 (master at the release-1.1.0 cut, ``4f80914b``; the newest
stored version, ``read_file`` id ``125761148``, has the same steps). The class is also the base of
``TestWriteMergeOnRead`` (:mod:`tests.conformance.test_write_merge_on_read`), as in Hudi: every
method runs again on MERGE_ON_READ there. COW upserts run on the model's blocking coordinator, as
Hudi 1.1's ``isBlockingInstantGeneration`` says. The steps are those of
:class:`~tests.conformance.harness.TestHarness`; its module docstring lists the translations.
A ported test that fails is a finding about the model, fixed in the model.
"""

from __future__ import annotations

import pytest

from models.flink.coordinator import CommitConflictError
from models.format.properties import COPY_ON_WRITE
from tests.conformance.harness import (
    DATA_SET_INSERT,
    DATA_SET_INSERT_DUPLICATES,
    DATA_SET_INSERT_SAME_KEY,
    DATA_SET_UPDATE_DELETE,
    DATA_SET_UPDATE_INSERT,
    EXPECTED1,
    EXPECTED2,
    EXPECTED3,
    EXPECTED4,
    EXPECTED5,
    Conf,
    TableBase,
    TestHarness,
)

BATCH_SIZE_MB = 0.00013
"""For RowData write function: to trigger buffer flush with batch size exceeded by 3 rows, each
record is 48 bytes."""
BUFFER_SIZE_MB = 0.0003
"""For RowData write function: to trigger buffer flush with memory pool exhausted."""


class TestWriteCopyOnWrite:
    """``TestWriteCopyOnWrite extends TestWriteBase``."""

    TABLE_TYPE = COPY_ON_WRITE

    @pytest.fixture(autouse=True)
    def before(self) -> None:
        """``TestWriteBase#before``: the default configuration on a new table folder."""
        self.conf = self.set_up(Conf(table_type=self.TABLE_TYPE))
        self.base = TableBase(self.TABLE_TYPE)

    def set_up(self, conf: Conf) -> Conf:
        """``setUp(conf)``: nothing for COW."""
        return conf

    def prepare_pipeline(self, conf: Conf | None = None) -> TestHarness:
        return TestHarness.instance(self.base).prepare_pipeline(conf or self.conf)

    def get_mini_batch_expected(self) -> dict[str, str]:
        """COW: "the last 2 lines are merged" -- three rows of id1."""
        return {
            "par1": "["
            "id1,par1,id1,Danny,23,1,par1, "
            "id1,par1,id1,Danny,23,1,par1, "
            "id1,par1,id1,Danny,23,1,par1]"
        }

    def get_upsert_with_delete_expected(self) -> dict[str, str]:
        """id3, id5 were deleted and id9 is ignored."""
        return {
            "par1": "[id1,par1,id1,Danny,24,1,par1, id2,par1,id2,Stephen,34,2,par1]",
            "par2": "[id4,par2,id4,Fabian,31,4,par2]",
            "par3": "[id6,par3,id6,Emma,20,6,par3]",
            "par4": "[id7,par4,id7,Bob,44,7,par4, id8,par4,id8,Han,56,8,par4]",
        }

    # --- checkpoints and failover --------------------------------------------------------------

    @pytest.mark.parametrize("allow_empty_commit", [True, False])
    def test_checkpoint(self, allow_empty_commit: bool) -> None:
        """``TestWriteCopyOnWrite#testCheckpoint(allowEmptyCommit)``, Hudi 1.1 at 4f80914b (note
        11.1)."""
        self.conf = self.conf.clone(allow_empty_commit=allow_empty_commit)
        (
            self.prepare_pipeline(self.conf)
            .consume(DATA_SET_INSERT)
            # no checkpoint, so the coordinator does not accept any events
            .empty_event_buffer()
            .checkpoint(1)
            .assert_next_event(4, "par1,par2,par3,par4")
            .checkpoint_complete(1)
            # checkpoint for next round, no data input
            .checkpoint(2)
            .assert_empty_event()
            .empty_checkpoint(2)
            .end()
        )

    def test_checkpoint_fails(self) -> None:
        """``TestWriteCopyOnWrite#testCheckpointFails``, Hudi 1.1 at 4f80914b (note 11.2).
        ``checkpointFails`` = Flink's abort, a no-op in Hudi's coordinator: nothing is called."""
        self.conf = self.conf.clone(commit_ack_timeout_ms=1)
        (
            self.prepare_pipeline(self.conf)
            # no data written and triggers checkpoint fails
            .checkpoint(1)
            .assert_empty_event()
            .checkpoint_fails(1)
            .consume(DATA_SET_INSERT)
            # do not send the write event and fails the checkpoint
            .checkpoint_fails(2)
            .end()
        )

    def test_subtask_fails(self) -> None:
        """``TestWriteCopyOnWrite#testSubtaskFails``, Hudi 1.1 at 4f80914b (note 11.3)."""
        self.conf = self.conf.clone(commit_ack_timeout_ms=1)
        (
            self.prepare_pipeline()
            .checkpoint(1)
            .assert_empty_event()
            .subtask_fails(0)
            .assert_instant_recommit()
            # write a commit and check the result
            .consume(DATA_SET_INSERT)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data(EXPECTED1)
            # task 0 failover: an empty bootstrap event cleans the legacy events
            .subtask_fails(0, 1)
            .assert_empty_event()
            .checkpoint(3)
            .assert_empty_event()
            .subtask_fails(0, 2)
            .assert_empty_event()
            .checkpoint_complete(4)
            .check_completed_instant_count(3)
            # the last complete instant back to inflight: a commit failure; the job fails over
            .rollback_last_complete_instant_to_inflight()
            .job_failover()
            .assert_next_event()
            # another checkpoint ack event would trigger the recommit of restored instant
            .check_last_pending_instant_completed()
            .end()
        )

    def test_append_insert_after_failover_with_empty_checkpoint(self) -> None:
        """``TestWriteCopyOnWrite#testAppendInsertAfterFailoverWithEmptyCheckpoint``, Hudi 1.1 at
        4f80914b (note 11.4): INSERT, append mode."""
        self.conf = self.conf.clone(commit_ack_timeout_ms=10_000, operation="insert")
        (
            self.prepare_pipeline()
            .assert_empty_data_files()
            # make an empty snapshot
            .checkpoint(1)
            .assert_empty_event()
            # trigger a partial failure
            .subtask_fails(0, 1)
            .assert_next_event()
            .assert_next_sub_task_event()
            # write a set of data and check the result
            .consume(DATA_SET_INSERT)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data(EXPECTED1)
            .end()
        )

    def test_partial_failover(self) -> None:
        """``TestWriteCopyOnWrite#testPartialFailover``, Hudi 1.1 at 4f80914b (note 11.5): INSERT,
        append mode; ``restartCoordinator`` replays no state (``InsertFunctionWrapper``)."""
        self.conf = self.conf.clone(commit_ack_timeout_ms=1, operation="insert")
        (
            self.prepare_pipeline()
            .subtask_fails(0, 1)
            .assert_empty_event()
            # the subtask reuses the pending instant
            .checkpoint(3)
            .assert_next_event()
            .restart_coordinator()
            .subtask_fails(0, 2)
            .assert_empty_event()
            .checkpoint(4)
            .assert_next_event()
            .subtask_fails(0, 3)
            .assert_empty_event()
            .checkpoint(5)
            .assert_next_event()
            .subtask_fails(0, 4)
            .assert_empty_event()
            .end()
        )

    def test_non_blocked_instant_request_after_failover(self) -> None:
        """``TestWriteCopyOnWrite#testNonBlockedInstantRequestAfterFailover``, Hudi 1.1 at 4f80914b
        (note 11.6): mini-batches, pre-combine."""
        self.conf = self.conf.clone(
            write_batch_size_mb=BATCH_SIZE_MB, pre_combine=True, commit_ack_timeout_ms=10_000
        )
        expected = {"par1": "[id1,par1,id1,Danny,23,1,par1]"}
        (
            self.prepare_pipeline()
            # will eager flush
            .consume(DATA_SET_INSERT_DUPLICATES)
            .checkpoint(1)
            .all_data_flushed()
            .handle_events(2)
            .checkpoint_complete(1)
            .check_written_data(expected, 1)
            # will eager flush
            .consume(DATA_SET_INSERT_DUPLICATES)
            .handle_events(1)
            # task failover, and send empty bootstrap event to coordinator
            .subtask_fails(0, 1)
            # handle the bootstrap event and reset buffer for subtask 0
            .assert_next_event()
            # consume new data, will not be blocked
            .consume(DATA_SET_INSERT)
            .checkpoint(2)
            .handle_events(1)
            .checkpoint_complete(2)
            .check_written_data(EXPECTED1, 4)
            .end()
        )

    def test_blocked_instant_time_request(self) -> None:
        """``TestWriteCopyOnWrite#testBlockedInstantTimeRequest``, Hudi 1.1 at 4f80914b (note 11.7).
        Hudi's second thread (sleep 3 s, then complete checkpoint 1) runs when the main thread's
        instant request blocks, or at ``t1.join()`` if none does; as in Java, what it throws does
        not fail the test."""
        self.conf = self.conf.clone(
            write_batch_size_mb=BATCH_SIZE_MB, pre_combine=True, commit_ack_timeout_ms=10_000
        )
        expected = {"par1": "[id1,par1,id1,Danny,23,1,par1]"}
        harness = (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_data_buffer(1, 2)
            .checkpoint(1)
            .all_data_flushed()
            .handle_events(2)
        )

        def t1() -> None:
            harness.checkpoint_complete(1)
            harness.check_written_data(expected, 1)

        harness.pipeline.on_blocked = harness.other_thread(t1)
        (
            harness
            # new records flushing while cp1 is not completed yet
            .consume(DATA_SET_INSERT_DUPLICATES)
            .consume(DATA_SET_INSERT)
            .checkpoint(2)
            .all_data_flushed()
        )
        harness.join_blocked_step()
        harness.handle_events(3).checkpoint_complete(2).check_written_data(EXPECTED1, 4).end()

    # --- writes --------------------------------------------------------------------------------

    def test_insert(self) -> None:
        """``TestWriteCopyOnWrite#testInsert``, Hudi 1.1 at 4f80914b (note 11.8)."""
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .check_written_data(EXPECTED1)
            .end()
        )

    def test_insert_duplicates(self) -> None:
        """``TestWriteCopyOnWrite#testInsertDuplicates``, Hudi 1.1 at 4f80914b (note 11.9):
        pre-combine."""
        self.conf = self.conf.clone(pre_combine=True)
        (
            self.prepare_pipeline(self.conf)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .check_written_data(EXPECTED3, 1)
            # insert duplicates again
            .consume(DATA_SET_INSERT_DUPLICATES)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data(EXPECTED3, 1)
            .end()
        )

    def test_upsert(self) -> None:
        """``TestWriteCopyOnWrite#testUpsert``, Hudi 1.1 at 4f80914b (note 11.10)."""
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            # upsert another data buffer
            .consume(DATA_SET_UPDATE_INSERT)
            # the data is not flushed yet
            .check_written_data(EXPECTED1)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data(EXPECTED2)
            .end()
        )

    def test_upsert_with_delete(self) -> None:
        """``TestWriteCopyOnWrite#testUpsertWithDelete``, Hudi 1.1 at 4f80914b (note 11.11). A
        DELETE row is a row with ``_hoodie_is_deleted = true``."""
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .consume(DATA_SET_UPDATE_DELETE)
            .check_written_data(EXPECTED1)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data(self.get_upsert_with_delete_expected())
            .end()
        )

    @pytest.mark.parametrize("use_file_group_reader_based_merge_handle", [True, False])
    def test_insert_with_mini_batches(self, use_file_group_reader_based_merge_handle: bool) -> None:
        """``TestWriteCopyOnWrite#testInsertWithMiniBatches(useFileGroupReaderBasedMergeHandle)``,
        Hudi 1.1 at 4f80914b (note 11.12). The merge handle class has no counterpart: both
        parameters run the same model path."""
        del use_file_group_reader_based_merge_handle
        self.conf = self.conf.clone(write_batch_size_mb=BATCH_SIZE_MB)
        expected = self.get_mini_batch_expected()
        (
            self.prepare_pipeline(self.conf)
            # 3 records from 5 should trigger a mini-batch write
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_data_buffer(1, 2)
            .checkpoint(1)
            .all_data_flushed()
            .handle_events(2)
            .checkpoint_complete(1)
            .check_written_data(expected, 1)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .checkpoint(2)
            .handle_events(2)
            .checkpoint_complete(2)
            .check_written_data(expected, 1)
            .end()
        )

    def test_insert_with_deduplication(self) -> None:
        """``TestWriteCopyOnWrite#testInsertWithDeduplication``, Hudi 1.1 at 4f80914b (note
        11.13)."""
        self.conf = self.conf.clone(write_batch_size_mb=BATCH_SIZE_MB, pre_combine=True)
        expected = {"par1": "[id1,par1,id1,Danny,23,4,par1]"}
        (
            self.prepare_pipeline(self.conf)
            # 3 records from 5 should trigger a mini-batch write
            .consume(DATA_SET_INSERT_SAME_KEY)
            .assert_data_buffer(1, 2)
            .checkpoint(1)
            .all_data_flushed()
            .handle_events(2)
            .checkpoint_complete(1)
            .check_written_data(expected, 1)
            .consume(DATA_SET_INSERT_SAME_KEY)
            .checkpoint(2)
            .handle_events(2)
            .checkpoint_complete(2)
            .check_written_data(expected, 1)
            .end()
        )

    def test_insert_append_mode(self) -> None:
        """``TestWriteCopyOnWrite#testInsertAppendMode``, Hudi 1.1 at 4f80914b (note 11.14): INSERT,
        append mode, no de-duplication."""
        self.conf = self.conf.clone(operation="insert")
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT_SAME_KEY)
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .check_written_all_data(EXPECTED4, 1)
            .consume(DATA_SET_INSERT_SAME_KEY)
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            .check_written_data_cow(EXPECTED5)
            .end()
        )

    def test_insert_with_small_buffer_size(self) -> None:
        """``TestWriteCopyOnWrite#testInsertWithSmallBufferSize``, Hudi 1.1 at 4f80914b (note
        11.16). "In rowdata write mode, BinaryInMemorySortBuffer need at least 2 memory segments
        for auxiliary information, the page size is tuned to 64 to make sure 3 records from 5
        will trigger a mini-batch write"; the memory pool flushes the max size bucket."""
        self.conf = self.conf.clone(
            write_memory_segment_page_size=64, write_task_max_size_mb=200 + BUFFER_SIZE_MB
        )
        expected = self.get_mini_batch_expected()
        (
            self.prepare_pipeline(self.conf)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_data_buffer(1, 2)
            .checkpoint(1)
            .all_data_flushed()
            .handle_events(2)
            .checkpoint_complete(1)
            .check_written_data(expected, 1)
            # insert duplicates again
            .consume(DATA_SET_INSERT_DUPLICATES)
            .checkpoint(2)
            .handle_events(2)
            .checkpoint_complete(2)
            # Same the original base file content.
            .check_written_data(expected, 1)
            .end()
        )

    def test_commit_on_empty_batch(self) -> None:
        """``TestWriteCopyOnWrite#testCommitOnEmptyBatch``, Hudi 1.1 at 4f80914b (note 11.17)."""
        self.conf = self.conf.clone(allow_empty_commit=True)
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .check_completed_instant_count(1)
            # Do checkpoint without data consumption
            .checkpoint(2)
            .assert_next_event()
            .checkpoint_complete(2)
            # The instant is committed successfully
            .check_completed_instant_count(2)
            # Continue to consume data
            .consume(DATA_SET_UPDATE_INSERT)
            .check_written_data(EXPECTED1)
            .checkpoint(3)
            .assert_next_event()
            .checkpoint_complete(3)
            .check_completed_instant_count(3)
            # Commit the data and check after an empty batch
            .check_written_data(EXPECTED2)
            # Do checkpoint without data consumption
            .checkpoint(4)
            .assert_next_event()
            .checkpoint_complete(4)
            .check_completed_instant_count(4)
            .check_written_data(EXPECTED2)
            .end()
        )

    # --- concurrency control -------------------------------------------------------------------

    def validate_concurrent_commit(self, pipeline: TestHarness, mode: str) -> None:
        if mode == "NBCC":
            # NB-CC allows concurrent modification of the same fileGroup
            pipeline.checkpoint_complete(1).check_written_data(EXPECTED3, 1)
        else:
            # normal OCC should throw exception otherwise
            pipeline.checkpoint_complete_throws(1, CommitConflictError, "Cannot resolve conflicts")

    def multi_writer_conf(self, mode: str) -> Conf:
        """``WRITE_CONCURRENCY_MODE``, bucket index (the model's layout), pre-combine."""
        return self.conf.clone(concurrency_mode=mode, pre_combine=True)

    def validate_non_blocking_concurrency_control_conditions(self, conf: Conf) -> None:
        """Hudi: ``preparePipeline`` throws ``IllegalArgumentException`` ("Non-blocking concurrency
        control requires the MOR table with simple bucket index")."""
        with pytest.raises(ValueError):
            self.prepare_pipeline(conf)

    @pytest.mark.parametrize(
        "mode",
        [
            "OCC",
            "NBCC",
        ],
    )
    def test_write_multi_writer_involved(self, mode: str) -> None:
        """``TestWriteCopyOnWrite#testWriteMultiWriterInvolved(writeConcurrencyMode)``, Hudi 1.1 at
        4f80914b (note 11.20): txn2's time range inside txn1's. ``HoodieWriteConflictException`` is
        the model's :class:`CommitConflictError`; ``write.client.id`` is a second job on the
        table."""
        conf = self.multi_writer_conf(mode)
        if self.TABLE_TYPE == COPY_ON_WRITE and mode == "NBCC":
            self.validate_non_blocking_concurrency_control_conditions(conf)
            return
        pipeline1 = (
            self.prepare_pipeline(conf)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
        )
        # now start pipeline2 and commit the txn
        conf2 = conf.clone(write_client_id="2")
        pipeline2 = (
            self.prepare_pipeline(conf2)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_data_files_exists()
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .check_written_data(EXPECTED3, 1)
        )
        # step to commit the 2nd txn
        self.validate_concurrent_commit(pipeline1, mode)
        pipeline1.end()
        pipeline2.end()

    @pytest.mark.parametrize(
        "mode",
        [
            "OCC",
            "NBCC",
        ],
    )
    def test_write_multi_writer_partial_overlapping(self, mode: str) -> None:
        """``TestWriteCopyOnWrite#testWriteMultiWriterPartialOverlapping(writeConcurrencyMode)``,
        Hudi 1.1 at 4f80914b (note 11.21): txn2's time range overlaps the end of txn1's."""
        conf = self.multi_writer_conf(mode)
        if self.TABLE_TYPE == COPY_ON_WRITE and mode == "NBCC":
            self.validate_non_blocking_concurrency_control_conditions(conf)
            return
        pipeline1 = (
            self.prepare_pipeline(conf)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_empty_data_files()
            .checkpoint(1)
            .assert_next_event()
        )
        # now start pipeline2 and suspend the txn commit
        conf2 = conf.clone(write_client_id="2")
        pipeline2 = (
            self.prepare_pipeline(conf2)
            .consume(DATA_SET_INSERT_DUPLICATES)
            .assert_data_files_exists()
            .checkpoint(1)
            .assert_next_event()
        )
        # step to commit the 1st txn, should succeed
        pipeline1.checkpoint_complete(1).check_written_data(EXPECTED3, 1)
        # step to commit the 2nd txn
        self.validate_concurrent_commit(pipeline2, mode)
        pipeline1.end()
        pipeline2.end()

    def test_write_exactly_once(self) -> None:
        """``TestWriteCopyOnWrite#testWriteExactlyOnce``, Hudi 1.1 at 4f80914b: a 630-byte
        buffer of 128-byte pages flushes mini-batches; with checkpoint 2's instant pending (its
        events handled, not committed), a mini-batch of the next interval needs a new instant and
        the blocking mode's commit guard times out after write.commit.ack.timeout.
        ``resetInstantTimeRequest`` has no counterpart: the harness's requests always reach the
        coordinator."""
        self.conf = self.conf.clone(
            commit_ack_timeout_ms=1000,
            write_memory_segment_page_size=128,
            write_task_max_size_mb=200.0006,  # 630 bytes buffer size
        )
        pipeline = (
            self.prepare_pipeline(self.conf)
            .consume(DATA_SET_INSERT)
            .initial_event_buffer()
            .checkpoint(1)
            .handle_events(4)
            .checkpoint_complete(1)
            # requested instant with checkpoint id as 1
            .consume(DATA_SET_INSERT)
            .checkpoint(2)
            .handle_events(4)
        )
        # requested instant with checkpoint id as 2
        if self.conf.instant_generation == "blocking":
            pipeline.assert_consume_throws(
                DATA_SET_INSERT, "Timeout(1000ms) while waiting for instants"
            ).end()
        else:
            pipeline.consume(DATA_SET_INSERT).end()

    def test_rollback_failed_writes_with_lazy_clean_policy(self) -> None:
        """``TestWriteCopyOnWrite#testRollbackFailedWritesWithLazyCleanPolicy``, Hudi 1.1 at
        4f80914b (note 11.23). The clean policy has no effect on the model's coordinator."""
        self.conf = self.conf.clone(failed_writes_clean_policy="LAZY")
        (
            self.prepare_pipeline()
            .consume(DATA_SET_INSERT)
            .checkpoint(1)
            .assert_next_event()
            .checkpoint_complete(1)
            .subtask_fails(0, 1)
            .assert_empty_event()
            .rollback_last_complete_instant_to_inflight()
            .job_failover()
            .subtask_fails(0, 2)
            # the last checkpoint instant was not rolled back by subTaskFails(0, 1)
            .assert_next_event()
            .end()
        )
