"""Tests for invariants/no_uncommitted_read.py.

Hand-damaged tables: a completed instant with a data file its commit metadata does not list (a
retried task's leftover holding the same records as a listed file, or records nobody committed),
which a reader taking every file named with a completed instant shows anyway. Whole runs: the
real protocol under faults, and the mini-batch re-commit of tests/sim/test_job.py, read nothing
uncommitted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from invariants import no_uncommitted_read as nur
from invariants.committed_rows import (
    COMMIT_TIME,
    DELETED,
    FILE,
    KEY,
    PARTITION,
    PARTITION_PATH,
    RECORD_KEY,
    TIME,
    CommittedRows,
)
from invariants.no_uncommitted_read import check_no_uncommitted_read
from models.timeline.instant import Instant, State
from models.view.partial_update import ColumnGroup
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


# --- matching returned rows with committed ones ----------------------------------------------


def fingerprint_foreign(
    snapshot: pa.Table, rows: CommittedRows, part: nur._Part, upto: np.ndarray | None
) -> np.ndarray:
    """The reference: each returned row's whole fingerprint (text) looked up among those of the
    committed rows, counting copies. ``_read_codes`` must give the same answer without hashing
    every fingerprint at every bound."""
    read = nur._read_fingerprints(snapshot, part)
    allowed = nur._committed_fingerprints(rows, part)
    if upto is not None:
        allowed = allowed.filter(pa.array(upto))
    unchecked = pc.is_null(read).to_numpy(zero_copy_only=False)
    counts: dict[str, int] = {}
    for value in allowed.to_pylist():
        if value is not None:
            counts[value] = counts.get(value, 0) + 1
    seen: dict[str, int] = {}
    out = np.zeros(len(read), bool)
    for i, value in enumerate(read.to_pylist()):
        if value is None:
            continue
        seen[value] = seen.get(value, 0) + 1
        out[i] = seen[value] > counts.get(value, 0)
    return out & ~unchecked


GROUP = ColumnGroup("g_ts", ("g",))
SMALL_TEXT = st.sampled_from(["a", "b", "ab", ""])


@st.composite
def committed_and_read(draw):
    """Committed rows with repeats, and a snapshot of some of them (copies, changed values,
    nulls, rows nobody committed), over small alphabets so that near misses are common."""
    row = st.fixed_dictionaries(
        {
            "time": st.sampled_from(["20260101000000001", "20260101000000002", ""]),
            "partition": st.sampled_from(["p0", "p1"]),
            "key": st.one_of(st.none(), SMALL_TEXT),
            "v": st.one_of(st.none(), st.integers(0, 2)),
            "s": st.one_of(st.none(), SMALL_TEXT),
            "f": st.one_of(st.none(), st.sampled_from([0.5, 1.0, -0.0, 0.0])),
            "g_ts": st.one_of(st.none(), st.integers(0, 1)),
            "g": st.one_of(st.none(), SMALL_TEXT),
        }
    )
    committed = draw(st.lists(row, max_size=12))
    read = []
    for _ in range(draw(st.integers(0, 12))):
        if committed and draw(st.booleans()):
            picked = dict(draw(st.sampled_from(committed)))
            if draw(st.booleans()):
                field = draw(st.sampled_from(sorted(picked)))
                picked[field] = draw(row)[field]
            read.append(picked)
        else:
            read.append(draw(row))
    upto = draw(st.one_of(st.none(), st.lists(st.booleans(), min_size=len(committed))))
    return committed, read, None if upto is None else np.array(upto[: len(committed)], bool)


def committed_rows(records: list[dict]) -> CommittedRows:
    def column(name, kind):
        return pa.array([r[name] for r in records], kind)

    table = pa.table(
        {
            KEY: column("key", pa.string()),
            PARTITION: column("partition", pa.string()),
            FILE: pa.array([0] * len(records), pa.int32()),
            TIME: column("time", pa.string()),
            DELETED: pa.array([False] * len(records), pa.bool_()),
            "v": column("v", pa.int64()),
            "s": column("s", pa.string()),
            "f": column("f", pa.float64()),
            "g_ts": column("g_ts", pa.int64()),
            "g": column("g", pa.string()),
        }
    )
    return CommittedRows(table, (), ())


def snapshot_of(records: list[dict]) -> pa.Table:
    def column(name, kind):
        return pa.array([r[name] for r in records], kind)

    return pa.table(
        {
            COMMIT_TIME: column("time", pa.string()),
            PARTITION_PATH: column("partition", pa.string()),
            RECORD_KEY: column("key", pa.string()),
            "v": column("v", pa.int32()),  # another integer type: compared as text
            "s": column("s", pa.string()),
            "f": column("f", pa.float64()),
            "g_ts": column("g_ts", pa.int64()),
            "g": column("g", pa.string()),
        }
    )


@settings(max_examples=150, deadline=None)
@given(case=committed_and_read())
def test_matching_by_candidates_equals_matching_whole_fingerprints(case):
    committed, read, upto = case
    rows = committed_rows(committed)
    snapshot = snapshot_of(read)
    for part in nur._parts(["v", "s", "f", "g_ts", "g", "missing"], (GROUP,)):
        codes, unchecked = nur._read_codes(snapshot, rows, part, upto)
        got = nur._beyond_committed(codes, unchecked, nur._committed_codes(rows, part), upto)
        assert got.tolist() == fingerprint_foreign(snapshot, rows, part, upto).tolist(), part
