"""Tests for sim/flink/write_clients.py: each role's write client takes instant times on its own
process's clock (tasks take none), names its files with its job's stage, and carries the table's
data columns."""

from __future__ import annotations

from models.format.records import SCHEMA
from sim.time_recording import RecordingTimeGenerator
from sim.world import World
from tests.sim.test_world import JOB, make_scenario


def clients():
    world = World(make_scenario(jobs=(JOB, JOB)))
    return world, world.jobs[1].context.clients


def test_the_coordinator_and_the_compactor_take_times_on_their_own_clocks():
    world, c = clients()
    coordinator = c.coordinator_writer("job1/coordinator")
    compactor = c.compactor_writer("job1/compactor", 2)
    assert isinstance(coordinator.time_generator, RecordingTimeGenerator)
    assert coordinator.time_generator.process == "job1/coordinator"
    assert compactor.time_generator.process == "job1/compactor"
    assert (coordinator.stage_id, compactor.stage_id) == (1, 2)
    assert coordinator.log_block_format == "parquet"
    assert coordinator.view_options is world.view_options
    clocks = [e.value["process"] for e in world.history.events if e.f == "clock"]
    assert clocks == ["job1/coordinator", "job1/compactor"]


def test_a_task_writes_data_files_only_under_its_jobs_stage():
    world, c = clients()
    writer = c.task_writer(2)
    assert writer.time_generator is None and writer.stage_id == 2
    assert writer.table is world.table
    assert c.data_schema == SCHEMA


def test_an_empty_table_has_no_base_instants():
    _, c = clients()
    assert c.latest_base_instants() == {}
