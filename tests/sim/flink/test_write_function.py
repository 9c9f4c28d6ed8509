"""Tests for sim/flink/write_function.py: a write task bootstraps first, flushes a full buffer
eagerly into the instant the coordinator hands out, flushes its last batch at a barrier before
its ACK (on the same channel, so the event arrives first), waits for an instant while the
coordinator refuses one, and pushes back on the source while it waits or has a backlog."""

from __future__ import annotations

from typing import Any

from models.flink.write_task import WriteTask
from models.format.parquet_files import read_parquet
from models.format.records import RECORD_KEY_FIELD
from sim.driver import drive
from sim.flink.runtime import Gateway
from sim.flink.write_function import POLL_BACKOFF_MS, WriteFunction
from sim.messages import (
    BootstrapMessage,
    EventMessage,
    InstantRequest,
    InstantResponse,
    TaskAck,
)
from sim.world import World
from tests.sim.flink.harness import JOB, RoleHarness
from tests.sim.test_world import make_scenario

BUFFER = 50


class Task:
    """Task 0 of a one-writer job on a world's table (its jobs never start), wired to a fake
    coordinator that answers instant requests with one started instant after ``refusals``
    refusals, and records every message the task sends to the job manager in ``sent``."""

    def __init__(self, *, mode: str = "async", refusals: int = 0, table: str = "MERGE_ON_READ"):
        world = World(
            make_scenario(
                jobs=({"writers": 1, "buffer_records": BUFFER},),
                table={"type": table, "partitions": 1, "buckets_per_partition": 1},
            )
        )
        self.h = RoleHarness(env=world.env, history=world.history)
        self.job = world.jobs[0]
        clients = self.job.context.clients
        self.instant = self._start_instant(clients.coordinator_writer(f"{JOB}/coordinator"))
        self.refusals = refusals
        self.sent: list[Any] = []
        channel = self.h.channel("task-0->jm")
        self.function = WriteFunction(
            self.h.attempt,
            WriteTask(0, BUFFER, operation="upsert", merge_mode="EVENT_TIME_ORDERING"),
            clients.task_writer(1),
            layout=self.job.layout,
            mode=mode,
            attempt_number=0,
            storage=clients.storage,
            base_instants=clients.latest_base_instants,
            to_coordinator=Gateway(channel, self._coordinator),
            to_checkpoints=Gateway(channel, self.sent.append),
        )
        self.offset = 0
        self.h.env.process(self.function.run(None))
        self.run(10)  # started: restored and bootstrapped

    def _start_instant(self, writer) -> str:
        started: list[str] = []

        def start():
            instant = yield from drive(self.h.env, writer.start_commit(), owner="coordinator")
            started.append(instant.requested_time)

        self.h.env.process(start())
        self.h.env.run()
        return started[0]

    def _coordinator(self, message: Any) -> None:
        self.sent.append(message)
        if isinstance(message, InstantRequest):
            answer = None if self.refusals > 0 else self.instant
            self.refusals -= 1
            self.function.respond(InstantResponse(message.epoch, answer))

    def rows(self, n: int):
        """The source's next ``n`` records."""
        self.offset += n
        return self.job.source.batch(self.offset - n, self.offset)

    def run(self, ms: int = 1000) -> None:
        self.h.env.run(until=self.h.env.now + ms)

    def kinds(self) -> list[str]:
        return [type(m).__name__ for m in self.sent]


def test_the_task_bootstraps_first_and_flushes_a_full_buffer_eagerly():
    t = Task()
    assert t.kinds() == ["BootstrapMessage"]
    assert isinstance(t.sent[0], BootstrapMessage) and t.sent[0].event is None  # fresh: nothing
    t.function.receive(t.rows(BUFFER - 1))
    t.run()
    assert t.kinds() == ["BootstrapMessage"]  # below the buffer: nothing to flush
    t.function.receive(t.rows(1))
    t.run()
    assert t.kinds() == ["BootstrapMessage", "InstantRequest", "EventMessage"]
    event = t.sent[-1].event
    assert (event.instant, event.last_batch) == (t.instant, False)
    assert 0 < event.records <= BUFFER  # pre-combined: one version per key
    assert event.write_stats
    assert [(e.type, e.f) for e in t.h.events() if e.process == f"{JOB}/task-0"] == [
        ("invoke", "wait_instant"),
        ("ok", "wait_instant"),
        ("invoke", "flush"),
        ("ok", "flush"),
    ]


