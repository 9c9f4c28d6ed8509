"""The roles of one execution attempt of a job, as its JobMaster deploys them: the operator
coordinator and its write coordinator, the write tasks with their bucket index, the source, the
checkpoint coordinator, the compactor and the RPC channels between them.

:class:`JobRoles` is the part of :class:`sim.job.Job` that builds them from the job's scenario
spec and context; the job decides when (its attempts and restart paths).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from models.flink.coordinator import RestoreRules, WriteCoordinator
from models.flink.write_buffer import BufferOptions
from models.flink.write_files import FileLayout
from models.flink.write_task import WriteTask
from models.format.records import RecordSource
from models.txn.write_config import NON_BLOCKING_CONCURRENCY_CONTROL, job_concurrency_mode
from models.write.early_conflict import (
    DirectMarkerDetection,
    EarlyConflictDetectingMarkers,
    TimelineServerMarkerDetection,
)
from models.write.writer import TableWriter
from scenarios.tables import JobSpec
from sim.flink.bucket_assign import TaskBucketIndex, owned_buckets, task_bucket_index
from sim.flink.bucket_assign_function import (
    AssignerSnapshots,
    BucketAssignTask,
    route_by_record_key,
)
from sim.flink.checkpoint_coordinator import (
    CheckpointCoordinator,
    CheckpointSettings,
    CheckpointStore,
    PendingAcks,
)
from sim.flink.clean_function import CleanFunction
from sim.flink.compactor import Compactor
from sim.flink.operator_coordinator import CommitReporter, OperatorCoordinator, PrecommitCheck
from sim.flink.runtime import Attempt, Gateway
from sim.flink.source import SourcePosition, SourceReader
from sim.flink.write_function import RecordFailures, WriteFunction
from sim.job_context import JobContext
from sim.marker_server import MarkerServer, ServerConflictDetection
from sim.network import Channel
from sim.state_index_roles import StateIndexRoles

if TYPE_CHECKING:
    import simpy

    from sim.history import HistoryRecorder
    from sim.rng import Rng


class JobRoles(StateIndexRoles):
    """Builders of an attempt's roles; :class:`sim.job.Job` supplies the attributes below."""

    spec: JobSpec
    index: int
    name: str
    parallelism: int
    mode: str
    context: JobContext
    env: simpy.Environment
    history: HistoryRecorder
    rng: Rng
    source: RecordSource
    layout: FileLayout
    max_parallelism: int
    assigner_snapshots: AssignerSnapshots
    operation_type: str
    checkpoint_settings: CheckpointSettings
    task_attempt: int
    job_id: int
    draining: bool
    checkpoints: CheckpointStore
    position: SourcePosition
    occ_check: PrecommitCheck | None
    reporter: CommitReporter
    compactor: Compactor | None
    _operator: OperatorCoordinator | None
    marker_server: MarkerServer | None
    coordinator: WriteCoordinator | None
    process_name: Callable[[str], str]
    _check_drained: Callable[[], None]

    def _operator_coordinator(self, attempt: Attempt) -> OperatorCoordinator:
        """The operator coordinator of ``attempt``, which creates its write coordinator (and
        the embedded timeline server's marker handler its write client starts)."""
        self.marker_server = self._marker_server()
        self._operator = OperatorCoordinator(
            attempt,
            lambda: self._write_coordinator(attempt),
            services=self.context.services,
            compaction=self.compactor,
            on_notified=self._check_drained,
            commit_ack_timeout_ms=int(self.spec.commit_ack_timeout_s * 1000),
            on_instant_started=lambda: self.context.faults.instant_started(self.name),
        )
        return self._operator

    def _marker_server(self) -> MarkerServer | None:
        """The embedded timeline server's marker handler of a new coordinator (None: direct
        markers)."""
        table = self.context.table
        if table.markers != "timeline_server":
            return None
        protocol = self.context.protocol
        return MarkerServer(
            self.env,
            self.context.clients.storage,
            batch_interval_ms=table.marker_batch_interval_ms,
            num_threads=table.marker_batch_threads,
            answer_before_write=protocol.marker_answer == "before_write",
            swallow_write_failure=protocol.marker_write_failure == "swallow",
            name_batch=lambda: self.context.faults.name_process(f"{self.name}/timeline_server"),
            stats=self.context.marker_stats,
            early_conflict=self._server_conflict_detection(),
        )

    def _server_conflict_detection(self) -> ServerConflictDetection | None:
        """With ``early_conflict_detection``, the timeline server's strategy, on the job
        manager's clock; each detection is the server's ``early_conflict_detected`` event."""
        if not self.spec.early_conflict_detection:
            return None
        clients, sim = self.context.clients, self.context.sim
        server = f"{self.name}/timeline_server"
        candidates = DirectMarkerDetection(
            clients.storage,
            now_ms=clients.clock_ms(self.process_name("coordinator")),
            timeline=clients.table.timeline,
            heartbeat_interval_ms=sim.heartbeat_interval_ms,
            tolerable_misses=sim.heartbeat_tolerable_misses,
            skip_expired_heartbeats=self._skip_expired_heartbeats(),
        )

        def detected(instant: str, other: str, key: str) -> None:
            self.history.info(
                server, "early_conflict_detected", {"instant": instant, "other": other, "key": key}
            )

        return ServerConflictDetection(
            self.env,
            TimelineServerMarkerDetection(candidates),
            self.spec.async_conflict_detector_period_ms,
            detected,
        )

    def _write_coordinator(self, attempt: Attempt) -> WriteCoordinator:
        """A new write coordinator (Flink's ``OperatorCoordinator.Provider#create``), its write
        client on the coordinator's clock."""
        protocol = self.context.protocol
        writer = self.context.clients.coordinator_writer(attempt.process_name("coordinator"))
        if self.marker_server is not None:
            writer.marked_data_paths = self.marker_server.created_and_merged_data_paths
        return WriteCoordinator(
            writer,
            parallelism=self.parallelism,
            mode=self.mode,
            operation_type=self.operation_type,
            allow_empty_commit=self.spec.allow_empty_commit,
            precommit=self.reporter.recording_aborts(self._occ_check()),
            commit_scope=protocol.commit_scope,
            restore_rules=RestoreRules(
                snapshot_partial_buffers=protocol.snapshot_partial_buffers,
                reset_recommit=protocol.reset_recommit,
                checkpoint_deferred_recommits=protocol.checkpoint_deferred_recommits,
            ),
            on_drop=self.reporter.dropped,
            concurrency_mode=job_concurrency_mode(self.spec.concurrency, self.context.job_count),
            failed_writes_cleaning=self._start_commit_cleaning(),
            on_rollback=self.reporter,
            instant_request=protocol.instant_request,
            write_ignore_failed=self.spec.write_ignore_failed,
        )

    def _start_commit_cleaning(self) -> str:
        """The policy the coordinator's ``startCommit`` applies: the job's when instants are
        blocking (Hudi 1.1); otherwise none there: 1.1 forces LAZY for non-blocking generation,
        and an EAGER job of the ``1.0`` preset, whose real coordinator starts an instant only
        after the previous commit, cleans once after a restart instead
        (:meth:`sim.table_services.TableServices.clean_after_bootstrap`)."""
        return self.context.services.policy if self.mode == "blocking" else "LAZY"

    def _occ_check(self) -> PrecommitCheck | None:
        """The OCC check of a new write coordinator: the job's, which remembers the job's own
        commits across restarts, or (``recommit_baseline = "coordinator"``, apache/hudi#19024)
        a fresh one that knows none of them."""
        if self.context.protocol.recommit_baseline == "coordinator":
            return self.context.services.occ_check(self.spec.concurrency)
        return self.occ_check

    def _write_function(
        self, attempt: Attempt, task_id: int, *, to_coordinator: Gateway, to_checkpoints: Gateway
    ) -> WriteFunction:
        clients = self.context.clients
        spec = self.spec
        task = WriteTask(
            task_id,
            spec.buffer_records,
            operation=spec.operation,
            buffer_options=BufferOptions(
                write_batch_size_mb=spec.write_batch_size_mb,
                write_task_max_size_mb=spec.write_task_max_size_mb,
                write_merge_max_memory_mb=spec.write_merge_max_memory_mb,
                write_memory_segment_page_size_bytes=spec.write_memory_segment_page_size_bytes,
            ),
            buckets_per_partition=self.layout.buckets_per_partition,
            record_payload_bytes=spec.record_payload_bytes,
            merge_mode=clients.table.config.merge_mode or "EVENT_TIME_ORDERING",
            persist_write_meta=self.context.protocol.persist_write_meta,
            restored_checkpoint_id=self.context.protocol.restored_checkpoint_id,
            restored_events_resend=self.context.protocol.restored_events_resend,
            job_id=self.job_id,
        )
        return WriteFunction(
            attempt,
            task,
            self._task_writer(attempt, task_id),
            layout=self.layout,
            mode=self.mode,
            attempt_number=self.task_attempt,
            storage=clients.storage,
            base_instants=clients.latest_base_instants,
            to_coordinator=to_coordinator,
            to_checkpoints=to_checkpoints,
            bucket_index=self._bucket_index(attempt, task_id),
            rpc_ask_timeout_ms=self.context.sim.rpc_ask_timeout_ms,
            commit_ack_timeout_ms=round(spec.commit_ack_timeout_s * 1000),
            record_failures=RecordFailures(
                self.context.faults.record_errors,
                throws=self.context.protocol.record_write_failure == "throw"
                and not spec.write_ignore_failed,
            ),
            marker_server=self.marker_server,
            restore_fails=self.context.faults.restore_fails,
        )

    def _skip_expired_heartbeats(self) -> bool:
        """Whether early conflict detection drops older instants whose heartbeat expired
        (``[protocol] early_conflict_heartbeats``)."""
        return self.context.protocol.early_conflict_heartbeats == "expired_skipped"

    def _task_writer(self, attempt: Attempt, task_id: int) -> TableWriter:
        """A write task's client; with ``early_conflict_detection``, its new log files' markers
        go through the direct strategy's check on the task's clock
        (:mod:`models.write.early_conflict`)."""
        clients = self.context.clients
        writer = clients.task_writer(self.index + 1, self.task_attempt)
        if self.spec.early_conflict_detection:
            sim = self.context.sim
            detection = DirectMarkerDetection(
                clients.storage,
                now_ms=clients.clock_ms(attempt.process_name(f"task-{task_id}")),
                timeline=clients.table.timeline,
                heartbeat_interval_ms=sim.heartbeat_interval_ms,
                tolerable_misses=sim.heartbeat_tolerable_misses,
                skip_expired_heartbeats=self._skip_expired_heartbeats(),
            )
            writer.markers = EarlyConflictDetectingMarkers(writer.markers, detection)
        return writer

    def _bucket_index(self, attempt: Attempt, task_id: int) -> TaskBucketIndex | None:
        """An upsert task's bucket index (none under the Flink state index); the coordinator it
        asks for pending file ids is the job's current one (:mod:`sim.flink.bucket_assign`)."""
        if self.spec.operation != "upsert" or self.layout.index != "bucket":
            return None

        def pending(partition: str) -> list[str]:
            coordinator = self.coordinator
            return (
                [] if coordinator is None else coordinator.buffers.pending_write_file_ids(partition)
            )

        clients = self.context.clients
        adopted = self.context.protocol.pending_file_ids == "adopted"
        return task_bucket_index(
            clients.table,
            clients.view_options,
            owned_buckets(self.layout.buckets_per_partition, self.parallelism, task_id),
            nbcc=job_concurrency_mode(self.spec.concurrency, self.context.job_count)
            == NON_BLOCKING_CONCURRENCY_CONTROL,
            rng=self.rng.child(f"file-ids:{attempt.epoch}:{task_id}"),
            pending=pending if adopted else None,
        )

    def _source(
        self, attempt: Attempt, tasks: list[WriteFunction], assigners: list[BucketAssignTask]
    ) -> SourceReader:
        """The source, feeding the write tasks (bucket index) or the assigner subtasks."""
        return SourceReader(
            attempt,
            self.source,
            self.position,
            records_per_s=self.spec.records_per_s,
            buckets_per_partition=self.layout.buckets_per_partition,
            outputs=assigners or tasks,
            router=route_by_record_key(self.max_parallelism) if assigners else None,
        )

    def _checkpointing(
        self,
        attempt: Attempt,
        acks: PendingAcks,
        coordinator: OperatorCoordinator,
        tasks: list[WriteFunction],
        notify: Channel,
        assigners: list[BucketAssignTask],
        cleaner: CleanFunction | None,
    ) -> CheckpointCoordinator:
        """The attempt's checkpoint coordinator; its barriers reach the assigner subtasks and
        the write tasks, and then the clean operator (``cleaner``, if any)."""
        on_complete: list[Callable[[int], None]] = []
        if assigners:
            snapshots = self.assigner_snapshots
            on_complete = [snapshots.completed, *(a.checkpoint_complete for a in assigners)]
        if cleaner is not None:
            on_complete.append(cleaner.notify_checkpoint_complete)
        return CheckpointCoordinator(
            attempt,
            self.checkpoints,
            acks,
            settings=self.checkpoint_settings,
            coordinator=coordinator,
            tasks=[*assigners, *tasks],
            position=self.position,
            notify_channel=notify,
            faults=self.context.faults,
            fault_rng=self.rng.child(f"checkpoint-faults:{attempt.epoch}"),
            draining=lambda: self.draining,
            on_complete=on_complete,
            on_aligned=[cleaner.snapshot_state] if cleaner is not None else (),
        )

    def _compactor(self) -> Compactor:
        clients, process = self.context.clients, self.process_name("compactor")
        return Compactor(
            history=self.history,
            table=clients.table,
            storage=clients.storage,
            new_writer=lambda: clients.compactor_writer(process, self.index + 1),
            process=process,
            every_commits=self.spec.compaction_every_commits,
        )

    def _channel(
        self, role: str, *, loss: float = 0.0, duplicate: float = 0.0, fifo: bool = True
    ) -> Channel:
        """An RPC channel of this attempt; its random stream starts afresh in every attempt."""
        delay = self.context.sim.network_delay_ms
        return Channel(
            self.env,
            f"{self.name}/{role}",
            self.rng.child(f"net:{role}"),
            delay_ms=(delay, delay * 2),
            loss=loss,
            duplicate=duplicate,
            fifo=fifo,
            on_fault=self.history.nemesis,
        )
