"""Tests for sim/job.py: how one Flink job's modes and protocol variants behave in whole runs.

Each claim of docs/protocol.md section 6 that the testbed is meant to demonstrate gets a run on both
sides of it, on the same seeds (so on the same fault schedule):

- async instant generation is exactly-once for inserts; mini-batch is not (duplicates), but is
  fine for upserts;
- the legacy ``base_instant`` file slicing loses data once compaction is scheduled during writes,
  completion-time slicing does not;
- ``persist_write_meta = false`` (HUDI-9570) loses data after lost notifications and crashes,
  the real rule does not;
- blocking instant generation makes writers wait for commits, async does not; COPY_ON_WRITE
  upserts lose updates under async when an ACK is lost (why Hudi 1.1 keeps them blocking);
- after a failover the source replays from the restored checkpoint's offset;
- no data file of a completed instant lies outside its commit metadata.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from models.history import Event
from models.timeline.instant import State
from models.view.filenames import (
    is_base_file_name,
    is_log_file_name,
    parse_base_file_name,
    parse_log_file_name,
)
from reports.metrics import compute_metrics
from scenarios import catalog_dir, parse_scenario
from sim.job import Job
from sim.world import World
from tests.sim.test_world import (
    JOB,
    cached_run,
    make_scenario,
    nemesis,
    ok_events,
    run_world,
    scenario_toml,
    verdicts,
    whys,
)


def flushes(events: list[Event], *, last_batch: bool) -> list[Event]:
    return [
        e
        for e in events
        if e.f == "flush" and e.type == "ok" and e.value["last_batch"] is last_batch
    ]


# --- exactly-once for inserts ----------------------------------------------------------------

INSERT_JOB: dict[str, Any] = {
    **JOB,
    "operation": "insert",
    "records_per_s": 500,
    "buffer_records": 200,
}
FAILED_CHECKPOINTS: dict[str, Any] = {"checkpoint_failure": 0.2, "ack_delay_ms": 3000}
DUPLICATE_SEEDS = (4, 5, 7, 10)
"""Seeds on which mini-batch inserts commit a re-written batch twice (found by a sweep)."""


def mode_run(mode: str, operation: str, seed: int) -> Any:
    job = {**INSERT_JOB, "instant_generation": mode, "operation": operation}
    return cached_run(scenario_toml(seed=seed, jobs=(job,), faults=FAILED_CHECKPOINTS))


@pytest.mark.parametrize("seed", DUPLICATE_SEEDS)
def test_async_inserts_are_exactly_once_despite_failed_checkpoints(seed):
    outcome = mode_run("async", "insert", seed)
    snapshot, liveness = verdicts(outcome)
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)
    events = outcome.history.events
    assert nemesis(events, "checkpoint_failure"), "no checkpoint failed"
    assert flushes(events, last_batch=False), "no eager flush between checkpoints"
    assert [e for e in events if e.f == "failover"], "the job never failed over"


@pytest.mark.parametrize("seed", DUPLICATE_SEEDS)
def test_minibatch_inserts_commit_rewritten_batches_twice(seed):
    """The known at-least-once behaviour of mini-batch mode (docs/protocol.md section 6.5)."""
    outcome = mode_run("minibatch", "insert", seed)
    snapshot, liveness = verdicts(outcome)
    assert liveness.ok, whys(liveness)
    assert not snapshot.ok
    assert any("appear more than once in the snapshot" in why for why in whys(snapshot))
    assert not any("missing from the snapshot" in why for why in whys(snapshot))


@pytest.mark.parametrize("seed", DUPLICATE_SEEDS)
def test_minibatch_upserts_absorb_the_rewrites(seed):
    outcome = mode_run("minibatch", "upsert", seed)
    snapshot, liveness = verdicts(outcome)
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)
    assert nemesis(outcome.history.events, "checkpoint_failure")


# --- file slicing variant --------------------------------------------------------------------


def slicing_scenario(rule: str, *, seed: int, compaction_every_commits: int = 1) -> Any:
    """The catalog's base_instant_slicing shape, shrunk: two NBCC jobs with different checkpoint
    intervals, a compaction after every commit of the first, a key space large enough that later
    updates do not hide a lost one."""
    common = {"writers": 2, "records_per_s": 500, "buffer_records": 500, "key_space": 50_000}
    jobs = (
        {
            **common,
            "name": "ingest_a",
            "checkpoint_interval_s": 3,
            "table_services": True,
            "compaction_every_commits": compaction_every_commits,
        },
        {**common, "name": "ingest_b", "table_services": False},
    )
    return make_scenario(seed=seed, duration_s=20, jobs=jobs, protocol={"file_slicing": rule})


@pytest.mark.parametrize("seed", [1, 2])
def test_base_instant_slicing_loses_data_completion_time_does_not(seed):
    legacy = run_world(slicing_scenario("base_instant", seed=seed))
    snapshot, liveness = verdicts(legacy)
    assert liveness.ok, whys(liveness)
    assert not snapshot.ok
    assert any("data loss" in why for why in whys(snapshot)), whys(snapshot)
    assert ok_events(legacy.history.events, "compaction"), "no compaction ran"

    real = run_world(slicing_scenario("completion_time", seed=seed))
    snapshot, liveness = verdicts(real)
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)
    assert ok_events(real.history.events, "compaction")


def test_base_instant_slicing_is_harmless_without_compaction():
    """The loss above comes from compaction during writes, not from the variant's naming."""
    outcome = run_world(slicing_scenario("base_instant", seed=1, compaction_every_commits=10_000))
    assert not ok_events(outcome.history.events, "compaction")
    snapshot, _ = verdicts(outcome)
    assert snapshot.ok, whys(snapshot)