def test_copy_on_write_mini_batches_of_one_instant_end_in_one_base_file():
    """Hudi's ``FlinkMergeAndReplaceHandle``: every flush of the file group before the barrier
    merges into the file the task wrote first, under its name; the barrier ends the handles."""
    t = Task(table="COPY_ON_WRITE")
    keys: set[str] = set()
    for _ in range(3):
        batch = t.rows(BUFFER)
        keys.update(str(k) for k in batch.column(RECORD_KEY_FIELD).to_pylist())
        t.function.receive(batch)
        t.run()
    events = [m.event for m in t.sent if isinstance(m, EventMessage)]
    assert [e.last_batch for e in events] == [False, False, False]
    paths = {s.path for e in events for s in e.write_stats}
    assert len(paths) == 1
    (path,) = paths
    storage = t.job.context.clients.storage
    rows = read_parquet(storage.read(path))
    assert sorted(rows.column("_hoodie_record_key").to_pylist()) == sorted(keys)
    partition = path.rsplit("/", 1)[0]
    assert [f.name for f in storage.list_dir(partition) if f.name.endswith(".parquet")] == [
        path.rsplit("/", 1)[1]
    ]
    t.function.inject_barrier(1)
    t.run()
    assert t.function._handles == {}


def test_at_a_barrier_the_last_batch_event_arrives_before_the_ack():
    t = Task()
    t.function.receive(t.rows(10))
    t.function.inject_barrier(1)
    t.run()
    assert t.kinds() == ["BootstrapMessage", "InstantRequest", "EventMessage", "TaskAck"]
    event, ack = t.sent[2].event, t.sent[3]
    assert (event.last_batch, event.records, event.checkpoint_id) == (True, 10, -1)
    assert isinstance(ack, TaskAck) and ack.checkpoint_id == 1
    assert [e.instant for e in ack.state.events] == [t.instant]


def test_an_empty_barrier_still_asks_for_the_instant_and_reports_into_it():
    """Hudi's ``flushRemaining``: an instant even with nothing to write, then an empty last
    batch into it, so the coordinator knows the task finished the checkpoint."""
    t = Task()
    t.function.inject_barrier(1)
    t.run()
    assert t.kinds() == ["BootstrapMessage", "InstantRequest", "EventMessage", "TaskAck"]
    empty = t.sent[2]
    assert isinstance(empty, EventMessage)
    assert (empty.event.instant, empty.event.last_batch, empty.event.write_stats) == (
        t.instant,
        True,
        (),
    )


def test_an_empty_barrier_asks_for_no_instant_in_mini_batch_mode():
    t = Task(mode="minibatch")
    t.function.inject_barrier(1)
    t.run()
    assert t.kinds() == ["BootstrapMessage", "EventMessage", "TaskAck"]
    assert t.sent[1].event.instant is None


def test_a_refused_instant_is_asked_for_again_with_backoff_and_the_task_pushes_back():
    t = Task(mode="blocking", refusals=3)
    t.function.receive(t.rows(10))
    t.function.inject_barrier(1)
    t.run(1)
    assert t.function.waiting_for_instant and t.function.backpressured
    t.run(3000)
    assert not t.function.waiting_for_instant
    assert t.kinds().count("InstantRequest") == 4  # 3 refused, then the flush's
    first, *_ = [e for e in t.h.events("wait_instant") if e.type == "ok"]
    backoff = POLL_BACKOFF_MS[0]
    assert first.value["commit_wait_ms"] >= backoff + 2 * backoff + 4 * backoff
    assert first.value["blocked_ms"] >= first.value["commit_wait_ms"]


def test_a_backlog_of_two_pushes_back():
    t = Task()
    assert not t.function.backpressured
    t.function.inject_barrier(1)
    t.function.inject_barrier(2)
    assert t.function.backpressured
    t.run()
    assert not t.function.backpressured
