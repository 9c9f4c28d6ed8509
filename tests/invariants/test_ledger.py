"""Tests for invariants/ledger.py: the ground truth rebuilt from a hand-built history alone.

The ledger must find each job's source in the ``setup`` event, take the highest emitted offset
and the offset of the last *completed* checkpoint, and regenerate exactly the records those
offsets name; its model is one row per key by the merge mode (upsert) or every record (insert).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from invariants.ledger import NEVER_COMMITTED, LedgerError, build_ledger, latest_per_key
from models.format.records import RecordSource
from models.history import Event, read_history, write_history


def source(job_index: int = 0, *, operation: str = "upsert", key_space: int = 50) -> dict:
    return {
        "seed": 7,
        "job_index": job_index,
        "key_space": key_space,
        "partitions": 2,
        "records_per_s": 100.0,
        "operation": operation,
        "lateness_ms": 0,
    }


def setup_value(
    *sources: dict, merge_mode: str = "EVENT_TIME_ORDERING", names: tuple[str, ...] = ()
) -> dict[str, Any]:
    """What ``World._setup_event`` records, for the given job sources."""
    sources = sources or (source(),)
    names = names or tuple(f"job{i}" for i in range(len(sources)))
    return {
        "scenario": "hand-built",
        "seed": 7,
        "epoch_ms": 1_767_225_600_000,
        "table": {
            "type": "MERGE_ON_READ",
            "merge_mode": merge_mode,
            "partitions": 2,
            "buckets_per_partition": 2,
            "record_key": "key",
            "ordering": "ts",
        },
        "protocol": {"file_slicing": "completion_time", "slice_anchor": "earliest_completed"},
        "jobs": [
            {
                "name": name,
                "index": i,
                "writers": 1,
                "instant_generation": "async",
                "operation": src["operation"],
                "source": src,
            }
            for i, (name, src) in enumerate(zip(names, sources, strict=True))
        ],
    }


class History:
    """Builds a list of events with consecutive indexes and non-decreasing times."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, process: str, type: str, f: str, value: Any = None, time: int | None = None):
        time = time if time is not None else (self.events[-1].time + 10 if self.events else 0)
        event = Event(len(self.events), time, process, type, f, value)
        self.events.append(event)
        return event

    def setup(self, *sources: dict, **kwargs: Any) -> Event:
        return self.add("world", "info", "setup", setup_value(*sources, **kwargs))

    def emit(self, job: str, start: int, stop: int) -> Event:
        return self.add(f"{job}/source", "info", "emit", {"from": start, "to": stop})

    def checkpoint(self, job: str, checkpoint: int, offset: int, type: str = "ok") -> Event:
        value = {"checkpoint": checkpoint}
        if type == "ok":
            value["source_offset"] = offset
        return self.add(f"{job}/checkpoint", type, "checkpoint", value)

    def flush(self, job: str, instant: str, checkpoint: int, task: int = 0) -> Event:
        """A write task's flush into ``instant`` of data carrying ``checkpoint``."""
        value = {"task": task, "instant": instant, "checkpoint": checkpoint, "files": []}
        return self.add(f"{job}/task-{task}", "ok", "flush", {**value, "last_batch": False})

    def commit(self, job: str, instant: str, completion: str, checkpoint: int) -> Event:
        value = {"instant": instant, "completion": completion, "checkpoint": checkpoint}
        return self.add(f"{job}/coordinator", "ok", "commit", {**value, "files": []})


def record_source(src: dict) -> RecordSource:
    return RecordSource(**src)


