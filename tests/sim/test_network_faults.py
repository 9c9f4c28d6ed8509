"""Random network faults in a whole run (sim/network.py through sim/job.py): a randomly lost or
duplicated checkpoint-complete notification names its checkpoint in the history, as a scheduled
one does, so a reader (and ``testbed suite``'s minimization) knows which ACK it was."""

from __future__ import annotations

from scenarios.schema import parse_scenario
from sim.world import World
from tests.sim.test_world import JOB, scenario_toml


def test_random_ack_faults_name_the_checkpoint_the_job_just_completed():
    text = scenario_toml(
        seed=4,
        duration_s=20,
        jobs=({**JOB, "name": "ingest"},),
        faults={"ack_loss": 0.4, "ack_duplicate": 0.4},
    )
    events = World(parse_scenario(text)).run().history.events
    completed = {
        e.value["checkpoint"]: e.time
        for e in events
        if e.process == "ingest/checkpoint" and e.f == "checkpoint" and e.type == "ok"
    }
    faults = [e for e in events if e.process == "nemesis" and e.f in ("drop", "duplicate")]
    assert {e.f for e in faults} == {"drop", "duplicate"}
    for fault in faults:
        assert fault.value["message"] == "CheckpointComplete"
        assert "schedule" not in fault.value  # random, not scheduled
        # sent in the step that completed the checkpoint it names
        assert completed[fault.value["checkpoint"]] == fault.time
    notified = {
        e.value["checkpoint"]
        for e in events
        if e.process == "ingest/coordinator" and e.f == "notify"
    }
    lost = {e.value["checkpoint"] for e in faults if e.f == "drop"}
    assert lost and not lost & notified
