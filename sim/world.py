"""The simulated world of one run: time, randomness, the table lock, storage, jobs and faults.

One seed drives everything, split into named streams (``rng.child("job:job0")``...), so that adding
a fault kind or a job does not shift the draws of the others. Simulated time is in ms from the
start of the run; every process reads its own :class:`~sim.clock.SimClock` (offset, drift) mapped
onto a fixed epoch, so instant times look like real Hudi times and the same seed always produces
the same ones.

A run has two phases. Until ``duration_s`` the sources emit and the faults of ``[faults]`` fire.
Then the *drain*: faults stop, the input ends at the highest offset each source emitted (a job
restored to an earlier checkpoint replays up to there, as Flink does at the end of a bounded
input: ``Job.drain``), checkpoints continue until every job has committed everything it emitted
(or ``drain_timeout_s`` passes, which is a liveness failure). Ending on a
drained table is what lets the final snapshot be compared with the ledger: every emitted record
must be in it exactly as the merge rule says.

The world builds the clocks, the table lock, the storage, the table, the nemesis, the table
services and the jobs, and gives every job the same :class:`sim.job_context.JobContext` (the
write clients on the table, the table services, the nemesis's hooks): no job and no role of a job
holds the world.

The first history event (``setup``) carries everything a checker needs to rebuild the ledger's
model without the scenario file: the table, every job's source parameters and the protocol
variants.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import simpy

from models.format.records import ORDERING_FIELD, PARTITION_FIELD, RECORD_KEY_FIELD, SCHEMA
from models.storage import InMemoryStorage, LocalStorage, Storage
from models.timeline.active import ActiveTimeline
from models.timeline.truetime import TimeGenerator, TimeService, make_time_generator
from models.view.partial_update import (
    PAYLOAD_CLASS,
    WHOLE_ROW_PAYLOAD_CLASS,
    ColumnGroup,
    declare_column_groups,
    table_schema,
)
from models.view.table import HudiTable, ViewOptions
from models.write.table_init import create_table
from sim.clock import SimClock
from sim.flink.write_clients import FlinkWriteClients
from sim.history import HistoryRecorder
from sim.job import Job
from sim.job_context import JobContext
from sim.lock import SimLock
from sim.marker_server import MarkerServerStats
from sim.nemesis import Nemesis, NemesisStorage
from sim.pauses import PausableEnvironment
from sim.rng import Rng
from sim.storage_profiles import storage_profile
from sim.table_services import TableServices

EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z: simulated time 0


@dataclass(frozen=True)
class RunOutcome:
    """What a finished run leaves behind for checkers, metrics and the run folder."""

    history: HistoryRecorder
    table: HudiTable
    storage: Storage
    drained: bool
    end_ms: int
    view_options: ViewOptions
    markers: dict[str, object] | None = None
    """The timeline servers' marker requests (``[table] markers = "timeline_server"``)."""
    index_state: dict[str, list[tuple[int, int]]] | None = None
    """Per job under the Flink state index: (checkpoint id, keys in its index state) of each
    completed checkpoint."""


