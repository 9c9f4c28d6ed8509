"""Tests for reports/metrics.py: metrics of a hand-built history, number by number, and the
nearest-rank percentile."""

from __future__ import annotations

import pytest

from models.history import Event
from reports.metrics import compute_metrics, percentile


class History:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, time: int, process: str, type: str, f: str, value=None) -> None:
        self.events.append(Event(len(self.events), time, process, type, f, value))


def wait(h: History, time: int, task: str, blocked: int, commit_wait: int | None) -> None:
    h.add(time, task, "invoke", "wait_instant", {"checkpoint": 1})
    value = {"instant": "x", "checkpoint": 1, "blocked_ms": blocked}
    if commit_wait is not None:
        value["commit_wait_ms"] = commit_wait
    h.add(time + blocked, task, "ok", "wait_instant", value)


def flush(h: History, time: int, task: str, instant: str, records: int) -> None:
    h.add(time - 5, task, "invoke", "flush", {"instant": instant, "records": records})
    h.add(time, task, "ok", "flush", {"instant": instant, "records": records, "last_batch": True})


def commit(h: History, time: int, job: str, instant: str, records: int) -> None:
    h.add(
        time,
        f"{job}/coordinator",
        "ok",
        "commit",
        {"instant": instant, "completion": "c", "checkpoint": 1, "records": records},
    )


@pytest.fixture
def metrics() -> dict:
    h = History()
    h.add(0, "world", "info", "setup", {})
    wait(h, 500, "job0/task-0", 200, 0)
    flush(h, 1_000, "job0/task-0", "I1", 100)
    wait(h, 800, "job0/task-1", 100, None)  # an older history without commit_wait_ms
    flush(h, 1_500, "job0/task-1", "I1", 70)
    h.add(1_900, "nemesis", "info", "drop", {"channel": "job0/notify"})
    commit(h, 2_000, "job0", "I1", 170)
    h.add(2_000, "job0/checkpoint", "ok", "checkpoint", {"checkpoint": 1, "source_offset": 9})
    wait(h, 11_000, "job0/task-0", 500, 300)
    flush(h, 12_000, "job0/task-0", "I2", 50)
    flush(h, 12_500, "job0/task-1", "I3", 40)  # rolled back: never committed
    h.add(13_000, "nemesis", "info", "crash", {"process": "job0/task-1"})
    h.add(13_000, "job0", "info", "failover", {"epoch": 1})
    h.add(13_000, "job0/checkpoint", "fail", "checkpoint", {"checkpoint": 2})
    h.add(14_000, "job0/coordinator", "ok", "rollback", {"instant": "I3"})
    h.add(14_000, "job0/checkpoint", "invoke", "checkpoint", {"checkpoint": 3})
    h.add(15_000, "job0/checkpoint", "ok", "checkpoint", {"checkpoint": 3, "source_offset": 9})
    h.add(16_000, "nemesis", "info", "drop", {"channel": "job0/notify"})
    commit(h, 25_000, "job0", "I2", 50)
    h.add(26_000, "job0/compactor", "invoke", "compaction", {"instant": "C"})
    h.add(27_000, "job0/compactor", "ok", "compaction", {"instant": "C"})
    h.add(28_000, "job1", "info", "failover", {"epoch": 1})
    # OCC: J1 aborted and retried as J2, which aborted too (the job then fails over)
    abort = {"conflict_with": "I2", "file_groups": 1, "files": 2}
    h.add(28_500, "job1/coordinator", "info", "abort", {"instant": "J1", "records": 30} | abort)
    h.add(28_600, "job1/coordinator", "info", "retry", {"instant": "J2", "retry_of": "J1"})
    h.add(29_000, "job1/coordinator", "info", "abort", {"instant": "J2", "records": 25} | abort)
    h.add(30_000, "world", "info", "end", {"drained": True})
    return compute_metrics(h.events) | {"_count": len(h.events)}


