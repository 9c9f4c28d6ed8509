"""Hudi's Flink-sink test harness over the models: ``TestWriteBase.TestHarness``,
``StreamWriteFunctionWrapper``, ``TestData`` and the helpers of
``TestStreamWriteOperatorCoordinator`` (apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/
java/org/apache/hudi/sink/``). The steps follow Hudi 1.1's ``TestWriteBase`` and
``StreamWriteFunctionWrapper`` (master at the release-1.1.0 cut, ``4f80914b``, read from the fork
snapshot ``suryaprasanna/hudi``). Section numbers (§11.3) and rule ids (C24, W14, M3, ...) in the
ports cite the research note on Hudi's Flink sink (``notes/issue16-hudi-flink-sink.md``).

What runs is the models' code: a :class:`~models.flink.coordinator.WriteCoordinator` (the
coordinator), :class:`~models.flink.write_task.WriteTask` plus
:func:`~models.flink.write_files.write_records` (the write function), a
:class:`~models.write.writer.TableWriter` on an :class:`~models.storage.InMemoryStorage` table,
TrueTime over a :class:`~models.ports.FakeClock`; every effect generator is carried out by
:func:`models.ports.run`. No simpy. What Flink and Hudi's mocks supply, the harness supplies, the
way the simulator (``sim/flink/``) does for a real run:

- **The operator-event gateway.** A task's events are queued (``MockOperatorEventGateway``) and
  reach the coordinator only when a step hands them over (``assert_next_event``, ``handle_events``),
  as in Hudi's harness.
- **The coordinator's executor and context** (``MockCoordinatorExecutor`` +
  ``MockOperatorCoordinatorContext``): a coordinator action that raises one of the exceptions
  the simulator treats as a job failure (``sim.flink.runtime.JOB_FAILURES``: every
  ``HoodieException``, and ``OSError``) is recorded as a failed job and
  never reaches the caller (Hudi's ``failJob``). Any other exception escapes: in the simulator it
  would be a traceback instead of a verdict.
- **The write function's flush** is the simulator's (``sim/flink/write_function.py``): a flush with records asks the
  coordinator for an instant with the task's last snapshotted checkpoint id, writes the files and
  sends a ``WriteMetadataEvent``; an empty last batch sends an event with no instant and asks for
  none. A request the coordinator answers with ``None`` (the blocking-mode commit guard) blocks in
  Hudi until a commit unblocks it or ``write.commit.ack.timeout`` expires; the harness has no
  second thread, so it runs the test's ``on_blocked`` step (the other thread of Hudi's test) once
  and asks again, and otherwise fails the flush with Hudi's timeout message.
- **Eager flushes** are the model's (:mod:`models.flink.write_buffer`): records are buffered per
  bucket and sized in bytes as Flink's ``BinaryRowData`` (Hudi's test rows are 48 bytes each), so
  Hudi's own ``write.batch.size``, ``write.task.max.size`` and ``write.memory.segment.page.size``
  values trigger the same mini-batches ("3 records from 5").
- **Operator state** (``MockStateInitializationContext``): ``checkpoint(n)`` stores the task's
  :class:`~models.flink.write_task.TaskState` as the list state and the coordinator's
  :class:`~models.flink.event_buffers.CoordinatorState` as checkpoint ``n``; as in Hudi's mock, a
  restarted task restores the state of the last *begun* checkpoint.
- **A restarted write task** is a new :class:`WriteTask` restored from that state, with a new
  log-version memory, as the simulator relaunches one.
- **Heartbeats and the OCC check** are wired as ``sim/table_services.py`` wires them: a heartbeat
  file when a new instant starts, deleted when it commits; ``concurrency = "OCC"`` installs
  :func:`models.txn.concurrency.ensure_no_conflict` as the commit's pre-commit hook.
- **A second Java thread** of a test (``new Thread(...)``) is a step run at the point the main
  thread would block or at ``join``; what it throws is recorded, not raised (JUnit ignores an
  exception in another thread).
- **One check more than Hudi's harness**: :meth:`TestHarness.end` and
  :meth:`CoordinatorHarness.after` assert that no coordinator action failed the job unless a step
  expected it. Hudi's mock context records ``failJob`` silently; a failure the model records where
  Hudi's coordinator runs on would otherwise pass unnoticed.

Translations (each port's docstring names the ones it relies on):

- Hudi's partitions ``par1``..``par4`` are the model's ``part=p1``..``part=p4`` (the model's bucket
  layout derives the partition path from the ``part`` column); row strings are printed with Hudi's
  names, so Hudi's expected strings are compared verbatim.
- Hudi's record keys ``id1``, ``id2``.. are the model's ``k1``, ``k2``.. (the model's bucket index
  hashes the number after the key's one-letter prefix); row strings print Hudi's keys.
- A ``DELETE`` row (``TestData.deleteRow``) is a row with ``_hoodie_is_deleted = true``.
- Hudi's ``WriteMetadataEvent`` flagged ``bootstrap`` is a
  :class:`~models.flink.write_events.BootstrapEvent`: one with events for a bootstrap with an
  instant, an empty one for ``emptyBootstrap``. Both go to ``handle_bootstrap``.
- Hudi's coordinator field ``instant`` ("" until the coordinator starts one) is tracked by the
  harness as the newest instant the coordinator started (an instant request answered with an
  instant that was not pending before); ``getEventBuffer()`` is the buffer holding
  that instant.
- ``notifyCheckpointAborted``, ``subtaskFailed`` and ``subtaskReset`` are no-ops in Hudi's
  coordinator; the models have no such entry points, so these steps call nothing.
- A task attempt number (``subTaskFails(task, attempt)``) is the ``attempt`` of
  :meth:`WriteTask.restore` and the last part of the task's write tokens.
- A global failover (``coordinatorFails`` / ``resetToCheckpoint`` on a started coordinator) is
  :meth:`WriteCoordinator.reset_to_checkpoint` on the same object; a JobManager failover
  (``restartCoordinator``) is a new object restored from the newest coordinator checkpoint.
  ``resetToCheckpoint`` + ``start`` of a new coordinator are one :meth:`WriteCoordinator.restore`.
"""

from __future__ import annotations

import io
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from models.flink.coordinator import CommitResult, WriteCoordinator
from models.flink.event_buffers import CoordinatorState, EventBuffer
from models.flink.write_buffer import BufferOptions
from models.flink.write_events import BootstrapEvent, WriteMetadataEvent
from models.flink.write_files import FileLayout, write_records
from models.flink.write_task import TaskState, WriteTask
from models.format.commit_metadata import WriteStat
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.ports import FakeClock, FakeWorld, LocalLock, Steps, run
from models.storage import InMemoryStorage, join
from models.timeline.instant import Instant, State
from models.timeline.truetime import make_time_generator
from models.txn import concurrency, write_config
from models.view.filenames import FileNameError, parse_base_file_name
from models.view.fsview import latest_file_slices
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from models.write import heartbeat
from models.write.table_init import create_table
from models.write.writer import TableWriter
from sim.flink.bucket_assign import TaskBucketIndex, task_bucket_index
from sim.flink.runtime import JOB_FAILURES  # what fails the job over: Hudi's failJob
from sim.rng import Rng

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

