"""Tests for invariants/no_uncommitted_read.py.

Hand-damaged tables: a completed instant with a data file its commit metadata does not list (a
retried task's leftover holding the same records as a listed file, or records nobody committed),
which a reader taking every file named with a completed instant shows anyway. Whole runs: the
real protocol under faults, and the mini-batch re-commit of tests/sim/test_job.py, read nothing
uncommitted.
"""

from __future__ import annotations

import pytest

from invariants.no_uncommitted_read import check_no_uncommitted_read
from models.instant import Instant, State
from tests.invariants.test_committed import SimTable
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


def leftover(t: SimTable, done: Instant, rows, task: int = 1) -> list[str]:
    """Files written under the completed instant ``done`` after its commit (a task attempt the
    commit did not wait for); returns their paths."""
    late = Instant(done.requested_time, State.INFLIGHT, done.action)
    return [s.path for s in t.files(late, rows, task=task)]


@pytest.mark.parametrize("operation", ["insert", "upsert"])
def test_committed_files_only_pass(operation):
    t = SimTable(operation=operation, key_space=100_000)
    t.checkpoint(40)
    t.write(t.records(0, 20))
    t.write(t.records(20, 40))
    t.write(t.records(40, 50), commit=False)  # pending: its files exist, the reader skips them
    verdict = check_no_uncommitted_read(t.events, t.table)
    assert verdict.name == "no_uncommitted_read"
    assert verdict.ok, whys(verdict)


def test_a_leftover_file_with_records_nobody_committed_is_visible():
    t = SimTable(operation="insert")
    t.checkpoint(30)
    done = t.write(t.records(0, 30))
    paths = leftover(t, done, t.records(30, 34))  # beyond the checkpoint, in no commit
    (violation,) = check_no_uncommitted_read(t.events, t.table).violations
    assert violation.why == (
        f"at the end the reader returns 4 uncommitted records: 4 records of instant "
        f"{done.requested_time} (deltacommit {done.requested_time} (completed "
        f"{done.completion_time})) beyond what the files its commit metadata lists hold: data "
        f"nobody committed (from {', '.join(sorted(paths))})"
    )
    assert violation.events == (t.event_of(done),)


def test_a_retried_tasks_duplicate_file_shows_its_records_twice():
    """The same records as a listed file, in another (unlisted) file group: each row equals a
    committed one, but the reader returns it twice."""
    t = SimTable(operation="insert")
    t.checkpoint(30)
    done = t.write(t.records(0, 30))
    paths = leftover(t, done, t.records(0, 30))
    (violation,) = check_no_uncommitted_read(t.events, t.table).violations
    assert violation.why.startswith(
        f"at the end the reader returns 30 uncommitted records: 30 records of instant "
        f"{done.requested_time}"
    )
    assert violation.why.endswith(f"(from {', '.join(sorted(paths))})")


def test_files_of_a_later_instant_are_not_read_before_it_completed():
    """Time travel: as of the first commit, the second commit's records are not visible; if the
    reader showed them, the bound would be named."""
    t = SimTable(operation="insert")
    t.checkpoint(40)
    first = t.write(t.records(0, 20))
    t.write(t.records(20, 40))
    assert check_no_uncommitted_read(t.events, t.table).ok
    paths = leftover(t, first, t.records(40, 42))
    reasons = whys(check_no_uncommitted_read(t.events, t.table))
    assert [why.split(" the reader")[0] for why in reasons] == [
        f"as of {first.completion_time} (spread)",
        "at the end",
    ]
    assert all(paths[0] in why for why in reasons)


# --- whole runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [7, 24])
def test_real_protocol_under_faults_reads_nothing_uncommitted(seed):
    outcome = cached_run(scenario_toml(seed=seed, duration_s=40, faults=ALL_FAULTS))
    verdict = check_no_uncommitted_read(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


def test_minibatch_recommit_leaves_nothing_uncommitted_visible():
    """The run of tests/sim/test_job.py test_minibatch_recommit_makes_no_unlisted_file_visible:
    a re-commit after a restore must not make the files flushed after the restored checkpoint
    visible (finalizing the commit against its markers deletes them)."""
    job = {**JOB, "instant_generation": "minibatch", "buffer_records": 300}
    outcome = cached_run(scenario_toml(seed=3, jobs=(job,), faults=ALL_FAULTS))
    assert [e for e in outcome.history.events if e.f == "commit" and e.value.get("recommit")]
    verdict = check_no_uncommitted_read(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)
