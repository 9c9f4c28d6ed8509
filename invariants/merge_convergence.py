"""Invariant ``merge_convergence`` (docs/protocol.md section 9, invariant 6): the merged table does not
depend on arrival order, batching or compaction timing.

Under ``EVENT_TIME_ORDERING`` the live version of a record is a function of its versions alone
(the greatest ordering value; NBCC writers and multi-stream partial updates rely on it), so every
order and every grouping of the committed records must merge to the same table, and the reader's
snapshot (base files that compactions wrote at arbitrary moments, plus the logs after them) must
be that table too. The committed records are the own rows of every file a completed write instant
lists (:mod:`invariants.committed`); they are merged with the checkers' own merge
(:mod:`invariants.merging`) in several deterministic ways, each compared with the merge in commit
(completion-time) order:

* in reverse commit order;
* in a seeded random order (seed :data:`PERMUTATION_SEED`);
* file group by file group, results put together (a key found in two file groups shows here);
* in batches of consecutive commits, each batch merged into the result of the ones before
  (:data:`BATCHES` of them), as compactions at different moments fold the log into base files;

and the commit-order merge is compared with the reader's final snapshot (system under test's view):
every record the reader returns must hold the version the merge picks, once. A difference names
the records, their versions and the instants (commits, and the compaction that wrote the base file
a wrong version was read from). Records the reader lacks or returns beyond the committed ones are
not this invariant's: ``no_data_loss`` and ``no_uncommitted_read`` report them.

Under ``COMMIT_TIME_ORDERING`` the result depends on commit order by definition: the verdict is
ok with nothing to check (``no_data_loss`` compares the reader with the commit-order merge).

The merge itself is a :class:`~invariants.merging.MergeSpec`, chosen from the table's merge mode,
or, when the run's jobs write column groups (multi-stream partial updates, docs/protocol.md section 5.3), the
per-column-group spec whatever the table declares: a table that merges those streams as whole
rows (variant ``partial_update_merge = "row"``) is judged by what it should have done. That spec
builds rows out of several versions, so its merges are compared as tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed import CommittedTable, load_committed
from invariants.committed_rows import COMMIT_TIME, FILE_NAME, PARTITION, TIME, CommittedRows
from invariants.instant_events import events_of, instant_events
from invariants.ledger import column_groups_of
from invariants.merging import (
    IDENT,
    Difference,
    Identified,
    MergeSpec,
    compare,
    compare_rows,
    data_columns,
    identified,
    merge_spec_for,
    reader_rows,
    show_ident,
)
from invariants.raw_files import parse_data_file
from invariants.sut_view import system_view
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

NAME = "merge_convergence"
PERMUTATION_SEED = 20260101
BATCHES = 4
EXAMPLES = 3


def check_merge_convergence(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    # what the table should merge by: the column groups the jobs write, if any (a table that
    # merges them as whole rows, the variant "row", is judged by what it should have done)
    spec = merge_spec_for(committed.config, column_groups_of(events))
    if not spec.order_independent:
        return Verdict(NAME)
    rows = committed.rows
    by_file_group = committed.insert_only
    ids = identified(rows, by_file_group=by_file_group)
    columns = data_columns(rows)
    n = ids.table.num_rows
    everything = np.arange(n, dtype=np.int64)
    permutation = np.random.default_rng(PERMUTATION_SEED).permutation(n)
    orders = {
        "in reverse commit order": n - 1 - everything,
        f"in a seeded random order (seed {PERMUTATION_SEED})": permutation,
    }
    by_file_group_how = "file group by file group"
    in_batches_how = (
        f"in {BATCHES} batches of consecutive commits, each merged into the result so far"
    )
    by_instant = instant_events(events)
    violations = []
    if getattr(spec, "combines_values", False):
        # partial updates build rows from several versions: compare the built tables
        expected = spec.merge(ids, everything, everything)
        folded = _in_batches(spec, ids, rows.completion)
        tables = {how: spec.merge(ids, everything, order) for how, order in orders.items()}
        tables[by_file_group_how] = pa.concat_tables(
            [spec.merge(ids, members, members) for members in _file_groups(ids, rows)]
            or [expected.slice(0, 0)]
        )
        tables[in_batches_how] = spec.merge(ids, folded, folded)
        for how, merged in tables.items():
            difference = compare(expected, merged, columns)
            if not difference.empty:
                violations.append(_order_violation(how, spec, difference, expected, by_instant))
    else:
        baseline = _live(ids, spec.winners(ids, everything, everything))
        variants = {how: spec.winners(ids, everything, order) for how, order in orders.items()}
        variants[by_file_group_how] = _per_file_group(spec, ids, rows)
        variants[in_batches_how] = _in_batches(spec, ids, rows.completion)
        expected = ids.table.take(pa.array(baseline))
        for how, winners in variants.items():
            difference = compare_rows(ids, baseline, _live(ids, winners), columns)
            if not difference.empty:
                violations.append(_order_violation(how, spec, difference, expected, by_instant))
    view = system_view(events, table)
    snapshot = committed.sut_read(view)
    actual = reader_rows(snapshot, by_file_group=by_file_group)
    difference = compare(expected, actual, columns, with_time=False)
    # records the reader lacks or adds are no_data_loss's and no_uncommitted_read's to report
    difference = replace(difference, missing=(), extra=())
    if not difference.empty:
        violations.append(
            _reader_violation(committed, spec, expected, actual, snapshot, difference, by_instant)
        )
    return Verdict(NAME, tuple(violations))


def _order_violation(
    how: str,
    spec: MergeSpec,
    difference: Difference,
    expected: pa.Table,
    by_instant: dict[str, tuple[int, ...]],
) -> Violation:
    return Violation(
        f"merging the committed records {how} gives another table than merging them "
        f"in commit order ({spec.name}): {difference.describe()}",
        _events_for(difference, expected, by_instant),
    )


def _file_groups(ids: Identified, rows: CommittedRows) -> list[np.ndarray]:
    """Row numbers of each file group (partition and file id), in row order."""
    if ids.table.num_rows == 0:
        return []
    group = pc.binary_join_element_wise(rows.table.column(PARTITION), rows.file_ids(), "\x1f")
    codes = pc.dictionary_encode(group).combine_chunks().indices.to_numpy(zero_copy_only=False)
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.r_[True, codes[order][1:] != codes[order][:-1], True])
    return [order[a:b] for a, b in pairwise(bounds)]


def _per_file_group(spec: MergeSpec, ids: Identified, rows: CommittedRows) -> np.ndarray:
    """Winners merged within each file group (partition and file id) separately, put together."""
    parts = _file_groups(ids, rows)
    if not parts:
        return np.zeros(0, np.int64)
    return np.concatenate([spec.winners(ids, members, members) for members in parts])


def _in_batches(spec: MergeSpec, ids: Identified, completion: np.ndarray) -> np.ndarray:
    """Fold the commits, in completion order, in :data:`BATCHES` consecutive batches: each batch
    merged together with the winners (deletes included) of the batches before."""
    times = np.unique(completion)
    if len(times) == 0:
        return np.zeros(0, np.int64)
    cuts = [times[min(len(times) - 1, (len(times) * k) // BATCHES)] for k in range(1, BATCHES)]
    edges = sorted(set(int(c) for c in cuts))
    batch = np.searchsorted(np.array(edges, np.int64), completion, side="left")
    result = np.zeros(0, np.int64)
    for b in range(len(edges) + 1):
        members = np.flatnonzero(batch == b)
        combined = np.concatenate([result, members])
        result = spec.winners(ids, combined, combined)
    return result


def _live(ids: Identified, winners: np.ndarray) -> np.ndarray:
    """The winners that are not deletes, in row order."""
    return np.sort(winners[~ids.deleted[winners]])


def _events_for(
    difference: Difference,
    expected: pa.Table,
    by_instant: dict[str, tuple[int, ...]],
) -> tuple[int, ...]:
    """The commits of the commit-order versions of a few differing records."""
    idents = [*difference.different, *difference.missing, *difference.extra][:EXAMPLES]
    wanted = pa.array(idents, pa.string())
    rows = expected.filter(pc.is_in(expected.column(IDENT), value_set=wanted))
    return events_of(by_instant, *sorted(set(rows.column(TIME).to_pylist())))


def _reader_violation(
    committed: CommittedTable,
    spec: MergeSpec,
    baseline: pa.Table,
    actual: pa.Table,
    snapshot: pa.Table,
    difference: Difference,
    by_instant: dict[str, tuple[int, ...]],
) -> Violation:
    ordering = getattr(spec, "ordering", None)
    details = []
    instants: set[str] = set()
    for ident in difference.different[:EXAMPLES]:
        want = baseline.filter(pc.equal(baseline.column(IDENT), ident)).to_pylist()[0]
        positions = pc.indices_nonzero(pc.equal(actual.column(IDENT), ident))
        got = snapshot.take(positions).to_pylist()[0]
        instants.update((want[TIME], got[COMMIT_TIME]))
        source = parse_data_file(str(got.get(FILE_NAME, "")))
        writer = committed.get(source.instant) if source is not None else None
        by = ""
        if writer is not None and writer.is_compaction:
            by = f", from a base file compaction {writer.requested} wrote"
            instants.add(writer.requested)
        value = f" {ordering}={got.get(ordering)}" if ordering else ""
        wanted = f" {ordering}={want.get(ordering)}" if ordering else ""
        if getattr(spec, "combines_values", False):
            # a built row: name the columns that differ rather than one ordering value
            differ = [c for c in want if c in got and not c.startswith("_") and want[c] != got[c]]
            value = "".join(f" {c}={got[c]}" for c in differ[:2])
            wanted = "".join(f" {c}={want[c]}" for c in differ[:2])
        details.append(
            f"{show_ident(ident)}: the reader has the version of instant "
            f"{got[COMMIT_TIME]}{value}{by}, the merge picks instant {want[TIME]}{wanted}"
        )
    text = (
        f"the reader's snapshot is not the {spec.name} merge of all committed records: "
        f"{difference.describe()}"
    )
    if details:
        text += "; " + "; ".join(details)
    return Violation(text, events_of(by_instant, *sorted(instants)))
