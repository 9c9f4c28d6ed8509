"""Committing one instant's event buffer, as Hudi's coordinator does (``commitInstant``,
``doCommit``): the write client's commit of the buffer's write statuses, retried on storage
errors, with the OCC check under the table lock; an instant with nothing to commit is dropped,
its heartbeat stopped, and left to failed-writes cleaning (see :mod:`models.flink.coordinator`).

Every commit *finalizes the write* as Hudi's write client does (``HoodieTable.finalizeWrite`` ->
``reconcileAgainstMarkers``, done by :meth:`TableWriter.commit`): a data file the instant's
markers announce as created but no write status of the commit names is deleted, so files left
out of a commit's metadata are gone, not silently visible. A commit that loses its conflict check
(:class:`~models.txn.concurrency.ConcurrentWriteConflict`) raises :class:`CommitConflictError`
and the job fails over, as Hudi's does (``commitInstant`` throws ``HoodieWriteConflictException``
on its ``NonThrownExecutor``, whose hook calls ``context.failJob``).

An instant whose write statuses report error records (records a write handle marked failed,
``WriteStatus#getTotalErrorRecords``) is not committed unless ``write.ignore.failed``: ``doCommit``
rolls it back (``writeClient.rollback(instant)``) and throws, so the job fails over after the
checkpoint that covered the records completed, and they are lost (apache/hudi#18051, open). The
buffer is kept, as Hudi keeps it (``eventBuffers.reset`` runs on success only).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from models.flink.event_buffers import EventBuffer
from models.format.commit_metadata import WriteStat
from models.ports import Steps
from models.table_errors import HoodieException
from models.timeline.instant import Instant, State
from models.txn.concurrency import ConcurrentWriteConflict
from models.write.rollback import RollbackListener, rollback
from models.write.writer import TableWriter

COMMIT_RETRIES = 3
"""Attempts at a commit that fails with a storage error before the job fails over."""


class CoordinatorError(HoodieException, RuntimeError):
    """A protocol violation the coordinator cannot recover from: the job fails over."""


class CommitConflictError(CoordinatorError):
    """A commit lost its OCC conflict check (Hudi's ``HoodieWriteConflictException``, "Cannot
    resolve conflicts for overlapping writes"): the job fails over and recommits the instant."""


class CommitRolledBackError(CoordinatorError):
    """The instant's write statuses hold error records and ``write.ignore.failed`` is off: Hudi's
    ``doCommit`` rolled the instant back and throws ("Commit instant [..] failed and rolled back
    !"); the job fails over (apache/hudi#18051)."""


@dataclass(frozen=True)
class CommitResult:
    """One committed instant, for the history."""

    instant: Instant
    checkpoint_id: int
    records: int
    files: tuple[str, ...]
    recommit: bool = False

    def summary(self) -> dict[str, object]:
        return {
            "instant": self.instant.requested_time,
            "completion": self.instant.completion_time,
            "checkpoint": self.checkpoint_id,
            "records": self.records,
            "files": list(self.files),
            "recommit": self.recommit,
        }


class InstantCommitter:
    """Commits the buffers of one coordinator through its write client."""

    def __init__(
        self,
        writer: TableWriter,
        *,
        operation_type: str,
        allow_empty_commit: bool,
        precommit: Callable[[Instant, tuple[WriteStat, ...]], None] | None,
        on_drop: Callable[[str], None] | None,
        ignore_failed: bool = False,
        on_rollback: RollbackListener | None = None,
    ) -> None:
        """``ignore_failed``: Hudi's ``write.ignore.failed`` (commit whatever the error records);
        ``on_rollback`` is told about the rollback of an instant with error records."""
        self.writer = writer
        self.ignore_failed = ignore_failed
        self.on_rollback = on_rollback
        self.operation_type = operation_type
        self.allow_empty_commit = allow_empty_commit
        self.precommit = precommit
        self.on_drop = on_drop

    def commit(self, buffer: EventBuffer, *, recommit: bool = False) -> Steps[CommitResult | None]:
        """Commit ``buffer`` (None: already completed, or dropped with nothing to commit)."""
        stats = buffer.write_stats
        if self.is_completed(buffer.instant):
            return None
        if buffer.error_records and not self.ignore_failed:
            yield from self._roll_back(buffer.instant)
            raise CommitRolledBackError(
                f"Commit instant [{buffer.instant}] failed and rolled back ! "
                f"({buffer.error_records} error records)"
            )
        if self.nothing_to_commit(buffer):
            self._drop(buffer.instant)
            return None
        if recommit and self.writer.heartbeat is not None:
            self.writer.heartbeat.start(buffer.instant)  # recommitInstant, LAZY (HUDI-6501)
        done = yield from self._write_commit(buffer.instant, stats)
        return CommitResult(
            done, buffer.checkpoint_id, buffer.records, tuple(s.path for s in stats), recommit
        )

    def _write_commit(self, instant_time: str, stats: tuple[WriteStat, ...]) -> Steps[Instant]:
        inflight = Instant(instant_time, State.INFLIGHT, self.writer.default_action)
        precommit = None
        if self.precommit is not None:
            hook = self.precommit

            def precommit() -> None:
                hook(inflight, stats)

        try:
            for attempt in range(COMMIT_RETRIES):
                try:
                    done = yield from self.writer.commit(
                        inflight, stats, self.operation_type, precommit=precommit
                    )
                    return done
                except OSError:
                    if attempt == COMMIT_RETRIES - 1:
                        raise CoordinatorError(
                            f"commit of {instant_time} failed {COMMIT_RETRIES} times"
                        ) from None
        except ConcurrentWriteConflict as conflict:
            raise CommitConflictError(
                f"Cannot resolve conflicts for overlapping writes: {conflict}"
            ) from conflict
        raise AssertionError("unreachable")

    def _roll_back(self, instant_time: str) -> Steps[None]:
        """``doCommit``'s ``writeClient.rollback(instant)`` for an instant with error records;
        an instant no longer pending (rolled back before) is left alone, as Hudi's rollback
        returns false for it ("Cannot find instant .. for rollback")."""
        failed = self.writer.timeline.load().get(instant_time)
        if failed is None or failed.is_completed:
            return
        if self.on_rollback is not None:
            self.on_rollback.rolling_back(instant_time)
        done = yield from rollback(
            self.writer.table, self.writer, failed, self.writer.time_generator
        )
        if self.on_rollback is not None:
            self.on_rollback.rolled_back(instant_time, done)

    def nothing_to_commit(self, buffer: EventBuffer) -> bool:
        """No event at all, or only empty write statuses while empty commits are not allowed."""
        return buffer.is_empty or (not buffer.write_stats and not self.allow_empty_commit)

    def _drop(self, instant_time: str) -> None:
        """Drop an instant with nothing to commit (Hudi 1.1's ``commitInstant``: the caller
        resets its buffer; the instant's heartbeat is stopped, ``getHeartbeatClient().stop``,
        ``cleanResources`` on master). The instant stays pending on the timeline: the failed-writes
        cleaning rolls it back later (EAGER: the next ``startCommit``; LAZY: the next clean,
        which finds its heartbeat gone)."""
        if self.writer.heartbeat is not None:
            self.writer.heartbeat.stop(instant_time)
        if self.on_drop is not None:
            self.on_drop(instant_time)

    def is_completed(self, instant_time: str) -> bool:
        """Whether the timeline holds ``instant_time`` completed (Hudi reads the timeline too,
        ``recommitInstant``: an instant whose completed file is gone is committed again)."""
        return self.writer.timeline.load().is_completed(instant_time)
