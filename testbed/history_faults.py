"""The fault schedule a run's history implies: each random fault that fired, read back from its
``nemesis`` event as a ``[[faults.schedule]]`` entry (what minimization starts from, so a
counterexample replays the faults that actually happened, one entry each)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from faults import kind_of_event
from faults.base import HistoryContext
from models.history import Event
from scenarios.faults import is_fault_target
from scenarios.schema import Scenario


def faults_from_history(events: Sequence[Event], scenario: Scenario) -> list[dict[str, Any]]:
    """Schedule entries for the random faults that fired in a run (scheduled ones, which carry
    their ``schedule`` index, are already entries of the file), each read back by the kind whose
    history event it is (``from_event`` in ``faults/``).

    ACK faults and failed checkpoints name their checkpoint (``at_s = 0``); a notification fault
    from a history whose events did not name it takes the checkpoint the job completed just
    before (the notification is sent in the same step). A fault that changed nothing (a crash of
    a job already restarting) or cannot be replayed as an entry is left out, as is one whose
    target no entry of the scenario may name (a random fault on a write task that exists only
    after a rescale up).
    """
    last_checkpoint: dict[str, int] = {}
    context = HistoryContext(tuple(job.name for job in scenario.jobs), last_checkpoint)
    entries: list[dict[str, Any]] = []
    for event in events:
        if event.f == "checkpoint" and event.type == "ok" and event.process.endswith("/checkpoint"):
            last_checkpoint[event.process.rsplit("/", 1)[0]] = event.value["checkpoint"]
            continue
        if event.process != "nemesis" or not isinstance(event.value, dict):
            continue
        kind = kind_of_event(event.f)
        if kind is None or "schedule" in event.value:
            continue
        entry = kind.from_event(event.value, event.time / 1000, context)
        if entry is not None and is_fault_target(scenario, kind.name, entry["target"]):
            entries.append(entry)
    return entries