def test_totals_and_faults(metrics):
    assert metrics["sim_end_ms"] == 30_000
    assert metrics["events"] == metrics["_count"]
    assert metrics["faults"] == {"crash": 1, "drop": 2}
    assert list(metrics["faults"]) == ["crash", "drop"]
    assert metrics["blocked_ms_total"] == 800
    assert metrics["commit_wait_ms_total"] == 300


def test_per_writer_blocked_time_and_records(metrics):
    assert metrics["writers"] == {
        "job0/task-0": {
            "blocked_ms": 700,
            "commit_wait_ms": 300,
            "max_blocked_ms": 500,
            "records_written": 150,
            "flushes": 2,
        },
        "job0/task-1": {
            "blocked_ms": 100,
            "commit_wait_ms": 0,
            "max_blocked_ms": 100,
            "records_written": 110,
            "flushes": 2,
        },
    }


def test_per_job_counts(metrics):
    job = metrics["jobs"]["job0"]
    assert {k: job[k] for k in job if k not in ("commit_latency_ms", "throughput")} == {
        "commits": 2,
        "records_committed": 220,
        "failovers": 1,
        "checkpoints_completed": 2,
        "checkpoints_failed": 1,
        "compactions": 1,
        "rollbacks": 1,
        "commits_aborted": 0,
        "records_aborted": 0,
        "retries": 0,
    }
    assert sorted(metrics["jobs"]) == ["job0", "job1"]
    assert metrics["jobs"]["job1"]["failovers"] == 1
    assert metrics["jobs"]["job1"]["commits"] == 0


def test_occ_aborts_wasted_records_and_retries_per_job(metrics):
    job1 = metrics["jobs"]["job1"]
    assert (job1["commits_aborted"], job1["records_aborted"], job1["retries"]) == (2, 55, 1)


def test_commit_latency_is_flush_to_commit_by_nearest_rank(metrics):
    # flushes into I1 at 1000 and 1500, committed at 2000; into I2 at 12000, committed at 25000
    assert metrics["jobs"]["job0"]["commit_latency_ms"] == {
        "p50": 1_000,
        "p90": 13_000,
        "p99": 13_000,
        "max": 13_000,
        "count": 3,
    }
    assert metrics["jobs"]["job1"]["commit_latency_ms"] == {
        "p50": None,
        "p90": None,
        "p99": None,
        "max": None,
        "count": 0,
    }


def test_throughput_in_ten_second_buckets(metrics):
    assert metrics["jobs"]["job0"]["throughput"] == {
        "bucket_s": 10,
        "committed_records": [170, 0, 50],
        "written_records": [170, 90, 0],
    }
    assert metrics["jobs"]["job1"]["throughput"] == {
        "bucket_s": 10,
        "committed_records": [0],
        "written_records": [0],
    }


def test_an_empty_history():
    assert compute_metrics([]) == {
        "sim_end_ms": 0,
        "events": 0,
        "faults": {},
        "blocked_ms_total": 0,
        "commit_wait_ms_total": 0,
        "writers": {},
        "jobs": {},
    }


# --- percentile ------------------------------------------------------------------------------


def test_percentile_of_nothing_is_none():
    assert percentile([], 50) is None


def test_percentile_is_nearest_rank():
    values = [15, 20, 35, 40, 50]  # the textbook example
    assert percentile(values, 5) == 15
    assert percentile(values, 30) == 20
    assert percentile(values, 40) == 20
    assert percentile(values, 50) == 35
    assert percentile(values, 100) == 50


def test_percentile_bounds_and_order():
    assert percentile([7], 0) == 7
    assert percentile([7], 50) == 7
    assert percentile([7], 100) == 7
    assert percentile([3, 1, 2], 0) == 1  # rank at least 1: the minimum
    assert percentile([3, 1, 2], 100) == 3
    assert percentile([3, 1, 2], 50) == 2
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile(list(range(1, 101)), 99.5) == 100
    values = [5, 1, 4]
    percentile(values, 50)
    assert values == [5, 1, 4]  # the input is not sorted in place