class World:
    """Builds and runs one scenario (a validated :class:`scenarios.schema.Scenario`)."""

    def __init__(self, scenario: Any, *, table_root: Path | None = None) -> None:
        self.scenario = scenario
        self.seed = scenario.scenario.seed
        self.env = PausableEnvironment()
        self.rng = Rng(self.seed)
        self.history = HistoryRecorder(lambda: int(self.env.now))
        self.draining = False
        self.marker_stats = MarkerServerStats()
        inner = _inner_storage(scenario.table.storage, table_root)
        self.nemesis = Nemesis(self)
        self.storage = NemesisStorage(
            self.nemesis,
            inner,
            now=self.now_ms,
            rng=self.rng.child("storage"),
            write_failure=scenario.faults.storage_write_failure,
            on_fault=self._storage_fault,
            latency_ms=scenario.sim.storage_latency_ms,
            profile=storage_profile(
                scenario.table.storage_profile, scenario.sim.storage_latency_ms
            ),
            active=lambda: self.env.active_process,
        )
        self.lock = SimLock(
            self.env, "table-lock", latency_ms=lambda: scenario.time.lock_latency_ms
        )
        self._clocks: dict[str, SimClock] = {}
        self.time_service = (
            TimeService(self.clock("time-service"))
            if scenario.time.generator == "time_service"
            else None
        )
        self.view_options = ViewOptions(
            rule=scenario.protocol.file_slicing, anchor=scenario.protocol.slice_anchor
        )
        self.log_block_format = "parquet"
        self.storage.failures_enabled = False
        self.table = self._create_table()
        data_schema = _declare_data_schema(scenario, self.table)
        self.storage.failures_enabled = True
        self.services = TableServices(
            env=self.env,
            history=self.history,
            table=self.table,
            storage=self.storage,
            now_ms=self.now_ms,
            sim=scenario.sim,
            policy=scenario.protocol.failed_writes_cleaning,
        )
        self.jobs = self._create_jobs(data_schema)

    def _create_table(self) -> HudiTable:
        """The run's table, as the protocol variant reads it (storage faults off)."""
        scenario = self.scenario
        table = create_table(
            self.storage,
            name=_table_name(scenario.scenario.name),
            table_type=scenario.table.type,
            record_key_field=RECORD_KEY_FIELD,
            ordering_field=ORDERING_FIELD,
            partition_fields=(PARTITION_FIELD,),
            merge_mode=scenario.table.merge_mode,
            decode_instants=False,  # its own writers' instants; a read is a simulated I/O
        )
        if not scenario.protocol.archived_completion_lookup:  # apache/hudi#14365
            table = HudiTable(self.storage, archive_lookup=False, decode_instants=False)
        if not scenario.protocol.put_if_absent:  # timeline files silently overwritten
            table.active_timeline = ActiveTimeline(self.storage, table.config, put_if_absent=False)
        return table

    def _create_jobs(self, data_schema: pa.Schema) -> list[Job]:
        """The jobs, in scenario order, each with the same :class:`JobContext`: the write
        clients on the table, the table services and the nemesis's hooks."""
        scenario = self.scenario
        clients = FlinkWriteClients(
            self.table,
            self.storage,
            self.view_options,
            self.log_block_format,
            data_schema,
            self.time_generator,
            clock_ms=lambda process: self.clock(process).now_ms,
            heartbeat=self.services.client_heartbeat(),
        )
        context = JobContext(
            env=self.env,
            history=self.history,
            rng=self.rng,
            seed=self.seed,
            table=scenario.table,
            protocol=scenario.protocol,
            sim=scenario.sim,
            rates=scenario.faults,
            faults=self.nemesis,
            clients=clients,
            services=self.services,
            job_count=len(scenario.jobs),
            marker_stats=self.marker_stats,
        )
        return [Job(spec, i, context) for i, spec in enumerate(scenario.jobs)]

    # --- time --------------------------------------------------------------------------------------

    def now_ms(self) -> int:
        """True (unskewed) time as epoch ms: what storage stamps on files' modification times."""
        return EPOCH_MS + int(self.env.now)

    def clock(self, process: str) -> SimClock:
        """The process's clock: offset uniform in [-clock_skew_ms, clock_skew_ms], drift likewise
        in ppm; drawn from a stream named after the process, so it is the same in every epoch."""
        clock = self._clocks.get(process)
        if clock is None:
            spec = self.scenario.time
            rng = self.rng.child("clock").child(process)
            offset = rng.randint(-spec.clock_skew_ms, spec.clock_skew_ms)
            drift = rng.uniform(-spec.clock_drift_ppm, spec.clock_drift_ppm)
            clock = SimClock(self.env, epoch_ms=EPOCH_MS, offset_ms=offset, drift_ppm=drift)
            self._clocks[process] = clock
            self.history.info(
                "world", "clock", {"process": process, "offset_ms": offset, "drift_ppm": drift}
            )
        return clock

    def time_generator(self, process: str) -> TimeGenerator:
        """``process``'s generator; every time it hands out is recorded (``instant_time``)."""
        from sim.time_recording import record_times

        generator = make_time_generator(
            self.scenario.time.generator,
            clock=self.clock(process),
            lock=self.lock,
            time_service=self.time_service,
            max_expected_clock_skew_ms=self.scenario.time.max_expected_skew_ms,
        )
        return record_times(generator, process, self.history)

    # --- faults ------------------------------------------------------------------------------------

    def _storage_fault(self, kind: str, value: dict[str, Any]) -> None:
        self.history.nemesis(kind, value)

    # --- the run -----------------------------------------------------------------------------------

    def _marker_setup(self) -> dict[str, Any]:
        """The setup event's marker settings (none for the default direct markers)."""
        table = self.scenario.table
        if table.markers == "direct":
            return {}
        return {
            "markers": table.markers,
            "marker_batch_interval_ms": table.marker_batch_interval_ms,
            "marker_batch_threads": table.marker_batch_threads,
        }

    def _setup_event(self) -> None:
        scenario = self.scenario
        self.history.info(
            "world",
            "setup",
            {
                "scenario": scenario.scenario.name,
                "seed": self.seed,
                "epoch_ms": EPOCH_MS,
                "table": {
                    **self._marker_setup(),
                    "type": scenario.table.type,
                    "merge_mode": scenario.table.merge_mode,
                    "partitions": scenario.table.partitions,
                    "buckets_per_partition": scenario.table.buckets_per_partition,
                    "record_key": RECORD_KEY_FIELD,
                    "ordering": ORDERING_FIELD,
                },
                "time": scenario.time.model_dump(mode="json"),
                "protocol": scenario.protocol.switches(),
                "heartbeat": {
                    "interval_ms": scenario.sim.heartbeat_interval_ms,
                    "tolerable_misses": scenario.sim.heartbeat_tolerable_misses,
                },
                "jobs": [
                    {
                        **(
                            {"index_type": job.layout.index} if job.layout.index != "bucket" else {}
                        ),
                        "name": job.name,
                        "index": job.index,
                        "writers": job.parallelism,
                        "instant_generation": job.mode,
                        "operation": job.spec.operation,
                        "table_services": job.table_services,
                        **(
                            {"early_conflict_detection": True}
                            if job.spec.early_conflict_detection
                            else {}
                        ),
                        "source": {
                            "seed": job.source.seed,
                            "job_index": job.source.job_index,
                            "key_space": job.source.key_space,
                            "partitions": job.source.partitions,
                            "records_per_s": job.source.records_per_s,
                            "operation": job.source.operation,
                            "lateness_ms": job.source.lateness_ms,
                            **(
                                {"partition_period_ms": job.source.partition_period_ms}
                                if job.source.partition_period_ms
                                else {}
                            ),
                        },
                    }
                    for job in self.jobs
                ],
            },
        )

    def _end_of_faults(self) -> Generator[Any, Any, None]:
        yield self.env.timeout(int(self.scenario.scenario.duration_s * 1000))
        self.draining = True
        self.storage.failures_enabled = False
        for job in self.jobs:
            job.drain()
        self.history.info(
            "world",
            "drain",
            {"source_offsets": {job.name: job.source_offset for job in self.jobs}},
        )

    def run(self, progress: Callable[[int, int], None] | None = None) -> RunOutcome:
        """Run to the end of the drain (or its timeout) and return the outcome.

        ``progress(now_ms, end_ms)`` is called about every simulated second for progress bars."""
        self._setup_event()
        for job in self.jobs:
            job.start()
        self.services.start_heartbeat_timers()
        self.nemesis.start(self.jobs)  # random faults and the [[faults.schedule]] (sim/nemesis.py)
        self.env.process(self._end_of_faults())
        duration_ms = int(self.scenario.scenario.duration_s * 1000)
        limit_ms = duration_ms + int(self.scenario.sim.drain_timeout_s * 1000)
        done = simpy.AllOf(self.env, [job.drained for job in self.jobs])
        deadline = self.env.timeout(limit_ms)
        step_ms = 1000
        while not done.triggered and not deadline.processed:
            self.env.run(until=min(limit_ms, int(self.env.now) + step_ms))
            if progress is not None:
                progress(int(self.env.now), limit_ms)
            if int(self.env.now) >= limit_ms:
                break
        drained = done.triggered
        self.history.info(
            "world",
            "end",
            {
                "drained": drained,
                "source_offsets": {job.name: job.source_offset for job in self.jobs},
                "completed_checkpoints": {
                    job.name: (
                        {
                            "checkpoint": job.completed.checkpoint_id,
                            "source_offset": job.completed.source_offset,
                        }
                        if job.completed
                        else None
                    )
                    for job in self.jobs
                },
            },
        )
        markers = None
        if self.scenario.table.markers == "timeline_server":
            markers = self.marker_stats.summary()
        index_state = {
            job.name: job.assigner_snapshots.state_keys
            for job in self.jobs
            if job.layout.index == "flink_state"
        }
        return RunOutcome(
            self.history,
            self.table,
            self.storage,
            drained,
            int(self.env.now),
            self.view_options,
            markers,
            index_state or None,
        )


