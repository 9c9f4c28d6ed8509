"""What ``testbed swarm`` draws: a whole scenario per seed, on Hudi's real rules (swarm testing).

Swarm testing (Groce et al., ISSTA 2012; FoundationDB's simulator and TigerBeetle's VOPR work the
same way) switches each feature on or off at random *before* drawing its value, so a seed exercises
a few features hard instead of every feature a little: one seed has lost ACKs and nothing else,
another crashes and clock jumps on a copy-on-write table. Each seed is one scenario file's worth of
data, validated by the scenario schema like any file a user writes.

Every draw comes from a named stream of the seed (:class:`sim.rng.Rng`, ``swarm/<section>``), so
adding a parameter to one section never changes what another draws.

The bounds are Hudi's supported configurations (docs/scenarios.md, "Swarm"): Hudi's own rules
(``[protocol]`` left at ``latest``, but for the remedy of the finding
``global_index_bootstrap_jm_late_commit`` when a job bootstraps its index and moves keys),
TrueTime with the clocks inside its bound, copy-on-write upserts on the blocking coordinator
(Hudi 1.1 keeps them there; ``cow_async_upsert``), several jobs only on a MERGE_ON_READ table
under NBCC (Hudi's multi-writer mode for streaming; two OCC jobs on the same keys livelock by
design, ``occ_contention``), pauses shorter than the heartbeat tolerance
and heartbeats of 10 s or more, so a job manager failover stays inside the tolerance
(``paused_coordinator_rolled_back`` is the finding beyond it), checkpoint timeouts of 30 s or more
(a timeout shorter than a flush's storage time fails every checkpoint and each restore replays
more: an overload, not a protocol error), rescales that keep or raise the parallelism (a scale-down
is the finding ``rescale_down_lost_events``), one operation for all jobs (an insert job on either
table type runs in append mode, ``OptionsResolver#isAppendMode``, writing file groups of its own
outside the bucket layout that an upsert job's bucket index bootstraps from: Hudi's bucket index
assumes every file group of the table is one of its buckets). Runs are short (20-60 s, at most a
few thousand records a second) so thousands of seeds fit in a nightly job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scenarios.schema import JobSpec, Scenario, SimSpec
from sim.rng import Rng

SWARM_NAME = "swarm"
"""The drawn scenarios' name stem: ``swarm_<seed>``."""

DURATION_S = (20, 60)
JOBS_AT_MOST = 3
WRITERS = (1, 4)
CHECKPOINT_INTERVAL_HALF_S = (2, 10)
"""Checkpoint intervals in half seconds: 1 s to 5 s."""
RECORDS_PER_S = (50, 800)
KEY_SPACE = (100, 5000)
MAX_EXPECTED_SKEW_MS = (50, 500)
DRAIN_TIMEOUT_S = 120.0
"""``[sim] drain_timeout_s``'s default."""


def swarm_name(seed: int) -> str:
    return f"{SWARM_NAME}_{seed}"


def draw_swarm(seed: int) -> dict[str, Any]:
    """The scenario of swarm seed ``seed``, as the data of a TOML file (its run seed is
    ``seed`` too). Validate it with :func:`scenarios.schema.scenario_from_dict`."""
    root = Rng(seed, SWARM_NAME)
    table = _table(root.child("table"))
    time = _time(root.child("time"))
    sim = _sim(root.child("sim"))
    cow = table["type"] == "COPY_ON_WRITE"
    several = root.child("jobs")
    count = 1 if cow or several.bernoulli(0.5) else several.randint(2, JOBS_AT_MOST)
    operation = "insert" if root.child("operation").bernoulli(0.3) else "upsert"
    jobs = [
        _job(root.child("job").child(str(index)), index, count, cow, operation)
        for index in range(count)
    ]
    if table.get("markers", "direct") == "direct":  # the server's detection latches
        _early_conflict_detection(root.child("early_conflict_detection"), jobs, sim, mor=not cow)
    duration_s = float(root.child("duration").randint(*DURATION_S))
    faults = _faults(root.child("faults"), time, sim, jobs, duration_s)
    data: dict[str, Any] = {
        "scenario": {
            "name": swarm_name(seed),
            "description": f"Drawn by testbed swarm from seed {seed} (Hudi's real rules).",
            "duration_s": duration_s,
            "seed": seed,
        },
        "table": table,
        "time": time,
        "jobs": jobs,
        "faults": faults,
        "sim": sim,
        "expect": {"violations": []},
    }
    if any(job.get("index_bootstrap") and job.get("partition_period_s") for job in jobs):
        data["protocol"] = {"index_bootstrap_reads": "after_recommit"}
    return data


