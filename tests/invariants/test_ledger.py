"""Tests for invariants/ledger.py: the ground truth rebuilt from a hand-built history alone.

The ledger must find each job's source in the ``setup`` event, take the highest emitted offset
and the offset of the last *completed* checkpoint, and regenerate exactly the records those
offsets name; its model is one row per key by the merge mode (upsert) or every record (insert).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from invariants.ledger import LedgerError, build_ledger
from models.history import Event, read_history, write_history
from models.records import RecordSource


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


def test_commit_time_ordering_across_jobs_falls_back_to_event_time():
    def model(mode: str) -> pa.Table:
        h = History()
        h.setup(source(0, key_space=20), source(1, key_space=20), merge_mode=mode)
        for job in ("job0", "job1"):
            h.emit(job, 0, 150)
            h.checkpoint(job, 1, 150)
        return build_ledger(h.events).model()

    assert model("COMMIT_TIME_ORDERING").equals(model("EVENT_TIME_ORDERING"))


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
