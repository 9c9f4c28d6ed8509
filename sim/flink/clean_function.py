"""The clean operator of the table-services job: Hudi's ``CleanFunction`` (``Pipelines#clean``;
``CompactionCommitSink`` extends it when the job compacts), one subtask after the write tasks.

Under LAZY the only thing a clean does in the model is roll back failed writes
(``BaseHoodieTableServiceClient#clean`` calls ``CleanerUtils#rollbackFailedWrites`` before it plans;
the clean of old file slices is not modelled). When it cleans follows ``CleanFunction`` with
``clean.async.enabled`` on (Hudi 1.0, 1.1 and master alike; master's ``CleanHandler`` keeps the
same hooks):

- ``open``: one clean when the attempt starts, on the function's executor;
- ``snapshotState``: the checkpoint barrier reaches the sink once every write task has snapshotted
  and forwarded it; unless a clean is still marked running, ``startAsyncCleaning`` starts one and
  marks it running;
- ``notifyCheckpointComplete``: if a clean is marked running, wait for it
  (``waitForCleaningFinish``) and then clear the mark. So after a checkpoint's clean no new one
  starts before a later checkpoint completes.

A clean that fails is logged and does not fail the job (``NonThrownExecutor``, and
``snapshotState`` catches every ``Throwable``): here an ``info`` event ``clean_failed``. The
coordinator never cleans; a job whose write tasks are stuck (no barrier gets through) never cleans
either. Everything runs as processes of the attempt, so a failover ends a running clean.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

import simpy

from sim.flink.runtime import JOB_FAILURES, Attempt, describe

ROLE = "clean_commits"
"""The operator's name in Hudi's pipeline (``Pipelines#clean``), the process's role here."""


class CleanFunction:
    """The clean sink of one attempt. ``clean()`` is one ``writeClient.clean()`` (a generator
    that rolls back the failed writes a LAZY clean finds)."""

    def __init__(self, attempt: Attempt, clean: Callable[[], Generator[Any, Any, None]]) -> None:
        self.attempt = attempt
        self.clean = clean
        self.is_cleaning = False
        self._running: simpy.Process | None = None

    def open(self) -> None:
        """``CleanFunction#open``: clean once, marked running until it ends."""
        self.is_cleaning = True
        self._running = self._spawn(self._clean_then_clear())

    def snapshot_state(self, checkpoint_id: int) -> None:
        """``CleanFunction#snapshotState`` for ``checkpoint_id``: start a clean unless one is
        marked running; the mark stays until a checkpoint completes after it."""
        if self.is_cleaning:
            return
        self.is_cleaning = True
        self._running = self._spawn(self._clean())

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        """``CleanFunction#notifyCheckpointComplete``: wait for the running clean, then clear the
        mark."""
        if self.is_cleaning:
            self._spawn(self._wait_then_clear())

    def _clean(self) -> Generator[Any, Any, None]:
        try:
            yield from self.clean()
        except JOB_FAILURES as error:
            name = self.attempt.process_name(ROLE)
            self.attempt.history.info(name, "clean_failed", {"error": describe(error)})

    def _clean_then_clear(self) -> Generator[Any, Any, None]:
        try:
            yield from self._clean()
        finally:
            self.is_cleaning = False

    def _wait_then_clear(self) -> Generator[Any, Any, None]:
        running = self._running
        if running is not None and running.is_alive:
            yield running
        self.is_cleaning = False

    def _spawn(self, body: Generator[Any, Any, None]) -> simpy.Process:
        return self.attempt.spawn(ROLE, body)


__all__ = ["ROLE", "CleanFunction"]