# --- task state (HUDI-9570) ------------------------------------------------------------------

LOST_NOTIFICATIONS: dict[str, Any] = {"ack_loss": 0.5, "coordinator_crash_per_hour": 360}
"""Lost notifications, and JobManager failovers: a new coordinator knows only its checkpointed
state, and the tasks (attempt 0) re-send theirs (a task or global failover keeps the coordinator's
buffers, which holds the data whatever the tasks keep)."""


def write_meta_run(persist: bool, seed: int) -> Any:
    return cached_run(
        scenario_toml(
            seed=seed, faults=LOST_NOTIFICATIONS, protocol={"persist_write_meta": persist}
        )
    )


@pytest.mark.parametrize("seed", [2, 3, 4, 5])
def test_unpersisted_write_meta_loses_data_persisted_does_not(seed):
    """A notification lost, then a JobManager crash before the next one: the instant of the
    checkpoint that completed lives only in the tasks' state. Without it (HUDI-9570) the restore cannot
    re-commit it and the checkpointed records are gone."""
    none = write_meta_run(False, seed)
    snapshot, liveness = verdicts(none)
    assert liveness.ok, whys(liveness)
    assert not snapshot.ok
    assert any("data loss" in why for why in whys(snapshot)), whys(snapshot)

    events = write_meta_run(True, seed)
    snapshot, liveness = verdicts(events)
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)

    # the same fault schedule: crashes come from their own random stream
    def crashes(outcome: Any) -> list[tuple[int, Any]]:
        return [(e.time, e.value) for e in nemesis(outcome.history.events, "crash")]

    assert crashes(none) == crashes(events) != []


@pytest.mark.parametrize("seed", [2, 3])
def test_persist_write_meta_decides_what_restarted_tasks_resend(seed):
    def resent(persist: bool) -> int:
        history = write_meta_run(persist, seed).history.events
        return sum(len(e.value["events"]) for e in history if e.f == "bootstrap")

    assert resent(False) == 0
    assert resent(True) > 0


# --- blocking vs async -----------------------------------------------------------------------