HUDI_1_1 = "Hudi 1.1 (master at the release-1.1.0 cut, 4f80914b)"
WRITE_CONCURRENCY_MODE = {
    None: write_config.SINGLE_WRITER,
    "OCC": write_config.OPTIMISTIC_CONCURRENCY_CONTROL,
    "NBCC": write_config.NON_BLOCKING_CONCURRENCY_CONTROL,
}
"""``Conf.concurrency_mode`` as Hudi's ``hoodie.write.concurrency.mode``."""
HUDI_LATEST = "Hudi latest (TestStreamWriteOperatorCoordinator, read_file id 70214737223)"
"""The releases the note read the tests at (§0); cited by every port's docstring."""


# --- TestData ------------------------------------------------------------------------------------

DELETED = "_hoodie_is_deleted"
ROW_SCHEMA = pa.schema(
    [
        pa.field("key", pa.string(), nullable=False),  # Hudi's uuid, the record key
        pa.field("name", pa.string(), nullable=False),
        pa.field("age", pa.int32(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),  # the ordering (precombine) field
        pa.field("part", pa.string(), nullable=False),  # Hudi's partition: par<i> -> p<i>
        pa.field(DELETED, pa.bool_(), nullable=False),  # RowKind.DELETE
    ]
)

Row = tuple[str, str, int, int, str, bool]


def insert_row(uuid: str, name: str, age: int, ts: int, partition: str) -> Row:
    """``TestData.insertRow``: an INSERT row; ``partition`` in Hudi's spelling (``par1``)."""
    return (uuid, name, age, ts, partition, False)


def delete_row(uuid: str, name: str, age: int, ts: int, partition: str) -> Row:
    """``TestData.deleteRow``: a DELETE row (``_hoodie_is_deleted``)."""
    return (uuid, name, age, ts, partition, True)


def partition_path(hudi_partition: str) -> str:
    """Hudi's ``par1`` -> the model's partition path ``part=p1``."""
    if not hudi_partition.startswith("par"):
        return hudi_partition  # a synthetic partition of a coordinator test ("new0")
    return f"part=p{hudi_partition[3:]}"


def hudi_partition(path: str) -> str:
    """The model's ``part=p1`` -> Hudi's ``par1``."""
    return f"par{path[len('part=p') :]}" if path.startswith("part=p") else path


def model_key(uuid: str) -> str:
    """Hudi's record key ``id1`` -> the model's ``k1``."""
    return f"k{uuid[2:]}" if uuid.startswith("id") else uuid


def hudi_key(key: str) -> str:
    """The model's record key ``k1`` -> Hudi's ``id1``."""
    return f"id{key[1:]}" if key.startswith("k") else key


def rows_table(rows: Sequence[Row]) -> pa.Table:
    """Rows as an Arrow table of :data:`ROW_SCHEMA` (partition values in the model's spelling)."""
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in ROW_SCHEMA]
    values = [
        [model_key(k) for k in columns[0]],
        list(columns[1]),
        list(columns[2]),
        list(columns[3]),
        [partition_path(p)[len("part=") :] for p in columns[4]],
        list(columns[5]),
    ]
    return pa.Table.from_arrays(
        [pa.array(v, f.type) for v, f in zip(values, ROW_SCHEMA, strict=True)], schema=ROW_SCHEMA
    )


DATA_SET_INSERT: list[Row] = [
    insert_row("id1", "Danny", 23, 1, "par1"),
    insert_row("id2", "Stephen", 33, 2, "par1"),
    insert_row("id3", "Julian", 53, 3, "par2"),
    insert_row("id4", "Fabian", 31, 4, "par2"),
    insert_row("id5", "Sophia", 18, 5, "par3"),
    insert_row("id6", "Emma", 20, 6, "par3"),
    insert_row("id7", "Bob", 44, 7, "par4"),
    insert_row("id8", "Han", 56, 8, "par4"),
]
DATA_SET_UPDATE_INSERT: list[Row] = [
    insert_row("id1", "Danny", 24, 1, "par1"),
    insert_row("id2", "Stephen", 34, 2, "par1"),
    insert_row("id3", "Julian", 54, 3, "par2"),
    insert_row("id4", "Fabian", 32, 4, "par2"),
    insert_row("id5", "Sophia", 18, 5, "par3"),
    insert_row("id9", "Jane", 19, 6, "par3"),
    insert_row("id10", "Ella", 38, 7, "par4"),
    insert_row("id11", "Phoebe", 52, 8, "par4"),
]
DATA_SET_UPDATE_DELETE: list[Row] = [
    insert_row("id1", "Danny", 24, 1, "par1"),
    insert_row("id2", "Stephen", 34, 2, "par1"),
    delete_row("id3", "Julian", 53, 3, "par2"),
    delete_row("id5", "Sophia", 18, 5, "par3"),
    delete_row("id9", "Jane", 19, 6, "par3"),
]
DATA_SET_INSERT_DUPLICATES: list[Row] = [insert_row("id1", "Danny", 23, 1, "par1")] * 5
DATA_SET_INSERT_SAME_KEY: list[Row] = [insert_row("id1", "Danny", 23, i, "par1") for i in range(5)]
DATA_SET_PART1: list[Row] = [insert_row("id1", "Danny", 23, 1, "par1")]
DATA_SET_PART3: list[Row] = [insert_row("id3", "Julian", 53, 3, "par2")]
DATA_SET_PART4: list[Row] = [insert_row("id4", "Fabian", 31, 4, "par2")]

