"""Invariant ``exactly_once`` (docs/protocol.md section 9, invariant 3): every record a completed
checkpoint accepted is committed in exactly one completed instant.

Records are traced through the table, not through the reader: every data file a completed write
instant lists in its commit metadata is read (:mod:`invariants.committed`), and its *own* rows
(commit time = that instant; copies a copy-on-write merge or a compaction carried over from older
commits do not count) carry the ``job`` and ``offset`` they were emitted with
(:mod:`models.format.records`). So each committed record is a (job, offset), and the ledger
(:mod:`invariants.ledger`) says which offsets the completed checkpoints covered. Three checks:

* **Duplicates**: a (job, offset) committed by two completed instants, or twice by one. This
  includes mini-batch *upserts*: a batch re-written after a failed checkpoint commits the same
  records again in a later instant. The snapshot stays right (the second copy overwrites the
  first with identical values), but the same record sits in two completed instants, which is
  at-least-once, not exactly-once; the verdict says so, and ``no_data_loss`` is what shows that
  upserts absorb it.
* **Loss**: inserts (keys unique per offset): every covered offset must be committed. Upserts:
  a write task pre-combines its buffer per key before flushing (docs/protocol.md section 5), so a
  version superseded within one batch is legitimately never written and cannot be required. What
  can be required is, per (job, key) and per completed checkpoint, the version that wins among
  the job's versions in that checkpoint's span (the offsets its barrier added to the previous
  one's: the data one instant commits) by the table's merge rule (greatest (ordering value,
  offset) for event-time ordering, greatest offset for commit-time ordering): it wins in
  whichever flush batch of the span it lands in, so some flush wrote it, and if no completed
  instant holds it that checkpoint's commit lost it, even when a later checkpoint's version
  hides the loss in the snapshot. A batch is all covered or all uncovered (a barrier takes
  exactly the offsets below its checkpoint), so a covered winner never loses its batch to an
  uncovered version. Winners are taken per job: another job's newer version may hide the record
  in the snapshot, but the job's own commit must still exist. One exception, copy-on-write with
  event-time ordering: a merge into a file group holding a version with a greater ordering
  value (another job's, or an earlier one of this job) keeps it and never writes the incoming
  one, so a winner whose checkpoint the history shows committed is not required when such a
  committed version exists.
* **Beyond coverage**: a committed offset at or above what the last completed checkpoint covered
  was never accepted by Flink (its checkpoint failed and nothing restored it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed import load_committed
from invariants.committed_rows import DELETED
from invariants.instant_events import events_of, instant_events
from invariants.ledger import NEVER_COMMITTED, JobLedger, build_ledger
from invariants.verdict import Verdict, Violation
from models.format.properties import COMMIT_TIME_ORDERING
from models.format.records import ORDERING_FIELD, PARTITION_FIELD, RECORD_KEY_FIELD
from models.history import Event
from models.view.table import HudiTable

NAME = "exactly_once"
MAX_VIOLATIONS = 8
"""Duplicate violations are grouped by the instants involved; beyond this many groups one more
violation summarizes the rest."""
_OFFSET_BITS = 40
_SPAN = "_span"


def check_exactly_once(events: Sequence[Event], table: HudiTable) -> Verdict:
    ledger = build_ledger(events)
    committed = load_committed(table)
    rows = committed.rows
    columns = rows.table.column_names
    if "job" not in columns or "offset" not in columns:
        if rows.table.num_rows == 0 and all(j.covered == 0 for j in ledger.jobs):
            return Verdict(NAME)
        return Verdict(
            NAME,
            (
                Violation(
                    "the committed data files carry no job/offset columns: records cannot be "
                    "traced to their source offsets"
                ),
            ),
        )
    live = pc.invert(rows.table.column(DELETED)).to_numpy(zero_copy_only=False)
    index = np.flatnonzero(live)
    job = rows.table.column("job").to_numpy(zero_copy_only=False)[index].astype(np.int64)
    offset = rows.table.column("offset").to_numpy(zero_copy_only=False)[index].astype(np.int64)
    instant = rows.instant[index]
    by_instant = instant_events(events)
    names = {j.source.job_index: j.name for j in ledger.jobs}
    cow = ledger.setup["table"]["type"] == "COPY_ON_WRITE"
    committed = rows.table.take(pa.array(index)) if cow else None  # live rows, for outranked
    violations = _duplicates(job, offset, instant, names, by_instant)
    for j in ledger.jobs:
        mine = job == j.source.job_index
        offsets = offset[mine]
        violations += _lost(j, offsets, ledger.merge_mode, committed)
        violations += _beyond(j, offsets, instant[mine], by_instant)
    unknown = sorted(set(np.unique(job).tolist()) - set(names))
    if unknown:
        violations.append(
            Violation(f"committed records carry job indexes {unknown} that no job of the run has")
        )
    return Verdict(NAME, tuple(violations))


# --- duplicates ---------------------------------------------------------------------------------


def _duplicates(
    job: np.ndarray,
    offset: np.ndarray,
    instant: np.ndarray,
    names: dict[int, str],
    by_instant: dict[str, tuple[int, ...]],
) -> list[Violation]:
    record = (job << _OFFSET_BITS) | offset
    order = np.lexsort((instant, record))
    record, instant = record[order], instant[order]
    repeated = np.zeros(len(record), bool)
    if len(record) > 1:
        same = record[1:] == record[:-1]
        repeated[1:] |= same
        repeated[:-1] |= same
    if not repeated.any():
        return []
    record, instant = record[repeated], instant[repeated]
    starts = np.flatnonzero(np.r_[True, record[1:] != record[:-1]])
    groups: dict[tuple[int, tuple[int, ...]], list[int]] = {}
    for start, stop in zip(starts, [*starts[1:], len(record)], strict=True):
        key = (int(record[start] >> _OFFSET_BITS), tuple(instant[start:stop].tolist()))
        groups.setdefault(key, []).append(int(record[start] & ((1 << _OFFSET_BITS) - 1)))
    ranked = sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))
    out = []
    for (job_index, instants), offsets in ranked[:MAX_VIOLATIONS]:
        times = [str(t) for t in instants]
        counts = Counter(times)
        if len(counts) == 1:
            where = f"{counts[times[0]]} times by instant {times[0]}"
        else:
            where = "by instants " + " and ".join(sorted(counts))
        out.append(
            Violation(
                f"{len(offsets)} records of job {names.get(job_index, job_index)} "
                f"(offsets {_ranges(offsets)}) were committed {where}: duplicates, not "
                "exactly-once",
                events_of(by_instant, *counts),
            )
        )
    rest = ranked[MAX_VIOLATIONS:]
    if rest:
        total = sum(len(offsets) for _, offsets in rest)
        out.append(
            Violation(
                f"{total} more records were committed more than once, by "
                f"{len(rest)} further combinations of instants"
            )
        )
    return out


# --- loss ---------------------------------------------------------------------------------------


def required_offsets(job: JobLedger, merge_mode: str) -> np.ndarray:
    """The covered offsets of ``job`` that must be committed (see the module docstring): every
    insert; for upserts, each key's winner within each completed checkpoint's span."""
    if job.source.operation == "insert":
        return np.arange(job.covered, dtype=np.int64)
    covered = job.source.batch(0, job.covered)
    if covered.num_rows == 0:
        return np.zeros(0, np.int64)
    offsets = covered.column("offset").to_numpy(zero_copy_only=False)
    covered = covered.append_column(_SPAN, pa.array(job.checkpoint_spans(offsets)))
    order = [(_SPAN, "ascending"), (RECORD_KEY_FIELD, "ascending")]
    if merge_mode != COMMIT_TIME_ORDERING:
        order.append((ORDERING_FIELD, "descending"))
    order.append(("offset", "descending"))
    ranked = covered.take(pc.sort_indices(covered, order))
    keys = ranked.column(RECORD_KEY_FIELD).to_numpy(zero_copy_only=False)
    spans = ranked.column(_SPAN).to_numpy(zero_copy_only=False)
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]) | (spans[1:] != spans[:-1])
    winners = ranked.column("offset").filter(pa.array(first))
    return np.sort(winners.to_numpy(zero_copy_only=False).astype(np.int64))


def outranked(job: JobLedger, missing: np.ndarray, committed: pa.Table) -> np.ndarray:
    """Which of ``job``'s ``missing`` winners (offsets) a copy-on-write merge legitimately never
    wrote: the history has their checkpoint's data committed (:meth:`JobLedger.
    commit_positions`), and a committed version of the same key that the merge could have read,
    another job's or an earlier one of this job, has a strictly greater ordering value (the
    incoming record wins ties). The merge keeps that version (Hudi's
    ``DefaultHoodieRecordPayload#needUpdatingPersistedRecord``)."""
    out = np.zeros(len(missing), bool)
    candidates = missing[job.commit_positions(missing) != NEVER_COMMITTED]
    if not len(candidates) or committed.num_rows == 0:
        return out
    lo, hi = int(candidates.min()), int(candidates.max()) + 1
    batch = job.source.batch(lo, hi)
    wanted = batch.filter(pc.is_in(batch.column("offset"), pa.array(candidates)))
    ids = [PARTITION_FIELD, RECORD_KEY_FIELD]
    mine = wanted.select([*ids, ORDERING_FIELD, "offset"])
    theirs = committed.select([*ids, ORDERING_FIELD, "offset", "job"]).rename_columns(
        [*ids, "their_ts", "their_offset", "their_job"]
    )
    pairs = mine.join(theirs, ids, join_type="inner")
    readable = pc.or_(
        pc.not_equal(pairs.column("their_job"), job.source.job_index),
        pc.less(pairs.column("their_offset"), pairs.column("offset")),
    )
    beaten = pairs.filter(
        pc.and_(readable, pc.greater(pairs.column("their_ts"), pairs.column(ORDERING_FIELD)))
    )
    return np.isin(missing, beaten.column("offset").to_numpy(zero_copy_only=False))


def _lost(
    job: JobLedger, offsets: np.ndarray, merge_mode: str, committed: pa.Table | None
) -> list[Violation]:
    """``committed``: the live committed rows of a copy-on-write table (None otherwise), for
    :func:`outranked`."""
    required = required_offsets(job, merge_mode)
    # setdiff1d would sort every committed offset; a membership test of the required ones is
    # enough (same answer: the sorted distinct required offsets that are not committed)
    missing = np.unique(required[np.isin(required, offsets, invert=True)])
    merged_away = job.source.operation != "insert" and merge_mode != COMMIT_TIME_ORDERING
    if committed is not None and merged_away:
        missing = missing[~outranked(job, missing, committed)]
    if not len(missing):
        return []
    what = (
        "records"
        if job.source.operation == "insert"
        else "latest versions per key (by the merge rule)"
    )
    return [
        Violation(
            f"{len(missing)} of the {len(required)} {what} that job {job.name}'s completed "
            f"checkpoints covered (offsets below {job.covered}) are in no completed instant "
            f"(offsets {_ranges(missing.tolist())}): data loss",
            () if job.covered_event is None else (job.covered_event,),
        )
    ]


def _beyond(
    job: JobLedger,
    offsets: np.ndarray,
    instants: np.ndarray,
    by_instant: dict[str, tuple[int, ...]],
) -> list[Violation]:
    beyond = offsets >= job.covered
    if not beyond.any():
        return []
    where = sorted({str(t) for t in np.unique(instants[beyond]).tolist()})
    anchor = () if job.covered_event is None else (job.covered_event,)
    return [
        Violation(
            f"{int(beyond.sum())} records of job {job.name} at or beyond offset {job.covered}, "
            f"which no completed checkpoint covered, were committed by instants "
            f"{', '.join(where[:5])}{' ...' if len(where) > 5 else ''} "
            f"(offsets {_ranges(np.unique(offsets[beyond]).tolist())})",
            tuple(sorted(set(events_of(by_instant, *where)) | set(anchor))),
        )
    ]


def _ranges(offsets: Sequence[int], limit: int = 4) -> str:
    """Sorted offsets as compact ranges: ``3-7, 12, 20-21 ...``."""
    values = sorted(set(int(o) for o in offsets))
    spans: list[tuple[int, int]] = []
    for value in values:
        if spans and value == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], value)
        else:
            spans.append((value, value))
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in spans[:limit]]
    return ", ".join(shown) + (" ..." if len(spans) > limit else "")