@pytest.mark.parametrize(("buffer_records", "stalls"), [(10_000, False), (20, True)])
def test_blocking_writers_wait_for_commits_when_they_flush_before_them(buffer_records, stalls):
    """A blocking writer asks for an instant only when it flushes: under a light load (buffers
    flush only at the barriers) the previous instant is committed by then and nobody waits for
    a commit; under a heavy one (buffers fill between barriers) the first eager flush after a
    barrier waits for the notification's commit. Async writers never wait for a commit."""
    job = {**JOB, "buffer_records": buffer_records}
    runs = {
        mode: run_world(
            make_scenario(seed=1, jobs=({**job, "instant_generation": mode},), duration_s=30)
        )
        for mode in ("async", "blocking")
    }
    metrics = {mode: compute_metrics(run.history.events) for mode, run in runs.items()}
    for run in runs.values():
        snapshot, liveness = verdicts(run)
        assert snapshot.ok and liveness.ok
    assert metrics["async"]["commit_wait_ms_total"] == 0
    writers = metrics["async"]["writers"]
    assert (
        sorted(writers) == sorted(metrics["blocking"]["writers"]) == ["job0/task-0", "job0/task-1"]
    )
    if not stalls:
        assert metrics["blocking"]["commit_wait_ms_total"] == 0
        return
    for name in writers:
        blocking = metrics["blocking"]["writers"][name]
        assert blocking["commit_wait_ms"] > 0
        assert writers[name]["commit_wait_ms"] == 0


def test_blocking_coordinator_runs_one_instant_at_a_time():
    run = run_world(make_scenario(seed=1, jobs=({**JOB, "instant_generation": "blocking"},)))
    events = run.history.events
    open_instants: set[str] = set()
    for e in events:
        if e.f == "start_instant" and e.type == "ok":
            assert not open_instants, f"{e.value['instant']} started while {open_instants} open"
            open_instants.add(e.value["instant"])
        elif e.f == "commit" and e.type == "ok":
            open_instants.discard(e.value["instant"])
    assert len(ok_events(events, "commit")) > 5


# --- the source ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [7, 24])
def test_source_replays_from_the_restored_offset(seed):
    """Within an epoch the source emits contiguous offset ranges; after a failover it starts
    again at the restored checkpoint's offset (a Kafka source rewinding)."""
    from tests.sim.test_world import ALL_FAULTS

    events = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS)).history.events
    checkpoint_offsets = {
        e.value["checkpoint"]: e.value["source_offset"] for e in ok_events(events, "checkpoint")
    }
    expected = None
    replays = 0
    for e in events:
        if e.process == "job0" and e.f == "start":
            restored = e.value["restored_checkpoint"]
            offset = 0 if restored is None else checkpoint_offsets[restored]
            assert e.value["source_offset"] == offset
            replays += restored is not None
            expected = offset
        elif e.f == "emit":
            assert e.value["from"] == expected
            assert e.value["to"] > e.value["from"]
            expected = e.value["to"]
    assert replays > 0


# --- COPY_ON_WRITE upserts need the blocking coordinator -------------------------------------


@pytest.mark.parametrize("seed", [1, 2])
def test_cow_async_upserts_lose_updates_when_an_ack_is_lost_blocking_does_not(seed):
    """Why Hudi 1.1 still runs COPY_ON_WRITE upserts with blocking instant generation: with an
    ACK lost, instant k+1 rewrites a file group's base file from the last *committed* slice
    while instant k (holding newer base files) is still pending; committing both in order makes
    k+1's base file, which lacks k's records, the latest. The schema accepts this combination,
    the checker must catch it."""

    def cow(mode: str) -> Any:
        job = {**JOB, "instant_generation": mode}
        return run_world(
            make_scenario(
                seed=seed,
                duration_s=20,
                table={"type": "COPY_ON_WRITE"},
                jobs=(job,),
                faults={"ack_loss": 0.3},
            )
        )

    async_run = cow("async")
    snapshot, liveness = verdicts(async_run)
    assert liveness.ok, whys(liveness)
    assert any("data loss" in why for why in whys(snapshot)), whys(snapshot)
    assert nemesis(async_run.history.events, "drop")

    snapshot, liveness = verdicts(cow("blocking"))
    assert snapshot.ok, whys(snapshot)
    assert liveness.ok, whys(liveness)


# --- no data file outside its commit ---------------------------------------------------------