def test_rebuilds_emitted_and_covered_offsets_per_job():
    h = History()
    h.setup(source(0), source(1))
    h.emit("job0", 0, 100)
    h.checkpoint("job0", 1, 0, type="invoke")
    first = h.checkpoint("job0", 1, 100)
    h.emit("job0", 100, 250)
    h.emit("job1", 0, 40)
    h.checkpoint("job0", 2, 0, type="invoke")
    h.checkpoint("job0", 2, 0, type="fail")  # a failed checkpoint covers nothing
    h.emit("job0", 100, 180)  # replay after the failover: emitted stays the maximum
    last = h.checkpoint("job0", 3, 180)
    h.emit("elsewhere", 0, 999)  # a process of no known job is ignored
    ledger = build_ledger(h.events)
    job0, job1 = ledger.jobs
    assert (job0.name, job0.emitted, job0.covered, job0.covered_event) == (
        "job0",
        250,
        180,
        last.index,
    )
    assert (job1.name, job1.emitted, job1.covered, job1.covered_event) == ("job1", 40, 0, None)
    assert first.index < last.index
    assert job0.source == record_source(source(0))
    assert job1.source == record_source(source(1))
    assert ledger.merge_mode == "EVENT_TIME_ORDERING"
    assert not ledger.insert_only


def test_records_regenerate_exactly_what_the_offsets_name():
    h = History()
    h.setup(source(0), source(1))
    h.emit("job0", 0, 120)
    h.checkpoint("job0", 1, 80)
    h.emit("job1", 0, 30)
    h.checkpoint("job1", 1, 30)
    ledger = build_ledger(h.events)
    s0, s1 = record_source(source(0)), record_source(source(1))
    assert ledger.records().equals(pa.concat_tables([s0.batch(0, 80), s1.batch(0, 30)]))
    everything = ledger.records(covered_only=False)
    assert everything.equals(pa.concat_tables([s0.batch(0, 120), s1.batch(0, 30)]))


def brute_force_model(rows: pa.Table, *, by: str) -> list[dict]:
    """One winner per key: greatest ``ts`` (event time) or greatest ``offset`` (commit time)."""
    best: dict[str, dict] = {}
    for row in rows.to_pylist():
        held = best.get(row["key"])
        if held is None or row[by] > held[by]:
            best[row["key"]] = row
    return [best[key] for key in sorted(best)]


def test_upsert_model_keeps_the_latest_event_time_per_key():
    h = History()
    h.setup(source(0, key_space=20))
    h.emit("job0", 0, 200)
    h.checkpoint("job0", 1, 200)
    ledger = build_ledger(h.events)
    model = ledger.model()
    assert model.num_rows == len(set(ledger.records().column("key").to_pylist())) <= 20
    assert model.to_pylist() == brute_force_model(ledger.records(), by="ts")


def test_commit_time_ordering_keeps_the_last_offset_of_one_job():
    h = History()
    h.setup(source(0, key_space=20), merge_mode="COMMIT_TIME_ORDERING")
    h.emit("job0", 0, 200)
    h.checkpoint("job0", 1, 200)
    ledger = build_ledger(h.events)
    assert ledger.merge_mode == "COMMIT_TIME_ORDERING"
    assert ledger.model().to_pylist() == brute_force_model(ledger.records(), by="offset")


def t(n: int) -> str:
    """Instant time number ``n`` (17 digits)."""
    return f"2026010100000{n:04d}"


def two_jobs_interleaved(h: History) -> dict[tuple[int, int], str]:
    """Two async jobs whose commits interleave: job0's first range completes before job1's,
    job1's second before job0's. Returns the completion time each (job, offset) is committed at,
    as a hand-made oracle."""
    h.emit("job0", 0, 100)
    h.emit("job1", 0, 80)
    h.flush("job0", t(1), -1)
    h.flush("job1", t(2), -1)
    h.checkpoint("job0", 1, 100)
    h.checkpoint("job1", 1, 80)
    h.commit("job0", t(1), t(10), -1)
    h.commit("job1", t(2), t(11), -1)
    h.emit("job0", 100, 200)
    h.emit("job1", 80, 150)
    h.flush("job0", t(3), 1)
    h.flush("job0", t(3), 1, task=1)  # a second task, same instant
    h.flush("job1", t(4), 1)
    h.checkpoint("job0", 2, 200)
    h.checkpoint("job1", 2, 150)
    h.commit("job1", t(4), t(12), 1)
    h.commit("job0", t(3), t(13), 1)
    at = {(0, o): t(10) for o in range(100)} | {(0, o): t(13) for o in range(100, 200)}
    return at | {(1, o): t(11) for o in range(80)} | {(1, o): t(12) for o in range(80, 150)}


