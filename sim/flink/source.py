"""The job's source: reads the upstream topic every tick and routes the records to the write tasks.

What the topic holds is a pure function of offsets (:class:`models.format.records.RecordSource`),
so a checker can regenerate every record from the history. Every ``SOURCE_TICK_MS`` the reader
takes what became available since its offset (at most ``CATCH_UP_FACTOR`` ticks' worth), records
an ``emit`` event, and routes the batch to the write tasks (:func:`models.flink.write_files.route`:
upserts by bucket, as Hudi's ``BucketIndexPartitioner`` does, inserts by offset), as Flink's
``SourceOperator`` emits into a partitioned edge. It stalls while any task pushes back (it waits
for an instant, or has a backlog of flushes): the upstream keeps growing and the source catches
up later, as Flink's credit-based backpressure makes a source do. The tasks are reached through
:class:`TaskInput`, so an operator between the source and the tasks (a bucket assigner) can
stand in for them.

The offsets outlive an attempt (:class:`SourcePosition`, kept by the job): a restart resumes at the
restored checkpoint's offset, the highest offset ever emitted bounds the input when the run drains.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pyarrow as pa

from models.flink.write_files import route
from models.format.records import RecordSource
from sim.flink.runtime import Attempt

SOURCE_TICK_MS = 100
CATCH_UP_FACTOR = 4  # a stalled source reads up to this many ticks' worth per tick


@dataclass
class SourcePosition:
    """The source's offsets in the upstream topic, kept by the job across attempts.

    ``offset``: the next offset to read (the restored checkpoint's on a restart); ``emitted``:
    the highest offset any attempt emitted (exclusive); ``end``: the end of the input, set when
    the run drains (None before)."""

    offset: int = 0
    emitted: int = 0
    end: int | None = None


class TaskInput(Protocol):
    """A write task's input as the operator upstream of it sees it."""

    def receive(self, rows: pa.Table) -> None:
        """Records routed to this task, in offset order."""
        ...

    @property
    def backpressured(self) -> bool:
        """Whether the task pushes back (the source stalls this tick)."""
        ...


class SourceReader:
    """The process ``<job>/source`` of one attempt (Flink's ``SourceOperator`` with its reader).

    Receives the topic (``records``), the job's :class:`SourcePosition`, the routing (buckets per
    partition, or a ``router`` of its own: the Flink state index's ``keyBy(recordKey)``) and its
    downstream inputs, one per write task (or assigner subtask) in task order."""

    def __init__(
        self,
        attempt: Attempt,
        records: RecordSource,
        position: SourcePosition,
        *,
        records_per_s: float,
        buckets_per_partition: int,
        outputs: Sequence[TaskInput],
        router: Callable[[pa.Table, int], list[pa.Table]] | None = None,
    ) -> None:
        self.attempt = attempt
        self.records = records
        self.position = position
        self.per_tick = max(1, int(records_per_s * SOURCE_TICK_MS / 1000))
        self.buckets_per_partition = buckets_per_partition
        self.outputs = tuple(outputs)
        self.router = router or (lambda rows, n: route(rows, buckets_per_partition, n))

    def run(self) -> Generator[Any, Any, None]:
        """The process body: read and route every tick until the attempt ends."""
        yield from self.attempt.run("source", self._read())

    def _read(self) -> Generator[Any, Any, None]:
        env, history = self.attempt.env, self.attempt.history
        me = self.attempt.process_name("source")
        position = self.position
        while True:
            yield env.timeout(SOURCE_TICK_MS)
            if self.backpressured():
                continue
            available = self.records.available(int(env.now))
            if position.end is not None:  # input ended: replay up to its end, no further
                available = position.end
            stop = min(available, position.offset + self.per_tick * CATCH_UP_FACTOR)
            if stop <= position.offset:
                continue
            rows = self.records.batch(position.offset, stop)
            history.info(me, "emit", {"from": position.offset, "to": stop})
            position.offset = stop
            position.emitted = max(position.emitted, stop)
            parts = self.router(rows, len(self.outputs))
            for output, part in zip(self.outputs, parts, strict=True):
                output.receive(part)

    def backpressured(self) -> bool:
        """Whether any downstream task pushes back."""
        return any(output.backpressured for output in self.outputs)


__all__ = ["CATCH_UP_FACTOR", "SOURCE_TICK_MS", "SourcePosition", "SourceReader", "TaskInput"]