def files_outside_their_commit(table: Any) -> list[str]:
    """Data files named with a completed write instant that its commit metadata does not list.

    Readers take every listed file of a completed instant, so such a file is data nobody
    committed (docs/protocol.md section 9, invariant 5: no uncommitted data is visible)."""
    completed = {
        i.requested_time: i
        for i in table.timeline()
        if i.state is State.COMPLETED and i.action in ("commit", "deltacommit")
    }
    committed = {
        t: {s.path for s in table.commit_metadata(i).write_stats()} for t, i in completed.items()
    }
    outside = []
    for partition in table.partitions():
        for status in table.storage.list_dir(partition):
            name = status.name.rsplit("/", 1)[-1]
            if is_log_file_name(name):
                instant = parse_log_file_name(name).instant_time
            elif is_base_file_name(name):
                instant = parse_base_file_name(name).instant_time
            else:
                continue
            path = f"{partition}/{name}" if partition else name
            if instant in committed and path not in committed[instant]:
                outside.append(path)
    return sorted(outside)


def faulty_mode_run(mode: str, seed: int) -> Any:
    from tests.sim.test_world import ALL_FAULTS

    job = {**JOB, "instant_generation": mode, "buffer_records": 300}
    return cached_run(scenario_toml(seed=seed, jobs=(job,), faults=ALL_FAULTS))


@pytest.mark.parametrize("mode", ["async", "blocking"])
@pytest.mark.parametrize("seed", [2, 3, 4])
def test_every_data_file_of_a_completed_instant_is_in_its_commit(mode, seed):
    outcome = faulty_mode_run(mode, seed)
    assert files_outside_their_commit(outcome.table) == []
    assert [e for e in outcome.history.events if e.f == "failover"]


def test_minibatch_recommit_makes_no_unlisted_file_visible():
    """A flush into the open instant after the restored checkpoint's snapshot leaves log files
    the re-sent events do not list; the restore re-commits the instant, and finalizing that
    commit against its markers (models/write/writer.py) deletes them: the source replays those records
    under a new instant instead of them showing up beyond the last completed checkpoint."""
    outcome = faulty_mode_run("minibatch", 3)
    snapshot, _ = verdicts(outcome)
    assert files_outside_their_commit(outcome.table) == []
    assert snapshot.ok, whys(snapshot)


def test_minibatch_inserts_lose_no_record_a_completed_checkpoint_covered():
    """Regression (was a strict xfail). The late notification for checkpoint 12 reached the
    coordinator while the tasks' barrier-13 flushes were writing into the open instant; it was
    committed without them, checkpoint 13 completed, the late events failed the job ("already
    committed") and the restore of 13 could not commit them: 150 records lost. Mini-batch is
    at-least-once by design (duplicates, never a loss: docs/protocol.md section 6.5),
    so the coordinator skips a notification while a flush into the open instant is under way
    (the design lets notifications be skipped) and the next one commits it whole."""
    outcome = mode_run("minibatch", "insert", 14)
    snapshot, liveness = verdicts(outcome)
    assert not any("missing from the snapshot" in why for why in whys(snapshot)), whys(snapshot)
    assert liveness.ok, whys(liveness)
    events = outcome.history.events
    assert not [e for e in events if e.f == "failover" and "already committed" in e.value["cause"]]


# --- the job master: attempts and failover ---------------------------------------------------


def started_job(**scenario: Any) -> tuple[World, Job]:
    """A world whose first job runs on its own (no nemesis, no drain) until 5 s."""
    world = World(make_scenario(**scenario))
    job = world.jobs[0]
    job.start()
    world.env.run(until=5000)
    return world, job


def test_an_attempt_runs_each_role_as_a_process():
    world, job = started_job(jobs=({**JOB, "table_services": True},))
    assert job.attempt is not None and job.attempt.epoch == job.epoch == 1
    roles = ["coordinator", "task-0", "task-1", "source", "checkpoint"]
    assert {f"job0/{role}" for role in roles} <= {e.process for e in world.history.events}
    # those five, then the table-services process (it ends once it resumed compactions), a
    # clean per clean under LAZY and a compactor per scheduled compaction
    assert len(job.attempt.processes) >= len(roles) + 1
    assert all(p.is_alive for p in job.attempt.processes[: len(roles)])


