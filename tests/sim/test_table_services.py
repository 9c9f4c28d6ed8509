"""Tests for sim/table_services.py: the OCC check a job with ``concurrency = "occ"`` runs at commit,
and the heartbeats, cleaning and archiving the services run without seeing any job.

The check itself is :mod:`models.txn.concurrency`; what the world adds is *whose* instants are whose:
a job's own earlier commits are its predecessors in the coordinator's commit order, not concurrent
writers (apache/hudi#19024), while another job's commit on the same file groups still aborts.
"""

from __future__ import annotations

from itertools import pairwise

import pyarrow as pa
import pytest

from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.timeline.truetime import make_time_generator
from models.txn.concurrency import ConcurrentWriteConflict
from models.write.heartbeat import heartbeat_ms
from models.write.writer import TableWriter
from sim.driver import drive
from sim.table_services import HeartbeatExpiredError, TableServices
from sim.world import World
from tests.sim.test_world import JOB, make_scenario, ok_events, run_world, verdicts, whys

OCC_JOB = {**JOB, "key_space": 1000, "records_per_s": 300, "concurrency": "occ"}
FG = "00000000-0000-4000-8000-000000000000-0"


class ByHand:
    """A world of two OCC jobs, not running: instants written by hand through its table and
    committed through each job's pre-commit hook."""

    def __init__(self) -> None:
        self.world = World(make_scenario(jobs=(OCC_JOB, OCC_JOB)))
        self.clock = FakeClock(FakeWorld(1_767_225_600_000))
        generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock())
        self.writer = TableWriter(self.world.table, generator)
        self.hooks = [job.occ_check for job in self.world.jobs]

    def start(self):
        return run(self.writer.start_commit(), self.clock)

    def append(self, instant, key: str):
        records = pa.table(
            {
                "key": [key],
                "part": ["p0"],
                "ts": pa.array([1], pa.int64()),
                "offset": pa.array([0], pa.int64()),
                "job": pa.array([0], pa.int32()),
                "value": pa.array([0], pa.int64()),
            }
        )
        return (self.writer.append_log_file(instant, "part=p0", FG, records),)

    def commit(self, job: int, instant, stats):
        hook = self.hooks[job]
        return run(
            self.writer.commit(instant, stats, precommit=lambda: hook(instant, stats)), self.clock
        )


def test_a_jobs_own_earlier_commit_is_no_conflict_another_jobs_is():
    """Job 0 starts k and then k+1 on one file group; job 1 starts u in between. k commits
    first: for job 1's u it is a concurrent writer (abort), for job 0's k+1 a predecessor."""
    w = ByHand()
    k = w.start()
    k_stats = w.append(k, "k1")
    u = w.start()
    u_stats = w.append(u, "k2")
    k_next = w.start()
    next_stats = w.append(k_next, "k3")
    done = w.commit(0, k, k_stats)
    with pytest.raises(ConcurrentWriteConflict) as caught:
        w.commit(1, u, u_stats)
    assert caught.value.other == done
    w.commit(0, k_next, next_stats)


def test_only_occ_jobs_get_a_check():
    world = World(make_scenario(jobs=(JOB, OCC_JOB)))
    nbcc, occ = world.jobs
    assert nbcc.occ_check is None
    assert callable(occ.occ_check)
    assert world.services.occ_check("nbcc") is None


def test_an_occ_job_commits_over_its_own_late_instants():
    """Lost and late ACKs let the job's next instant start before the previous one commits
    (checked in the history); no commit aborts and the run drains with the right table."""
    outcome = run_world(
        make_scenario(seed=2, duration_s=20, jobs=(OCC_JOB,), faults={"ack_loss": 0.3})
    )
    events = outcome.history.events
    commits = ok_events(events, "commit")
    overlapping = [
        later
        for earlier, later in pairwise(commits)
        if earlier.value["completion"] > later.value["instant"]
    ]
    assert overlapping, "no instant started before its predecessor committed"
    causes = [e.value["cause"] for e in events if e.f == "failover"]
    assert not [c for c in causes if "CommitConflictError" in c]
    snapshot, liveness = verdicts(outcome)
    assert liveness.ok, whys(liveness)
    assert snapshot.ok, whys(snapshot)


