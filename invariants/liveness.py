"""Invariant ``liveness`` (docs/protocol.md section 9, invariant 7): after the faults stop, everything
the sources emitted is committed within the drain timeout.

The simulator ends every run with a drain phase (no faults, sources stopped, checkpoints going on)
and records in its ``end`` event whether every job drained; a job still holding uncommitted data
at the deadline is stuck (a livelock of failovers, a lost notification nothing recovers from, a
writer waiting forever for an instant).
"""

from __future__ import annotations

from collections.abc import Sequence

from invariants.verdict import Verdict, Violation
from models.history import Event

NAME = "liveness"


def check_liveness(events: Sequence[Event]) -> Verdict:
    end = next((e for e in reversed(events) if e.process == "world" and e.f == "end"), None)
    if end is None:
        return Verdict(NAME, (Violation("the history has no end event: the run did not finish"),))
    if end.value.get("drained"):
        return Verdict(NAME)
    drain = next((e for e in events if e.process == "world" and e.f == "drain"), None)
    drained = {e.process for e in events if e.f == "drained" and e.type == "info"}
    stuck = [name for name in sorted(end.value.get("source_offsets", {})) if name not in drained]
    return Verdict(
        NAME,
        (
            Violation(
                f"jobs {', '.join(stuck)} did not commit everything they emitted within the "
                "drain timeout after the faults stopped",
                tuple(i for i in (drain.index if drain else None, end.index) if i is not None),
            ),
        ),
    )
