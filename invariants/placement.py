"""Invariant ``placement``: every committed record lies where its key and partition say.

Two rules, read from the raw files and the history, never from the writer's routing:

* **partition**: a record's file sits in the partition folder its partition fields name, as
  ``hoodie.properties`` says a partition path is formed (the fields' values joined by ``/``,
  ``field=value`` when ``hoodie.datasource.write.hive_style_partitioning`` is true; Hudi's
  ``KeyGenUtils#getPartitionPath``);
* **bucket**: a record an upsert wrote under the bucket index lies in the file group of its
  bucket: the file id's first 8 characters (``BucketIdentifier#bucketIdFromFileId``) equal the
  key's bucket, ``(List.of(key).hashCode() & Integer.MAX_VALUE) % num_buckets``
  (``BucketIdentifier#getBucketId``, Java's ``String.hashCode`` over UTF-16 code units).

Which records the bucket rule covers: the own rows of completed upsert instants (an append-mode
insert's file groups carry no bucket) of jobs whose index is the bucket index (the run's setup
event: every upsert job unless its ``index_type`` names another); the bucket count is the setup's
``buckets_per_partition``. A violation names how many records are misplaced, a few examples with
their file and expected place, and the commits that wrote them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed import CommittedTable, load_committed
from invariants.committed_rows import DELETED, KEY, PARTITION, CommittedRows
from invariants.instant_events import events_of, instant_events
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.view.table import HudiTable

NAME = "placement"
EXAMPLES = 3
HIVE_STYLE = "hoodie.datasource.write.hive_style_partitioning"
INSERTS = ("INSERT", "BULK_INSERT")
BUCKET_INDEX = "bucket"
JOB_FIELD = "job"


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, 32-bit wrap-around), unsigned."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


def key_bucket(key: str, num_buckets: int) -> int:
    """``BucketIdentifier#getBucketId`` of a simple record key: the hash of the one-element list
    ``[key]`` (``31 * 1 + key.hashCode()``), its sign bit cleared, modulo the bucket count."""
    return ((31 + java_string_hash(key)) & 0x7FFFFFFF) % num_buckets


def check_placement(events: Sequence[Event], table: HudiTable) -> Verdict:
    committed = load_committed(table)
    rows = committed.rows
    by_instant = instant_events(events)
    violations = []
    wrong = _wrong_partition(committed, rows)
    if wrong.any():
        violations.append(
            _violation(
                rows, wrong, "in the partition folder their partition fields name", by_instant
            )
        )
    setup = _setup(events)
    if setup is not None:
        wrong = _wrong_bucket(committed, rows, setup)
        if wrong.any():
            violations.append(
                _violation(rows, wrong, "in the file group of their key's bucket", by_instant)
            )
    return Verdict(NAME, tuple(violations))


def expected_partition(committed: CommittedTable, rows: pa.Table) -> pa.Array | None:
    """The partition path each row's partition fields name (None: a non-partitioned table)."""
    fields = committed.config.partition_fields
    if not fields:
        return None
    hive = committed.config.raw.get(HIVE_STYLE, "false").lower() == "true"
    parts = []
    for name in fields:
        if name not in rows.column_names:
            return None
        value = pc.cast(rows.column(name), pa.string())
        parts.append(pc.binary_join_element_wise(f"{name}=", value, "") if hive else value)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _wrong_partition(committed: CommittedTable, rows: CommittedRows) -> np.ndarray:
    expected = expected_partition(committed, rows.table)
    if expected is None or rows.table.num_rows == 0:
        return np.zeros(rows.table.num_rows, bool)
    same = pc.equal(expected, rows.table.column(PARTITION))
    wrong = ~pc.fill_null(same, False).to_numpy(zero_copy_only=False)
    # a delete block's entry has a partition path, not partition fields: not a record here
    tombstone = pc.and_(rows.table.column(DELETED), pc.is_null(expected))
    return wrong & ~pc.fill_null(tombstone, False).to_numpy(zero_copy_only=False)


@dataclass(frozen=True)
class Setup:
    buckets: int
    bucket_jobs: frozenset[int]
    """Indexes of the jobs that write through the bucket index."""


def _setup(events: Sequence[Event]) -> Setup | None:
    setup = next((e for e in events if e.f == "setup" and e.process == "world"), None)
    if setup is None or not isinstance(setup.value, dict):
        return None
    buckets = int(setup.value.get("table", {}).get("buckets_per_partition") or 0)
    if buckets <= 0:
        return None
    jobs = frozenset(
        int(job["source"]["job_index"])
        for job in setup.value.get("jobs", [])
        if job.get("operation", "upsert") == "upsert"
        and job.get("index_type", BUCKET_INDEX) == BUCKET_INDEX
    )
    return Setup(buckets, jobs)


def _wrong_bucket(committed: CommittedTable, rows: CommittedRows, setup: Setup) -> np.ndarray:
    table = rows.table
    n = table.num_rows
    if n == 0 or not setup.bucket_jobs or JOB_FIELD not in table.column_names:
        return np.zeros(n, bool)
    upserted = np.array([i.operation not in INSERTS for i in rows.file_instants], bool)
    jobs = table.column(JOB_FIELD).to_numpy(zero_copy_only=False)
    judged = upserted[rows.file_index] & np.isin(jobs, list(setup.bucket_jobs))
    keys = table.column(KEY)
    unique = pc.unique(keys)
    buckets = np.array([key_bucket(k, setup.buckets) for k in unique.to_pylist()], np.int64)
    key_buckets = buckets[pc.index_in(keys, unique).to_numpy(zero_copy_only=False)]
    file_buckets = np.array([_file_bucket(f.file_id) for f in rows.files], np.int64)
    return judged & (file_buckets[rows.file_index] != key_buckets)


def _file_bucket(file_id: str) -> int:
    """The bucket a file id names (-1: none, which no key has)."""
    head = file_id[:8]
    return int(head) if len(head) == 8 and head.isdigit() else -1


def _violation(
    rows: CommittedRows, wrong: np.ndarray, where: str, by_instant: dict[str, tuple[int, ...]]
) -> Violation:
    index = np.flatnonzero(wrong)
    examples = []
    for i in index[:EXAMPLES].tolist():
        f = rows.files[int(rows.file_index[i])]
        examples.append(f"{rows.table.column(KEY)[i].as_py()} in {f.partition}/{f.file_id}")
    instants = sorted({rows.file_instants[i].requested for i in np.unique(rows.file_index[index])})
    return Violation(
        f"{len(index)} committed records do not lie {where} "
        f"(e.g. {', '.join(examples)}), written by {len(instants)} instants "
        f"({', '.join(instants[:EXAMPLES])}{', ...' if len(instants) > EXAMPLES else ''})",
        events_of(by_instant, *instants),
    )


__all__ = ["NAME", "check_placement", "expected_partition", "java_string_hash", "key_bucket"]
