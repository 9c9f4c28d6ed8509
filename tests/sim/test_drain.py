"""The end of a run (sim/world.py's drain, ``Job.drain`` in sim/job.py): the input ends at the
highest offset the source emitted, and a job that restored an earlier checkpoint replays up to it
before it drains, as a Flink job does at the end of a bounded input. A run ending right after a
failover loses nothing under the real rule; one with nothing to replay is unchanged.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from invariants.checks import check_all
from invariants.ledger import build_ledger
from models.history import Event
from models.view.table import HudiTable
from scenarios.schema import parse_scenario
from sim.world import RunOutcome, World
from tests.sim.test_world import JOB, scenario_toml

DURATION_S = 10
CRASH = {"at_s": 9.5, "kind": "crash", "target": "ingest/coordinator"}
"""Half a second before the end: the job restarts (restart_delay_ms = 1000) during the drain,
restored from the checkpoint at 8 s, so 1.5 s of emitted records are not covered by it."""


@cache
def run(*, crash: bool = True, seed: int = 3, **job: Any) -> RunOutcome:
    schedule = [CRASH] if crash else []
    text = scenario_toml(
        seed=seed,
        duration_s=DURATION_S,
        jobs=({**JOB, "name": "ingest", **job},),
        faults={"schedule": schedule},
    )
    return World(parse_scenario(text)).run()


def world_event(outcome: RunOutcome, f: str) -> Event:
    return next(e for e in outcome.history.events if e.process == "world" and e.f == f)


def emits_after(outcome: RunOutcome, index: int) -> list[Event]:
    return [e for e in outcome.history.events if e.f == "emit" and e.index > index]


def violated(outcome: RunOutcome) -> set[str]:
    verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    return {name for name, verdict in verdicts.items() if not verdict.ok}


def test_a_job_restored_during_the_drain_replays_to_the_end_of_its_input():
    outcome = run()
    drain = world_event(outcome, "drain")
    failover = next(e for e in outcome.history.events if e.f == "failover")
    assert failover.time < drain.time  # crashed before the end, restarted after it
    start = [e for e in outcome.history.events if e.f == "start" and e.process == "ingest"][-1]
    assert start.time > drain.time
    ledger = build_ledger(outcome.history.events).jobs[0]
    restored = start.value["source_offset"]
    assert restored < ledger.emitted  # the restored checkpoint covers less than was emitted
    replayed = emits_after(outcome, drain.index)
    assert replayed[0].value["from"] == restored
    assert max(e.value["to"] for e in replayed) == ledger.emitted  # to the end, no further
    assert ledger.covered == ledger.emitted  # the final checkpoint covers everything emitted
    end = world_event(outcome, "end")
    assert end.value["drained"]
    assert end.value["completed_checkpoints"]["ingest"]["source_offset"] == ledger.emitted
    assert violated(outcome) == set()


def test_a_run_with_nothing_to_replay_emits_nothing_after_the_drain():
    outcome = run(crash=False)
    drain = world_event(outcome, "drain")
    assert emits_after(outcome, drain.index) == []
    ledger = build_ledger(outcome.history.events).jobs[0]
    assert drain.value["source_offsets"]["ingest"] == ledger.emitted == ledger.covered


def test_the_replay_is_deterministic():
    first = run()
    again = World(
        parse_scenario(
            scenario_toml(
                seed=3,
                duration_s=DURATION_S,
                jobs=({**JOB, "name": "ingest"},),
                faults={"schedule": [CRASH]},
            )
        )
    ).run()
    assert again.history.jsonl_bytes() == first.history.jsonl_bytes()


MINIBATCH_UPSERT = {
    "writers": 4,
    "instant_generation": "minibatch",
    "checkpoint_interval_s": 5,
    "records_per_s": 2000,
    "buffer_records": 1000,
    "operation": "upsert",
    "key_space": 5000,
}


def test_minibatch_upserts_ending_right_after_a_failed_checkpoint_only_break_exactly_once():
    """Found by ``testbed explore`` on minibatch_upsert: the ACK of checkpoint 1 is 3 s late (it
    commits the eager flushes made after checkpoint 1), checkpoint 2 fails at 10 s, the run ends
    at 11 s, before the restored job re-emitted anything. Ending the input at the restored offset
    left committed versions of keys beyond the final checkpoint, which no_data_loss reported;
    replayed to the end of the input, only the re-commit (exactly_once, mini-batch's known
    at-least-once) remains."""
    text = scenario_toml(
        seed=0,
        duration_s=11,
        jobs=({**MINIBATCH_UPSERT, "name": "ingest"},),
        faults={
            "schedule": [
                {
                    "at_s": 0,
                    "kind": "delay_ack",
                    "target": "ingest",
                    "checkpoint": 1,
                    "delay_ms": 3000,
                },
                {"at_s": 0, "kind": "fail_checkpoint", "target": "ingest", "checkpoint": 2},
            ]
        },
    )
    outcome = World(parse_scenario(text)).run()
    ledger = build_ledger(outcome.history.events).jobs[0]
    assert ledger.covered == ledger.emitted
    assert violated(outcome) == {"exactly_once"}


def test_a_job_with_an_event_still_in_the_mailbox_is_not_drained():
    """The last checkpoint's notification is 2 s late; while the coordinator commits the
    previous instant (slowed by TrueTime's wait), the task's event for the last instant waits
    in its mailbox. The job drains only after that instant is committed, so nothing covered is
    reported lost."""
    text = scenario_toml(
        seed=1,
        duration_s=20,
        jobs=(
            {
                "name": "ingest",
                "writers": 1,
                "instant_generation": "async",
                "checkpoint_interval_s": 2,
                "records_per_s": 100,
                "operation": "insert",
            },
        ),
        table={"type": "MERGE_ON_READ", "partitions": 1, "buckets_per_partition": 1},
        time={"max_expected_skew_ms": 700},
        faults={
            "schedule": [
                {
                    "at_s": 0,
                    "kind": "delay_ack",
                    "target": "ingest",
                    "checkpoint": 7,
                    "delay_ms": 2070,
                }
            ]
        },
    )
    outcome = World(parse_scenario(text)).run()
    events = outcome.history.events
    drained = next(e for e in events if e.f == "drained")
    last_commit = [e for e in events if e.f == "commit" and e.type == "ok"][-1]
    assert last_commit.index < drained.index
    assert last_commit.value["records"] == 150  # the records after checkpoint 7's barrier
    assert violated(outcome) == set()