def brute_force_last_committed(rows: pa.Table, at: dict[tuple[int, int], str]) -> list[dict]:
    """One winner per key: the latest commit holding it, then the later offset of that job."""
    best: dict[str, dict] = {}
    for row in rows.to_pylist():
        rank = (at[(row["job"], row["offset"])], row["offset"])
        held = best.get(row["key"])
        if held is None or rank > (at[(held["job"], held["offset"])], held["offset"]):
            best[row["key"]] = row
    return [best[key] for key in sorted(best)]


def test_commit_time_ordering_across_jobs_follows_the_commits_completion_times():
    """The table merges by completion time, so the model does too: job0's second range
    completed after job1's, job1's first after job0's, whatever the event times say."""
    h = History()
    h.setup(source(0, key_space=60), source(1, key_space=60), merge_mode="COMMIT_TIME_ORDERING")
    at = two_jobs_interleaved(h)
    ledger = build_ledger(h.events)
    model = ledger.model()
    assert model.to_pylist() == brute_force_last_committed(ledger.records(), at)
    assert {r["job"] for r in model.to_pylist()} == {0, 1}
    event_time = brute_force_model(ledger.records(), by="ts")
    assert model.to_pylist() != event_time  # the two rules really disagree on this history


def test_a_covered_version_nobody_committed_is_expected_so_its_loss_shows():
    """job0's second range is covered by a completed checkpoint but never committed: its
    versions win in the model (placed after every commit), so a snapshot without them fails."""
    h = History()
    h.setup(source(0, key_space=60), source(1, key_space=60), merge_mode="COMMIT_TIME_ORDERING")
    two_jobs_interleaved(h)
    lost = [e for e in h.events if e.f == "commit" and e.value["instant"] == t(3)]
    h.events.remove(lost[0])
    job0, _ = build_ledger(h.events).jobs
    positions = job0.commit_positions(np.arange(200))
    assert (positions[:100] == int(t(10))).all()
    assert (positions[100:] == NEVER_COMMITTED).all()
    model = build_ledger(h.events).model()
    lost_keys = set(source_keys(0, 100, 200))
    assert {r["key"] for r in model.to_pylist() if r["job"] == 0 and r["offset"] >= 100} == (
        lost_keys
    )


def source_keys(job: int, start: int, stop: int) -> list[str]:
    return record_source(source(job, key_space=60)).batch(start, stop).column("key").to_pylist()


def test_commit_positions_follow_restores_and_replays():
    """A failed checkpoint and a restore: the range after checkpoint 1 is committed by the
    attempt that completed checkpoint 3, in the instant that received data carrying 1 there."""
    h = History()
    h.setup(source(0))
    h.emit("job0", 0, 50)
    h.flush("job0", t(1), -1)
    h.checkpoint("job0", 1, 50)
    h.commit("job0", t(1), t(2), -1)
    h.emit("job0", 50, 90)
    h.flush("job0", t(3), 1)  # this attempt fails: checkpoint 2 fails, t(3) is rolled back
    h.checkpoint("job0", 2, 0, type="fail")
    h.emit("job0", 50, 120)  # replay from checkpoint 1's offset
    h.flush("job0", t(4), 1)
    h.checkpoint("job0", 3, 120)
    h.commit("job0", t(4), t(5), 1)
    (job0,) = build_ledger(h.events).jobs
    positions = job0.commit_positions(np.array([0, 49, 50, 119, 120]))
    assert positions.tolist() == [int(t(2)), int(t(2)), int(t(5)), int(t(5)), NEVER_COMMITTED]