# TestWriteBase's expected maps, verbatim.
EXPECTED1: dict[str, str] = {
    "par1": "[id1,par1,id1,Danny,23,1,par1, id2,par1,id2,Stephen,33,2,par1]",
    "par2": "[id3,par2,id3,Julian,53,3,par2, id4,par2,id4,Fabian,31,4,par2]",
    "par3": "[id5,par3,id5,Sophia,18,5,par3, id6,par3,id6,Emma,20,6,par3]",
    "par4": "[id7,par4,id7,Bob,44,7,par4, id8,par4,id8,Han,56,8,par4]",
}
EXPECTED2: dict[str, str] = {
    "par1": "[id1,par1,id1,Danny,24,1,par1, id2,par1,id2,Stephen,34,2,par1]",
    "par2": "[id3,par2,id3,Julian,54,3,par2, id4,par2,id4,Fabian,32,4,par2]",
    "par3": "[id5,par3,id5,Sophia,18,5,par3, id6,par3,id6,Emma,20,6,par3, "
    "id9,par3,id9,Jane,19,6,par3]",
    "par4": "[id10,par4,id10,Ella,38,7,par4, id11,par4,id11,Phoebe,52,8,par4, "
    "id7,par4,id7,Bob,44,7,par4, id8,par4,id8,Han,56,8,par4]",
}
EXPECTED3: dict[str, str] = {"par1": "[id1,par1,id1,Danny,23,1,par1]"}
EXPECTED4: dict[str, str] = {
    "par1": "["
    "id1,par1,id1,Danny,23,0,par1, "
    "id1,par1,id1,Danny,23,1,par1, "
    "id1,par1,id1,Danny,23,2,par1, "
    "id1,par1,id1,Danny,23,3,par1, "
    "id1,par1,id1,Danny,23,4,par1]"
}
EXPECTED5: dict[str, list[str]] = {
    "par1": [f"id1,par1,id1,Danny,23,{ts},par1" for ts in range(5) for _ in range(2)]
}


def row_strings(rows: pa.Table) -> list[str]:
    """``TestData.filterOutVariables``: ``_hoodie_record_key,_hoodie_partition_path,uuid,name,
    age,ts,partition`` of every row, with Hudi's partition names."""
    out = []
    for r in rows.to_pylist():
        fields = (
            hudi_key(r["_hoodie_record_key"]),
            hudi_partition(r["_hoodie_partition_path"]),
            hudi_key(r["key"]),
            r["name"],
            r["age"],
            r["ts"],
            hudi_partition("part=" + r["part"]),
        )
        out.append(",".join(str(f) for f in fields))
    return out


def java_list(items: Iterable[str]) -> str:
    """Java's ``List.toString``: ``[a, b]``."""
    return "[" + ", ".join(items) + "]"


# --- configuration -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Conf:
    """The Flink options the ported tests set (``TestConfigurations.getDefaultConf``: COW,
    upsert, empty commits allowed as in 1.1, no mini-batches)."""

    table_type: str = COPY_ON_WRITE
    operation: str = "upsert"
    allow_empty_commit: bool = True  # hoodie.allow.empty.commit (1.1 default true)
    write_batch_size_mb: float = 256.0  # write.batch.size
    write_task_max_size_mb: float = 1024.0  # write.task.max.size
    write_memory_segment_page_size: int = 32768  # write.memory.segment.page.size
    pre_combine: bool = False  # write.precombine: the write task de-duplicates each flush
    commit_ack_timeout_ms: int = 300_000  # write.commit.ack.timeout
    concurrency_mode: str | None = None  # hoodie.write.concurrency.mode: OCC / NBCC / None
    write_client_id: str = ""  # write.client.id
    failed_writes_clean_policy: str = "EAGER"  # hoodie.cleaner.policy.failed.writes
    bucket_index: bool = False  # index.type = BUCKET (BucketStreamWriteFunctionWrapper)
    pending_file_ids: str = "adopted"  # [protocol] pending_file_ids (master: adopted)

    @property
    def is_mor(self) -> bool:
        return self.table_type == MERGE_ON_READ

    @property
    def instant_generation(self) -> str:
        """``OptionsResolver.isBlockingInstantGeneration`` (1.1): COW upserts block."""
        return (
            "blocking"
            if self.table_type == COPY_ON_WRITE and self.operation == "upsert"
            else "async"
        )

    def clone(self, **changes: Any) -> Conf:
        return replace(self, **changes)


class HoodieException(Exception):
    """A failure Hudi's harness surfaces in the test thread (a task error, a timeout)."""


class TableBase:
    """One table (Hudi's ``@TempDir tempFile``): storage, the shared clock and table lock."""

    def __init__(self, table_type: str) -> None:
        self.storage = InMemoryStorage()
        self.world = FakeWorld(START_MS)
        self.clock = FakeClock(self.world)
        self.lock = LocalLock("table lock")
        create_table(
            self.storage,
            name="t",
            table_type=table_type,
            record_key_field="key",
            ordering_field="ts",
            partition_fields=("part",),
        )
        self.table = HudiTable(self.storage)
        self.jobs = 0

    def time_generator(self) -> Any:
        return make_time_generator(
            "truetime", clock=self.clock, lock=self.lock, max_expected_clock_skew_ms=1
        )

    def run(self, steps: Steps[Any]) -> Any:
        return run(steps, self.clock)

    # --- the timeline as TestUtils reads it ----------------------------------------------------

    def completed_writes(self, *actions: str) -> list[Instant]:
        """Completed instants of ``actions`` (default: Hudi's commits timeline), by requested
        time (Hudi's timeline order)."""
        actions = actions or ("commit", "deltacommit", "replacecommit")
        timeline = self.table.active_timeline.load()
        return [i for i in timeline.completed() if i.action in actions]

    def last_complete_instant(self, *actions: str) -> str | None:
        """``TestUtils.getLastCompleteInstant``: the last completed (delta)commit, or None."""
        done = self.completed_writes(*actions)
        return done[-1].requested_time if done else None

    def last_pending_instant(self) -> str | None:
        """``TestUtils.getLastPendingInstant``: the last requested/inflight (delta)commit."""
        timeline = self.table.active_timeline.load()
        pending = [
            i for i in timeline.pending() if i.action in ("commit", "deltacommit", "replacecommit")
        ]
        return pending[-1].requested_time if pending else None

    def is_completed(self, instant: str | None) -> bool:
        """``checkInstantState(COMPLETED, instant)``: the completed timeline contains it."""
        timeline = self.table.active_timeline.load()
        return instant is not None and any(
            i.requested_time == instant for i in timeline.completed()
        )

    def commit_partitions(self, instant: str) -> list[str]:
        """``getPartitionToWriteStats().keySet()`` of a completed instant."""
        (done,) = [i for i in self.completed_writes() if i.requested_time == instant]
        return sorted(self.table.commit_metadata(done).partition_to_write_stats)

    def data_files(self) -> list[str]:
        """``TestHarness.fileExists(false)``: any file in a folder that is not a dot folder
        (``.hoodie``): base and log files (and partition metadata, written with the first one),
        committed or not."""
        return [
            p
            for p in self.storage.paths()
            if "/" in p and not any(part.startswith(".") for part in p.split("/")[:-1])
        ]

    def partition_dirs(self) -> list[str]:
        """``baseFile.listFiles(f -> !f.getName().startsWith("."))``: the partition folders."""
        return [d for d in self.storage.list_subdirs("") if not d.startswith(".")]


