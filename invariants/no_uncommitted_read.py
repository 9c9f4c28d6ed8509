"""Invariant ``no_uncommitted_read`` (docs/protocol.md section 9, invariant 5: no uncommitted data is
visible): every record the reader returns was committed by an instant completed at the read's
bound, in a file that instant's commit metadata lists.

What counts as committed comes from :mod:`invariants.committed`, not from the reader: the own rows
of the files each completed write instant lists. A returned record must equal one of those rows of
an instant completed by the bound (same commit time, partition, key and data values; a
compaction's copy keeps the commit time of the write it copies, so compacted records pass). The
rest is reported in two kinds:

* rows whose commit time is no instant completed at the bound (a pending or rolled-back write,
  a time that was never an instant);
* rows of a completed instant that none of its listed files holds, or more copies of a row than
  its listed files hold: a data file written under the instant but left out of its commit (a
  retried task's leftover, possibly the same records as a listed file; a flush after the
  restored checkpoint that a re-commit did not list), which a reader taking "every file named
  with a completed instant" shows anyway.

Where they came from: data files named with the offending instant are read and searched for the
returned rows; the violation names those files and the history events of the instant (its commit,
the flushes that wrote the files, a rollback). Checked on the final snapshot and at the time-travel
bounds of :func:`invariants.time_travel.travel_points`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed import CommittedTable, load_committed
from invariants.committed_rows import (
    COMMIT_TIME,
    KEY,
    PARTITION,
    PARTITION_PATH,
    RECORD_KEY,
    TIME,
    CommittedRows,
)
from invariants.instant_events import events_of, instant_events
from invariants.ledger import column_groups_of
from invariants.merging import data_columns
from invariants.raw_files import RawInstant
from invariants.sut_view import system_view
from invariants.time_travel import travel_points
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.partial_update import ColumnGroup
from models.view.table import HudiTable

NAME = "no_uncommitted_read"
EXAMPLES = 3
MAX_VIOLATIONS = 6
_SEP = "\x1f"
_NULL = "\x00"


def check_no_uncommitted_read(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    view = system_view(events, table)
    rows = committed.rows
    parts = _parts(data_columns(rows), column_groups_of(events))
    history = _History(events)
    violations = []
    points: list[tuple[str | None, str]] = [
        (p.bound, p.why)
        for p in travel_points(committed)
        if p.bound != committed.latest_completion  # the same read as the end, below
    ]
    points.append((None, "the final snapshot"))
    for bound, why in points:
        snapshot = committed.sut_read(view, bound)
        if snapshot.num_rows == 0 or RECORD_KEY not in snapshot.column_names:
            continue
        foreign = np.zeros(snapshot.num_rows, bool)
        upto = None if bound is None else rows.completion <= int(bound)
        for part in parts:
            codes, unchecked = _read_codes(snapshot, rows, part, upto)
            foreign |= _beyond_committed(codes, unchecked, _committed_codes(rows, part), upto)
        if not foreign.any():
            continue
        mask = pa.array(foreign)
        bad = snapshot.filter(mask)
        prints = _read_fingerprints(snapshot, parts[0]).filter(mask)
        violations.append(_explain(committed, history, bound, why, bad, prints))
    if len(violations) > MAX_VIOLATIONS + 1:  # the first bounds, a count of the others, the last
        rest = violations[MAX_VIOLATIONS:-1]
        summary = Violation(
            f"the reader also returns uncommitted records at {len(rest)} more time-travel bounds",
            tuple(sorted({i for v in rest for i in v.events})),
        )
        violations = [*violations[:MAX_VIOLATIONS], summary, violations[-1]]
    return Verdict(NAME, tuple(violations))


@dataclass(frozen=True)
class _Part:
    """Columns of a returned row that must all come from one committed row.

    A whole record is one part (with its commit time). Multi-stream partial updates (docs/protocol.md section 5.3,
    :mod:`models.view.partial_update`) build a row from several committed rows, one per column group:
    the record-level columns and the commit time come from one version, each group's columns
    from the version that won that group. So each group is its own part, matched against
    committed rows by partition, key and the group's fields only; a group the row has no value
    for (all null: no stream wrote it yet) is not checked. ``group`` is None for the
    record-level part."""

    columns: tuple[str, ...]
    group: ColumnGroup | None = None


def _parts(columns: list[str], groups: Sequence[ColumnGroup]) -> list[_Part]:
    if not groups:
        return [_Part(tuple(columns))]
    owned = {name for group in groups for name in group.fields}
    record_level = _Part(tuple(c for c in columns if c not in owned))
    return [record_level, *(_Part(group.fields, group) for group in groups)]


def _read_fingerprints(snapshot: pa.Table, part: _Part) -> pa.ChunkedArray:
    n = snapshot.num_rows
    values = [snapshot.column(c) if c in snapshot.column_names else None for c in part.columns]
    time = snapshot.column(COMMIT_TIME) if part.group is None else pa.nulls(n, pa.string())
    prints = _fingerprint(
        time, snapshot.column(PARTITION_PATH), snapshot.column(RECORD_KEY), values
    )
    if part.group is None:
        return prints
    present = [v for v in values if v is not None]
    if not present:  # no file read has the group: nothing to check
        return pa.chunked_array([pa.nulls(n, pa.string())])
    written = functools.reduce(pc.or_, [pc.is_valid(v) for v in present])
    return pc.if_else(written, prints, pa.scalar(None, pa.string()))


def _beyond_committed(
    read: np.ndarray, unchecked: np.ndarray, committed: _Codes, upto: np.ndarray | None
) -> np.ndarray:
    """Which returned rows are not backed by a committed row (of those ``upto`` marks, all if
    None): rows no committed row equals, and the copies of a row beyond how often it was
    committed (a leftover file of a completed instant holding the same records as a listed one
    shows its rows twice). ``read[i]`` is the code of the committed fingerprint returned row
    ``i`` equals (-1: none, :func:`_read_codes`); ``unchecked`` rows (a group nobody wrote yet)
    are never reported."""
    codes = committed.codes if upto is None else committed.codes[upto]
    counts = np.bincount(codes[codes >= 0], minlength=len(committed.values) + 1)
    counts[-1] = 0  # the slot of the rows no committed row equals
    at = np.where(read >= 0, read, len(committed.values))
    # rank of each returned row among the returned rows with the same value: 0, 1, 2... (rows
    # no committed row equals share one slot, but they are beyond at any rank)
    order = np.argsort(at, kind="stable")
    starts = np.r_[True, at[order][1:] != at[order][:-1]]
    group_start = np.maximum.accumulate(np.where(starts, np.arange(len(order)), 0))
    rank = np.empty(len(order), np.int64)
    rank[order] = np.arange(len(order)) - group_start
    return (rank >= counts[at]) & ~unchecked


@dataclass(frozen=True)
class _Codes:
    """The committed fingerprints of a part, encoded once per run.

    ``values`` are the distinct fingerprints and ``codes[r]`` the position of committed row
    ``r``'s there (-1 where the row cannot back the part). To find the code of a returned row
    without hashing its whole fingerprint, committed rows are also sorted by ``slots``: the code
    of their identity (partition and key, in ``idents``) times ``len(times) + 1`` plus the code
    of their commit time (in ``times``; 0 for a column group, which has no commit time);
    ``slot_rows`` are the committed rows in that order."""

    values: pa.Array
    codes: np.ndarray
    idents: pa.Array
    ident_codes: np.ndarray
    """Per committed row, the position of its identity in ``idents`` (-1: none)."""
    times: pa.Array | None
    slots: np.ndarray
    slot_rows: np.ndarray


def _read_codes(
    snapshot: pa.Table, rows: CommittedRows, part: _Part, upto: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """For each returned row, the code (:class:`_Codes`) of the committed fingerprint its
    fingerprint equals (-1: none, or only rows outside ``upto`` equal it: :func:`_beyond_committed`
    reports it either way), and whether the row is unchecked (its fingerprint is null: no
    partition or key, or a group it has no value for).

    The same answer as looking the row's :func:`_read_fingerprints` up among the committed ones,
    found more cheaply: the committed rows of the same partition, key and commit time (one, as a
    rule) are the only candidates, and each candidate is compared column by column as the
    fingerprint compares them (values as text, a null equal only to a null)."""
    committed = _committed_codes(rows, part)
    n = snapshot.num_rows
    partition, key = snapshot.column(PARTITION_PATH), snapshot.column(RECORD_KEY)
    unchecked = pc.or_(pc.is_null(partition), pc.is_null(key)).to_numpy(zero_copy_only=False)
    values = [snapshot.column(c) if c in snapshot.column_names else None for c in part.columns]
    if part.group is not None:
        present = [v for v in values if v is not None]
        if not present:  # no file read has the group: nothing to check
            return np.full(n, -1, np.int64), np.ones(n, bool)
        written = functools.reduce(pc.or_, [pc.is_valid(v) for v in present])
        unchecked |= ~written.to_numpy(zero_copy_only=False)
    ident = pc.binary_join_element_wise(partition.cast(pa.string()), key.cast(pa.string()), _SEP)
    idents = committed.idents
    if upto is not None:
        # the identities of the rows ``upto`` marks are among the first ones encoded (rows are in
        # commit order): looking up among those alone is cheaper and misses nothing they back
        within = committed.ident_codes[upto]
        idents = idents.slice(0, int(within.max()) + 1 if len(within) else 0)
    slot = _position(ident, idents)
    if committed.times is not None:
        time = _position(snapshot.column(COMMIT_TIME).cast(pa.string()), committed.times)
        width = len(committed.times) + 1
        slot = np.where((slot >= 0) & (time >= 0), slot * width + time, -1)
    # looked up in ascending order, which keeps the binary searches in cache
    order = np.argsort(slot, kind="stable")
    low, high = np.empty_like(slot), np.empty_like(slot)
    low[order] = np.searchsorted(committed.slots, slot[order], side="left")
    high[order] = np.searchsorted(committed.slots, slot[order], side="right")
    high[slot < 0] = low[slot < 0]
    out = np.full(n, -1, np.int64)
    table = rows.table
    k = 0
    while True:
        pending = np.flatnonzero((out < 0) & (high - low > k) & ~unchecked)
        if not len(pending):
            break
        candidates = committed.slot_rows[low[pending] + k]
        same = np.ones(len(pending), bool)
        at_read, at_committed = pa.array(pending), pa.array(candidates)
        for name, value in zip(part.columns, values, strict=True):
            theirs = table.column(name).take(at_committed) if name in table.column_names else None
            mine = value.take(at_read) if value is not None else None
            same &= _same_text(mine, theirs, len(pending))
        out[pending[same]] = committed.codes[candidates[same]]
        k += 1
    return out, unchecked


def _position(values: pa.ChunkedArray | pa.Array, dictionary: pa.Array) -> np.ndarray:
    """Position of each value in ``dictionary`` (-1: not there; a null is found only where the
    dictionary holds a null)."""
    found = pc.index_in(values, value_set=dictionary)
    return pc.fill_null(found, -1).to_numpy(zero_copy_only=False).astype(np.int64)


def _same_text(
    a: pa.ChunkedArray | pa.Array | None, b: pa.ChunkedArray | pa.Array | None, n: int
) -> np.ndarray:
    """Whether two columns are equal row by row as a fingerprint compares them: as text, a null
    (or a missing column) equal only to a null."""
    if a is None and b is None:
        return np.ones(n, bool)
    if a is None or b is None:
        return pc.is_null(a if b is None else b).to_numpy(zero_copy_only=False)
    if not (a.type == b.type and (pa.types.is_integer(a.type) or pa.types.is_string(a.type))):
        a, b = a.cast(pa.string()), b.cast(pa.string())  # integers and text compare as they are
    equal = pc.fill_null(pc.equal(a, b), False)
    both_null = pc.and_(pc.is_null(a), pc.is_null(b))
    return pc.or_(equal, both_null).to_numpy(zero_copy_only=False)


def _fingerprint(
    commit_time: pa.ChunkedArray,
    partition: pa.ChunkedArray,
    key: pa.ChunkedArray,
    data: list[pa.ChunkedArray | None],
) -> pa.ChunkedArray:
    """One string per row: commit time, partition, key and data values (nulls marked)."""
    n = len(key)
    parts = [pc.fill_null(commit_time.cast(pa.string()), _NULL), partition, key]
    for column in data:
        if column is None:
            parts.append(pc.fill_null(pa.nulls(n, pa.string()), _NULL))
        else:
            parts.append(pc.fill_null(column.cast(pa.string()), _NULL))
    return pc.binary_join_element_wise(*[p.cast(pa.string()) for p in parts], _SEP)


def _committed_fingerprints(rows: CommittedRows, part: _Part) -> pa.ChunkedArray:
    """The fingerprint of ``part`` of every committed row (null where a row does not write the
    part's group: it cannot back that group's values)."""
    key = ("fingerprints", part.columns, part.group is None)
    if key not in rows.cache:
        table = rows.table
        n = table.num_rows
        prints = _fingerprint(
            table.column(TIME) if part.group is None else pa.nulls(n, pa.string()),
            table.column(PARTITION),
            table.column(KEY),
            [table.column(c) if c in table.column_names else None for c in part.columns],
        )
        if part.group is not None and part.group.ordering_field in table.column_names:
            writes = pc.is_valid(table.column(part.group.ordering_field))
            prints = pc.if_else(writes, prints, pa.scalar(None, pa.string()))
        rows.cache[key] = prints
    return rows.cache[key]


def _committed_codes(rows: CommittedRows, part: _Part) -> _Codes:
    """:func:`_committed_fingerprints` encoded (:class:`_Codes`), once per run."""
    key = ("fingerprint codes", part.columns, part.group is None)
    if key not in rows.cache:
        table = rows.table
        encoded = pc.dictionary_encode(_committed_fingerprints(rows, part)).combine_chunks()
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        ident = pc.binary_join_element_wise(table.column(PARTITION), table.column(KEY), _SEP)
        idents = pc.dictionary_encode(ident).combine_chunks()
        ident_codes = pc.fill_null(idents.indices, -1).to_numpy(zero_copy_only=False)
        ident_codes = ident_codes.astype(np.int64)
        slot = ident_codes
        times = None
        if part.group is None:
            # a null time is a value of its own here, as the fingerprint's null marker is
            encoded_times = pc.dictionary_encode(
                table.column(TIME), null_encoding="encode"
            ).combine_chunks()
            times = encoded_times.dictionary
            time = encoded_times.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            slot = slot * (len(times) + 1) + time
        backing = np.flatnonzero(codes >= 0)
        order = backing[np.argsort(slot[backing], kind="stable")]
        rows.cache[key] = _Codes(
            encoded.dictionary, codes, idents.dictionary, ident_codes, times, slot[order], order
        )
    return rows.cache[key]


class _History:
    """The events that name an instant or a data file."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.commits = instant_events(events)
        self.by_instant: dict[str, list[int]] = {}
        self.by_file: dict[str, list[int]] = {}
        for e in events:
            if e.type != "ok" or not isinstance(e.value, dict):
                continue
            if e.f == "rollback" and isinstance(e.value.get("instant"), str):
                self.by_instant.setdefault(e.value["instant"], []).append(e.index)
            if e.f == "flush":
                for path in e.value.get("files") or ():
                    self.by_file.setdefault(str(path), []).append(e.index)

    def of(self, instant: str, files: Sequence[str]) -> set[int]:
        found = set(events_of(self.commits, instant)) | set(self.by_instant.get(instant, ()))
        for path in files:
            found.update(self.by_file.get(path, ()))
        return found


