"""Which time-travel bounds the checkers read the table at: a bounded, deterministic sample of
completion times, most telling first, within a budget of data files to open.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from invariants.committed import CommittedTable
from invariants.raw_files import COMPLETED_AS, WRITE_FAMILIES, RawInstant, as_int


@dataclass(frozen=True)
class TravelPoint:
    """A time-travel bound: the completion time of ``instant``; ``why`` it was chosen."""

    bound: str
    instant: RawInstant
    why: str


MAX_TRAVEL_POINTS = 24
READ_BUDGET_FILES = 2500
"""Time-travel reads may open about this many data files in all (the reader's cost is mostly one
parquet read per file): a table of many small file groups gets fewer points than one of few."""


def travel_points(
    committed: CommittedTable,
    limit: int = MAX_TRAVEL_POINTS,
    budget_files: int = READ_BUDGET_FILES,
) -> list[TravelPoint]:
    """A bounded, deterministic sample of time-travel bounds, most telling first.

    Reading the table as of every completed instant costs one snapshot read each (hundreds per
    run), so the checkers read at most ``limit`` bounds whose estimated reads (the files of the
    latest slices as of the bound) add up to at most ``budget_files``. Bounds are taken in tiers,
    spread evenly within a tier (first, last, middle, quarters...) until the budget runs out:
    (1) every compaction's completion, the last write completed before it was requested (what its
    plan saw), the first write completed while it was pending and the first after it; (2)
    completions while an earlier-requested write instant was still pending (its logs are
    uncommitted there: where an anchor or a pending log can go wrong); (3) an even spread over
    all completions.
    """
    done = committed.completed()
    if not done:
        return []
    return _choose(_tiers(committed, done), _read_cost(committed), limit, budget_files)


def _tiers(committed: CommittedTable, done: list[RawInstant]) -> list[list[tuple[RawInstant, str]]]:
    """The candidate bounds of :func:`travel_points`, tier by tier, each with why it is one."""
    writes = [i for i in done if i.is_write]
    tiers: list[list[tuple[RawInstant, str]]] = [[], [], []]
    for c in committed.compactions():
        tiers[0] += _compaction_points(c, writes)
    others = [
        o
        for o in committed.instants
        if not o.is_compaction and COMPLETED_AS.get(o.action, o.action) in WRITE_FAMILIES
    ]
    for w in writes:
        bound = w.completion or ""
        if any(o.requested < w.requested and o.pending_at(bound) for o in others):
            tiers[1].append((w, "an earlier write instant was still pending"))
    tiers[2] = [(i, "spread") for i in done]
    return tiers


def _compaction_points(c: RawInstant, writes: list[RawInstant]) -> list[tuple[RawInstant, str]]:
    """Tier-1 bounds around compaction ``c``: its completion, the last write completed before it
    was requested (what its plan saw), the first write completed while it was pending (its logs
    completed behind the compaction's barrier before the compaction itself did) and the first
    after it."""
    end = c.completion or "~"  # a compaction still pending at the end of the run: to the end
    done = [w for w in writes if w.completion is not None]
    before = [w for w in done if w.completion < c.requested]
    within = [w for w in done if c.requested < w.completion < end]
    after = [w for w in done if w.completion > end]
    out = [(c, f"completion of compaction {c.requested}")] if c.completion else []
    if before:
        out.append((before[-1], f"last write before compaction {c.requested}"))
    if within:
        out.append((within[0], f"a write completed while compaction {c.requested} was pending"))
    if after:
        out.append((after[0], f"first write after compaction {c.requested}"))
    return out


def _choose(
    tiers: list[list[tuple[RawInstant, str]]], cost: Any, limit: int, budget_files: int
) -> list[TravelPoint]:
    """Bounds taken tier by tier, spread evenly within a tier, until ``limit`` bounds or the
    budget of files to open is reached; sorted by bound."""
    chosen: dict[str, TravelPoint] = {}
    spent = 0
    for tier in tiers:
        unique: dict[str, tuple[RawInstant, str]] = {}
        for instant, why in tier:
            unique.setdefault(instant.completion or "", (instant, why))
        bounds = sorted(unique)
        for position in _spread(len(bounds)):
            bound = bounds[position]
            if len(chosen) >= limit:
                break
            price = cost(bound)
            if bound in chosen or spent + price > budget_files:
                continue
            spent += price
            instant, why = unique[bound]
            chosen[bound] = TravelPoint(bound, instant, why)
    return [chosen[b] for b in sorted(chosen)]


def _spread(n: int) -> list[int]:
    """Positions 0..n-1 in an order that covers the range evenly early: first, last, middle,
    then the middles of the halves, and so on."""
    if n <= 0:
        return []
    order = [0] if n == 1 else [0, n - 1]
    seen = set(order)
    spans = [(0, n - 1)]
    while spans:
        next_spans = []
        for lo, hi in spans:
            mid = (lo + hi) // 2
            if mid not in seen:
                seen.add(mid)
                order.append(mid)
            if mid - lo > 1:
                next_spans.append((lo, mid))
            if hi - mid > 1:
                next_spans.append((mid, hi))
        spans = next_spans
    return order


def _read_cost(committed: CommittedTable) -> Any:
    """Estimated files a snapshot read as of a bound opens: per file group its latest committed
    base file and the committed logs that completed after that base's instant."""
    rows = []
    for instant in committed.instants:
        if instant.completion is None:
            continue
        for f in instant.files:
            rows.append((f.partition + "/" + f.file_id, f.is_log, f.instant, instant.completion))
    if not rows:
        return lambda _bound: 0
    groups = {g: i for i, g in enumerate(sorted({r[0] for r in rows}))}
    group = np.array([groups[r[0]] for r in rows], np.int64)
    is_log = np.array([r[1] for r in rows], bool)
    instant = as_int([r[2] for r in rows])
    completion = as_int([r[3] for r in rows])

    def cost(bound: str) -> int:
        visible = completion <= int(bound)
        latest_base = np.full(len(groups), -1, np.int64)
        bases = visible & ~is_log
        np.maximum.at(latest_base, group[bases], instant[bases])
        logs = visible & is_log & (completion > latest_base[group])
        return int(np.count_nonzero(latest_base >= 0) + np.count_nonzero(logs))

    return cost


__all__ = ["MAX_TRAVEL_POINTS", "READ_BUDGET_FILES", "TravelPoint", "travel_points"]
