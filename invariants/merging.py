"""The checkers' own merge of committed records (docs/protocol.md section 5), independent of
``models/view/reader.py``, and the comparison of a merge result with what the reader returned.

A *merge spec* says how the versions of one record combine into the live record. Specs are small
objects with one method, :meth:`MergeSpec.merge`, so that new ways of merging plug in without
touching the checkers: ``EVENT_TIME_ORDERING`` (the greatest ordering value wins, ties to the
later version in the given order, a delete competes like a version, one without an ordering value
deletes unconditionally), ``COMMIT_TIME_ORDERING`` (the last version in the given order wins) and
multi-stream partial updates (docs/protocol.md section 5.3, :class:`PartialUpdateMerge`: the event-time rule once per
column group, each with its own ordering value), which combines values of several versions into
one row instead of picking one source row.

Records are identified by partition path and record key (``_c_ident``); in an insert-only table
(Flink's append mode, which never merges) by file group and record key, since the same key written
twice is two records there. Everything is column-wise: one ``numpy.lexsort`` per merge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed_rows import (
    COMMIT_TIME,
    DELETED,
    FILE_NAME,
    KEY,
    META_PREFIX,
    PARTITION,
    PARTITION_PATH,
    RECORD_KEY,
    ROW_COLUMNS,
    TIME,
    CommittedRows,
)
from models.format.properties import COMMIT_TIME_ORDERING, TableConfig
from models.view.partial_update import ColumnGroup, column_groups

IDENT = "_c_ident"
_SEP = "\x1f"


class MergeSpec(Protocol):
    """How versions of a record merge into the live record.

    ``winners`` picks, among rows ``index`` of ``rows``, the row that stands for each identity
    after merging (a delete included, so that merging a merge result with later versions, as a
    compaction followed by more writes does, gives the same answer); ``merge`` is the live result.
    A spec that combines values instead of picking rows (partial updates per column group) would
    build its rows in ``merge`` and fold its own results in ``winners``' place.
    """

    name: str
    order_independent: bool
    """Whether the result may depend on the order versions arrive in (commit-time ordering does,
    by definition; event-time ordering must not)."""

    def winners(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> np.ndarray:
        """Row numbers (into ``rows``) of the winning version of each identity among rows
        ``index``; ``order[i]`` is the arrival position of row ``index[i]`` (a later version wins
        a tie)."""
        ...

    def merge(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> pa.Table:
        """The live records among rows ``index``: the winners that are not deletes."""
        ...


def _last_per_ident(rows: Identified, index: np.ndarray, sort_keys: list[np.ndarray]) -> np.ndarray:
    """Sort rows ``index`` by identity, then by ``sort_keys`` (least significant first, as
    lexsort wants), and return the row numbers of the last row of each identity."""
    index = np.asarray(index, np.int64)
    codes = rows.codes[index]
    order = np.lexsort([*sort_keys, codes])
    sorted_codes = codes[order]
    last = np.ones(len(order), bool)
    if len(order):
        last[:-1] = sorted_codes[1:] != sorted_codes[:-1]
    return index[order[last]]


def live(rows: Identified, winners: np.ndarray) -> pa.Table:
    """The winners that are not deletes, as rows in commit order."""
    kept = winners[~rows.deleted[winners]]
    return rows.table.take(pa.array(np.sort(kept)))


@dataclass(frozen=True)
class CommitTimeMerge:
    """``COMMIT_TIME_ORDERING``: the last version in arrival order wins."""

    name: str = "COMMIT_TIME_ORDERING"
    order_independent: bool = False

    def winners(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> np.ndarray:
        """The last version in ``order``; within one commit a delete only removes versions of
        its own file group, so a file group whose last version of the record is live beats one
        whose last version is a delete (the global index deletes a moved key from its old file
        group and writes it into another in the same commit)."""
        order = np.asarray(order)
        if rows.commit is None:
            return _last_per_ident(rows, index, [order])
        index = np.asarray(index, np.int64)
        commit, group = rows.commit[index], rows.file_group[index]
        codes = rows.codes[index]
        if len(index):  # a commit comes where its last row comes in ``order``
            last = np.full(int(commit.max()) + 1, np.iinfo(np.int64).min)
            np.maximum.at(last, commit, order.astype(np.int64))
            commit = last[commit]
        by_group = np.lexsort([order, group, commit, codes])
        keys = np.stack([codes[by_group], commit[by_group], group[by_group]])
        group_last = np.zeros(len(index), np.int64)
        if len(index):
            ends = np.ones(len(index), bool)
            ends[:-1] = (keys[:, 1:] != keys[:, :-1]).any(axis=0)
            group_last[by_group[ends]] = 1
        live_ = (~rows.deleted[index]).astype(np.int64)
        return _last_per_ident(rows, index, [order, live_ * group_last, group_last, commit])

    def merge(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> pa.Table:
        return live(rows, self.winners(rows, index, order))


@dataclass(frozen=True)
class EventTimeMerge:
    """``EVENT_TIME_ORDERING`` on one ordering field: the greatest ordering value wins, ties to
    the later arrival; a delete without an ordering value beats every version."""

    ordering: str
    name: str = "EVENT_TIME_ORDERING"
    order_independent: bool = True

    def winners(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> np.ndarray:
        rank, unconditional = rows.ordering_rank(self.ordering)
        index = np.asarray(index, np.int64)
        return _last_per_ident(rows, index, [np.asarray(order), rank[index], unconditional[index]])

    def merge(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> pa.Table:
        return live(rows, self.winners(rows, index, order))


@dataclass(frozen=True)
class PartialUpdateMerge:
    """Multi-stream partial updates (docs/protocol.md section 5.3): ``EVENT_TIME_ORDERING``
    once per column group, on the group's own ordering field.

    Written here independently of ``models/view/partial_update.py``, with the same semantics: in each
    group the versions carrying the group's ordering value compete with every delete (a delete's
    value is the group's field if it has one, else the record-level ``record_ordering``; none:
    unconditional), the greatest wins, ties to the later arrival. A delete winning any group
    deletes the record. A live record takes each group's columns from that group's winner (null
    where none) and its other columns (commit time, ``ts``, ``offset``, ``job``) from the winner
    of its first group, in declared order, that has one.

    ``winners`` is every row that wins some group (deletes included): merging those with later
    versions gives what merging everything would, so compactions and batches fold as for the
    row-picking specs; ``merge`` builds the combined rows."""

    groups: tuple[ColumnGroup, ...]
    record_ordering: str | None = None
    name: str = "per-column-group partial-update"
    order_independent: bool = True
    combines_values: bool = True
    """Results are built rows, not source rows: compare them as tables."""

    def _group(self, rows: Identified, field_name: str) -> tuple[np.ndarray, ...]:
        """(candidate, rank, unconditional) of every row in the group of ``field_name``."""
        cache_key = f"\x00group:{field_name}:{self.record_ordering}"
        if cache_key not in rows._ranks:
            table, n = rows.table, rows.table.num_rows
            values = table.column(field_name) if field_name in table.column_names else None
            carried = (
                np.zeros(n, bool)
                if values is None
                else pc.is_valid(values).to_numpy(zero_copy_only=False)
            )
            if values is None:
                values = pa.nulls(n, pa.int64())
            ordering = self.record_ordering
            if ordering and ordering in table.column_names and rows.deleted.any():
                fallback = table.column(ordering).cast(values.type)
                own = pa.array(carried)
                absent = pa.scalar(None, values.type)
                deletes = pc.if_else(pa.array(rows.deleted), fallback, absent)
                values = pc.if_else(own, values, deletes)
            null = ~pc.is_valid(values).to_numpy(zero_copy_only=False)
            ranks = np.zeros(n, np.int64)
            if n and not null.all():
                filled = pc.fill_null(values, pc.min(values)) if null.any() else values
                dense = pc.rank(filled, "ascending", tiebreaker="dense")
                ranks = dense.to_numpy(zero_copy_only=False).astype(np.int64) + 1
                ranks[null] = 0
            candidate = (carried & ~rows.deleted) | rows.deleted
            unconditional = (rows.deleted & null).astype(np.int8)
            rows._ranks[cache_key] = (candidate, ranks, unconditional)  # type: ignore[assignment]
        return rows._ranks[cache_key]

    def per_group(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> list[np.ndarray]:
        """For each group, the row numbers of its winner per identity."""
        index, order = np.asarray(index, np.int64), np.asarray(order)
        out = []
        for group in self.groups:
            candidate, ranks, unconditional = self._group(rows, group.ordering_field)
            mask = candidate[index]
            members = index[mask]
            out.append(
                _last_per_ident(
                    rows, members, [order[mask], ranks[members], unconditional[members]]
                )
            )
        return out

    def winners(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> np.ndarray:
        return np.unique(
            np.concatenate([np.zeros(0, np.int64), *self.per_group(rows, index, order)])
        )

    def merge(self, rows: Identified, index: np.ndarray, order: np.ndarray) -> pa.Table:
        won = self.per_group(rows, index, order)
        n = int(rows.codes.max()) + 1 if len(rows.codes) else 0
        by_ident = np.full((len(self.groups), n), -1, np.int64)
        for g, members in enumerate(won):
            by_ident[g, rows.codes[members]] = members
        has = by_ident >= 0
        killed = (has & rows.deleted[np.maximum(by_ident, 0)]).any(axis=0)
        idents = np.flatnonzero(has.any(axis=0) & ~killed)
        representative = by_ident[np.argmax(has[:, idents], axis=0), idents]
        order = np.argsort(representative, kind="stable")
        idents, representative = idents[order], representative[order]
        out = rows.table.take(pa.array(representative))
        for g, group in enumerate(self.groups):
            picked = by_ident[g, idents]
            taken = pa.array(np.maximum(picked, 0), mask=picked < 0)
            for name in group.fields:
                if name in out.column_names:
                    at = out.column_names.index(name)
                    out = out.set_column(at, out.schema.field(name), rows.table[name].take(taken))
        return out


def merge_spec_for(config: TableConfig, groups: Sequence[ColumnGroup] = ()) -> MergeSpec:
    """The merge spec of a table's configuration, or of the column groups the run's jobs write
    (``groups``, from the history: what the table *should* merge by, whatever it declares)."""
    groups = tuple(groups) or column_groups(config)
    if groups:
        ordering = config.ordering_fields[0] if config.ordering_fields else None
        return PartialUpdateMerge(groups, ordering)
    if config.merge_mode == COMMIT_TIME_ORDERING or not config.ordering_fields:
        return CommitTimeMerge()
    return EventTimeMerge(config.ordering_fields[0])


# --------------------------------------------------------------------------------------------
# Identities and comparison
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Identified:
    """Committed rows with their identity: ``table`` has ``_c_ident`` appended, ``codes[i]`` is an
    integer standing for row ``i``'s identity, ``deleted[i]`` whether row ``i`` is a delete."""

    table: pa.Table
    codes: np.ndarray
    deleted: np.ndarray
    commit: np.ndarray | None = None
    """Each row's commit as its position in completion order (None: not known)."""
    file_group: np.ndarray | None = None
    """An integer standing for each row's file group (with ``commit``)."""
    _ranks: dict[str, tuple[np.ndarray, np.ndarray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def ordering_rank(self, ordering: str) -> tuple[np.ndarray, np.ndarray]:
        """Dense rank of every row's ordering value (nulls lowest: a version without an ordering
        value loses to any that has one) and whether the row is an unconditional delete (a delete
        without an ordering value), computed once."""
        if ordering not in self._ranks:
            n = self.table.num_rows
            if ordering in self.table.column_names and n:
                values = self.table.column(ordering)
                null = pc.is_null(values).to_numpy(zero_copy_only=False)
                filled = pc.fill_null(values, pc.min(values)) if null.any() else values
                rank = pc.rank(filled, "ascending", tiebreaker="dense")
                ranks = rank.to_numpy(zero_copy_only=False).astype(np.int64) + 1
                ranks[null] = 0
            else:
                null = np.ones(n, bool)
                ranks = np.zeros(n, np.int64)
            self._ranks[ordering] = (ranks, (self.deleted & null).astype(np.int8))
        return self._ranks[ordering]


def identified(rows: CommittedRows, *, by_file_group: bool) -> Identified:
    """The identities of all committed rows, computed once per rows and kind of identity."""
    key = ("identified", by_file_group)
    if key not in rows.cache:
        table = rows.table
        parts = [table.column(PARTITION), table.column(KEY)]
        if by_file_group:
            parts.insert(1, rows.file_ids())
        ident = pc.binary_join_element_wise(*parts, _SEP)
        codes = pc.dictionary_encode(ident).combine_chunks().indices
        deleted = pc.fill_null(table.column(DELETED), False).to_numpy(zero_copy_only=False)
        groups = pc.dictionary_encode(rows.file_ids()).indices
        rows.cache[key] = Identified(
            table.append_column(IDENT, ident),
            codes.to_numpy(zero_copy_only=False),
            deleted,
            _commit_positions(rows),
            groups.to_numpy(zero_copy_only=False),
        )
    return rows.cache[key]


def _commit_positions(rows: CommittedRows) -> np.ndarray:
    """Each row's commit as its position among the commits in completion order."""
    if rows.table.num_rows == 0:
        return np.zeros(0, np.int64)
    pairs = np.stack([rows.completion, rows.instant], axis=1)
    return np.unique(pairs, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)


def merged_at(
    rows: CommittedRows, spec: MergeSpec, bound: str | None, *, by_file_group: bool
) -> pa.Table:
    """The live records implied by the instants completed by ``bound`` (all if None), merged by
    ``spec`` in commit order."""
    ids = identified(rows, by_file_group=by_file_group)
    index = np.arange(ids.table.num_rows) if bound is None else rows.upto(bound)
    return spec.merge(ids, index, index)


def reader_rows(snapshot: pa.Table, *, by_file_group: bool) -> pa.Table:
    """The reader's output in the shape of committed rows: identity, commit time, data columns."""
    if snapshot.num_rows == 0 or RECORD_KEY not in snapshot.column_names:
        return pa.table({IDENT: pa.array([], pa.string()), TIME: pa.array([], pa.string())})
    parts = [
        snapshot.column(PARTITION_PATH).cast(pa.string()),
        snapshot.column(RECORD_KEY).cast(pa.string()),
    ]
    if by_file_group:
        names = snapshot.column(FILE_NAME).cast(pa.string())
        # base files are named <fileId>_<token>_<instant>; log records carry the file id itself
        parts.insert(1, pc.list_element(pc.split_pattern(names, "_", max_splits=1), 0))
    out = pa.table(
        {
            IDENT: pc.binary_join_element_wise(*parts, _SEP),
            TIME: snapshot.column(COMMIT_TIME).cast(pa.string()),
        }
    )
    for name in snapshot.column_names:
        if not name.startswith(META_PREFIX):
            out = out.append_column(snapshot.schema.field(name), snapshot.column(name))
    return out.combine_chunks()


@dataclass(frozen=True)
class Difference:
    """How a reader's records differ from a merge: identities missing from the read, extra in
    it, present more than once, or holding another version (examples sorted, counts exact)."""

    missing: tuple[str, ...] = ()
    extra: tuple[str, ...] = ()
    duplicated: tuple[str, ...] = ()
    different: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.missing or self.extra or self.duplicated or self.different)

    def describe(self, examples: int = 3) -> str:
        """One clause per kind of difference, e.g. ``"2 records missing (e.g. p0/k1, p1/k7)"``."""
        parts = []
        for label, idents in (
            ("missing", self.missing),
            ("extra (never committed or duplicated)", self.extra),
            ("returned more than once", self.duplicated),
            ("holding another version", self.different),
        ):
            if idents:
                shown = ", ".join(show_ident(i) for i in idents[:examples])
                parts.append(f"{len(idents)} records {label} (e.g. {shown})")
        return "; ".join(parts)


def show_ident(ident: str) -> str:
    return ident.replace(_SEP, "/")


def compare(
    expected: pa.Table, actual: pa.Table, columns: list[str], *, with_time: bool = True
) -> Difference:
    """Compare two tables keyed by ``_c_ident`` (``expected`` one row per identity, ``actual``
    may repeat one) on ``columns`` (plus the commit time, ``with_time``): a version differs when
    any of those values does."""
    exp_ids = expected.column(IDENT).combine_chunks()
    act_ids = actual.column(IDENT).combine_chunks()
    position = pc.index_in(act_ids, value_set=exp_ids)
    found = pc.is_valid(position).to_numpy(zero_copy_only=False)
    at = position.filter(pa.array(found)).to_numpy(zero_copy_only=False).astype(np.int64)
    hits = np.bincount(at, minlength=len(exp_ids))
    missing = sorted(exp_ids.filter(pa.array(hits == 0)).to_pylist())
    duplicated = sorted(exp_ids.filter(pa.array(hits > 1)).to_pylist())
    extra_ids = act_ids.filter(pa.array(~found))
    extra_counts = pc.value_counts(extra_ids)
    extra = sorted(extra_counts.field("values").to_pylist())
    duplicated += sorted(
        extra_counts.field("values").filter(pc.greater(extra_counts.field("counts"), 1)).to_pylist()
    )
    compared = [TIME, *columns] if with_time else list(columns)
    shared = [c for c in compared if c in expected.column_names and c in actual.column_names]
    differs = np.zeros(len(at), bool)
    taken = pa.array(at)
    keep = pa.array(found)
    for c in shared:
        a = expected.column(c).take(taken)
        b = actual.column(c).filter(keep)
        if a.type != b.type:
            try:
                b = b.cast(a.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                differs |= True
                continue
        same = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        differs |= ~pc.or_(same, both_null).to_numpy(zero_copy_only=False)
    different = set(exp_ids.take(pa.array(at[differs])).to_pylist()) - set(duplicated)
    return Difference(
        tuple(missing), tuple(extra), tuple(sorted(duplicated)), tuple(sorted(different))
    )


def compare_rows(
    rows: Identified, expected: np.ndarray, actual: np.ndarray, columns: list[str]
) -> Difference:
    """:func:`compare` for two selections of the same rows (row numbers of live records, e.g. two
    merges of the committed records): no string matching, only the rows that differ are read."""
    n = int(rows.codes.max()) + 1 if len(rows.codes) else 0
    want = np.full(n, -1, np.int64)
    want[rows.codes[expected]] = expected
    got = np.full(n, -1, np.int64)
    got[rows.codes[actual]] = actual
    hits = np.bincount(rows.codes[actual], minlength=n)
    missing = np.flatnonzero((want >= 0) & (hits == 0))
    extra = np.flatnonzero((want < 0) & (hits > 0))
    duplicated = np.flatnonzero(hits > 1)
    candidates = np.flatnonzero((want >= 0) & (hits == 1) & (want != got))
    differs = np.zeros(len(candidates), bool)
    if len(candidates):
        a_rows = rows.table.take(pa.array(want[candidates]))
        b_rows = rows.table.take(pa.array(got[candidates]))
        for c in columns:
            a, b = a_rows.column(c), b_rows.column(c)
            same = pc.fill_null(pc.equal(a, b), False)
            both_null = pc.and_(pc.is_null(a), pc.is_null(b))
            differs |= ~pc.or_(same, both_null).to_numpy(zero_copy_only=False)

    def names(codes: np.ndarray, where: np.ndarray) -> tuple[str, ...]:
        return tuple(sorted(rows.table.column(IDENT).take(pa.array(where[codes])).to_pylist()))

    return Difference(
        names(missing, want),
        names(extra, got),
        names(duplicated, got),
        names(candidates[differs], want),
    )


def data_columns(rows: CommittedRows) -> list[str]:
    """The data columns to compare (every non-meta column the records carry)."""
    return [c for c in rows.table.column_names if c not in ROW_COLUMNS]


__all__ = [
    "IDENT",
    "CommitTimeMerge",
    "Difference",
    "EventTimeMerge",
    "Identified",
    "MergeSpec",
    "PartialUpdateMerge",
    "compare",
    "compare_rows",
    "data_columns",
    "identified",
    "live",
    "merge_spec_for",
    "merged_at",
    "reader_rows",
    "show_ident",
]