def _explain(
    committed: CommittedTable,
    history: _History,
    bound: str | None,
    why: str,
    bad: pa.Table,
    bad_prints: pa.ChunkedArray,
) -> Violation:
    at = "at the end" if bound is None else f"as of {bound} ({why})"
    times = bad.column(COMMIT_TIME).cast(pa.string())
    counts = pc.value_counts(times)
    clauses = []
    events: set[int] = set()
    columns = data_columns(committed.rows)
    for value, count in sorted(
        zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist(), strict=True),
        key=lambda vc: (-vc[1], vc[0]),
    ):
        instant = _write_instant(committed, value)
        prints = bad_prints.filter(pc.equal(times, value))
        files = _holding_files(committed, value, bound, prints, columns)
        events |= history.of(value, files)
        shown = f" (from {', '.join(files[:EXAMPLES])})" if files else ""
        if instant is None:
            state = "which is no write instant of the table"
        elif bound is not None and not instant.completed_by(bound):
            state = f"which is not completed at the bound ({instant.describe()})"
        elif not instant.completed:
            state = f"which never completed ({instant.describe()})"
        else:
            state = (
                f"({instant.describe()}) beyond what the files its commit metadata lists hold: "
                "data nobody committed"
            )
        clauses.append(f"{count} records of instant {value} {state}{shown}")
    return Violation(
        f"{at} the reader returns {bad.num_rows} uncommitted records: {'; '.join(clauses[:5])}",
        tuple(sorted(events)),
    )


def _write_instant(committed: CommittedTable, time: str | None) -> RawInstant | None:
    found = [i for i in committed.instants if i.requested == time and not i.is_compaction]
    done = [i for i in found if i.completed]
    return (done or found or [None])[0]


def _holding_files(
    committed: CommittedTable,
    instant: str | None,
    bound: str | None,
    prints: pa.ChunkedArray,
    columns: list[str],
) -> list[str]:
    """Data files named with ``instant`` (the writer names files after its instant) that no
    instant completed by ``bound`` lists, holding any of the rows ``prints``."""
    out = []
    for path, f in sorted(committed.files.items()):
        listed = committed.listed_by.get(path, ())
        if f.instant != instant or any(
            i.completed if bound is None else i.completed_by(bound) for i in listed
        ):
            continue
        rows = committed.file_rows(path)
        if rows.num_rows == 0:
            continue
        found = _fingerprint(
            rows.column(TIME),
            rows.column(PARTITION),
            rows.column(KEY),
            [rows.column(c) if c in rows.column_names else None for c in columns],
        )
        if pc.any(pc.is_in(found, value_set=prints)).as_py():
            out.append(path)
    return out
