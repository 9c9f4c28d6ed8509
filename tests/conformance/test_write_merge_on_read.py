"""Hudi's ``TestWriteMergeOnRead`` ported onto the models (note §12).

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/sink/
TestWriteMergeOnRead.java`` at Hudi 1.1 (master at the release-1.1.0 cut, ``4f80914b``; the newest
stored version, ``read_file`` id ``18894141698``, has the same steps for the methods ported here).
As in Hudi the class extends ``TestWriteCopyOnWrite``
(:mod:`tests.conformance.test_write_copy_on_write`) with table type MERGE_ON_READ, so every
inherited method runs again here on the model's async coordinator (Hudi 1.1: MOR is not blocking).
Where an inherited port's outcome on MOR differs from COW the method is re-declared here with its
own mark; Hudi's empty overrides stay empty.
"""

from __future__ import annotations

import pytest

import tests.conformance.test_write_copy_on_write as cow
from models.format.properties import MERGE_ON_READ
from tests.conformance.harness import (
    DATA_SET_PART1,
    DATA_SET_PART3,
    DATA_SET_PART4,
    Conf,
)


class TestWriteMergeOnRead(cow.TestWriteCopyOnWrite):
    """``TestWriteMergeOnRead extends TestWriteCopyOnWrite``."""

    TABLE_TYPE = MERGE_ON_READ

    def set_up(self, conf: Conf) -> Conf:
        """``setUp(conf)``: ``compaction.async.enabled = false`` (the harness runs no
        compaction)."""
        return conf

    def get_mini_batch_expected(self) -> dict[str, str]:
        """MOR mode merges the messages with the same key."""
        return {"par1": "[id1,par1,id1,Danny,23,1,par1]"}

    # --- Hudi's empty overrides ------------------------------------------------------------------

    def test_partial_failover(self) -> None:
        """``TestWriteMergeOnRead#testPartialFailover``: empty in Hudi ("partial failover is only
        valid for append mode")."""

    def test_insert_append_mode(self) -> None:
        """``TestWriteMergeOnRead#testInsertAppendMode``: empty in Hudi ("append mode is only valid
        for cow table")."""

    # --- inherited ports whose outcome differs on MOR ---------------------------------------

    def test_non_blocked_instant_request_after_failover(self) -> None:
        """``TestWriteCopyOnWrite#testNonBlockedInstantRequestAfterFailover`` on MOR, Hudi 1.1 at
        4f80914b (note 11.6): the restarted task's flush into the pending instant of checkpoint key
        1."""
        super().test_non_blocked_instant_request_after_failover()

    def test_blocked_instant_time_request(self) -> None:
        """``TestWriteCopyOnWrite#testBlockedInstantTimeRequest`` on MOR, Hudi 1.1 at 4f80914b (note
        11.7): async, nothing blocks, so the second thread's step runs at ``t1.join()``. Its
        ``checkpointComplete(1)`` finds the coordinator's instant (of key 1) not committed by
        notification 1 and throws inside the thread, in Hudi as here; JUnit ignores it."""
        super().test_blocked_instant_time_request()

    @pytest.mark.parametrize("use_file_group_reader_based_merge_handle", [True, False])
    def test_insert_with_mini_batches(self, use_file_group_reader_based_merge_handle: bool) -> None:
        """``TestWriteCopyOnWrite#testInsertWithMiniBatches`` on MOR, Hudi 1.1 at 4f80914b (note
        11.12): each mini-batch is a log file of the same instant."""
        super().test_insert_with_mini_batches(use_file_group_reader_based_merge_handle)

    def test_insert_with_deduplication(self) -> None:
        """``TestWriteCopyOnWrite#testInsertWithDeduplication`` on MOR, Hudi 1.1 at 4f80914b (note
        11.13)."""
        super().test_insert_with_deduplication()

    def test_insert_with_small_buffer_size(self) -> None:
        """``TestWriteCopyOnWrite#testInsertWithSmallBufferSize`` on MOR, Hudi 1.1 at 4f80914b (note
        11.16)."""
        super().test_insert_with_small_buffer_size()

    @pytest.mark.parametrize(
        "mode",
        ["OCC", "NBCC"],
    )
    def test_write_multi_writer_involved(self, mode: str) -> None:
        """``TestWriteCopyOnWrite#testWriteMultiWriterInvolved`` on MOR, Hudi 1.1 at 4f80914b (note
        11.20): NBCC commits both."""
        super().test_write_multi_writer_involved(mode)

    @pytest.mark.parametrize(
        "mode",
        ["OCC", "NBCC"],
    )
    def test_write_multi_writer_partial_overlapping(self, mode: str) -> None:
        """``TestWriteCopyOnWrite#testWriteMultiWriterPartialOverlapping`` on MOR, Hudi 1.1 at
        4f80914b (note 11.21): NBCC commits both."""
        super().test_write_multi_writer_partial_overlapping(mode)

    # --- MOR-specific --------------------------------------------------------------------------

    def test_recommit_after_coordinator_restart(self) -> None:
        """``TestWriteMergeOnRead#testRecommitAfterCoordinatorRestart``, Hudi 1.1 at 4f80914b (note
        12.4). ``restartCoordinator`` = a new coordinator restored from checkpoint 2's coordinator
        state; ``subTaskFails(0, 0)`` re-sends the task's checkpoint-2 state."""
        expected = {
            "par1": "[id1,par1,id1,Danny,23,1,par1]",
            "par2": "[id3,par2,id3,Julian,53,3,par2, id4,par2,id4,Fabian,31,4,par2]",
        }
        (
            self.prepare_pipeline(self.conf)
            .consume(DATA_SET_PART1)
            .empty_event_buffer()
            .checkpoint(1)
            .assert_next_event(1, "par1")
            .consume(DATA_SET_PART3)
            .checkpoint(2)
            # both ckp-1 and ckp-2 are not committing
            .assert_next_event(1, "par2")
            # restart: the coordinator resets to ckp-2 and recommits the metadata of ckp-1
            .restart_coordinator()
            .subtask_fails(0, 0)
            # the subtask resends its write metadata and the coordinator recommits ckp-2's
            .assert_next_event()
            # insert another batch of data.
            .consume(DATA_SET_PART4)
            .checkpoint(3)
            .assert_next_event(1, "par2")
            # write metadata will be committed for ckp-3
            .checkpoint_complete(3)
            # there should be 3 rows and 2 partitions
            .check_written_data(expected, 2)
            .end()
        )
