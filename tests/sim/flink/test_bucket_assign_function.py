"""The Flink state index in the simulator (sim/flink/bucket_assign_function.py): the assigner
subtasks between the source and the write tasks, their keyed state in the checkpoints, and whole
runs on both table types with every fault.

The restore is load-bearing: a run whose restarts drop the assigner's keyed state (as a job
started without its checkpoint does, apache/hudi#9174) puts known keys into new file groups, which
``unique_key`` reports; the same run with the state restored holds every invariant.
"""

from __future__ import annotations

from typing import Any

import pytest

from invariants.checks import check_all
from invariants.committed import load_committed
from models.flink.key_groups import operator_index
from models.flink.state_index import StateIndex
from models.flink.write_files import LOCATION_FILE_ID
from models.view.table import HudiTable
from scenarios import parse_scenario
from sim.flink.bucket_assign_function import AssignerSnapshots, BucketAssignTask
from sim.world import World
from tests.conformance.test_bucket_assigner import mock_bucket_assigner
from tests.models.flink.test_state_index import records
from tests.sim.flink.test_source import FakeInput
from tests.sim.test_world import ALL_FAULTS, scenario_toml

STATE_JOB: dict[str, Any] = {
    "writers": 3,
    "checkpoint_interval_s": 2,
    "records_per_s": 400,
    "key_space": 20000,
    "index": "flink_state",
    "parquet_max_file_size_mb": 0.02,
}
"""A job whose keys keep arriving (20,000 keys) into small files of 20 KB: new file groups keep
being made, so a lost location shows."""


def test_snapshots_keep_each_checkpoint_until_a_later_one_completes():
    snapshots = AssignerSnapshots()
    snapshots.take(1, {"k1": ("p", "f1")})
    snapshots.take(1, {"k2": ("p", "f2")})
    snapshots.take(2, {"k3": ("p", "f3")})
    assert snapshots.restored(1) == {"k1": ("p", "f1"), "k2": ("p", "f2")}
    snapshots.completed(2)
    assert snapshots.restored(1) == {} and snapshots.restored(2) == {"k3": ("p", "f3")}
    assert snapshots.restored(None) == {}


def test_a_snapshot_keeps_the_ttl_times_and_the_bootstrap_instant():
    writers = [FakeInput()]
    snapshots = AssignerSnapshots()
    task = BucketAssignTask(
        StateIndex(mock_bucket_assigner(), ttl_ms=1000),
        writers,
        snapshots,
        max_parallelism=128,
        clock_ms=lambda: 250,
        bootstrap_instant=lambda: "20260101000000123",
    )
    task.receive(records(("k1", "p0")))
    task.inject_barrier(3)
    assert snapshots.restored_written_ms(3) == {"k1": 250}
    assert snapshots.instant_state(3) == "20260101000000123"
    snapshots.completed(4)
    assert snapshots.restored_written_ms(3) == {} and snapshots.instant_state(3) is None


def test_a_barrier_without_an_instant_keeps_the_one_saved_before():
    """``BootstrapOperator#snapshotState`` updates ``instantState`` only with a non-null
    instant (HUDI-6812): a null one keeps the state, so a restore does not load everything."""
    snapshots = AssignerSnapshots()
    snapshots.take(1, {}, "20260101000000100")
    snapshots.take(2, {}, None)
    assert snapshots.instant_state(2) == "20260101000000100"
    snapshots.take(3, {}, "20260101000000300")
    snapshots.restore(2)  # a new attempt restores checkpoint 2's operator state
    snapshots.take(4, {}, None)
    assert snapshots.instant_state(4) == "20260101000000100"
    snapshots.restore(None)  # a start without state: the operator state is empty
    snapshots.take(5, {}, None)
    assert snapshots.instant_state(5) is None


def test_an_assigner_task_hands_each_writer_the_file_groups_it_owns():
    writers = [FakeInput(), FakeInput()]
    snapshots = AssignerSnapshots()
    task = BucketAssignTask(
        StateIndex(mock_bucket_assigner(1, 2)), writers, snapshots, max_parallelism=128
    )
    task.receive(records(("k1", "p0"), ("k2", "p1"), ("k3", "p0")))
    got = [t for w in writers for t in w.batches]
    assert sum(t.num_rows for t in got) == 3
    for owner, writer in enumerate(writers):
        for table in writer.batches:
            for file_id in table.column(LOCATION_FILE_ID).to_pylist():
                assert operator_index(file_id, 128, 2) == owner
    task.inject_barrier(7)
    assert set(snapshots.restored(7)) == {"k1", "k2", "k3"}


def test_an_assigner_task_holds_its_input_until_the_index_bootstrap_is_done():
    now = [0]
    task = BucketAssignTask(
        StateIndex(mock_bucket_assigner()),
        [FakeInput()],
        AssignerSnapshots(),
        max_parallelism=128,
        clock_ms=lambda: now[0],
        ready_at_ms=75,
    )
    assert task.backpressured
    now[0] = 75
    assert not task.backpressured


def test_the_source_emits_nothing_while_the_index_bootstrap_loads():
    job = {**STATE_JOB, "index_bootstrap": True}
    text = scenario_toml(
        seed=3, duration_s=20, jobs=(job,), sim={"storage_latency_ms": 40}, faults=ALL_FAULTS
    )
    events = World(parse_scenario(text)).run().history.events
    loads = [e for e in events if e.f == "index_bootstrap" and e.value["keys"]]
    assert loads and all(e.value["duration_ms"] > 0 for e in loads)
    emits = [e.time for e in events if e.f == "emit"]
    for load in loads:
        end = load.time + load.value["duration_ms"]
        assert not [t for t in emits if load.time <= t < end]
        assert [t for t in emits if t >= end]


def run(table_type: str, **overrides: Any):
    job = {**STATE_JOB, **overrides}
    if table_type == "COPY_ON_WRITE":
        job["instant_generation"] = "blocking"
    text = scenario_toml(
        seed=3, duration_s=40, jobs=(job,), table={"type": table_type}, faults=ALL_FAULTS
    )
    outcome = World(parse_scenario(text)).run()
    table = HudiTable(outcome.storage)
    return outcome, table, check_all(outcome.history.events, table)


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_a_state_index_job_holds_every_invariant_through_every_fault(table_type):
    outcome, table, verdicts = run(table_type)
    assert {n: [v.why for v in x.violations] for n, x in verdicts.items() if not x.ok} == {}
    restarts = [e for e in outcome.history.events if e.f == "failover"]
    assert restarts, "the faults restart the job"
    file_groups = {f.file_id for f in load_committed(table).files.values()}
    assert len(file_groups) > 6  # new file groups beyond one per partition and task
    assert all(len(f) == 36 for f in file_groups)  # the assigner's UUIDs, no bucket number


def test_restarts_that_drop_the_keyed_state_put_keys_in_two_file_groups(monkeypatch):
    monkeypatch.setattr(AssignerSnapshots, "restored", lambda self, checkpoint_id: {})
    _, _, verdicts = run("MERGE_ON_READ")
    assert not verdicts["unique_key"].ok
    assert "keys are live in two file groups" in verdicts["unique_key"].violations[-1].why