@pytest.mark.parametrize("table,mode", [("MERGE_ON_READ", "async"), ("COPY_ON_WRITE", "blocking")])
def test_two_occ_jobs_on_contended_keys_livelock_the_one_whose_commit_conflicts(table, mode):
    """Hudi's Flink sink has no retry: the job whose commit loses the conflict check fails over
    and recommits the same instant, which conflicts again (apache/hudi#19046); it never drains.
    The second job's job manager fails over after the first job's first commit, so its writers
    load that job's bucket file ids (two jobs starting on an empty table mint their own)."""
    job = {**OCC_JOB, "instant_generation": mode}
    outcome = run_world(
        make_scenario(
            seed=1,
            duration_s=20,
            table={"type": table},
            jobs=(job, {**job, "checkpoint_interval_s": 3}),
            sim={"drain_timeout_s": 30},
            faults={"schedule": [{"at_s": 2.5, "kind": "crash", "target": "job1/coordinator"}]},
        )
    )
    events = outcome.history.events
    aborts = [e for e in events if e.f == "abort"]
    assert aborts
    stuck = aborts[0].process.split("/", 1)[0]
    assert {e.value["instant"] for e in aborts if e.process == aborts[0].process} == {
        aborts[0].value["instant"]
    }  # always the same instant: recommitted, never redone under a new one
    _, liveness = verdicts(outcome)
    assert not liveness.ok and stuck in " ".join(whys(liveness))


# --- heartbeats, cleaning and archiving, without jobs ----------------------------------------


def services_on(world: World, policy: str = "LAZY") -> TableServices:
    return TableServices(
        env=world.env,
        history=world.history,
        table=world.table,
        storage=world.storage,
        now_ms=world.now_ms,
        sim=world.scenario.sim,
        policy=policy,
    )


def test_each_writer_beats_on_its_own_timer_which_a_pause_of_its_coordinator_stops():
    """Hudi's ``HoodieHeartbeatClient`` of the coordinator's write client: a timer per client
    every interval; a paused coordinator misses beats and its commit is refused once they
    expired (``abortIfHeartbeatExpired``)."""
    world = World(make_scenario())
    services = services_on(world)
    interval = world.scenario.sim.heartbeat_interval_ms
    mine, other = "20260101000000001", "20260101000000002"
    services.register_writer("a/coordinator", lambda: [mine])
    services.register_writer("b/coordinator", lambda: [other])
    services.start_heartbeat_timers()
    services.heartbeat_started(mine)
    services.heartbeat_started(other)
    world.env.run(until=interval + 1)
    assert heartbeat_ms(world.storage, mine) == heartbeat_ms(world.storage, other)
    assert heartbeat_ms(world.storage, mine) == world.now_ms() - 1
    world.env.pause("a/coordinator", 3 * interval)
    world.env.run(until=3 * interval + 2)
    assert heartbeat_ms(world.storage, other) == world.now_ms() - 2
    assert heartbeat_ms(world.storage, mine) == world.now_ms() - 2 * interval - 2
    services.abort_if_heartbeat_expired(other)
    with pytest.raises(HeartbeatExpiredError, match=f"Heartbeat for instant {mine} has expired"):
        services.abort_if_heartbeat_expired(mine)
    services.heartbeat_stopped(mine)
    assert heartbeat_ms(world.storage, mine) is None


def test_eager_cleaning_keeps_no_heartbeats_and_never_refuses_a_commit():
    world = World(make_scenario())
    services = services_on(world, "EAGER")
    services.register_writer("a/coordinator", lambda: ["20260101000000001"])
    services.start_heartbeat_timers()
    services.heartbeat_started("20260101000000001")
    world.env.run(until=3 * world.scenario.sim.heartbeat_interval_ms)
    assert heartbeat_ms(world.storage, "20260101000000001") is None
    services.abort_if_heartbeat_expired("20260101000000001")


def test_only_eager_cleaning_rolls_back_after_a_bootstrap_and_never_the_owners_instants():
    world = World(make_scenario())
    writer = world.jobs[0].context.clients.coordinator_writer("job0/coordinator")

    def process(steps):
        world.env.process(steps)
        world.env.run(until=world.env.now + 1000)

    started: list[str] = []

    def start():
        for _ in range(2):
            instant = yield from drive(world.env, writer.start_commit(), owner="job0/coordinator")
            started.append(instant.requested_time)

    process(start())
    failed, own = started
    for policy in ("LAZY", "EAGER"):
        process(services_on(world, policy).clean_after_bootstrap("job0/coordinator", writer, [own]))
    rollbacks = [e for e in world.history.events if e.f == "rollback"]
    assert [(e.type, e.process, e.value["instant"]) for e in rollbacks] == [
        ("invoke", "job0/coordinator", failed),
        ("ok", "job0/coordinator", failed),
    ]


def test_archiving_records_what_it_archived_under_the_owners_name():
    world = World(make_scenario())
    services_on(world).archive("job0/coordinator")  # an empty timeline: nothing to archive
    assert [e for e in world.history.events if e.f == "archive"] == []