def _declare_data_schema(scenario: Any, table: HudiTable) -> pa.Schema:
    """The table's data columns, which every commit's metadata carries as its schema.

    Multi-stream partial updates (jobs with ``columns``): every stream's columns. The table is
    declared with those column groups (``models.view.partial_update``), as if its DDL named them
    all, right after its creation (storage faults still off). The known-bad variant
    ``partial_update_merge = "row"`` declares them with Hudi's default payload, which merges whole
    rows."""
    jobs = scenario.jobs
    if not any(job.columns for job in jobs):
        return SCHEMA
    groups = [ColumnGroup(job.ordering_field, tuple(job.columns)) for job in jobs]
    whole_rows = scenario.protocol.partial_update_merge == "row"
    declare_column_groups(
        table, groups, payload_class=WHOLE_ROW_PAYLOAD_CLASS if whole_rows else PAYLOAD_CLASS
    )
    return table_schema(groups)


def _inner_storage(kind: str, table_root: Path | None) -> Storage:
    """Where the table's files go: a local folder or memory."""
    if kind == "local":
        if table_root is None:
            raise ValueError("local storage needs a table folder")
        return LocalStorage(table_root)
    return InMemoryStorage()


def _table_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in name).strip("_")
    return cleaned or "testbed"


__all__ = ["EPOCH_MS", "RunOutcome", "World"]
