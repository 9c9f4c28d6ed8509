"""The Flink state index's roles of one execution attempt: the bucket-assigner subtasks between the
source and the write tasks, restored from the checkpoint's keyed state and loaded by the index
bootstrap when the job enables it (Hudi's ``Pipelines#hoodieStreamWrite`` with
``BucketAssignFunction`` and ``BootstrapOperator``).

:class:`StateIndexRoles` is the part of :class:`sim.job_roles.JobRoles` that builds them.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from models.flink.index_bootstrap import bootstrap_index
from models.flink.state_index import Location, restore_locations
from models.flink.write_files import FileLayout
from models.flink.write_profile import (
    TableWriteProfile,
    commit_metadata_safely,
    completed_commits,
)
from models.view.fsview import latest_file_slices
from scenarios.tables import JobSpec
from sim.flink.bucket_assign import uuid_source
from sim.flink.bucket_assign_function import (
    AssignerOptions,
    AssignerSnapshots,
    BucketAssignTask,
    assigner_tasks,
)
from sim.flink.operator_coordinator import OperatorCoordinator
from sim.flink.runtime import Attempt
from sim.flink.write_function import WriteFunction
from sim.job_context import JobContext

MS_PER_DAY = 24 * 60 * 60 * 1000
"""``index.state.ttl`` is in days; ``BucketAssignFunction#open`` multiplies it out to milliseconds
and truncates (``(long) ttl``)."""

if TYPE_CHECKING:
    import simpy

    from sim.history import HistoryRecorder
    from sim.rng import Rng


class StateIndexRoles:
    """Builders of the state index's roles; :class:`sim.job.Job` supplies the attributes below."""

    spec: JobSpec
    name: str
    context: JobContext
    env: simpy.Environment
    history: HistoryRecorder
    rng: Rng
    layout: FileLayout
    max_parallelism: int
    assigner_snapshots: AssignerSnapshots

    def _assigners(
        self,
        attempt: Attempt,
        checkpoint_id: int | None,
        tasks: list[WriteFunction],
        coordinator: OperatorCoordinator,
    ) -> list[BucketAssignTask]:
        """The Flink state index's assigner subtasks of an upsert job (none under the bucket
        index), restored from ``checkpoint_id``'s keyed state (variant ``index_state = "lost"``:
        empty), then loaded by the index bootstrap if the job enables it."""
        if self.layout.index != "flink_state" or self.spec.operation != "upsert":
            return []
        clients = self.context.clients
        table, options = clients.table, clients.view_options
        profile = TableWriteProfile(
            lambda: latest_file_slices(table.file_groups(options=options)[1]),
            is_mor=table.config.is_mor,
            max_file_size_bytes=round(self.spec.parquet_max_file_size_mb * 1024 * 1024),
            completed_commits=lambda: completed_commits(table),
            commit_metadata=lambda instant: commit_metadata_safely(table, instant),
        )
        restored = checkpoint_id if self.context.protocol.index_state == "restored" else None
        settings = AssignerOptions(
            profile,
            self.max_parallelism,
            lambda i: uuid_source(self.rng.child(f"assigner-ids:{attempt.epoch}:{i}")),
            ttl_ms=int(self.spec.index_state_ttl_days * MS_PER_DAY),
            refresh=self.context.protocol.index_state_refresh,
            global_index=self.spec.index_global and self.spec.partition_period_s > 0,
            clock_ms=lambda: int(self.env.now),
            bootstrap_instant=self._bootstrap_instant(),
        )
        if not self.spec.index_bootstrap:
            return assigner_tasks(tasks, self.assigner_snapshots, restored, settings)
        # BootstrapOperator#initializeState runs in the deployed tasks, after Flink reset and
        # started the coordinator (whose restart step recommits what it restored): the load
        # reads the timeline once that step is done (index_bootstrap_reads = "after_recommit":
        # once every write task's bootstrap event is handled too); records wait until it ends.
        settings = replace(settings, ready_at_ms=2**62)
        assigners = assigner_tasks(tasks, self.assigner_snapshots, restored, settings)

        def load() -> Generator[Any, Any, None]:
            yield coordinator.restored
            if self.context.protocol.index_bootstrap_reads == "after_recommit":
                yield coordinator.reported
            bootstrapped, duration_ms = self._index_bootstrap(restored, len(tasks))
            now, most = int(self.env.now), self.max_parallelism
            for task_id, assigner in enumerate(assigners):
                share = restore_locations(bootstrapped, task_id, most, len(assigners))
                assigner.index.load(share, now)
                assigner.ready_at_ms = now + duration_ms

        attempt.start(attempt.run("index-bootstrap", load()))
        return assigners

    def _bootstrap_instant(self) -> Callable[[], str | None]:
        """What ``BootstrapOperator#snapshotState`` saves at a barrier: the table's last
        completed commits-timeline instant (``StreamerUtil#getLastCompletedInstant``, Hudi 1.1
        and master since HUDI-9381; 1.0 saved ``CkpMetadata#lastPendingInstant``, the instant
        its eagerly started coordinator was writing, which the blocking mode here starts only
        on the tasks' request after the barrier); nothing for a job without the bootstrap."""
        if not self.spec.index_bootstrap:
            return lambda: None
        table = self.context.clients.table
        return lambda: max((i.requested_time for i in completed_commits(table)), default=None)

    def _index_bootstrap(
        self, restored: int | None, parallelism: int
    ) -> tuple[dict[str, Location], int]:
        """``BootstrapOperator#preLoadIndexRecords`` over the committed view, after the
        instant the checkpoint's bootstrap state holds (none when nothing was restored), and how
        long it takes: its storage operations, shared evenly among its ``parallelism`` subtasks
        (each loads the file groups whose id hashes to it, ``shouldLoadFile``), which all wait
        for the slowest (``waitForBootstrapReady``)."""
        clients = self.context.clients
        table, options, storage = clients.table, clients.view_options, clients.storage
        mark = storage.usage()
        timeline, groups = table.file_groups(options=options)
        last = self.assigner_snapshots.instant_state(restored)
        loaded = bootstrap_index(
            table,
            timeline,
            latest_file_slices(groups),
            last,
            self.context.protocol.index_bootstrap_deletes,
        )
        duration_ms = -(-storage.latency_since(mark) // parallelism)
        self.history.ok(
            self.name,
            "index_bootstrap",
            {
                "last_instant": last,
                "loaded_instant": loaded.loaded_instant,
                "keys": len(loaded.locations),
                "duration_ms": duration_ms,
            },
        )
        return loaded.locations, duration_ms


__all__ = ["MS_PER_DAY", "StateIndexRoles"]
