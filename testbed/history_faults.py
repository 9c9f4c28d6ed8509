"""The fault schedule a run's history implies: each random fault that fired, read back from its
``nemesis`` event as a ``[[faults.schedule]]`` entry (what minimization starts from, so a
counterexample replays the faults that actually happened, one entry each)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from models.history import Event
from scenarios.schema import Scenario


def faults_from_history(events: Sequence[Event], scenario: Scenario) -> list[dict[str, Any]]:
    """Schedule entries for the random faults that fired in a run (scheduled ones, which carry
    their ``schedule`` index, are already entries of the file).

    ACK faults and failed checkpoints name their checkpoint (``at_s = 0``): a random notification
    fault records it (``sim/network.py``); in a history from before it did, it is the checkpoint
    the job completed just before (the notification is sent in the same step). Crashes of a job
    already restarting changed nothing and are left out; a random storage failure is kept only
    for a one-job scenario (its event names the file, not the process).
    """
    jobs = [job.name for job in scenario.jobs]
    last_checkpoint: dict[str, int] = {}
    entries: list[dict[str, Any]] = []
    for event in events:
        if event.f == "checkpoint" and event.type == "ok" and event.process.endswith("/checkpoint"):
            last_checkpoint[event.process.rsplit("/", 1)[0]] = event.value["checkpoint"]
            continue
        if event.process != "nemesis" or not isinstance(event.value, dict):
            continue
        value = event.value
        if "schedule" in value:
            continue
        at_s = event.time / 1000
        if event.f in ("drop", "duplicate") and value.get("message") == "CheckpointComplete":
            job = str(value.get("channel", "")).rsplit("/", 1)[0]
            checkpoint = value.get("checkpoint", last_checkpoint.get(job))
            if job in jobs and checkpoint is not None:
                kind = "lose_ack" if event.f == "drop" else "duplicate_ack"
                entries.append(
                    {"at_s": 0.0, "kind": kind, "target": job, "checkpoint": int(checkpoint)}
                )
        elif event.f == "checkpoint_failure":
            entries.append(
                {
                    "at_s": 0.0,
                    "kind": "fail_checkpoint",
                    "target": value["job"],
                    "checkpoint": value["checkpoint"],
                }
            )
        elif event.f == "crash" and not value.get("job_restarting"):
            entries.append({"at_s": at_s, "kind": "crash", "target": value["process"]})
        elif event.f == "clock_jump":
            entries.append(
                {
                    "at_s": at_s,
                    "kind": "clock_jump",
                    "target": value["process"],
                    "delta_ms": value["delta_ms"],
                }
            )
        elif event.f == "storage_write_failure" and len(jobs) == 1:
            entries.append({"at_s": at_s, "kind": "storage_failure", "target": jobs[0]})
    return entries
