"""Invariant ``unique_key``: no record key is live in two file groups of a partition.

An index (the bucket index's hashing, the Flink state index's key -> location map) exists so that
every version of a key lands in the one file group that holds it; a key live in two file groups is
read twice, and which version wins depends on which file group a reader or a compaction sees
first. Hudi's Flink writers break it in known ways: a bucket given a second file id while its
first is pending (apache/hudi#19907), a state index restored without the table's latest
locations, an insert placed in a file group whose instant is later rolled back.

Read from the raw files (:mod:`invariants.committed`), at every time-travel bound the checkers read
(:mod:`invariants.time_travel`) and at the end: within each file group, a key is live when its
winning version among the committed own rows (the table's merge, :mod:`invariants.merging`) is
not a delete; a key live in two file groups of one partition is a violation, naming the key, the
file groups and the commit that first put it in each. When a job's keys change partition (its
setup's source has a ``partition_period_ms``: the global Flink state index, which deletes a
moved key's old copy), a key live in two file groups anywhere in the table is one. Rows of insert
instants (Flink's append mode, where a key written twice is two records by design) are not
judged.

A violation is reported at the first bound it shows and at the end (duplicates persist), with the
number of bounds in between that show duplicates too.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow.compute as pc

from invariants.committed import CommittedTable, load_committed
from invariants.committed_rows import KEY, PARTITION, CommittedRows
from invariants.instant_events import events_of, instant_events
from invariants.ledger import column_groups_of
from invariants.merging import Identified, MergeSpec, identified, merge_spec_for
from invariants.time_travel import travel_points
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

NAME = "unique_key"
EXAMPLES = 3
INSERTS = ("INSERT", "BULK_INSERT")


def check_unique_key(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    rows = committed.rows
    judged = _upserted(rows)
    if not judged.any():
        return Verdict(NAME)
    spec = merge_spec_for(committed.config, column_groups_of(events))
    by_instant = instant_events(events)
    scope = _key_codes(rows) if _keys_move(events) else None
    found: list[tuple[str | None, int, list[str], set[str]]] = []
    for bound in _bounds(committed):
        count, keys, instants = _duplicates_at(rows, spec, judged, bound, scope)
        if count:
            found.append((bound, count, keys, instants))
    if not found:
        return Verdict(NAME)
    reported = [found[0]] if len(found) == 1 else [found[0], found[-1]]
    violations = [
        _violation(*entry, by_instant, table_wide=scope is not None) for entry in reported
    ]
    if len(found) > 2:
        bounds = ", ".join(str(entry[0]) for entry in found[1:-1][:EXAMPLES])
        violations.insert(
            1,
            Violation(
                f"{len(found) - 2} more time-travel bounds show keys live in two file groups "
                f"({bounds}{', ...' if len(found) > 2 + EXAMPLES else ''})"
            ),
        )
    return Verdict(NAME, tuple(violations))


def _keys_move(events: Sequence[Event]) -> bool:
    """Whether a job's keys change partition (the setup's ``partition_period_ms``)."""
    setup = next((e for e in events if e.f == "setup" and e.process == "world"), None)
    jobs = setup.value.get("jobs", []) if setup is not None else []
    return any(job.get("source", {}).get("partition_period_ms") for job in jobs)


def _key_codes(rows: CommittedRows) -> np.ndarray:
    """A code per row for its record key alone (the table-wide identity of a global index)."""
    codes = pc.dictionary_encode(rows.table.column(KEY)).combine_chunks().indices
    return codes.to_numpy(zero_copy_only=False)


def _upserted(rows: CommittedRows) -> np.ndarray:
    """Which rows an upsert (not an append-mode insert) committed."""
    per_file = np.array([i.operation not in INSERTS for i in rows.file_instants], bool)
    return per_file[rows.file_index] if len(per_file) else np.zeros(0, bool)


def _bounds(committed: CommittedTable) -> list[str | None]:
    """The time-travel bounds in time order, then the end (None)."""
    points = sorted({p.bound for p in travel_points(committed)})
    return [*points, None]


def _duplicates_at(
    rows: CommittedRows,
    spec: MergeSpec,
    judged: np.ndarray,
    bound: str | None,
    scope: np.ndarray | None,
) -> tuple[int, list[str], set[str]]:
    """How many keys are live in two file groups of a partition (of the table, given the
    table-wide key codes ``scope``) as of ``bound``, a few of them described with their file
    groups and first commits, and those commits."""
    per_group = identified(rows, by_file_group=True)
    key_codes = identified(rows, by_file_group=False).codes if scope is None else scope
    index = np.flatnonzero(judged if bound is None else judged & (rows.completion <= int(bound)))
    winners = spec.winners(per_group, index, index)
    live = np.sort(winners[~per_group.deleted[winners]])
    # one row per live (file group, key): a partial-update merge picks a winner per column group
    _, first = np.unique(per_group.codes[live], return_index=True)
    codes, counts = np.unique(key_codes[live[first]], return_counts=True)
    doubled = codes[counts > 1]
    if not len(doubled):
        return 0, [], set()
    described = []
    instants: set[str] = set()
    for code in doubled[:EXAMPLES].tolist():
        text, first = _describe(rows, per_group, key_codes, index, live, code)
        described.append(text)
        instants |= first
    return len(doubled), described, instants


def _describe(
    rows: CommittedRows,
    per_group: Identified,
    key_codes: np.ndarray,
    index: np.ndarray,
    live: np.ndarray,
    code: int,
) -> tuple[str, set[str]]:
    """``key of partition in fg1 (first by t1) and fg2 (first by t2)`` for one key (the file
    groups it is live in, each named with its partition), and those instants."""
    groups = set(per_group.codes[live[key_codes[live] == code]].tolist())
    mine = index[key_codes[index] == code]
    first_by_group: dict[int, int] = {}
    for row in mine.tolist():  # merge order: the first row of a group is its first commit
        if int(per_group.codes[row]) in groups:
            first_by_group.setdefault(int(per_group.codes[row]), row)
    key = rows.table.column(KEY)[int(mine[0])].as_py()
    first = min(first_by_group.values(), default=int(mine[0]))
    partition = rows.table.column(PARTITION)[first].as_py()
    parts = []
    instants = set()
    for row in first_by_group.values():
        f = rows.files[int(rows.file_index[row])]
        instant = rows.file_instants[int(rows.file_index[row])].requested
        where = "" if f.partition == partition else f"{f.partition}/"
        parts.append(f"{where}{f.file_id} (first by {instant})")
        instants.add(instant)
    return f"{key} of {partition} in {' and '.join(parts)}", instants


def _violation(
    bound: str | None,
    count: int,
    keys: list[str],
    instants: set[str],
    by_instant: dict[str, tuple[int, ...]],
    *,
    table_wide: bool = False,
) -> Violation:
    at = "at the end" if bound is None else f"as of {bound}"
    where = "the table" if table_wide else "a partition"
    return Violation(
        f"{at} {count} keys are live in two file groups of {where}, e.g. {'; '.join(keys)}",
        events_of(by_instant, *sorted(instants)),
    )


__all__ = ["NAME", "check_unique_key"]
