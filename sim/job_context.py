"""What the world gives each of its jobs (:class:`JobContext`), and the fault hooks and rates a
job's roles use, as protocols: a job never sees the world, the nemesis or the other jobs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import simpy

from scenarios.tables import ProtocolSpec, SimSpec, TableSpec
from sim.flink.checkpoint_coordinator import CheckpointFaults
from sim.flink.write_clients import FlinkWriteClients
from sim.history import HistoryRecorder
from sim.marker_server import MarkerServerStats
from sim.rng import Rng
from sim.table_services import TableServices


class JobFaults(CheckpointFaults, Protocol):
    """The nemesis's hooks a job's roles fire: every process names itself when it starts, the
    checkpoint coordinator asks about checkpoint and notification faults, a write task about
    record write errors and failures at its restore, the operator coordinator tells of each
    instant it starts."""

    def name_process(self, name: str) -> None:
        """The running simpy process is ``name`` in the history."""
        ...

    def record_errors(self, process: str) -> int:
        """How many records of the flush the write task ``process`` starts now fail."""
        ...

    def restore_fails(self, process: str) -> bool:
        """Whether the write task ``process``, restoring now, fails before its bootstrap event
        (the nemesis has failed it over already)."""
        ...

    def instant_started(self, job: str) -> None:
        """The coordinator of ``job`` started an instant."""
        ...


class FaultRates(Protocol):
    """The ``[faults]`` rates a job's own channels and checkpoints draw."""

    ack_loss: float
    ack_duplicate: float
    ack_delay_ms: int
    checkpoint_failure: float


@dataclass(frozen=True)
class JobContext:
    """What the world gives each of its jobs: the simulation (environment, history, the run's
    random stream and seed), the scenario's tables the job reads, the fault hooks, the write
    clients on the table and the table services."""

    env: simpy.Environment
    history: HistoryRecorder
    rng: Rng
    seed: int
    table: TableSpec
    protocol: ProtocolSpec
    sim: SimSpec
    rates: FaultRates
    faults: JobFaults
    clients: FlinkWriteClients
    services: TableServices
    job_count: int = 1
    """How many jobs write the table."""
    marker_stats: MarkerServerStats = field(default_factory=MarkerServerStats)
    """What the jobs' timeline servers did with marker requests, summed over the run."""


__all__ = ["FaultRates", "JobContext", "JobFaults"]