# --- the coordinator with Hudi's executor and context --------------------------------------------


class CoordinatorDriver:
    """A :class:`WriteCoordinator` behind Hudi's ``MockCoordinatorExecutor`` and
    ``MockOperatorCoordinatorContext``: protocol errors are recorded as a failed job."""

    def __init__(self, base: TableBase, conf: Conf, parallelism: int, *, stage_id: int = 1) -> None:
        self.base = base
        self.conf = conf
        self.parallelism = parallelism
        self.writer = TableWriter(
            base.table, base.time_generator(), data_schema=ROW_SCHEMA, stage_id=stage_id
        )
        self.own_commits: set[str] = set()  # the OCC check's predecessors (sim/table_services.py)
        self.coordinator = self._new_coordinator()
        base.run(self.coordinator.start())  # ``startCoordinator``: created and started
        self.instant: str | None = None  # Hudi's coordinator field `instant` ("" = None)
        self.job_failures: list[BaseException] = []  # of the current context
        self.all_job_failures: list[BaseException] = []  # of every context, for the end checks
        self.pending_state: CoordinatorState | None = None  # reset before start (new object)
        self.started = True

    def _new_coordinator(self) -> WriteCoordinator:
        return WriteCoordinator(
            self.writer,
            parallelism=self.parallelism,
            mode=self.conf.instant_generation,
            operation_type="UPSERT" if self.conf.operation == "upsert" else "INSERT",
            allow_empty_commit=self.conf.allow_empty_commit,
            precommit=self._occ_check() if self.conf.concurrency_mode == "OCC" else None,
            concurrency_mode=WRITE_CONCURRENCY_MODE[self.conf.concurrency_mode],
        )

    def _occ_check(self) -> Callable[[Instant, tuple[WriteStat, ...]], None]:
        """``sim/table_services.py``'s ``precommit_hook``: the OCC check under the commit lock,
        by bucket with the bucket index (``OptionsResolver#getConflictResolutionStrategy``)."""
        return concurrency.precommit_check(
            self.base.table, self.own_commits, by_bucket=self.conf.bucket_index
        )

    # --- Hudi's context ---------------------------------------------------------------------------

    @property
    def is_job_failed(self) -> bool:
        """``MockOperatorCoordinatorContext.isJobFailed``."""
        return bool(self.job_failures)

    @property
    def job_failure_reason(self) -> BaseException | None:
        """The cause handed to ``failJob`` (Hudi wraps it in a ``HoodieException``)."""
        return self.job_failures[-1] if self.job_failures else None

    def execute(self, action: Callable[[], Any]) -> Any:
        """``MockCoordinatorExecutor.execute``: run inline; a job failure is recorded."""
        try:
            return action()
        except JOB_FAILURES as error:
            self.job_failures.append(error)
            self.all_job_failures.append(error)
            return None

    def _commits(self, results: list[CommitResult] | None) -> list[CommitResult]:
        for result in results or []:  # as the simulator: the committed instant's heartbeat stops
            heartbeat.stop(self.base.storage, result.instant.requested_time)
        return results or []

    # --- the coordinator's entry points ---------------------------------------------------------

    def request_instant(self, task_id: int, checkpoint_id: int) -> str | None:
        """``handleCoordinationRequest(InstantTimeRequest(checkpoint_id))``."""

        def action() -> str | None:
            before = set(self.coordinator.pending_instants)
            instant = self.base.run(self.coordinator.request_instant(task_id, checkpoint_id))
            if instant is not None and instant not in before:
                self.instant = instant
                heartbeat.start(self.base.storage, instant, self.base.clock.now_ms())
            return instant

        return self.execute(action)

    def handle_event(self, event: WriteMetadataEvent | BootstrapEvent) -> None:
        """``handleEventFromOperator``: a bootstrap event to ``handle_bootstrap``, any other to
        ``handle_event``."""

        def action() -> None:
            if isinstance(event, BootstrapEvent):
                self._commits(self.base.run(self.coordinator.handle_bootstrap(event)))
            else:
                self.coordinator.handle_event(event)

        self.execute(action)

    def checkpoint_coordinator(self, checkpoint_id: int) -> CoordinatorState:
        """``checkpointCoordinator(checkpoint_id, future)``: the bytes are the state itself."""
        return self.coordinator.snapshot_state(checkpoint_id)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> list[CommitResult]:
        result = self.execute(
            lambda: self.base.run(self.coordinator.notify_checkpoint_complete(checkpoint_id))
        )
        return self._commits(result)

    def reset_to_checkpoint(self, state: CoordinatorState | None) -> None:
        """``resetToCheckpoint``: on a started coordinator (global failover) at once; on a new
        one the state waits for :meth:`start`."""
        if self.started:
            reset = self.coordinator.reset_to_checkpoint(state)
            self.execute(lambda: self._commits(self.base.run(reset)))
        else:
            self.pending_state = state

    def start(self) -> None:
        """``start()``: a new coordinator that was reset restores (and recommits) now."""
        restore, self.pending_state = self.pending_state, None
        self.started = True
        started = self.coordinator.restore(restore) if restore else self.coordinator.start()
        self.execute(lambda: self._commits(self.base.run(started)))

    def recreate(self, parallelism: int | None = None, *, new_context: bool = False) -> None:
        """A new coordinator object, not started: ``restartCoordinator`` keeps the wrapper's
        context, ``createCoordinator`` of the coordinator tests makes a new one (``new_context``),
        whose job-failure record starts empty."""
        if parallelism is not None:
            self.parallelism = parallelism
        if new_context:
            self.job_failures = []
        self.coordinator = self._new_coordinator()
        self.instant = None
        self.started = False
        self.pending_state = None

    def event_buffer(self, checkpoint_id: int | None = None) -> tuple[Any, ...] | None:
        """``getEventBuffer()`` (the buffer of the coordinator's ``instant``) or
        ``getEventBuffer(checkpoint_id)``: its slots, None if there is no such buffer. Before
        :meth:`start` of a reset coordinator, the buffers are those of the state it was given."""
        buffers: Iterable[EventBuffer] = self.coordinator.buffers.values()
        if self.pending_state is not None:
            buffers = self.pending_state.buffers
        for buffer in buffers:
            if checkpoint_id is None and buffer.instant == self.instant and self.instant:
                return buffer.events
            if checkpoint_id is not None and buffer.checkpoint_id == checkpoint_id:
                return buffer.events
        return None


def statuses(event: WriteMetadataEvent | BootstrapEvent) -> tuple[WriteStat, ...]:
    """``getWriteStatuses()``; a bootstrap bundles the statuses of its re-sent events."""
    if isinstance(event, BootstrapEvent):
        return tuple(s for e in event.events for s in e.write_stats)
    return event.write_stats


