"""Invariant ``failed_writes_rolled_back`` (docs/protocol.md section 9): under LAZY cleaning, in a
run where a job runs table services, a failed write does not stay pending for good. Its writer is
gone (its heartbeat expired, or was stopped with the instant left behind), and after that the
table-services job completed enough checkpoints for a clean to have started and finished after it
(Hudi's Flink clean operator cleans at each checkpoint, ``CleanFunction#snapshotState``), yet the
instant is still requested or inflight on the timeline at the end. Such an instant holds its data
files and markers forever and stops archiving and cleaning at it (``HoodieTimelineArchiver``,
``CleanPlanner`` keep everything from the earliest pending instant on).

From the raw files and the history only: the pending ``commit``/``deltacommit`` instants are those
of :mod:`invariants.committed`; the heartbeat's last beat is the modification time of
``.hoodie/.heartbeat/<instant>``; the writer's last sign of life is the latest history event that
names the instant (or the time of its newest timeline file). The instant counts as failed from
the later of that sign of life and the heartbeat's expiry (last beat + interval x tolerable misses,
from the ``setup`` event), plus twice the clock-skew bound. It is judged only once the
table-services job completed :data:`CHECKPOINTS_TO_CLEAN` checkpoints after that, one more for
each clean that failed meanwhile (``clean_failed``): a clean may be running when the instant
fails (and does not see it), the next is started only after a checkpoint completes, and it is
waited for at the checkpoint after. Runs under EAGER are not judged (no heartbeats; the next
write rolls failed writes back), nor runs in which no job runs table services (an offline
cleaner's job).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from invariants.committed import load_committed
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

NAME = "failed_writes_rolled_back"
CHECKPOINTS_TO_CLEAN = 4
"""Checkpoints of the table-services job after a write failed by which it must be rolled back."""
MAX_VIOLATIONS = 6
HEARTBEAT_FOLDER = ".hoodie/.heartbeat"
WRITE_ACTIONS = ("commit", "deltacommit")


@dataclass(frozen=True)
class _Setup:
    """What the ``setup`` event says about cleaning (times in simulated ms)."""

    epoch_ms: int
    expiry_ms: int
    skew_ms: int
    services_job: str


@dataclass(frozen=True)
class _Evidence:
    """What the raw files and the history say, read once for every pending instant."""

    beats: dict[str, int]
    files: dict[str, int]
    activity: dict[str, tuple[int, int]]
    checkpoints: list[Event]
    failed_cleans: list[int]
    end_index: int


def check_failed_writes_rolled_back(events: Sequence[Event], table: HudiTable) -> Verdict:
    setup = _setup(events)
    if setup is None:
        return Verdict(NAME)
    committed = load_committed(table)
    pending = [
        i.requested
        for i in committed.instants
        if not i.completed and i.action in WRITE_ACTIONS and not i.archived
    ]
    evidence = _Evidence(
        beats=_last_beats(table, setup.epoch_ms),
        files=_timeline_file_times(table, setup.epoch_ms),
        activity=_last_activity(events),
        checkpoints=_completed_checkpoints(events, setup.services_job),
        failed_cleans=_failed_cleans(events, setup.services_job),
        end_index=events[-1].index,
    )
    found = (_violation(instant, setup, evidence) for instant in pending)
    violations = [v for v in found if v is not None]
    return Verdict(NAME, tuple(violations[:MAX_VIOLATIONS]))


def _violation(instant: str, setup: _Setup, evidence: _Evidence) -> Violation | None:
    """The violation of one pending instant, None while it may still be rolled back."""
    file_ms = evidence.files.get(instant, 0)
    seen_ms, seen_index = evidence.activity.get(instant, (file_ms, None))
    seen_ms = max(seen_ms, file_ms)
    beat = evidence.beats.get(instant)
    failed_ms = max(seen_ms, beat + setup.expiry_ms) if beat is not None else seen_ms
    after_ms = failed_ms + 2 * setup.skew_ms
    done = [c for c in evidence.checkpoints if c.time > after_ms]
    needed = CHECKPOINTS_TO_CLEAN + sum(1 for t in evidence.failed_cleans if t > after_ms)
    if len(done) < needed:
        return None
    how = "its heartbeat expired" if beat is not None else "its heartbeat was stopped"
    return Violation(
        f"write instant {instant} is still pending at the end of the run: its writer was "
        f"last seen at {seen_ms / 1000:.2f} s and {how}, so it failed by "
        f"{failed_ms / 1000:.2f} s; job {setup.services_job} completed {len(done)} "
        "checkpoints after that under LAZY cleaning and nothing rolled it back",
        tuple(i for i in (seen_index, done[needed - 1].index, evidence.end_index) if i is not None),
    )


def _setup(events: Sequence[Event]) -> _Setup | None:
    """The run's cleaning setup, None when the invariant does not apply."""
    setup = next((e.value for e in events if e.process == "world" and e.f == "setup"), None)
    if not isinstance(setup, dict) or "heartbeat" not in setup:
        return None
    if setup.get("protocol", {}).get("failed_writes_cleaning") != "LAZY":
        return None
    services = [job["name"] for job in setup.get("jobs", []) if job.get("table_services")]
    if not services:
        return None
    heartbeat: dict[str, Any] = setup["heartbeat"]
    return _Setup(
        epoch_ms=int(setup.get("epoch_ms", 0)),
        expiry_ms=int(heartbeat["interval_ms"]) * int(heartbeat["tolerable_misses"]),
        skew_ms=int(setup.get("time", {}).get("clock_skew_ms", 0)),
        services_job=str(services[0]),
    )


def _last_beats(table: HudiTable, epoch_ms: int) -> dict[str, int]:
    """Instant time -> its heartbeat file's modification time (simulated ms)."""
    out = {}
    for status in table.storage.list_dir(HEARTBEAT_FOLDER):
        out[status.path.rsplit("/", 1)[-1]] = status.modified_ms - epoch_ms
    return out


def _timeline_file_times(table: HudiTable, epoch_ms: int) -> dict[str, int]:
    """Instant time -> modification time of its newest active timeline file (simulated ms)."""
    out: dict[str, int] = {}
    for status in table.storage.list_dir(table.active_timeline.folder):
        name = status.path.rsplit("/", 1)[-1]
        instant = name.split(".", 1)[0].split("_", 1)[0]
        if instant.isdigit():
            out[instant] = max(out.get(instant, 0), status.modified_ms - epoch_ms)
    return out


def _last_activity(events: Sequence[Event]) -> dict[str, tuple[int, int]]:
    """Instant time -> (time, index) of the latest event whose value names it."""
    out: dict[str, tuple[int, int]] = {}
    for event in events:
        value = event.value
        if not isinstance(value, dict):
            continue
        named = value.get("instant")
        instants = value.get("instants")
        for instant in [named, *(instants if isinstance(instants, list) else [])]:
            if isinstance(instant, str):
                out[instant] = (event.time, event.index)
    return out


def _completed_checkpoints(events: Sequence[Event], job: str) -> list[Event]:
    process = f"{job}/checkpoint"
    return [e for e in events if e.process == process and e.f == "checkpoint" and e.type == "ok"]


def _failed_cleans(events: Sequence[Event], job: str) -> list[int]:
    process = f"{job}/clean_commits"
    return [e.time for e in events if e.process == process and e.f == "clean_failed"]
