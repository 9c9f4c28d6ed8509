"""Every invariant checker, by the public name ``[expect] violations`` and ``result.json`` use.

One line per checker in :data:`CHECKERS`; ``check_all`` runs them all over one recorded run. A
checker takes the history and the table the run left behind (opened with the real rules) and
returns a :class:`~invariants.verdict.Verdict` named after its invariant.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from invariants.commit_order import check_commit_order
from invariants.committed import load_committed
from invariants.completion_after_request import check_completion_after_request
from invariants.exactly_once import check_exactly_once
from invariants.failed_writes import check_failed_writes_rolled_back
from invariants.instant_monotonic import check_instant_monotonic
from invariants.instant_unique import check_instant_unique
from invariants.liveness import check_liveness
from invariants.merge_convergence import check_merge_convergence
from invariants.no_data_loss import check_no_data_loss
from invariants.no_orphan_files import check_no_orphan_files
from invariants.no_uncommitted_read import check_no_uncommitted_read
from invariants.placement import check_placement
from invariants.slicing import check_slicing
from invariants.unique_key import check_unique_key
from invariants.verdict import Verdict
from models.history import Event
from models.view.table import HudiTable

Checker = Callable[[Sequence[Event], HudiTable], Verdict]

CHECKERS: dict[str, Checker] = {
    "instant_unique": check_instant_unique,
    "instant_monotonic": check_instant_monotonic,
    "completion_after_request": check_completion_after_request,
    "commit_order": check_commit_order,
    "exactly_once": check_exactly_once,
    "no_data_loss": check_no_data_loss,
    "slicing": check_slicing,
    "no_uncommitted_read": check_no_uncommitted_read,
    "merge_convergence": check_merge_convergence,
    "liveness": lambda events, _table: check_liveness(events),
    "unique_key": check_unique_key,
    "placement": check_placement,
    "no_orphan_files": check_no_orphan_files,
    "failed_writes_rolled_back": check_failed_writes_rolled_back,
}
"""Invariant name -> checker; the names are those of ``scenarios.schema.INVARIANTS``."""


def check_all(
    events: Sequence[Event],
    table: HudiTable,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Verdict]:
    """The verdict of every checker, by invariant name (in :data:`CHECKERS` order);
    ``progress(name)`` before each checker runs."""
    committed = load_committed(table)  # noqa: F841 - the cache holds it weakly: one reading for all
    verdicts = {}
    for name, checker in CHECKERS.items():
        if progress is not None:
            progress(name)
        verdict = checker(events, table)
        if verdict.name != name:
            raise ValueError(
                f"checker registered as {name!r} returned a verdict named {verdict.name!r}"
            )
        verdicts[name] = verdict
    return verdicts