def test_a_failover_stops_the_attempt_and_restores_the_last_checkpoint_in_the_next():
    world, job = started_job()
    first = job.attempt
    assert first is not None and job.completed is not None
    restored = job.completed
    job.fail(first.epoch, "test")
    job.fail(first.epoch, "again")  # already failing: ignored
    world.env.run(until=world.env.now + 1)
    assert not any(p.is_alive for p in first.processes)
    world.env.run(until=world.env.now + world.scenario.sim.restart_delay_ms)
    assert job.epoch == 2 and job.attempt is not first and not job.failing
    failovers = [e for e in world.history.events if e.f == "failover"]
    assert [e.value for e in failovers] == [
        {"epoch": 1, "cause": "test", "restore": restored.checkpoint_id, "path": "global"}
    ]
    start = [e for e in world.history.events if e.f == "start"][-1]
    assert start.value == {
        "epoch": 2,
        "restored_checkpoint": restored.checkpoint_id,
        "source_offset": restored.source_offset,
        "path": "global",
        "writers": job.parallelism,
        "task_attempt": 1,
    }
    job.fail(1, "a late failure of the old attempt")
    assert not job.failing


@pytest.mark.parametrize(
    ("failover", "how", "path", "same_coordinator", "attempt"),
    [
        ("region", {"failed_task": 0}, "region", True, 1),
        ("full", {"failed_task": 0}, "global", True, 1),
        ("region", {}, "global", True, 1),
        ("region", {"path": "jobmanager"}, "jobmanager", False, 0),
    ],
)
def test_the_restart_path_follows_what_failed(failover, how, path, same_coordinator, attempt):
    """A task's failure restarts its region under ``failover = "region"`` and the whole job
    under ``"full"``; a job failure is global; both keep the coordinator and raise the tasks'
    attempt number. A JobManager failover builds a new coordinator and deploys at attempt 0."""
    world, job = started_job(jobs=({**JOB, "failover": failover},))
    before = job.coordinator
    job.fail(job.epoch, "test", **how)
    world.env.run(until=world.env.now + world.scenario.sim.restart_delay_ms + 1)
    (failed,) = [e for e in world.history.events if e.f == "failover"]
    assert failed.value["path"] == path
    assert (job.coordinator is before) == same_coordinator
    assert job.task_attempt == attempt
    restore = [e for e in world.history.events if e.f == "restore" and e.type == "invoke"][-1]
    assert restore.value["path"] == {"jobmanager": "start"}.get(path, path)


def test_checkpoint_ids_and_offsets_outlive_an_attempt():
    world, job = started_job()
    before = job.completed
    assert before is not None
    job.fail(job.epoch, "test")
    world.env.run(until=world.env.now + 5000)
    after = job.completed
    assert after is not None and after.checkpoint_id > before.checkpoint_id
    assert after.source_offset >= before.source_offset
    assert job.source_offset >= after.source_offset


def test_a_task_failover_lets_the_kept_coordinators_commit_finish():
    """A write task crashes while the coordinator commits (the notification of checkpoint 6 came
    81 ms before): Flink's task failover leaves the coordinator's executor alone, so the commit
    completes during the restart, and the blocking writers of the next attempt get their instants
    at once. Interrupting the commit with the attempt left the instant pending, the writers
    waiting on the commit guard, no checkpoint completing, until a checkpoint timed out 80 s
    later and a global failover recommitted it."""
    text = (
        (catalog_dir() / "flink_state_cow.toml").read_text().replace("at_s = 16.5", "at_s = 14.7")
    )
    events = World(parse_scenario(text)).run().history.events
    crash = next(e for e in events if e.f == "crash")
    start = next(e for e in events if e.f == "start" and e.time > crash.time)
    notified = [e for e in events if e.f == "notify" and e.time < crash.time][-1]
    committed = [e for e in events if e.f == "commit" and e.type == "ok"]
    assert notified.time > crash.time - 200
    assert any(crash.time < e.time < start.time for e in committed)
    gaps = [b.time - a.time for a, b in pairwise(committed)]
    assert max(gaps) < 10_000, "a commit stalled"
    assert not [e for e in events if e.f == "failover" and e.value["path"] == "global"]