# --- the write pipeline (StreamWriteFunctionWrapper) ---------------------------------------------


class WritePipeline:
    """One write task (subtask 0) and its coordinator over a table: ``TestData.getWritePipeline``
    with ``StreamWriteFunctionWrapper`` (upsert) or ``InsertFunctionWrapper`` (append mode)."""

    TASK = 0

    def __init__(self, base: TableBase, conf: Conf) -> None:
        self.base = base
        self.conf = conf
        self.job_index = base.jobs
        base.jobs += 1
        self.append_mode = conf.operation == "insert"
        self.driver = CoordinatorDriver(base, conf, 1, stage_id=self.job_index + 1)
        self.layout = FileLayout(self.job_index, conf.operation, conf.is_mor, 1)
        self.gateway: deque[WriteMetadataEvent | BootstrapEvent] = deque()
        self.coordinator_states: dict[int, CoordinatorState] = {}
        self.list_state: TaskState | None = None  # the last begun checkpoint's task state
        self.on_blocked: Callable[[], None] | None = None
        self._setup_write_function()

    def _setup_write_function(self, attempt: int = 0) -> WriteTask:
        self.task = WriteTask(
            self.TASK,
            operation=self.conf.operation,
            pre_combine=self.conf.pre_combine,
            buffer_options=BufferOptions(
                write_batch_size_mb=self.conf.write_batch_size_mb,
                write_task_max_size_mb=self.conf.write_task_max_size_mb,
                write_memory_segment_page_size_bytes=self.conf.write_memory_segment_page_size,
            ),
        )
        self.task_writer = TableWriter(
            self.base.table,
            None,
            data_schema=ROW_SCHEMA,
            stage_id=self.job_index + 1,
            attempt_id=attempt,
        )
        self.log_versions: dict[tuple[str, str, str], int] = {}
        self.handles: dict[str, str] = {}  # the write client's bucketToHandles
        self.bucket_index = self._bucket_index(attempt) if self.conf.bucket_index else None
        return self.task

    def _bucket_index(self, attempt: int) -> TaskBucketIndex:
        """``BucketStreamWriteFunction``'s index: the simulator's (``sim/flink/bucket_assign``),
        over this table's committed view and this coordinator's pending file ids."""

        def pending(partition: str) -> list[str]:
            return self.driver.coordinator.buffers.pending_write_file_ids(partition)

        return task_bucket_index(
            self.base.table,
            None,
            lambda _partition_index, _bucket: True,
            nbcc=self.conf.concurrency_mode == "NBCC",
            rng=Rng(self.job_index, f"file-ids:{attempt}"),
            pending=pending if self.conf.pending_file_ids == "adopted" else None,
        )

    # --- the write function ----------------------------------------------------------------------

    def invoke(self, row: Row) -> None:
        """``invoke(record)``: buffer it; a bucket it makes the task flush is written at once
        (a mini-batch)."""
        batch = rows_table([row])
        if self.bucket_index is not None:  # defineRecordLocation -> bootstrapIndexIfNeed
            self.bucket_index.on_records(batch)
        for rows in self.task.add(batch):
            self._flush(rows, last_batch=False)

    def _instant_to_write(self, checkpoint_id: int) -> str:
        """``instantToWrite``: ask until the coordinator hands out an instant. A request the
        coordinator answers with None blocks in Hudi: the harness runs the test's ``on_blocked``
        step (the other thread of Hudi's test) once and asks again, or times out."""
        while True:
            instant = self.driver.request_instant(self.TASK, checkpoint_id)
            if instant is not None:
                return instant
            if self.driver.is_job_failed:
                raise HoodieException("Error requesting the instant time from the coordinator")
            step, self.on_blocked = self.on_blocked, None
            if step is None:
                pending = ",".join(self.driver.coordinator.pending_instants)
                raise HoodieException(
                    f"Timeout({self.conf.commit_ack_timeout_ms}ms) while waiting for instants "
                    f"[{pending}] to commit"
                )
            step()

    def _flush(self, rows: pa.Table | None, *, last_batch: bool) -> None:
        """The simulator's flush (``sim/flink/write_function.py``): an instant for the records,
        the files, the event; ``flushRemaining`` (``last_batch``) ends with the write client's
        ``cleanHandles``."""
        try:
            self._write_batch(rows, last_batch=last_batch)
        finally:
            if last_batch:
                self.handles.clear()

    def _write_batch(self, rows: pa.Table | None, *, last_batch: bool) -> None:
        task = self.task
        checkpoint_id = task.last_checkpoint_id
        if rows is None or rows.num_rows == 0:
            if last_batch:  # ``flushRemaining``: an instant even with nothing to write
                instant = self._instant_to_write(checkpoint_id)
                event = WriteMetadataEvent(self.TASK, instant, checkpoint_id, (), True, 0)
                task.event_sent(event)
                self.gateway.append(event)
            return
        instant = self._instant_to_write(checkpoint_id)
        stats = write_records(
            self.task_writer,
            Instant(instant, State.INFLIGHT, self.driver.writer.default_action),
            rows,
            task_id=self.TASK,
            layout=self.layout,
            log_versions=self.log_versions,
            handles=self.handles,
            file_ids=None if self.bucket_index is None else self.bucket_index.index,
        )
        event = WriteMetadataEvent(
            self.TASK, instant, checkpoint_id, tuple(stats), last_batch, rows.num_rows
        )
        task.event_sent(event)
        self.gateway.append(event)

    def data_buffer(self) -> dict[tuple[int, int], int]:
        """``getDataBuffer()``: buffered records per bucket (partition index, bucket)."""
        return self.task.bucket_records()

    # --- StreamWriteFunctionWrapper's steps ----------------------------------------------------

    def checkpoint_function(self, checkpoint_id: int) -> None:
        """``checkpointFunction(n)``: the coordinator's snapshot first (stored as checkpoint
        ``n``; append mode stores none), then the write function's flush and state."""
        state = self.driver.checkpoint_coordinator(checkpoint_id)
        if not self.append_mode:
            self.coordinator_states[checkpoint_id] = state
        self._flush(self.task.take_buffer(), last_batch=True)
        self.list_state = self.task.snapshot_state(checkpoint_id)

    def checkpoint_complete(self, checkpoint_id: int) -> list[CommitResult]:
        return self.driver.notify_checkpoint_complete(checkpoint_id)

    def subtask_fails(self, task_id: int, attempt: int) -> None:
        """``subTaskFails(task, attempt)``: ``subtaskFailed`` (a no-op), a new write function at
        ``attempt`` restored from the current list state; its bootstrap event, if it sends one,
        is queued, not handled."""
        assert task_id == self.TASK
        task = self._setup_write_function(attempt)
        timeline = self.base.table.active_timeline
        boot = task.restore(
            self.list_state, attempt=attempt, pending=lambda i: not timeline.load().is_completed(i)
        )
        if boot is not None:
            self.gateway.append(boot)
        if self.bucket_index is not None:
            self.bucket_index.resent(boot)

    def newest_state(self) -> CoordinatorState | None:
        if self.append_mode or not self.coordinator_states:
            return None
        return self.coordinator_states[max(self.coordinator_states)]

    def coordinator_fails(self) -> None:
        """``coordinatorFails()``: the same coordinator reset to the newest stored state."""
        self.driver.reset_to_checkpoint(self.newest_state())

    def restart_coordinator(self) -> None:
        """``restartCoordinator()``: a new coordinator object, reset to the newest stored state
        (append mode: none) and started."""
        self.driver.recreate()
        self.driver.pending_state = self.newest_state()
        self.driver.start()
        if self.append_mode:  # InsertFunctionWrapper: start() without resetToCheckpoint
            self.driver.execute(lambda: self.base.run(self.driver.coordinator.restore(None)))

    def job_failover(self) -> None:
        """``jobFailover()``: ``coordinatorFails()`` then ``subTaskFails(0, 0)``."""
        self.coordinator_fails()
        self.subtask_fails(self.TASK, 0)

    def next_event(self) -> WriteMetadataEvent | BootstrapEvent:
        """``getNextEvent()``: the oldest queued task event (fails if there is none)."""
        if not self.gateway:
            raise AssertionError("The operator expect to send an event")
        return self.gateway.popleft()


