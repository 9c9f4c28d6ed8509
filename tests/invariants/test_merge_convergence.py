"""Tests for invariants/merge_convergence.py and the merge specs of invariants/merging.py.

Hand-built tables: a compaction that kept the later-committed but older-event-time version of a
key (the reader then disagrees with every merge of the committed records), and two versions of a
key with the same ordering value (the result then depends on arrival order). Commit-time ordering
has nothing to converge. Whole runs: two NBCC jobs with compaction and faults converge; the 0.x
``base_instant`` slicing does not.
"""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from invariants.committed import load_committed
from invariants.merge_convergence import check_merge_convergence
from invariants.merging import (
    CommitTimeMerge,
    EventTimeMerge,
    compare_rows,
    data_columns,
    identified,
)
from models.format.records import SCHEMA
from tests.invariants.test_committed import SimTable
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml

KEY = "k00000007"


def version(ts: int, offset: int, value: int, key: str = KEY) -> dict:
    return {"key": key, "part": "p1", "ts": ts, "offset": offset, "job": 0, "value": value}


def two_versions(merge_mode: str | None = None, *, first_ts: int = 2000, second_ts: int = 1000):
    """Key KEY written by D1 (ts ``first_ts``) and later by D2 (ts ``second_ts``: by default an
    older event that arrived late), plus a bystander key; then compacted."""
    t = SimTable(merge_mode=merge_mode)
    rows = [version(first_ts, 0, 1), version(500, 2, 3, key="k00000009")]
    d1 = t.write(pa.Table.from_pylist(rows, schema=SCHEMA))
    d2 = t.write(pa.Table.from_pylist([version(second_ts, 1, 2)], schema=SCHEMA))
    compaction = t.compact()
    return t, d1, d2, compaction


def keep_in_base(t: SimTable, compaction, d2) -> None:
    """Damage the compaction's base file: KEY holds D2's version (commit time and values)."""
    committed = load_committed(t.table)
    (base,) = committed.get(compaction.requested_time).files
    rows = pq.read_table(io.BytesIO(t.storage.read(base.path))).to_pylist()
    for row in rows:
        if row["_hoodie_record_key"] == KEY:
            row.update(version(1000, 1, 2))
            row["_hoodie_commit_time"] = d2.requested_time
    schema = pq.read_schema(io.BytesIO(t.storage.read(base.path)))
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), sink)
    t.storage.write(base.path, sink.getvalue())


def whys(verdict) -> list[str]:
    return [v.why for v in verdict.violations]


def test_event_time_merges_converge_and_match_the_reader():
    t, *_ = two_versions()
    verdict = check_merge_convergence(t.events, t.table)
    assert verdict.name == "merge_convergence"
    assert verdict.ok, whys(verdict)


def test_a_compaction_that_kept_the_later_committed_older_version_is_caught():
    t, d1, d2, compaction = two_versions()
    keep_in_base(t, compaction, d2)
    (violation,) = check_merge_convergence(t.events, t.table).violations
    assert violation.why == (
        "the reader's snapshot is not the EVENT_TIME_ORDERING merge of all committed records: "
        f"1 records holding another version (e.g. part=p1/{KEY}); part=p1/{KEY}: the reader has "
        f"the version of instant {d2.requested_time} ts=1000, from a base file compaction "
        f"{compaction.requested_time} wrote, the merge picks instant {d1.requested_time} ts=2000"
    )
    assert violation.events == (
        t.event_of(d1),
        t.event_of(d2),
        t.event_of(compaction, "compaction"),
    )


def test_equal_ordering_values_make_the_result_depend_on_arrival_order():
    t, _, d2, _ = two_versions(first_ts=1500, second_ts=1500)
    verdict = check_merge_convergence(t.events, t.table)
    reverse = next(v for v in verdict.violations if "in reverse commit order" in v.why)
    assert reverse.why == (
        "merging the committed records in reverse commit order gives another table than merging "
        f"them in commit order (EVENT_TIME_ORDERING): 1 records holding another version (e.g. "
        f"part=p1/{KEY})"
    )
    assert reverse.events == (t.event_of(d2),)  # the commit whose version wins in commit order


def test_commit_time_ordering_has_nothing_to_converge():
    t, _, d2, compaction = two_versions("COMMIT_TIME_ORDERING")
    keep_in_base(t, compaction, d2)  # D2's version is the right one there anyway
    assert check_merge_convergence(t.events, t.table).ok


def test_merge_specs_pick_by_ordering_or_by_arrival():
    t, *_ = two_versions()
    rows = load_committed(t.table).rows
    ids = identified(rows, by_file_group=False)
    everything = np.arange(ids.table.num_rows)
    by_event = EventTimeMerge("ts").merge(ids, everything, everything)
    by_commit = CommitTimeMerge().merge(ids, everything, everything)
    pick = {r["key"]: r["ts"] for r in by_event.to_pylist()}
    assert pick == {KEY: 2000, "k00000009": 500}
    assert {r["key"]: r["ts"] for r in by_commit.to_pylist()} == {KEY: 1000, "k00000009": 500}
    # reversed arrival changes commit-time ordering only (D1 then arrives last and wins)
    reverse = everything[::-1].copy()
    assert EventTimeMerge("ts").merge(ids, everything, reverse).equals(by_event)
    assert CommitTimeMerge().merge(ids, everything, reverse).equals(by_event)
    by_arrival = CommitTimeMerge().winners(ids, everything, everything)
    winners = EventTimeMerge("ts").winners(ids, everything, everything)
    difference = compare_rows(ids, np.sort(winners), np.sort(by_arrival), data_columns(rows))
    assert difference.different == (f"part=p1\x1f{KEY}",) and not difference.missing


# --- whole runs ------------------------------------------------------------------------------


def test_two_nbcc_jobs_with_compaction_and_faults_converge():
    nbcc = {**JOB, "concurrency": "nbcc", "key_space": 2000}
    jobs = (
        {**nbcc, "name": "a", "table_services": True, "compaction_every_commits": 2},
        {**nbcc, "name": "b", "checkpoint_interval_s": 3},
    )
    outcome = cached_run(scenario_toml(seed=4, duration_s=20, jobs=jobs, faults=ALL_FAULTS))
    verdict = check_merge_convergence(outcome.history.events, outcome.table)
    assert verdict.ok, whys(verdict)


@pytest.mark.parametrize(
    "rule", ["base_instant", pytest.param("completion_time", marks=pytest.mark.slow)]
)
def test_base_instant_slicing_diverges_from_the_merge(rule):
    common = {"writers": 2, "records_per_s": 500, "buffer_records": 500, "key_space": 50_000}
    jobs = (
        {
            **common,
            "name": "ingest_a",
            "checkpoint_interval_s": 3,
            "table_services": True,
            "compaction_every_commits": 1,
        },
        {**common, "name": "ingest_b", "table_services": False},
    )
    outcome = cached_run(
        scenario_toml(seed=1, duration_s=20, jobs=jobs, protocol={"file_slicing": rule})
    )
    verdict = check_merge_convergence(outcome.history.events, outcome.table)
    if rule == "completion_time":
        assert verdict.ok, whys(verdict)
    else:
        (violation,) = verdict.violations
        assert violation.why.startswith(
            "the reader's snapshot is not the EVENT_TIME_ORDERING merge of all committed records:"
        )
        assert "records holding another version" in violation.why
        assert "records missing" not in violation.why  # no_data_loss reports the lost ones
