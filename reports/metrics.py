"""Run metrics computed from a history alone (so they can be recomputed for any stored run).

What a design review asks first: how long did writers stall waiting for an instant (the cost
``blocking`` instant generation pays at every checkpoint and ``async`` removes), how much did they
write, how many commits, how long from a flush to the commit that made it visible, and how the
committed throughput moved over time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

from models.history import Event

THROUGHPUT_BUCKET_S = 10
PERCENTILES = (50, 90, 99)
JOB_COUNTERS = (
    "commits",
    "records_committed",
    "failovers",
    "checkpoints_completed",
    "checkpoints_failed",
    "compactions",
    "rollbacks",
    "commits_aborted",
    "records_aborted",
    "retries",
)
_JOB_EVENT_COUNTERS = {  # (f, type) of a history event -> the job counter it increments
    ("failover", "info"): "failovers",
    ("checkpoint", "ok"): "checkpoints_completed",
    ("checkpoint", "fail"): "checkpoints_failed",
    ("compaction", "ok"): "compactions",
    ("rollback", "ok"): "rollbacks",
    ("abort", "info"): "commits_aborted",
    ("retry", "info"): "retries",
}


def percentile(values: Sequence[int], p: float) -> int | None:
    """Nearest-rank percentile (no interpolation: every reported value really occurred)."""
    if not values:
        return None
    ordered = sorted(values)
    return int(ordered[nearest_rank(len(ordered), p) - 1])


def nearest_rank(count: int, p: float) -> int:
    """The 1-based rank of the ``p``-th percentile among ``count`` sorted values."""
    # Exact rational arithmetic: 1000 * 16.1 must give rank 161, not 162 by a float rounding.
    return max(1, math.ceil(count * Fraction(str(p)) / 100))


def _job_of(process: str) -> str:
    return process.split("/", 1)[0]


def compute_metrics(events: Sequence[Event]) -> dict[str, object]:
    writers: dict[str, dict[str, int]] = {}
    jobs: dict[str, Counter[str]] = {}
    flush_times: dict[str, list[int]] = {}  # instant -> times of flushes into it
    latencies: dict[str, list[int]] = {}
    committed_by_bucket: dict[str, Counter[int]] = {}
    written_by_bucket: dict[str, Counter[int]] = {}
    faults: Counter[str] = Counter()
    end_ms = 0
    for e in events:
        end_ms = max(end_ms, e.time)
        if e.process == "nemesis":
            faults[e.f] += 1
            continue
        job = _job_of(e.process)
        if e.process.startswith(f"{job}/task-"):
            w = writers.setdefault(
                e.process,
                {
                    "blocked_ms": 0,
                    "commit_wait_ms": 0,
                    "max_blocked_ms": 0,
                    "records_written": 0,
                    "flushes": 0,
                },
            )
            if e.f == "wait_instant" and e.type == "ok":
                w["blocked_ms"] += int(e.value["blocked_ms"])
                w["commit_wait_ms"] += int(e.value.get("commit_wait_ms", 0))
                w["max_blocked_ms"] = max(w["max_blocked_ms"], int(e.value["blocked_ms"]))
            elif e.f == "flush" and e.type == "ok":
                w["records_written"] += int(e.value["records"])
                w["flushes"] += 1
                flush_times.setdefault(e.value["instant"], []).append(e.time)
                written_by_bucket.setdefault(job, Counter())[
                    e.time // (THROUGHPUT_BUCKET_S * 1000)
                ] += int(e.value["records"])
            continue
        if e.process == "world":
            continue
        counts = jobs.setdefault(job, Counter())
        if e.f == "commit" and e.type == "ok":
            counts["commits"] += 1
            counts["records_committed"] += int(e.value["records"])
            committed_by_bucket.setdefault(job, Counter())[
                e.time // (THROUGHPUT_BUCKET_S * 1000)
            ] += int(e.value["records"])
            for flushed in flush_times.pop(e.value["instant"], []):
                latencies.setdefault(job, []).append(e.time - flushed)
        elif (e.f, e.type) in _JOB_EVENT_COUNTERS:
            counts[_JOB_EVENT_COUNTERS[e.f, e.type]] += 1
            if e.f == "abort":  # OCC: the aborted instant's rows were written for nothing
                counts["records_aborted"] += int(e.value["records"])
    job_metrics: dict[str, dict[str, object]] = {}
    for job, counts in jobs.items():
        values: dict[str, object] = {name: counts[name] for name in JOB_COUNTERS}
        lat = latencies.get(job, [])
        values["commit_latency_ms"] = {f"p{p}": percentile(lat, p) for p in PERCENTILES} | {
            "max": max(lat) if lat else None,
            "count": len(lat),
        }
        buckets = max([*committed_by_bucket.get(job, {}), *written_by_bucket.get(job, {}), 0])
        values["throughput"] = {
            "bucket_s": THROUGHPUT_BUCKET_S,
            "committed_records": [
                committed_by_bucket.get(job, Counter())[b] for b in range(buckets + 1)
            ],
            "written_records": [
                written_by_bucket.get(job, Counter())[b] for b in range(buckets + 1)
            ],
        }
        job_metrics[job] = values
    for job, costs in abort_costs(events).items():
        job_metrics.setdefault(job, {}).update(costs)
    total_blocked = sum(w["blocked_ms"] for w in writers.values())
    total_commit_wait = sum(w["commit_wait_ms"] for w in writers.values())
    return {
        "sim_end_ms": end_ms,
        "events": len(events),
        "faults": dict(sorted(faults.items())),
        "blocked_ms_total": total_blocked,
        "commit_wait_ms_total": total_commit_wait,
        "writers": {name: writers[name] for name in sorted(writers)},
        "jobs": {name: job_metrics[name] for name in sorted(job_metrics)},
    }


def abort_costs(events: Sequence[Event]) -> dict[str, dict[str, object]]:
    """Per job with early conflict detection or OCC aborts: ``early_conflicts`` (flushes a
    task's marker check failed), ``records_aborted_early`` (the records of those flushes, written
    again after the failover) and ``time_to_abort_ms`` (percentiles of the time from the first
    flush into an instant to its abort: the commit's conflict check for OCC, the failed marker
    check for early detection)."""
    first_flush: dict[str, int] = {}  # instant -> time of the first flush into it
    flushing: dict[str, tuple[int, int]] = {}  # task -> (time, records) of its current flush
    out: dict[str, Counter[str]] = {}
    delays: dict[str, list[int]] = {}
    for e in events:
        job = _job_of(e.process)
        if e.f == "flush" and e.type == "invoke":
            first_flush.setdefault(e.value["instant"], e.time)
            flushing[e.process] = (e.time, int(e.value["records"]))
        elif e.f == "early_conflict":
            started, records = flushing.get(e.process, (e.time, 0))
            counts = out.setdefault(job, Counter())
            counts["early_conflicts"] += 1
            counts["records_aborted_early"] += records
            delays.setdefault(job, []).append(e.time - started)
        elif e.f == "abort" and e.type == "info":
            started = first_flush.get(e.value.get("instant", ""), e.time)
            out.setdefault(job, Counter())
            delays.setdefault(job, []).append(e.time - started)
    return {
        job: {
            "early_conflicts": counts["early_conflicts"],
            "records_aborted_early": counts["records_aborted_early"],
            "time_to_abort_ms": {f"p{p}": percentile(delays.get(job, []), p) for p in PERCENTILES},
        }
        for job, counts in sorted(out.items())
    }