# --- TestWriteBase.TestHarness -------------------------------------------------------------------


class TestHarness:
    """The fluent steps of ``TestWriteBase.TestHarness`` (1.1 wording, note §9 T4)."""

    __test__ = False  # not a pytest class

    def __init__(self, base: TableBase) -> None:
        self.base = base
        self.pipeline: WritePipeline
        self.conf: Conf
        self.last_pending: str | None = None
        self.last_complete: str | None = None
        self.expected_failure = False
        self.thread_failures: list[BaseException] = []  # of other_thread steps

    @classmethod
    def instance(cls, base: TableBase) -> TestHarness:
        return cls(base)

    def prepare_pipeline(self, conf: Conf) -> TestHarness:
        """``preparePipeline(conf)``: open the write function and the coordinator."""
        self.conf = conf
        self.pipeline = WritePipeline(self.base, conf)
        return self

    @property
    def driver(self) -> CoordinatorDriver:
        return self.pipeline.driver

    # --- input -------------------------------------------------------------------------------

    def consume(self, rows: Sequence[Row]) -> TestHarness:
        for row in rows:
            self.pipeline.invoke(row)
        return self

    def assert_consume_throws(self, rows: Sequence[Row], message: str) -> TestHarness:
        """``assertConsumeThrows``: consuming throws a ``HoodieException`` with ``message``."""
        try:
            self.consume(rows)
        except HoodieException as error:
            assert message in str(error), str(error)
            return self
        raise AssertionError(f"expected a HoodieException: {message}")

    # --- events --------------------------------------------------------------------------------

    def empty_event_buffer(self) -> TestHarness:
        """1.1: no buffer for the coordinator's current instant."""
        assert self.driver.event_buffer() is None, (
            "The coordinator events buffer expect to be empty"
        )
        return self

    def initial_event_buffer(self) -> TestHarness:
        buffer = self.driver.event_buffer()
        assert buffer is not None and buffer[0] is None, "The event buffer should be initialized"
        return self

    def _handle(self, event: WriteMetadataEvent | BootstrapEvent) -> None:
        assert isinstance(event, WriteMetadataEvent | BootstrapEvent), (
            "The operator expect to send an event"
        )
        self.driver.handle_event(event)

    def _check_handled(self, event: WriteMetadataEvent | BootstrapEvent) -> None:
        if not isinstance(event, BootstrapEvent):
            buffer = self.driver.event_buffer()
            assert buffer is not None and buffer[0] is not None, "The coordinator missed the event"
        elif not event.events:
            buffer = self.driver.event_buffer(event.checkpoint_id)
            assert buffer is None or buffer[event.task_id] is None, (
                "The coordinator should reset the redundant events"
            )
        else:
            for resent in event.events:
                assert self.driver.event_buffer(resent.checkpoint_id) is None, (
                    "The coordinator should reset event buffer because of the instant recommit"
                )

    def assert_next_event(
        self, num_write_status: int | None = None, partitions: str | None = None
    ) -> TestHarness:
        """``assertNextEvent()`` / ``assertNextEvent(n, "par1,par2")``."""
        event = self.pipeline.next_event()
        if num_write_status is not None:
            stats = statuses(event)
            assert len(stats) == num_write_status
            got = ",".join(sorted(hudi_partition(s.partition_path) for s in stats))
            assert got == partitions
            self._handle(event)
            buffer = self.driver.event_buffer()
            assert buffer is not None and buffer[0] is not None, "The coordinator missed the event"
            return self
        self._handle(event)
        self._check_handled(event)
        return self

    def assert_empty_event(self) -> TestHarness:
        """``assertEmptyEvent()``: the next event has no write status."""
        event = self.pipeline.next_event()
        assert len(statuses(event)) == 0, f"expected an event without write status: {event}"
        self._handle(event)
        self._check_handled(event)
        return self

    def assert_next_sub_task_event(self) -> TestHarness:
        """``assertNextSubTaskEvent()``: a coordinator-to-task event, if any, must be a
        ``CommitAckEvent``. The model's coordinator sends tasks nothing (Hudi 1.1 sends no
        ``CommitAckEvent`` on these paths either), so there is nothing to check."""
        return self

    def assert_no_event(self) -> TestHarness:
        assert not self.pipeline.gateway, "The write task should not send the event"
        return self

    def handle_events(self, num_events: int) -> TestHarness:
        for _ in range(num_events):
            self._handle(self.pipeline.next_event())
        buffer = self.driver.event_buffer()
        assert buffer is not None and buffer[0] is not None, "The coordinator missed the event"
        return self

    def assert_data_buffer(self, num_buckets: int, num_records: int) -> TestHarness:
        buffer = self.pipeline.data_buffer()
        assert len(buffer) == num_buckets, f"Should have {num_buckets} data bucket"
        first = next(iter(buffer.values()), -1)
        assert first == num_records, f"{num_records} records expect to flush out as a mini-batch"
        return self

    def all_data_flushed(self) -> TestHarness:
        assert len(self.pipeline.data_buffer()) == 0, "All data should be flushed out"
        return self

    # --- checkpoints -----------------------------------------------------------------------------

    def checkpoint(self, checkpoint_id: int) -> TestHarness:
        self.pipeline.checkpoint_function(checkpoint_id)
        return self

    def checkpoint_complete(self, checkpoint_id: int) -> TestHarness:
        """1.1: the coordinator's instant before the notification must be completed after it."""
        self.last_pending = self.driver.instant
        self.pipeline.checkpoint_complete(checkpoint_id)
        assert self.base.is_completed(self.last_pending), (
            f"instant {self.last_pending} should be completed"
        )
        self.last_complete = self.last_pending
        return self

    def checkpoint_complete_throws(
        self, checkpoint_id: int, cause: type[BaseException], message: str
    ) -> TestHarness:
        """The job failed and the failure is ``cause`` with ``message`` in its text (Hudi: the
        cause of the ``HoodieException`` the executor hook fails the job with; the model raises
        the translated exception itself)."""
        self.expected_failure = True
        self.pipeline.checkpoint_complete(checkpoint_id)
        assert self.driver.is_job_failed, "Job should have been failed"
        reason = self.driver.job_failure_reason
        assert isinstance(reason, cause)
        assert message in str(reason)
        return self

    def empty_checkpoint(self, checkpoint_id: int) -> TestHarness:
        """Empty commits not allowed: the last complete instant is still completed; allowed: the
        coordinator's instant before the notification is completed."""
        pending = self.driver.instant
        self.pipeline.checkpoint_complete(checkpoint_id)
        if not self.conf.allow_empty_commit:
            assert self.base.is_completed(self.last_complete), (
                f"instant {self.last_complete} should be completed"
            )
        else:
            assert self.base.is_completed(pending), f"instant {pending} should be completed"
            self.last_complete = pending
        return self

    def checkpoint_fails(self, checkpoint_id: int) -> TestHarness:
        """``notifyCheckpointAborted`` is a no-op; the job did not fail, nothing completed."""
        del checkpoint_id
        assert not self.driver.is_job_failed, "The last checkpoint was aborted, ignore the events"
        assert self.last_complete_instant() is None, "No complete instant"
        return self

    # --- failover ------------------------------------------------------------------------------

    def subtask_fails(self, task_id: int, attempt: int | None = None) -> TestHarness:
        """``subTaskFails(task)`` (1.1: attempt 0, an empty event, the coordinator's instant
        unchanged) or ``subTaskFails(task, attempt)``."""
        if attempt is not None:
            self.pipeline.subtask_fails(task_id, attempt)
            return self
        instant1 = self.driver.instant
        self.pipeline.subtask_fails(task_id, 0)
        self.assert_empty_event()
        assert self.driver.instant == instant1, (
            "The previous instant should not be rolled back when subTask restart"
        )
        return self

    def join_blocked_step(self) -> TestHarness:
        """``t1.join()``: the other thread's step runs now if no blocked request ran it."""
        step, self.pipeline.on_blocked = self.pipeline.on_blocked, None
        if step is not None:
            step()
        return self

    def other_thread(self, step: Callable[[], None]) -> Callable[[], None]:
        """A step of a second Java thread (``new Thread(...)``): what it throws is printed by
        the thread and never fails the JUnit test, so it is recorded here and not raised."""

        def run_step() -> None:
            try:
                step()
            except (AssertionError, HoodieException) as error:
                self.thread_failures.append(error)

        return run_step

    def job_failover(self) -> TestHarness:
        self.pipeline.job_failover()
        return self

    def restart_coordinator(self) -> TestHarness:
        self.pipeline.restart_coordinator()
        return self

    def coordinator_fails(self) -> TestHarness:
        self.pipeline.coordinator_fails()
        return self

    def assert_instant_recommit(self) -> TestHarness:
        """1.1: some completed instant exists."""
        assert self.last_complete_instant() is not None, "The instant should recommit"
        return self

    def rollback_last_complete_instant_to_inflight(self) -> TestHarness:
        """Delete the completed file of the last completed (delta)commit so it reads inflight
        again, and refresh its heartbeat."""
        timeline = self.base.table.active_timeline
        done = self.base.completed_writes(self._write_action())[-1]
        self.base.storage.delete(timeline.path_of(done))
        heartbeat.start(self.base.storage, done.requested_time, self.base.clock.now_ms())
        self.last_pending = done.requested_time
        self.last_complete = self.last_complete_instant()
        return self

    def check_last_pending_instant_completed(self) -> TestHarness:
        """1.1: ``checkpointComplete(3)`` on the pipeline, then the last pending instant is
        completed."""
        self.pipeline.checkpoint_complete(3)
        assert self.base.is_completed(self.last_pending), (
            f"instant {self.last_pending} should be completed"
        )
        self.last_complete = self.last_pending
        return self

    # --- the table -----------------------------------------------------------------------------

    def _write_action(self) -> str:
        return "deltacommit" if self.conf.is_mor else "commit"

    def last_complete_instant(self) -> str | None:
        """``lastCompleteInstant()``: the last completed deltacommit (MOR) or commit (COW)."""
        return self.base.last_complete_instant(self._write_action())

    def check_completed_instant_count(self, count: int) -> TestHarness:
        assert len(self.base.completed_writes(self._write_action())) == count
        return self

    def assert_empty_data_files(self) -> TestHarness:
        assert not self.base.data_files(), "No data files should have been created"
        return self

    def assert_data_files_exists(self) -> TestHarness:
        assert self.base.data_files(), "Data files should have been created"
        return self

    def check_written_data(self, expected: dict[str, str], partitions: int = 4) -> TestHarness:
        """``checkWrittenData``: COW reads the newest base file of each partition folder by the
        instant in its name (``TestData.checkWrittenData``, committed or not); MOR reads the
        merged latest slices (``checkWrittenDataMOR``). Either way the partition folders must
        number ``partitions``."""
        dirs = self.base.partition_dirs()
        assert len(dirs) == partitions, f"The partitions number should be: {partitions}"
        if self.conf.is_mor:
            by_partition = self._merged_rows()
        else:
            by_partition = {d: self._latest_base_file_rows(d) for d in dirs}
        for d in dirs:
            got = java_list(sorted(by_partition.get(d, [])))
            assert got == expected.get(hudi_partition(d)), (hudi_partition(d), got)
        return self

    def check_written_all_data(self, expected: dict[str, str], partitions: int) -> TestHarness:
        """``checkWrittenAllData``: every data file of each partition folder."""
        dirs = self.base.partition_dirs()
        assert len(dirs) == partitions
        for d in dirs:
            rows: list[str] = []
            for f in self.base.storage.list_dir(d):
                if not f.name.startswith("."):
                    rows += row_strings(pq.read_table(io.BytesIO(self.base.storage.read(f.path))))
            assert java_list(sorted(rows)) == expected.get(hudi_partition(d))
        return self

    def check_written_data_cow(self, expected: dict[str, list[str]]) -> TestHarness:
        """``checkWrittenDataCOW``: the latest committed base files of each expected partition."""
        table = self.base.table
        _, groups = table.file_groups()
        for partition, rows in expected.items():
            read: list[str] = []
            for file_slice in latest_file_slices(groups):
                base_file = file_slice.base_file
                if file_slice.partition == partition_path(partition) and base_file is not None:
                    data = self.base.storage.read(join(file_slice.partition, base_file.name))
                    read += row_strings(pq.read_table(io.BytesIO(data)))
            assert len(read) == len(rows), f"Unexpected records number under partition: {partition}"
            for record in read:
                assert record in rows, f"Unexpected record: {record}"
        return self

    def _latest_base_file_rows(self, partition: str) -> list[str]:
        newest: tuple[str, str] | None = None
        for f in self.base.storage.list_dir(partition):
            if f.name.startswith("."):
                continue
            try:
                instant = parse_base_file_name(f.name).instant_time
            except FileNameError:
                continue
            if newest is None or instant > newest[0]:
                newest = (instant, f.path)
        if newest is None:
            return []
        return row_strings(pq.read_table(io.BytesIO(self.base.storage.read(newest[1]))))

    def _merged_rows(self) -> dict[str, list[str]]:
        rows = read_snapshot(self.base.table)
        out: dict[str, list[str]] = {}
        if rows.num_rows == 0:
            return out
        for r, s in zip(rows.to_pylist(), row_strings(rows), strict=True):
            out.setdefault(r["_hoodie_partition_path"], []).append(s)
        return out

    # --- the end ---------------------------------------------------------------------------------

    def end(self) -> None:
        """``end()``. The port adds one check Hudi's mock context leaves implicit: no coordinator
        action failed the job unless a step expected it (``checkpointCompleteThrows``), because
        a failure the model records where Hudi's coordinator runs on would otherwise pass
        unnoticed."""
        self.pipeline.on_blocked = None
        if not self.expected_failure:
            assert not self.driver.all_job_failures, (
                f"the job failed: {self.driver.all_job_failures!r}"
            )


