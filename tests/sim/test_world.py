"""Tests for sim/world.py: whole simulated runs of small scenarios.

A run must be reproducible to the byte from its seed; the real protocol must pass every checker
while the faults of ``[faults]`` really fire (the history shows them); a table written to a real
folder must read the same through the independent reader hudi-rs as the ledger's model says.

Scenarios are built in code and kept small (two writers, 20-40 simulated seconds), so each run
takes well under a second.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections import Counter
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from invariants.ledger import build_ledger
from invariants.liveness import check_liveness
from invariants.no_data_loss import check_final_snapshot as check_snapshot
from models.history import Event
from scenarios.schema import Scenario, parse_scenario
from sim.world import RunOutcome, World

ROOT = Path(__file__).resolve().parents[2]
DATA_COLUMNS = ["key", "part", "ts", "offset", "job", "value"]

JOB: dict[str, Any] = {
    "writers": 2,
    "checkpoint_interval_s": 2,
    "records_per_s": 400,
    "key_space": 2000,
}
"""One small job: two writers, a checkpoint every 2 s, 400 records/s over 2000 keys."""

ALL_FAULTS: dict[str, Any] = {
    "ack_loss": 0.3,
    "ack_delay_ms": 2000,
    "checkpoint_failure": 0.1,
    "writer_crash_per_hour": 60,
    "coordinator_crash_per_hour": 30,
    "storage_write_failure": 0.01,
}


def scenario_toml(
    *,
    seed: int = 1,
    duration_s: float = 30,
    jobs: tuple[dict[str, Any], ...] = (JOB,),
    name: str = "test",
    **tables: dict[str, Any],
) -> str:
    """Scenario TOML text: ``[scenario]``, the ``[[jobs]]`` and any other tables given."""
    data: dict[str, Any] = {
        "scenario": {"name": name, "duration_s": duration_s, "seed": seed},
        "jobs": [dict(job) for job in jobs],
    }
    data.update({key: dict(value) for key, value in tables.items()})
    return tomli_w.dumps(data)


def make_scenario(**kwargs: Any) -> Scenario:
    """A validated scenario, built through the same parser as a scenario file."""
    return parse_scenario(scenario_toml(**kwargs))


def run_world(scenario: Scenario, table_root: Path | None = None) -> RunOutcome:
    return World(scenario, table_root=table_root).run()


@cache
def cached_run(text: str) -> RunOutcome:
    """Run a scenario (TOML text) once per test session: several tests judge the same run."""
    return run_world(parse_scenario(text))


def verdicts(outcome: RunOutcome) -> tuple[Any, Any]:
    events = outcome.history.events
    return check_snapshot(events, outcome.table), check_liveness(events)


def whys(verdict: Any) -> list[str]:
    return [v.why for v in verdict.violations]


def nemesis(events: list[Event], kind: str) -> list[Event]:
    return [e for e in events if e.process == "nemesis" and e.f == kind]


def ok_events(events: list[Event], f: str) -> list[Event]:
    return [e for e in events if e.f == f and e.type == "ok"]


# --- determinism -----------------------------------------------------------------------------


def faulty_scenario(seed: int) -> Scenario:
    return make_scenario(seed=seed, duration_s=20, faults=ALL_FAULTS)


def test_same_scenario_and_seed_give_a_byte_identical_history():
    first = run_world(faulty_scenario(3)).history
    second = run_world(faulty_scenario(3)).history
    assert first.jsonl_bytes() == second.jsonl_bytes()
    assert first.digest() == second.digest()
    assert first.digest() == "sha256:" + hashlib.sha256(first.jsonl_bytes()).hexdigest()
    assert len(first.events) > 100  # a real run, not an empty one


def test_a_different_seed_gives_a_different_history():
    assert run_world(faulty_scenario(3)).history.digest() != (
        run_world(faulty_scenario(4)).history.digest()
    )


def test_history_does_not_depend_on_the_process_hash_seed():
    """Set or dict-order leaks would show up as a different digest under another hash seed."""
    text = scenario_toml(seed=3, duration_s=20, faults=ALL_FAULTS)
    code = (
        "import sys\n"
        "from scenarios.schema import parse_scenario\n"
        "from sim.world import World\n"
        "print(World(parse_scenario(sys.stdin.read())).run().history.digest())\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run(
            [sys.executable, "-c", code],
            input=text,
            capture_output=True,
            text=True,
            cwd=ROOT,
            env=env,
            check=True,
        )
        digests.add(done.stdout.strip())
    assert digests == {run_world(parse_scenario(text)).history.digest()}


def test_memory_and_local_storage_give_the_same_history(tmp_path):
    text = scenario_toml(seed=7, duration_s=20, faults=ALL_FAULTS)
    in_memory = run_world(parse_scenario(text)).history
    root = tmp_path / "table"
    root.mkdir()
    on_disk = run_world(parse_scenario(text, storage="local"), root).history
    assert on_disk.jsonl_bytes() == in_memory.jsonl_bytes()


def test_every_job_gets_one_context_and_never_the_world():
    world = World(make_scenario(jobs=(JOB, JOB)))
    first, second = world.jobs
    context = first.context
    assert second.context is context
    assert context.faults is world.nemesis and context.services is world.services
    assert context.clients.table is world.table and context.clients.storage is world.storage
    assert context.rng is world.rng and context.env is world.env
    for job in world.jobs:
        assert not [name for name, value in vars(job).items() if value is world], job.name


def test_local_storage_needs_a_table_folder():
    with pytest.raises(ValueError, match="table folder"):
        World(make_scenario(table={"storage": "local"}))


# --- the shape of a run ----------------------------------------------------------------------


def test_a_run_starts_with_setup_ends_with_end_and_drains():
    outcome = cached_run(scenario_toml(seed=2, duration_s=20))
    events = outcome.history.events
    assert [e.index for e in events] == list(range(len(events)))
    assert all(a.time <= b.time for a, b in pairwise(events))
    assert (events[0].process, events[0].f) == ("world", "setup")
    assert (events[-1].process, events[-1].f) == ("world", "end")
    assert outcome.drained and events[-1].value["drained"]
    setup = events[0].value
    assert setup["seed"] == 2
    assert [j["name"] for j in setup["jobs"]] == ["job0"]
    assert setup["jobs"][0]["source"]["key_space"] == JOB["key_space"]
    assert setup["protocol"]["file_slicing"] == "completion_time"
    assert setup["heartbeat"] == {"interval_ms": 60_000, "tolerable_misses": 2}
    assert setup["jobs"][0]["table_services"] is True
    # drained: the last completed checkpoint covers everything the source emitted
    end = events[-1].value
    assert end["completed_checkpoints"]["job0"]["source_offset"] == end["source_offsets"]["job0"]
    drain = next(e for e in events if e.f == "drain")
    assert drain.time == 20_000
    assert not nemesis(events, "crash")


def test_liveness_is_violated_when_the_drain_timeout_is_too_short():
    outcome = run_world(make_scenario(seed=2, duration_s=20, sim={"drain_timeout_s": 0.001}))
    assert not outcome.drained
    liveness = check_liveness(outcome.history.events)
    assert not liveness.ok
    (violation,) = liveness.violations
    assert "job0" in violation.why
    assert violation.events[-1] == outcome.history.events[-1].index


# --- the real protocol under faults ----------------------------------------------------------

FAULT_SEEDS = (7, 14, 24, 36)


@pytest.fixture(scope="module", params=FAULT_SEEDS)
def faulty_run(request) -> RunOutcome:
    return cached_run(scenario_toml(seed=request.param, duration_s=40, faults=ALL_FAULTS))


def test_real_protocol_under_faults_passes_the_checkers(faulty_run):
    snapshot, liveness = verdicts(faulty_run)
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)
    assert faulty_run.drained


def test_the_faults_really_happened(faulty_run):
    """Without this, a pass above could mean the nemesis never did anything."""
    events = faulty_run.history.events
    drops = nemesis(events, "drop")
    assert any(e.value["channel"] == "job0/notify" for e in drops), "no checkpoint ACK was lost"
    assert nemesis(events, "crash"), "nothing crashed"
    assert nemesis(events, "storage_write_failure") or nemesis(events, "checkpoint_failure")
    failovers = [e for e in events if e.process == "job0" and e.f == "failover"]
    assert len(failovers) >= len(nemesis(events, "crash"))
    restarts = [e for e in events if e.process == "job0" and e.f == "start"]
    assert len(restarts) == len(failovers) + 1
    # each failover restores the last checkpoint completed before it, and the restart uses it
    for failover, restart in zip(failovers, restarts[1:], strict=True):
        completed = [
            e.value["checkpoint"]
            for e in ok_events(events[: failover.index], "checkpoint")
            if e.process == "job0/checkpoint"
        ]
        assert failover.value["restore"] == (completed[-1] if completed else None)
        assert restart.value["restored_checkpoint"] == failover.value["restore"]
        assert restart.index > failover.index


def test_every_fault_kind_fires_across_the_seeds():
    kinds: Counter[str] = Counter()
    for seed in FAULT_SEEDS:
        events = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS)).history
        for e in events.events:
            if e.process != "nemesis":
                continue
            kinds[e.f] += 1
            if e.f == "crash":
                kinds["crash:" + e.value["process"].split("/")[1].split("-")[0]] += 1
    for kind in ("drop", "checkpoint_failure", "storage_write_failure", "crash:task"):
        assert kinds[kind] >= len(FAULT_SEEDS) // 2, (kind, kinds)
    assert kinds["crash:coordinator"] >= 1, kinds


def test_instants_commit_once_in_checkpoint_and_completion_order(faulty_run):
    """docs/protocol.md section 9, invariant 3: instants commit in checkpoint order; no instant commits twice."""
    commits = ok_events(faulty_run.history.events, "commit")
    instants = [c.value["instant"] for c in commits]
    assert len(set(instants)) == len(instants)
    checkpoints = [c.value["checkpoint"] for c in commits]
    assert checkpoints == sorted(checkpoints)
    completions = [c.value["completion"] for c in commits]
    assert completions == sorted(completions)
    assert all(c.value["completion"] > c.value["instant"] for c in commits)


def test_lost_acks_are_subsumed_and_restores_recommit():
    """A later notification commits every earlier instant, and a restore re-commits what the
    failure interrupted: both recovery paths run in these fault runs."""
    subsumed = recommitted = 0
    for seed in FAULT_SEEDS:
        events = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS))
        events = events.history.events
        per_notify: Counter[int] = Counter()
        last_notify = None
        for e in events:
            if e.f == "notify":
                last_notify = e.index
            elif e.f == "failover":
                last_notify = None
            elif e.f == "commit" and e.type == "ok":
                if e.value["recommit"]:
                    recommitted += 1
                elif last_notify is not None:
                    per_notify[last_notify] += 1
        subsumed += sum(1 for n in per_notify.values() if n > 1)
    assert subsumed > 0
    assert recommitted > 0


# --- OCC within one async job and merge modes across jobs ------------------------------------


def test_one_async_job_with_occ_survives_a_lost_ack():
    """A delayed/lost ACK lets instant k+1 start before instant k commits; the job's own k is
    not a concurrent writer for k+1 (models/txn/concurrency.py, apache/hudi#19024), so no commit
    aborts into an endless failover loop."""
    job = {**JOB, "key_space": 1000, "records_per_s": 300, "concurrency": "occ"}
    outcome = run_world(make_scenario(seed=1, duration_s=20, jobs=(job,), faults={"ack_loss": 0.3}))
    snapshot, liveness = verdicts(outcome)
    assert liveness.ok, whys(liveness)
    assert snapshot.ok, whys(snapshot)


def test_two_nbcc_jobs_with_commit_time_ordering_pass_without_faults():
    """The table merges two jobs' versions of a key by commit time; so does the ledger's model
    (invariants/ledger.py), from the commits' completion times in the history."""
    outcome = run_world(
        make_scenario(
            seed=1,
            duration_s=20,
            table={"merge_mode": "COMMIT_TIME_ORDERING"},
            jobs=(JOB, {**JOB, "checkpoint_interval_s": 3}),
        )
    )
    snapshot, liveness = verdicts(outcome)
    assert liveness.ok
    assert snapshot.ok, whys(snapshot)


@pytest.mark.parametrize("mode", ["async", "minibatch"])
def test_two_jobs_with_commit_time_ordering_pass_under_faults(mode):
    """Lost ACKs, failovers and replays re-commit ranges later and minibatch instants span
    checkpoints: the model still places every version at the last commit that holds it."""
    job = {**JOB, "instant_generation": mode, "key_space": 300}
    outcome = run_world(
        make_scenario(
            seed=3,
            duration_s=20,
            table={"merge_mode": "COMMIT_TIME_ORDERING"},
            jobs=(job, {**job, "checkpoint_interval_s": 3}),
            faults={"ack_loss": 0.3, "ack_delay_ms": 2000, "writer_crash_per_hour": 120},
        )
    )
    assert [e for e in outcome.history.events if e.f == "failover"]
    snapshot, liveness = verdicts(outcome)
    assert liveness.ok, whys(liveness)
    assert snapshot.ok, whys(snapshot)


# --- a real table on disk, read by hudi-rs ---------------------------------------------------

ORACLE_CASES = {
    "mor-async-upsert-faults": dict(
        seed=1,
        jobs=({**JOB, "records_per_s": 300, "key_space": 1000, "compaction_every_commits": 3},),
        faults=ALL_FAULTS,
    ),
    "mor-async-insert-faults": dict(
        seed=3,
        jobs=({**JOB, "records_per_s": 300, "operation": "insert", "buffer_records": 200},),
        faults=ALL_FAULTS,
    ),
    "cow-blocking-upsert-faults": dict(
        seed=2,
        table={"type": "COPY_ON_WRITE"},
        jobs=({**JOB, "records_per_s": 300, "instant_generation": "blocking"},),
        faults={**ALL_FAULTS, "ack_loss": 0.0},
    ),
    "cow-blocking-mini-batches-faults": dict(
        seed=5,
        table={"type": "COPY_ON_WRITE"},
        jobs=(
            {**JOB, "records_per_s": 600, "instant_generation": "blocking", "buffer_records": 80},
        ),
        faults={**ALL_FAULTS, "ack_loss": 0.0},
    ),
    "mor-flink-state-index-faults": dict(
        seed=6,
        jobs=(
            {
                **JOB,
                "records_per_s": 300,
                "key_space": 20000,
                "index": "flink_state",
                "parquet_max_file_size_mb": 0.02,
                "compaction_every_commits": 3,
            },
        ),
        faults=ALL_FAULTS,
    ),
    "cow-flink-state-index-faults": dict(
        seed=7,
        table={"type": "COPY_ON_WRITE"},
        jobs=(
            {
                **JOB,
                "records_per_s": 300,
                "key_space": 20000,
                "instant_generation": "blocking",
                "index": "flink_state",
                "parquet_max_file_size_mb": 0.02,
            },
        ),
        faults={**ALL_FAULTS, "ack_loss": 0.0},
    ),
    "mor-async-upsert-timeline-server-markers": dict(
        seed=8,
        table={"markers": "timeline_server"},
        jobs=({**JOB, "records_per_s": 300, "key_space": 1000, "compaction_every_commits": 3},),
        faults={**ALL_FAULTS, "coordinator_crash_per_hour": 200},
    ),
    "cow-blocking-mini-batches-timeline-server-markers": dict(
        seed=9,
        table={"type": "COPY_ON_WRITE", "markers": "timeline_server"},
        jobs=(
            {**JOB, "records_per_s": 600, "instant_generation": "blocking", "buffer_records": 80},
        ),
        faults={**ALL_FAULTS, "ack_loss": 0.0},
    ),
    "mor-two-nbcc-jobs": dict(
        seed=4,
        jobs=(
            {**JOB, "records_per_s": 300, "key_space": 1000, "compaction_every_commits": 2},
            {**JOB, "records_per_s": 300, "key_space": 1000, "checkpoint_interval_s": 3},
        ),
        faults={"ack_loss": 0.3, "writer_crash_per_hour": 200},
    ),
}


def slice_names(slices: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What both readers must agree on: file group, base file and log files of each slice."""
    return sorted(
        (s["partition"], s["file_id"], s["base_file"], tuple(s["log_files"])) for s in slices
    )


@pytest.mark.oracle
@pytest.mark.parametrize("case", sorted(ORACLE_CASES))
def test_local_table_reads_the_same_through_hudi_rs(case, tmp_path):
    pytest.importorskip("hudi")
    from tests.hudi_oracle import oracle_file_slices, oracle_read

    kwargs = dict(ORACLE_CASES[case])
    table = {**kwargs.pop("table", {}), "storage": "local"}
    scenario = make_scenario(duration_s=20, table=table, **kwargs)
    root = tmp_path / "table"
    root.mkdir()
    outcome = run_world(scenario, root)
    events = outcome.history.events
    assert outcome.drained
    assert any(e.process == "nemesis" for e in events), "the faults never fired"
    assert (root / ".hoodie" / "hoodie.properties").is_file()

    model = build_ledger(events).model()
    theirs = oracle_read(root).select(DATA_COLUMNS).cast(model.schema)
    assert theirs.num_rows == model.num_rows
    assert theirs.sort_by([("key", "ascending")]).to_pylist() == model.to_pylist()

    ours = [
        {
            "partition": s.partition,
            "file_id": s.file_id,
            "base_file": s.base_file.name if s.base_file else None,
            "log_files": [log.name for log in s.log_files],
        }
        for s in outcome.table.latest_file_slices(options=outcome.view_options)
    ]
    assert ours, "the run wrote no file slices"
    assert slice_names(oracle_file_slices(root)) == slice_names(ours)
