"""One Flink job writing the table: its JobMaster, which builds each execution attempt out of the
roles in :mod:`sim.flink` and restarts it when it fails.

Every protocol decision is made by the real code in ``models/`` (:class:`WriteTask`,
:class:`WriteCoordinator`, :class:`TableWriter`, TrueTime); the roles supply what Flink supplies:
processes, mailboxes, RPC channels, checkpoint barriers. Processes of one attempt (``epoch``;
each failover starts the next), started in this order:

- ``<job>/coordinator``: the operator coordinator (:mod:`sim.flink.operator_coordinator`);
- ``<job>/task-<i>``: the write tasks (:mod:`sim.flink.write_function`);
- ``<job>/source``: the source and its routing (:mod:`sim.flink.source`);
- ``<job>/checkpoint``: Flink's checkpoint coordinator (:mod:`sim.flink.checkpoint_coordinator`);
- ``<job>/table-services`` in the table-services job (:mod:`sim.table_services`), a
  ``<job>/compactor`` per scheduled compaction (:mod:`sim.flink.compactor`), and under LAZY,
  when the job's pipeline has a clean operator (``[[jobs]] clean_operator``), a
  ``<job>/clean_commits`` per clean (:mod:`sim.flink.clean_function`).

Each role gets only its settings, its write client, its mailbox and gateways, the fault hooks it
fires and its :class:`sim.flink.runtime.Attempt` (through which it fails the job). A task's
events and its ACKs share one FIFO channel to the job manager; the coordinator answers each task
over a channel of its own; notifications travel over a lossy, reordering one.

Failover: every process of the attempt is interrupted (locks they held are released by the
driver), messages in flight are dropped, and after ``restart_delay_ms`` a new attempt restores
the last completed checkpoint along the restart path of what failed (:mod:`sim.restart`): a
region or global failover keeps the operator coordinator (its write coordinator and mailbox),
a JobManager failover or a rescale builds a new one. What outlives an attempt, as in Flink: the
checkpoint store and id counter, the source's offsets, the compaction schedule, and the OCC
check's record of the job's own commits.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from models.flink.coordinator import WriteCoordinator
from models.flink.key_groups import default_max_parallelism
from models.flink.write_files import FileLayout
from models.format.records import ORDERING_FIELD, RecordSource
from scenarios.tables import JobSpec
from sim.flink.bucket_assign_function import AssignerSnapshots
from sim.flink.checkpoint_coordinator import (
    CheckpointSettings,
    CheckpointStore,
    PendingAcks,
)
from sim.flink.operator_coordinator import CommitReporter, OperatorCoordinator
from sim.flink.runtime import Attempt, Gateway
from sim.flink.source import SourcePosition
from sim.job_context import JobContext
from sim.job_roles import JobRoles
from sim.marker_server import MarkerServer
from sim.messages import CompletedCheckpoint
from sim.network import Channel
from sim.restart import failover_path, keeps_coordinator, restored_task_states, start_event


class Job(JobRoles):
    """A Flink job with a Hudi sink over the table: its JobMaster (the scheduler with Flink's
    restart-all failover strategy). The nemesis sees ``name``, ``parallelism``, ``epoch``,
    ``failing`` and :meth:`fail`; the world :meth:`start`, :meth:`drain` and ``drained``."""

    def __init__(self, spec: JobSpec, index: int, context: JobContext) -> None:
        self.spec = spec
        self.index = index
        self.name = spec.name
        self.parallelism = spec.writers
        self.mode = spec.instant_generation
        self.table_services = bool(spec.table_services)
        self.context = context
        self.env = context.env
        self.history = context.history
        self.rng = context.rng.child(f"job:{self.name}")
        config = context.clients.table.config
        self.source = RecordSource(
            seed=context.seed,
            job_index=index,
            key_space=spec.key_space,
            partitions=context.table.partitions,
            records_per_s=spec.records_per_s,
            operation=spec.operation,
            columns=tuple(spec.columns),
            ordering_field=spec.ordering_field or ORDERING_FIELD,
            partition_period_ms=round(spec.partition_period_s * 1000),
        )
        self.layout = FileLayout(
            index,
            spec.operation,
            config.is_mor,
            context.table.buckets_per_partition,
            context.protocol.file_slicing,
            spec.index if spec.operation == "upsert" else "bucket",
        )
        self.max_parallelism = default_max_parallelism(spec.writers)
        self.assigner_snapshots = AssignerSnapshots()
        self.operation_type = "UPSERT" if spec.operation == "upsert" else "INSERT"
        self.checkpoint_settings = CheckpointSettings(
            interval_ms=int(spec.checkpoint_interval_s * 1000),
            timeout_ms=int(spec.checkpoint_timeout_s * 1000),
            checkpoint_failure=context.rates.checkpoint_failure,
            ack_delay_ms=context.rates.ack_delay_ms,
        )
        self.epoch = 0
        self.task_attempt = 0  # the write tasks' Flink attempt number
        self.job_id = 0  # Flink's job id: a rescale submits the job anew
        self.failing = False
        self.draining = False
        self.drained = self.env.event()
        self.checkpoints = CheckpointStore()
        self.position = SourcePosition()
        self.occ_check = context.services.occ_check(spec.concurrency)
        self.reporter = CommitReporter(self.history, self.process_name("coordinator"))
        self.compactor = self._compactor() if self.table_services else None
        self._operator: OperatorCoordinator | None = None
        self.marker_server: MarkerServer | None = None
        self._attempt: Attempt | None = None
        self._channels: list[Channel] = []
        self._to_jm: list[Channel] = []  # the tasks' channels to the job manager of this attempt
        self._notify: Channel | None = None
        context.services.register_writer(self.process_name("coordinator"), self._live_instants)

    # --- what the world and the nemesis read -----------------------------------------------------

    def process_name(self, role: str) -> str:
        """``<job>/<role>``: a process's name in the history."""
        return f"{self.name}/{role}"

    @property
    def source_offset(self) -> int:
        """The source's current offset."""
        return self.position.offset

    @property
    def attempt(self) -> Attempt | None:
        """The current execution attempt (None before the job started)."""
        return self._attempt

    @property
    def coordinator(self) -> WriteCoordinator | None:
        """The current attempt's write coordinator (None before the job started)."""
        return self._operator.coordinator if self._operator else None

    @property
    def completed(self) -> CompletedCheckpoint | None:
        """The latest completed checkpoint."""
        return self.checkpoints.latest

    # --- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the first attempt, from scratch."""
        self._launch(None, "jobmanager")

    def _launch(self, checkpoint: CompletedCheckpoint | None, path: str) -> None:
        """Start a new execution attempt restored from ``checkpoint`` (None: from scratch) along
        restart ``path`` (:data:`sim.restart.RESTART_PATHS`)."""
        self.epoch += 1
        self.failing = False
        kept = keeps_coordinator(path) and self._operator is not None
        self.task_attempt = self.task_attempt + 1 if kept else 0
        self.position.offset = checkpoint.source_offset if checkpoint else 0
        attempt = Attempt(
            self.env,
            self.history,
            self.name,
            self.epoch,
            control=self,
            name_process=self.context.faults.name_process,
        )
        self._attempt = attempt
        if kept:
            assert self._operator is not None
            coordinator = self._operator
            coordinator.rebind(attempt)
        else:
            coordinator = self._operator_coordinator(attempt)
        to_jm = [self._channel(f"task-{i}->jm") for i in range(self.parallelism)]
        to_task = [self._channel(f"jm->task-{i}") for i in range(self.parallelism)]
        draining, rates = self.draining, self.context.rates
        notify = self._channel(
            "notify",
            loss=0.0 if draining else rates.ack_loss,
            duplicate=0.0 if draining else rates.ack_duplicate,
            fifo=False,
        )
        self._channels, self._notify = [*to_jm, *to_task, notify], notify
        self._to_jm = to_jm
        acks = PendingAcks(attempt, self.parallelism)
        tasks = [
            self._write_function(
                attempt,
                i,
                to_coordinator=Gateway(to_jm[i], coordinator.deliver),
                to_checkpoints=Gateway(to_jm[i], acks.acknowledge),
            )
            for i in range(self.parallelism)
        ]
        for i, task in enumerate(tasks):
            coordinator.subtask_ready(i, Gateway(to_task[i], task.respond))
        self._record_start(checkpoint, path)
        task_states = restored_task_states(checkpoint, self.parallelism)
        step = path if kept else "start"
        attempt.start(coordinator.run(checkpoint.coordinator if checkpoint else None, step))
        for task, state in zip(tasks, task_states, strict=True):
            attempt.start(task.run(state))
        assigners = self._assigners(
            attempt, checkpoint.checkpoint_id if checkpoint else None, tasks, coordinator
        )
        attempt.start(self._source(attempt, tasks, assigners).run())
        cleaner = None
        if self.compactor is not None and self.spec.clean_operator:
            cleaner = self.context.services.clean_function(attempt, coordinator)
        attempt.start(
            self._checkpointing(attempt, acks, coordinator, tasks, notify, assigners, cleaner).run()
        )
        if self.compactor is not None:
            resume = self.context.services.resume_compactions(attempt, self.compactor)
            attempt.spawn("table-services", resume)
        if cleaner is not None:
            cleaner.open()

    def fail(
        self, epoch: int, cause: str, *, failed_task: int | None = None, path: str | None = None
    ) -> None:
        """Fail the job over (called from any of its processes): restore the last checkpoint
        along ``path`` (:data:`sim.restart.RESTART_PATHS`; None: chosen by what failed)."""
        if epoch != self.epoch or self.failing:
            return
        path = path or failover_path(failed_task, self.spec.failover)
        self.failing = True
        restore = self.completed.checkpoint_id if self.completed else None
        self.history.info(
            self.name,
            "failover",
            {"epoch": epoch, "cause": cause, "restore": restore, "path": path},
        )
        self.env.process(self._failover(epoch, path))

    def rescale(self, writers: int) -> None:
        """Stop the job and restart it from its last checkpoint with ``writers`` write tasks."""
        if self.failing:
            return
        previous, self.parallelism = self.parallelism, writers
        self.job_id += 1
        self.fail(self.epoch, f"rescale from {previous} to {writers} writers", path="rescale")

    def _failover(self, epoch: int, path: str) -> Generator[Any, Any, None]:
        assert self._attempt is not None
        for process in self._attempt.processes:
            if process.is_alive and process is not self.env.active_process:
                process.interrupt("failover")
        if not keeps_coordinator(path) and self._operator is not None:
            self._operator.abandon()
            if self.marker_server is not None:
                self.marker_server.crash()
        for channel in self._channels:
            channel.cancel_pending()
        yield self.env.timeout(self.context.sim.restart_delay_ms)
        if self.epoch == epoch:
            self._launch(self.completed, path)

    def _record_start(self, checkpoint: CompletedCheckpoint | None, path: str) -> None:
        """The ``start`` event of an attempt; a job writing a column group names it (the ledger
        reads it), a job writing whole records does not."""
        column_group = {}
        if self.source.columns:
            column_group = {
                "column_group": {
                    "columns": list(self.source.columns),
                    "ordering_field": self.source.ordering_field,
                }
            }
        restored = checkpoint.checkpoint_id if checkpoint else None
        value = start_event(self.epoch, restored, self.position.offset, path, self.task_attempt)
        value.update(writers=self.parallelism, **column_group)
        self.history.info(self.name, "start", value)

    def _live_instants(self) -> list[str]:
        """The instants whose heartbeats are kept alive: the coordinator's pending ones, none
        while the job fails over."""
        coordinator = self.coordinator
        if self.failing or coordinator is None:
            return []
        return coordinator.pending_instants

    # --- end of run ------------------------------------------------------------------------------

    def _check_drained(self) -> None:
        """Drained: everything the source emitted, up to the end of input, is covered by a
        completed checkpoint whose data the coordinator has committed: no pending instant with
        data, and no task event on its way (in a task's channel or waiting in the coordinator's
        mailbox), which would add data to an instant after this check. Checked after every
        notification, so a job with events in flight is checked again at the next one."""
        end = self.position.end
        if end is None or self.drained.triggered or self.failing:
            return
        if self.completed is None or self.completed.source_offset != end:
            return
        coordinator, operator = self.coordinator, self._operator
        assert coordinator is not None and operator is not None
        if any(b.write_stats for b in coordinator.buffers.values()) or coordinator.bootstrapping:
            return
        if any(channel.in_flight for channel in self._to_jm) or operator.holds_task_events():
            return
        self.history.info(self.name, "drained", {"source_offset": self.position.offset})
        self.drained.succeed()

    def drain(self) -> None:
        """The run is ending: the input ends and no more faults hit this job's channels.

        The input ends at the highest offset the source ever emitted, not at its current
        offset: a job that failed over shortly before restored an earlier checkpoint, and a Flink
        job on a bounded input replays its source from the restored offsets to the end of the
        input, whose final checkpoint then commits everything (Flink's FLIP-147; ending earlier
        would drop emitted records, docs/protocol.md section 6)."""
        self.position.end = self.position.emitted
        self.draining = True
        assert self._notify is not None
        self._notify.loss = 0.0
        self._notify.duplicate = 0.0


__all__ = ["Job"]