def write_stat(instant: str, partition: str) -> WriteStat:
    """``createOperatorEvent``'s write status: file id ``fileId123``, 1 write, 123 bytes."""
    name = f"fileId123_1-0-1_{instant}.parquet"
    return WriteStat(
        file_id="fileId123",
        path=join(partition, name),
        partition_path=partition,
        num_writes=1,
        total_write_bytes=123,
        file_size_in_bytes=123,
    )


@dataclass
class CoordinatorHarness:
    """``TestStreamWriteOperatorCoordinator``'s fixture and helpers: a started coordinator with
    synchronous executors (``startCoordinator(conf, subTasks)``) on a fresh table."""

    conf: Conf = field(default_factory=Conf)
    subtasks: int = 2

    def __post_init__(self) -> None:
        self.base = TableBase(self.conf.table_type)
        self.driver = CoordinatorDriver(self.base, self.conf, self.subtasks)

    # --- lifecycle -----------------------------------------------------------------------------

    def start_coordinator(self, conf: Conf, subtasks: int, *, fresh_table: bool = False) -> None:
        """``startCoordinator(conf, n)`` (``reset()`` first when ``fresh_table``)."""
        self.conf, self.subtasks = conf, subtasks
        if fresh_table:
            self.base = TableBase(conf.table_type)
        self.driver = CoordinatorDriver(self.base, conf, subtasks)

    def reset_to_merge_on_read(self) -> None:
        """``resetToMergeOnRead``: close, clean the table folder, a 2-task MOR coordinator."""
        self.start_coordinator(self.conf.clone(table_type=MERGE_ON_READ), 2, fresh_table=True)

    def create_coordinator(self, subtasks: int) -> None:
        """``createCoordinator(conf, n)``: a new object over the same table, not started."""
        self.subtasks = subtasks
        self.driver.recreate(subtasks, new_context=True)

    # --- Hudi's helpers --------------------------------------------------------------------------

    def request_instant_time(self, checkpoint_id: int) -> str | None:
        """``requestInstantTime(ckp)`` (``MockCorrespondent``, task 0)."""
        return self.driver.request_instant(0, checkpoint_id)

    def handle_event_from_operator(
        self, task_id: int, event: WriteMetadataEvent | BootstrapEvent
    ) -> None:
        assert event.task_id == task_id
        self.driver.handle_event(event)

    def subtask_failed(self, task_id: int) -> None:
        """``subtaskFailed(task, null)``: a no-op in Hudi's coordinator; the model has none."""
        del task_id

    def after(self, *, job_failure_expected: bool = False) -> None:
        """``after()`` closes the coordinator. The port also checks what Hudi's mock context
        leaves implicit (as :meth:`TestHarness.end`): no coordinator action failed the job unless
        the test expects it."""
        if not job_failure_expected:
            assert not self.driver.all_job_failures, (
                f"the job failed: {self.driver.all_job_failures!r}"
            )

    def get_instant(self) -> str:
        """``getInstant()``: "" until the coordinator started an instant."""
        return self.driver.instant or ""

    def get_event_buffer(self, checkpoint_id: int | None = None) -> tuple[Any, ...] | None:
        return self.driver.event_buffer(checkpoint_id)


