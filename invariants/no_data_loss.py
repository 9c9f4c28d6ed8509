"""Invariant ``no_data_loss`` (docs/protocol.md section 9, invariant 4): the snapshot read of the table
equals the model of all committed writes, at the end and at every completed instant (time travel).

Two comparisons:

* **The end**: the final snapshot, read by the system under test (its own slicing rule, anchor and
  completion-time lookup: a variant such as ``base_instant`` names logs differently), against the
  ledger's model of everything the completed checkpoints covered (:mod:`invariants.ledger`), per
  record key: missing keys (lost data), extra keys (uncommitted or duplicated data) and keys whose
  winning version differs (a wrong merge) are reported separately, each with a few examples.
* **Time travel**: for a completed write or compaction instant ``c``, the reader's read ``as_of``
  ``c``'s completion time against an independent merge of every record in the data files of the
  write instants completed by then (their commit metadata lists the files; the records are merged
  per key by the table's merge mode with the checkers' own code, :mod:`invariants.merging`, never
  the reader's). A read costs a snapshot each, so the bounds are a deterministic sample
  (:func:`invariants.time_travel.travel_points`: every compaction with the writes just before,
  during and after it, the moments an earlier write was still pending, an even spread; at most
  24 and a bounded number of file reads); the final snapshot is compared the same way too.

Files that a completed instant lists but storage no longer holds are lost data as well.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed import CommittedTable, load_committed
from invariants.instant_events import events_of, instant_events
from invariants.ledger import build_ledger, column_groups_of
from invariants.merging import compare, data_columns, merge_spec_for, merged_at, reader_rows
from invariants.raw_files import RawInstant
from invariants.sut_view import SystemView, system_view
from invariants.time_travel import travel_points
from invariants.verdict import Verdict, Violation
from models.format.records import RECORD_KEY_FIELD, SCHEMA
from models.history import Event
from models.view.table import HudiTable

NAME = "no_data_loss"
EXAMPLES = 5
MAX_TRAVEL_VIOLATIONS = 6
"""Time-travel bounds reported one by one; the others are counted in one more violation."""


def check_no_data_loss(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    view = system_view(events, table)
    snapshot = committed.sut_read(view)
    violations = _against_ledger(events, snapshot)
    violations += _missing_files(committed, instant_events(events))
    violations += _time_travel(events, committed, view)
    return Verdict(NAME, tuple(violations))


def check_final_snapshot(events: Sequence[Event], table: HudiTable) -> Verdict:
    """Only the first comparison: the final snapshot against the ledger's model (what the
    simulation tests assert about the end of a run; ``check_no_data_loss`` is the invariant)."""
    view = system_view(events, table)
    return Verdict(NAME, tuple(_against_ledger(events, load_committed(table).sut_read(view))))


# --- the end, against the ledger ----------------------------------------------------------------


def _against_ledger(events: Sequence[Event], snapshot: pa.Table) -> list[Violation]:
    ledger = build_ledger(events)
    model = ledger.model()
    grouped = bool(ledger.column_groups)
    data = _data_columns(snapshot, model.schema if grouped else SCHEMA)
    anchor = tuple(j.covered_event for j in ledger.jobs if j.covered_event is not None)
    violations = []
    model_keys = model.column(RECORD_KEY_FIELD)
    read_keys = data.column(RECORD_KEY_FIELD)
    duplicates = _duplicates(read_keys)
    if duplicates:
        violations.append(
            Violation(
                f"{len(duplicates)} record keys appear more than once in the snapshot "
                f"(e.g. {', '.join(duplicates[:EXAMPLES])}): records were committed twice",
                anchor,
            )
        )
    model_set, read_set = pc.unique(model_keys), pc.unique(read_keys)
    missing = _sorted_list(model_set.filter(pc.invert(pc.is_in(model_set, value_set=read_set))))
    if missing:
        violations.append(
            Violation(
                f"{len(missing)} of {len(model_set)} records covered by completed checkpoints are "
                f"missing from the snapshot (e.g. {', '.join(missing[:EXAMPLES])}): data loss",
                anchor,
            )
        )
    extra = _sorted_list(read_set.filter(pc.invert(pc.is_in(read_set, value_set=model_set))))
    if extra:
        violations.append(
            Violation(
                f"{len(extra)} records in the snapshot were never covered by a completed "
                f"checkpoint (e.g. {', '.join(extra[:EXAMPLES])})",
                anchor,
            )
        )
    if not duplicates:
        wrong = _different_versions(model, data, every_column=grouped)
        if wrong:
            violations.append(
                Violation(
                    f"{len(wrong)} keys hold a different version than the merge rule picks "
                    f"(e.g. {', '.join(wrong[:EXAMPLES])})",
                    anchor,
                )
            )
    return violations


def _data_columns(snapshot: pa.Table, schema: pa.Schema) -> pa.Table:
    """The snapshot's columns of ``schema``; a column no file of the snapshot has is all null
    (a column group no stream wrote into the slices read)."""
    if snapshot.num_rows == 0:
        return schema.empty_table()
    columns = [
        snapshot.column(f.name).cast(f.type)
        if f.name in snapshot.column_names
        else pa.nulls(snapshot.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(columns, schema=pa.schema([f.with_nullable(True) for f in schema]))


def _duplicates(keys: pa.ChunkedArray) -> list[str]:
    """The keys that appear more than once, sorted."""
    counts = pc.value_counts(keys)
    return _sorted_list(counts.field("values").filter(pc.greater(counts.field("counts"), 1)))


def _sorted_list(values: pa.Array) -> list[str]:
    """Distinct values as a sorted Python list (only what is reported becomes Python objects)."""
    return sorted(values.to_pylist())


def _different_versions(model: pa.Table, data: pa.Table, *, every_column: bool) -> list[str]:
    """Keys whose version differs: by source position (job and offset), or, for column groups
    (one row built from several versions), in any column, a null equal only to a null."""
    joined = model.join(data, RECORD_KEY_FIELD, join_type="inner", right_suffix="_read")
    if not every_column:
        differs = pc.or_(
            pc.not_equal(joined.column("offset"), joined.column("offset_read")),
            pc.not_equal(joined.column("job"), joined.column("job_read")),
        )
        return sorted(joined.filter(differs).column(RECORD_KEY_FIELD).to_pylist())
    differs = np.zeros(joined.num_rows, bool)
    for name in model.column_names:
        if name == RECORD_KEY_FIELD:
            continue
        a, b = joined.column(name), joined.column(f"{name}_read")
        same = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        differs |= ~same.to_numpy(zero_copy_only=False)
    return sorted(joined.filter(pa.array(differs)).column(RECORD_KEY_FIELD).to_pylist())


# --- listed files that are gone -----------------------------------------------------------------


def _missing_files(
    committed: CommittedTable, by_instant: dict[str, tuple[int, ...]]
) -> list[Violation]:
    if not committed.missing:
        return []
    paths = [p for p, _ in committed.missing]
    instants = sorted({i for _, i in committed.missing})
    return [
        Violation(
            f"{len(paths)} data files listed by completed instants {', '.join(instants[:5])} "
            f"are missing from storage (e.g. {', '.join(paths[:3])}): their records are lost",
            events_of(by_instant, *instants),
        )
    ]


# --- time travel --------------------------------------------------------------------------------


def _time_travel(
    events: Sequence[Event], committed: CommittedTable, view: SystemView
) -> list[Violation]:
    rows = committed.rows
    spec = merge_spec_for(committed.config, column_groups_of(events))
    by_file_group = committed.insert_only
    columns = data_columns(rows)
    by_instant = instant_events(events)
    done = committed.completed()
    if not done:
        return []
    final = done[-1]
    points: list[tuple[str | None, RawInstant, str]] = [
        (p.bound, p.instant, p.why)
        for p in travel_points(committed)
        if p.bound != final.completion  # the final snapshot below reads the same
    ]
    points.append((None, final, "the final snapshot"))
    found: list[Violation] = []
    for bound, instant, why in points:
        expected = merged_at(rows, spec, bound, by_file_group=by_file_group)
        actual = reader_rows(committed.sut_read(view, bound), by_file_group=by_file_group)
        difference = compare(expected, actual, columns)
        if difference.empty:
            continue
        at = "at the end" if bound is None else f"as of {bound}"
        found.append(
            Violation(
                f"{at} ({why}, {instant.describe()}) the reader's snapshot differs from the "
                f"{spec.name} merge of the records committed by then: {difference.describe()}",
                events_of(by_instant, instant.requested),
            )
        )
    if len(found) <= MAX_TRAVEL_VIOLATIONS + 1:
        return found
    # the first bounds where it went wrong, a count of the others, and the last one
    rest = found[MAX_TRAVEL_VIOLATIONS:-1]
    summary = Violation(
        f"the reader's snapshot also differs from the merge of the committed records at "
        f"{len(rest)} more time-travel bounds",
        tuple(sorted({i for v in rest for i in v.events})),
    )
    return [*found[:MAX_TRAVEL_VIOLATIONS], summary, found[-1]]
