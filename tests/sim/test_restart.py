"""Flink's restart paths (sim/restart.py): which failure takes which path, what a path keeps, and
the task states a rescale restores."""

from __future__ import annotations

from models.flink.event_buffers import CoordinatorState
from models.flink.write_events import WriteMetadataEvent
from models.flink.write_task import TaskState
from sim.messages import CompletedCheckpoint
from sim.restart import (
    RESTART_PATHS,
    failover_path,
    keeps_coordinator,
    restored_task_states,
    start_event,
)


def test_the_path_of_a_failure():
    assert failover_path(1, "region") == "region"
    assert failover_path(1, "full") == "global"
    assert failover_path(None, "region") == "global"  # failJob, a failed checkpoint
    assert {p for p in RESTART_PATHS if keeps_coordinator(p)} == {"region", "global"}


def test_a_rescale_splits_the_restored_states_over_the_new_parallelism():
    events = [WriteMetadataEvent(t, "20260101000000000", 1, (), True) for t in range(2)]
    tasks = tuple(TaskState(t, 2, (events[t],), job_id=3) for t in range(2))
    checkpoint = CompletedCheckpoint(2, 100, CoordinatorState(2), tasks)
    assert restored_task_states(checkpoint, 2) == list(tasks)
    up = restored_task_states(checkpoint, 3)
    assert [len(s.events) for s in up if s] == [1, 1, 0] and {s.job_id for s in up if s} == {3}
    assert restored_task_states(None, 2) == [None, None]


def test_the_start_event():
    assert start_event(1, None, 0, "jobmanager", 0)["path"] == "start"
    assert start_event(4, 2, 50, "region", 3) == {
        "epoch": 4,
        "restored_checkpoint": 2,
        "source_offset": 50,
        "path": "region",
        "task_attempt": 3,
    }