def test_minibatch_data_of_one_checkpoint_split_over_two_instants_takes_the_later():
    h = History()
    h.setup(source(0))
    h.emit("job0", 0, 40)
    h.flush("job0", t(1), -1)
    h.checkpoint("job0", 1, 40)
    h.emit("job0", 40, 60)
    h.flush("job0", t(1), 1)  # eager flush after the barrier, into the still open instant
    h.commit("job0", t(1), t(2), -1)
    h.emit("job0", 60, 80)
    h.flush("job0", t(3), 1)  # the rest of the data carrying 1: the next instant
    h.checkpoint("job0", 2, 80)
    h.commit("job0", t(3), t(4), 1)
    (job0,) = build_ledger(h.events).jobs
    assert job0.commit_positions(np.array([10, 45, 70])).tolist() == [
        int(t(2)),
        int(t(4)),
        int(t(4)),
    ]


def test_insert_model_is_every_record_sorted_by_key():
    h = History()
    h.setup(source(0, operation="insert"), source(1, operation="insert"))
    h.emit("job0", 0, 60)
    h.checkpoint("job0", 1, 60)
    h.emit("job1", 0, 25)
    h.checkpoint("job1", 1, 25)
    ledger = build_ledger(h.events)
    assert ledger.insert_only
    model = ledger.model()
    assert model.num_rows == 85
    keys = model.column("key").to_pylist()
    assert keys == sorted(keys) and len(set(keys)) == 85


def test_no_checkpoint_means_an_empty_model():
    h = History()
    h.setup()
    h.emit("job0", 0, 50)
    ledger = build_ledger(h.events)
    assert ledger.jobs[0].covered == 0
    assert ledger.model().num_rows == 0


def test_a_history_without_setup_is_refused():
    h = History()
    h.emit("job0", 0, 10)
    h.checkpoint("job0", 1, 10)
    with pytest.raises(LedgerError, match="no setup event"):
        build_ledger(h.events)
    with pytest.raises(LedgerError):
        build_ledger([])


def test_a_setup_event_of_another_process_does_not_count():
    h = History()
    h.add("job0", "info", "setup", setup_value())
    with pytest.raises(LedgerError):
        build_ledger(h.events)


def test_the_ledger_of_a_history_file_equals_the_in_memory_one(tmp_path):
    h = History()
    h.setup(source(0))
    h.emit("job0", 0, 70)
    h.checkpoint("job0", 1, 70)
    path = tmp_path / "history.jsonl"
    write_history(path, h.events)
    assert build_ledger(read_history(path)) == build_ledger(h.events)


def test_a_job_name_with_a_slash_is_refused_by_the_schema():
    """The ledger finds a job's events by splitting processes ("<job>/<role>") on the first "/",
    so the scenario schema refuses job names that contain one."""
    from scenarios.schema import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError, match=r"jobs\[0\]\.name"):
        parse_scenario('[scenario]\nname = "x"\n[[jobs]]\nname = "team/ingest"\n')


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=40),
    st.sampled_from(["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]),
)
def test_latest_per_key_keeps_the_version_a_merge_keeps(batch, merge_mode):
    """Against a plain reading of the rule: per key the greatest ``ts``, the later arrival on a
    tie (event time), or simply the last arrival (commit time); winners in arrival order."""
    rows = pa.table(
        {
            "key": [f"k{key}" for key, _ in batch],
            "ts": pa.array([ts for _, ts in batch], pa.int64()),
            "arrival": pa.array(range(len(batch)), pa.int64()),
        }
    )
    winner: dict[str, int] = {}
    for arrival, (key, ts) in enumerate(batch):
        best = winner.get(f"k{key}")
        if best is None or merge_mode == "COMMIT_TIME_ORDERING" or ts >= batch[best][1]:
            winner[f"k{key}"] = arrival
    kept = latest_per_key(rows, merge_mode)
    assert kept.column("arrival").to_pylist() == sorted(winner.values())