def test_percentile_returns_a_value_that_occurred():
    values = [10, 20, 30, 40]
    for p in range(0, 101):
        assert percentile(values, p) in values


def test_percentile_with_a_fractional_p_is_exact():
    """Regression: a float rank made 1000 * 16.1 = 16100.000000000002 round up to 162."""
    assert percentile(list(range(1, 1001)), 16.1) == 161


@pytest.mark.parametrize("name", ["nemesis", "world"])
def test_a_job_named_like_a_reserved_process_is_refused_or_counted_right(name):
    from scenarios.schema import ScenarioError, parse_scenario
    from sim.world import World

    text = f"""
[scenario]
name = "reserved"
duration_s = 10
[[jobs]]
name = "{name}"
writers = 2
records_per_s = 200
key_space = 500
[faults]
writer_crash_per_hour = 2000
"""
    try:
        scenario = parse_scenario(text)
    except ScenarioError:
        return  # the schema reserves the name: fine
    events = World(scenario).run().history.events
    failovers = sum(1 for e in events if e.process == name and e.f == "failover")
    assert failovers > 0
    metrics = compute_metrics(events)
    assert metrics["jobs"][name]["failovers"] == failovers
    assert set(metrics["faults"]) == {"crash"}


def _catalog_run(name: str, duration_s: float) -> list[Event]:
    import tomllib

    from scenarios import catalog_dir
    from scenarios.schema import scenario_from_dict
    from sim.world import World

    data = tomllib.loads((catalog_dir() / f"{name}.toml").read_text())
    data["scenario"]["duration_s"] = duration_s
    return World(scenario_from_dict(data, name)).run().history.events


def test_occ_contention_counts_its_aborts_and_failovers():
    """Every abort is an ``abort`` event of the job's coordinator and fails the job over (Hudi's
    Flink sink has no retry); the metrics add them up per job."""
    events = _catalog_run("occ_contention", 30)
    jobs = compute_metrics(events)["jobs"]
    aborts = [e for e in events if e.f == "abort"]
    assert aborts, "the contended scenario aborted nothing"
    for name, job in jobs.items():
        mine = [e for e in aborts if e.process == f"{name}/coordinator"]
        failovers = [e for e in events if e.f == "failover" and e.process == name]
        assert job["commits_aborted"] == len(mine)
        assert job["records_aborted"] == sum(e.value["records"] for e in mine)
        assert job["failovers"] == len(failovers) >= len(mine)
        assert job["retries"] == 0
    assert all(e.value["records"] > 0 for e in aborts)  # the wasted work was real
    committed = {e.value["instant"] for e in events if e.f == "commit" and e.type == "ok"}
    assert not committed & {e.value["instant"] for e in aborts}  # an aborted instant stays so


def test_early_conflicts_count_the_flushes_their_marker_check_failed():
    """Each ``early_conflict`` event of a task ends the flush it started: its records are thrown
    away (written again after the failover), within a marker check of the flush's start."""
    events = _catalog_run("early_conflict_own_instant", 20)
    job = compute_metrics(events)["jobs"]["ingest"]
    conflicts = [e for e in events if e.f == "early_conflict"]
    assert conflicts and job["early_conflicts"] == len(conflicts)
    records = 0
    for conflict in conflicts:
        flush = next(
            e
            for e in reversed(events[: conflict.index])
            if e.process == conflict.process and e.f == "flush" and e.type == "invoke"
        )
        records += flush.value["records"]
    assert job["records_aborted_early"] == records > 0
    assert 0 <= job["time_to_abort_ms"]["p50"] < 1000


def test_nbcc_two_jobs_aborts_nothing():
    jobs = compute_metrics(_catalog_run("nbcc_two_jobs", 30))["jobs"]
    assert len(jobs) == 2
    for job in jobs.values():
        assert (job["commits_aborted"], job["records_aborted"], job["retries"]) == (0, 0, 0)
        assert job["commits"] > 0