def create_operator_event(
    task_id: int,
    checkpoint_id: int,
    instant: str,
    partition: str,
    *,
    is_bootstrap: bool = False,
) -> WriteMetadataEvent | BootstrapEvent:
    """``createOperatorEvent(task, ckp, instant, partition, isBootstrap, ...)``: one write status
    (:func:`write_stat`), ``lastBatch = true``; a bootstrap one is a :class:`BootstrapEvent`."""
    event = WriteMetadataEvent(
        task_id, instant, checkpoint_id, (write_stat(instant, partition),), True, 1
    )
    if is_bootstrap:
        return BootstrapEvent(task_id, checkpoint_id, (event,))
    return event


def create_bootstrap_event(
    task_id: int, checkpoint_id: int, instant: str, partition: str
) -> BootstrapEvent:
    event = create_operator_event(task_id, checkpoint_id, instant, partition, is_bootstrap=True)
    assert isinstance(event, BootstrapEvent)
    return event


def empty_event(
    task_id: int, checkpoint_id: int, instant: str, *, last_batch: bool = False
) -> WriteMetadataEvent:
    """``WriteMetadataEvent.builder()...writeStatus(emptyList())``: no status."""
    return WriteMetadataEvent(task_id, instant, checkpoint_id, (), last_batch, 0)