def _table(rng: Rng) -> dict[str, Any]:
    table: dict[str, Any] = {
        "type": "COPY_ON_WRITE" if rng.bernoulli(0.5) else "MERGE_ON_READ",
        "partitions": rng.randint(1, 3),
        "buckets_per_partition": rng.randint(1, 4),
    }
    if rng.bernoulli(0.5):
        table["merge_mode"] = "COMMIT_TIME_ORDERING"
    if rng.child("storage_profile").bernoulli(0.3):
        table["storage_profile"] = "object_store"
    if rng.child("markers").bernoulli(0.5):
        table["markers"] = "timeline_server"
    return table


def _time(rng: Rng) -> dict[str, Any]:
    """TrueTime with every clock inside its bound: offsets within a quarter of it (so two clocks
    differ by at most half), drift below 50 ppm (a few ms over a run)."""
    bound_ms = rng.randint(*MAX_EXPECTED_SKEW_MS)
    time: dict[str, Any] = {
        "generator": "truetime",
        "max_expected_skew_ms": bound_ms,
        "clock_skew_ms": rng.randint(0, bound_ms // 4) if rng.bernoulli(0.5) else 0,
    }
    if rng.bernoulli(0.5):
        time["clock_drift_ppm"] = round(rng.uniform(0, 50), 1)
    if rng.bernoulli(0.5):
        time["lock_latency_ms"] = rng.randint(1, 30)
    return time


def _sim(rng: Rng) -> dict[str, Any]:
    sim: dict[str, Any] = {"max_wall_s": 600.0}
    if rng.bernoulli(0.5):
        sim["storage_latency_ms"] = rng.randint(1, 100)
    if rng.bernoulli(0.5):
        sim["network_delay_ms"] = rng.randint(1, 20)
    if rng.bernoulli(0.5):
        sim["restart_delay_ms"] = rng.randint(100, 3000)
    if rng.bernoulli(0.5):  # heartbeats that can expire within a run: LAZY cleaning at work
        sim["heartbeat_interval_ms"] = rng.randint(10_000, 60_000)
    return sim


def _job(rng: Rng, index: int, count: int, cow: bool, operation: str) -> dict[str, Any]:
    """One job; the source rate is the whole scenario's share (at most a few thousand
    records a second over all jobs)."""
    modes = ("blocking",) if cow and operation == "upsert" else ("async", "blocking")
    job: dict[str, Any] = {
        "name": f"job{index}",
        "writers": rng.randint(*WRITERS),
        "instant_generation": rng.choice(modes),
        "checkpoint_interval_s": rng.randint(*CHECKPOINT_INTERVAL_HALF_S) / 2,
        "records_per_s": float(rng.randint(*RECORDS_PER_S)),
        "key_space": rng.randint(*KEY_SPACE),
        "operation": operation,
        "concurrency": "occ" if count == 1 and rng.bernoulli(0.5) else "nbcc",
    }
    if rng.bernoulli(0.5):
        job["failover"] = "full"
    if rng.bernoulli(0.5):  # eager flushes between checkpoints (mini-batches)
        job["write_batch_size_mb"] = round(rng.uniform(0.01, 0.1), 3)
    if rng.bernoulli(0.5):
        job["allow_empty_commit"] = False
    if rng.bernoulli(0.5):  # shorter than Flink's default, still above a slow flush
        job["checkpoint_timeout_s"] = float(rng.randint(30, 59))
    if index == 0 and rng.bernoulli(0.5):
        job["compaction_every_commits"] = rng.randint(1, 6)
    if count == 1 and operation == "upsert":
        job.update(_state_index(rng.child("index"), mor=not cow))
    return job


def _state_index(rng: Rng, *, mor: bool) -> dict[str, Any]:
    """A lone upsert job on Flink's state index half the time (NBCC between jobs requires the
    bucket index): index bootstrap, small files that fill up within a run and keys that change
    partition (the global index, Hudi's default), each half the time. Never ``index_state_ttl_days``
    (an entry that expires while its key is live sends the key to a second file group:
    ``flink_state_ttl``), nor the bootstrap with moving keys on MERGE_ON_READ (it loads the keys of
    delete blocks: the finding ``global_index_bootstrap_deleted_copy``)."""
    if not rng.bernoulli(0.5):
        return {}
    index: dict[str, Any] = {"index": "flink_state"}
    if rng.child("bootstrap").bernoulli(0.5):
        index["index_bootstrap"] = True
    if rng.child("small_files").bernoulli(0.5):
        index["parquet_max_file_size_mb"] = round(rng.child("file_size").uniform(0.02, 0.1), 3)
    moves = rng.child("partition_moves")
    if moves.bernoulli(0.5) and not (mor and index.get("index_bootstrap")):
        index["partition_period_s"] = float(moves.randint(5, 20))
    return index


def _early_conflict_detection(
    rng: Rng, jobs: list[dict[str, Any]], sim: dict[str, Any], *, mor: bool
) -> None:
    """Early conflict detection half the time for a lone OCC job on MERGE_ON_READ (Flink checks
    only new log files) with direct markers (the timeline server's detection latches on an
    instant the job writes again: the finding ``early_conflict_server_latch``), under ``failover
    = "full"``: a notification lost while the next instant writes then ends in a global restore
    that commits the pending instant; under a region failover the job stalls for good (the
    finding ``early_conflict_own_instant``). A failed instant's markers stop every flush until
    its heartbeat expires (the interval times two misses), so the drain allows for that."""
    (job,) = jobs if len(jobs) == 1 else (None,)
    if job is None or not mor or job["concurrency"] != "occ" or not rng.bernoulli(0.5):
        return
    job["early_conflict_detection"] = True
    job["failover"] = "full"
    interval_s = sim.get("heartbeat_interval_ms", 60_000) / 1000
    sim["drain_timeout_s"] = max(DRAIN_TIMEOUT_S, DRAIN_TIMEOUT_S + 2 * interval_s)


RATE_DRAWS: dict[str, Callable[[Rng], float | int]] = {
    "ack_loss": lambda r: round(r.uniform(0.05, 0.3), 3),
    "ack_delay_ms": lambda r: r.randint(100, 3000),
    "ack_duplicate": lambda r: round(r.uniform(0.05, 0.3), 3),
    "checkpoint_failure": lambda r: round(r.uniform(0.05, 0.3), 3),
    "writer_crash_per_hour": lambda r: float(r.randint(30, 240)),
    "coordinator_crash_per_hour": lambda r: float(r.randint(30, 120)),
    "storage_write_failure": lambda r: round(r.uniform(0.001, 0.01), 4),
    "clock_jump_per_hour": lambda r: float(r.randint(30, 120)),
    "writer_pause_per_hour": lambda r: float(r.randint(30, 240)),
    "write_error_per_hour": lambda r: float(r.randint(30, 240)),
    "taskmanager_pause_per_hour": lambda r: float(r.randint(30, 240)),
}
"""The random rates a swarm scenario switches on or off, each from its own stream, and how each
value is drawn; rescales come only from the schedule (a scale-up: a random rescale may scale
down, which loses data on Hudi's own rules, the finding ``rescale_down_lost_events``). Crashes
at restore are left out for the same reason: after a JobManager failover they lose data on
Hudi's own rules (the finding ``restart_before_bootstrap``)."""


def _faults(
    rng: Rng, time: dict[str, Any], sim: dict[str, Any], jobs: list[dict], duration_s: float
) -> dict[str, Any]:
    """The random fault rates, each on or off, and now and then a scheduled pause or rescale."""
    faults: dict[str, Any] = {}
    for name, draw in RATE_DRAWS.items():
        stream = rng.child(name)
        if stream.bernoulli(0.5):
            faults[name] = draw(stream)
    if "clock_jump_per_hour" in faults:  # a step stays inside TrueTime's bound
        faults["clock_jump_ms"] = max(1, time["max_expected_skew_ms"] // 8)
    faults["schedule"] = _schedule(rng.child("schedule"), sim, jobs, duration_s)
    return faults


def _schedule(
    rng: Rng, sim: dict[str, Any], jobs: list[dict], duration_s: float
) -> list[dict[str, Any]]:
    """A coordinator pause below half the heartbeat tolerance (Hudi's 2 misses), a rescale to
    as many writers or more."""
    schedule: list[dict[str, Any]] = []
    job = rng.choice(jobs)["name"]
    if rng.bernoulli(0.3):
        tolerance_ms = 2 * sim.get("heartbeat_interval_ms", 60_000)
        schedule.append(
            {
                "at_s": rng.randint(0, int(duration_s * 1000) - 1) / 1000,
                "kind": "pause",
                "target": f"{job}/coordinator",
                "duration_ms": rng.randint(100, min(10_000, tolerance_ms // 2)),
            }
        )
    if rng.bernoulli(0.3):
        chosen = next(j for j in jobs if j["name"] == job)
        schedule.append(
            {
                "at_s": rng.randint(0, int(duration_s * 1000) - 1) / 1000,
                "kind": "rescale",
                "target": job,
                "writers": rng.randint(chosen["writers"], WRITERS[1]),
            }
        )
    return sorted(schedule, key=lambda entry: (entry["at_s"], entry["kind"]))


def swarm_parameters(scenario: Scenario) -> dict[str, str]:
    """A scenario as flat features for the swarm report: which value each switch took
    (``table.type``, ``jobs``, ``job0.instant_generation``, ``faults.ack_loss`` on or off, ...)
    rather than every number, so seeds that fail together show what they share. A setting is
    "on" when it differs from the schema's default."""
    table, time, faults = scenario.table, scenario.time, scenario.faults
    features = {
        "table.type": table.type,
        "table.merge_mode": table.merge_mode,
        "table.storage_profile": table.storage_profile,
        "table.markers": table.markers,
        "table.partitions": str(table.partitions),
        "table.buckets_per_partition": str(table.buckets_per_partition),
        "time.clock_skew": _on(time.clock_skew_ms),
        "time.clock_drift": _on(time.clock_drift_ppm),
        "jobs": str(len(scenario.jobs)),
    }
    default_sim = SimSpec()
    for key in (
        "storage_latency_ms",
        "network_delay_ms",
        "restart_delay_ms",
        "heartbeat_interval_ms",
    ):
        features[f"sim.{key}"] = _on(getattr(scenario.sim, key) != getattr(default_sim, key))
    default_job = JobSpec()
    for job in scenario.jobs:
        name = job.name
        for key in ("instant_generation", "operation", "concurrency", "failover", "index"):
            features[f"{name}.{key}"] = str(getattr(job, key))
        features[f"{name}.early_conflict_detection"] = _on(job.early_conflict_detection)
        features[f"{name}.writers"] = str(job.writers)
        features[f"{name}.eager_flush"] = _on(
            job.write_batch_size_mb != default_job.write_batch_size_mb
        )
        features[f"{name}.allow_empty_commit"] = str(job.allow_empty_commit).lower()
        features[f"{name}.checkpoint_timeout"] = _on(
            job.checkpoint_timeout_s != default_job.checkpoint_timeout_s
        )
        features[f"{name}.index_bootstrap"] = _on(job.index_bootstrap)
        features[f"{name}.small_files"] = _on(
            job.parquet_max_file_size_mb != default_job.parquet_max_file_size_mb
        )
        features[f"{name}.partition_moves"] = _on(job.partition_period_s)
    for rate in RATE_DRAWS:
        features[f"faults.{rate}"] = _on(getattr(faults, rate))
    kinds = {entry.kind for entry in faults.schedule}
    for kind in ("pause", "rescale"):
        features[f"faults.schedule.{kind}"] = _on(kind in kinds)
    return features


def _on(flag: object) -> str:
    return "on" if flag else "off"
