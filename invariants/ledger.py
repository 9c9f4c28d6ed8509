"""The ground-truth ledger, rebuilt from a history alone.

The simulator records (``setup``) each job's source parameters, (``emit``) the offset ranges its
source emitted and (``checkpoint`` ok) the source offset each completed checkpoint covered. Records
are a pure function of (seed, job, offset) (:class:`models.records.RecordSource`), so the ledger can
regenerate exactly what was emitted and compute the model of the table those records imply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from models.history import Event
from models.properties import COMMIT_TIME_ORDERING
from models.records import RECORD_KEY_FIELD, RecordSource
from models.write_task import precombine


class LedgerError(ValueError):
    """The history lacks what the ledger needs (no ``setup`` event, unknown job...)."""


@dataclass(frozen=True)
class JobLedger:
    name: str
    source: RecordSource
    emitted: int  # highest offset emitted (exclusive)
    covered: int  # source offset of the last completed checkpoint
    covered_event: int | None  # index of that checkpoint's ok event


@dataclass(frozen=True)
class Ledger:
    setup: dict
    jobs: tuple[JobLedger, ...]

    @property
    def merge_mode(self) -> str:
        return str(self.setup["table"]["merge_mode"])

    @property
    def insert_only(self) -> bool:
        return all(j.source.operation == "insert" for j in self.jobs)

    def records(self, *, covered_only: bool = True) -> pa.Table:
        """Every record the completed checkpoints covered (or everything emitted)."""
        parts = [j.source.batch(0, j.covered if covered_only else j.emitted) for j in self.jobs]
        return pa.concat_tables(parts)

    def model(self) -> pa.Table:
        """The table those records imply: one row per key (upsert) by the merge mode, every record
        (insert: keys are unique), sorted by key."""
        rows = self.records()
        if not self.insert_only:
            mode = self.merge_mode
            if mode == COMMIT_TIME_ORDERING and len(self.jobs) > 1:
                mode = "EVENT_TIME_ORDERING"  # across jobs only event time is defined
            rows = precombine(_in_offset_order(rows), mode)
        return rows.take(pc.sort_indices(rows, [(RECORD_KEY_FIELD, "ascending")]))


def _in_offset_order(rows: pa.Table) -> pa.Table:
    return rows.take(pc.sort_indices(rows, [("job", "ascending"), ("offset", "ascending")]))


def build_ledger(events: Sequence[Event]) -> Ledger:
    setup = next((e for e in events if e.f == "setup" and e.process == "world"), None)
    if setup is None:
        raise LedgerError("the history has no setup event: not a testbed history")
    jobs_by_name: dict[str, dict] = {j["name"]: j for j in setup.value["jobs"]}
    emitted = dict.fromkeys(jobs_by_name, 0)
    covered: dict[str, tuple[int, int | None]] = {name: (0, None) for name in jobs_by_name}
    for event in events:
        job = event.process.split("/", 1)[0]
        if event.f == "emit" and job in emitted:
            emitted[job] = max(emitted[job], int(event.value["to"]))
        elif event.f == "checkpoint" and event.type == "ok" and job in covered:
            covered[job] = (int(event.value["source_offset"]), event.index)
    out = []
    for name, job in jobs_by_name.items():
        src = job["source"]
        source = RecordSource(
            seed=int(src["seed"]),
            job_index=int(src["job_index"]),
            key_space=int(src["key_space"]),
            partitions=int(src["partitions"]),
            records_per_s=float(src["records_per_s"]),
            operation=str(src["operation"]),
            lateness_ms=int(src.get("lateness_ms", 0)),
        )
        offset, index = covered[name]
        out.append(JobLedger(name, source, emitted[name], offset, index))
    return Ledger(setup.value, tuple(out))


__all__ = ["JobLedger", "Ledger", "LedgerError", "build_ledger"]
