"""Real Hudi tables on local disk, written by the testbed's own writer the way the simulator
writes them, and the raw pyarrow writes they are compared with.

The simulator's write path (``sim/flink/write_function.py``): a write task's flush goes through
:func:`models.flink.write_files.write_records` (bucket index: one file group per (partition, bucket),
parquet log blocks on MERGE_ON_READ), the coordinator commits the write statuses, and compaction
merges each slice into a base file (:meth:`models.write.writer.TableWriter.write_base_file`). Here the
same calls run synchronously over a fake clock (:func:`models.ports.run`), without the event loop,
so the bench times the writing alone.

Records have the simulator's columns (:data:`models.format.records.SCHEMA`) with keys ``k<id>`` for ids
``0..n-1``: every key once, so the table holds exactly ``n`` live rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from models.flink.write_files import FileLayout, bucket_file_id, write_records
from models.format.arrow_strings import decimal_strings, decimal_suffixes
from models.format.commit_metadata import WriteStat
from models.format.records import (
    ORDERING_FIELD,
    PARTITION_FIELD,
    RECORD_KEY_FIELD,
    SCHEMA,
    bucket_ids,
    splitmix64,
)
from models.format.records import partition_path as partition_path_of
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import LocalStorage
from models.timeline.truetime import make_time_generator
from models.write.table_init import create_table
from models.write.writer import TableWriter

START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z, as the simulator's epoch
PARTITIONS = 4
BUCKETS_PER_PARTITION = 8
UPDATE_SHARE = 10
"""Each update round rewrites one in ``UPDATE_SHARE`` keys: 10% of them."""


def records(ids: np.ndarray, *, version: int = 0, partitions: int = PARTITIONS) -> pa.Table:
    """The rows of keys ``k<id>``, version ``version`` (a later version has a greater ``ts``)."""
    ids = np.asarray(ids, np.int64)
    value = (splitmix64(ids.astype(np.uint64) + np.uint64(version)) >> np.uint64(1)).astype(
        np.int64
    )
    return pa.Table.from_arrays(
        [
            decimal_strings("k", ids, 8),
            decimal_strings("p", ids % partitions, 1),
            pa.array(version * 1_000_000_000 + ids, pa.int64()),
            pa.array(ids, pa.int64()),
            pa.array(np.zeros(len(ids), np.int32), pa.int32()),
            pa.array(value, pa.int64()),
        ],
        schema=SCHEMA,
    )


def update_ids(rows: int, round_index: int) -> np.ndarray:
    """The ids one update round rewrites: 10% of ``0..rows-1`` picked by a hash (so every
    partition and bucket gets some), different in every round."""
    ids = np.arange(rows, dtype=np.int64)
    share = splitmix64(ids.astype(np.uint64)) % np.uint64(UPDATE_SHARE)
    return ids[share == np.uint64(round_index % UPDATE_SHARE)]


def file_group_chunks(
    rows: pa.Table, buckets: int = BUCKETS_PER_PARTITION
) -> list[tuple[str, str, pa.Table]]:
    """``rows`` split as the bucket index splits them: (partition path, file id, rows) per file
    group, in the order :func:`models.flink.write_files.write_records` writes them."""
    parts = decimal_suffixes(rows.column(PARTITION_FIELD), 1)
    groups = parts * buckets + bucket_ids(rows.column(RECORD_KEY_FIELD), buckets)
    chunks = []
    for group in sorted(set(groups.tolist())):
        p, bucket = divmod(group, buckets)
        chunk = rows.filter(pa.array(groups == group))
        chunks.append((partition_path_of(f"p{p}"), bucket_file_id(p, bucket), chunk))
    return chunks


class BenchTable:
    """A MERGE_ON_READ table under ``root`` and a writer over a fake clock, as a job's."""

    def __init__(self, root: Path, *, name: str = "bench") -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.clock = FakeClock(FakeWorld(START_MS))
        generator = make_time_generator("truetime", clock=self.clock, lock=LocalLock(name))
        self.table = create_table(
            LocalStorage(root),
            name=name,
            record_key_field=RECORD_KEY_FIELD,
            ordering_field=ORDERING_FIELD,
            partition_fields=(PARTITION_FIELD,),
        )
        # parquet log blocks, as the simulator writes them (sim/world.py)
        self.writer = TableWriter(self.table, generator, log_block_format="parquet")
        self.layout = FileLayout(
            job_index=0,
            operation="upsert",
            is_mor=True,
            buckets_per_partition=BUCKETS_PER_PARTITION,
        )

    def flush(self, rows: pa.Table) -> list[WriteStat]:
        """One deltacommit of ``rows`` written as a write task flushes them: log files."""
        instant = run(self.writer.start_commit(), self.clock)
        stats = write_records(
            self.writer, instant, rows, task_id=0, layout=self.layout, log_versions={}
        )
        run(self.writer.commit(instant, stats), self.clock)
        return stats

    def write_base_files(self, rows: pa.Table) -> list[WriteStat]:
        """One commit of ``rows`` as base files, one per file group (compaction's output)."""
        instant = run(self.writer.start_commit(), self.clock)
        stats = [
            self.writer.write_base_file(instant, partition, file_id, chunk, task_id=0)
            for partition, file_id, chunk in file_group_chunks(rows)
        ]
        run(self.writer.commit(instant, stats, "INSERT"), self.clock)
        return stats

    def compact(self) -> None:
        scheduled = run(self.writer.schedule_compaction(), self.clock)
        if scheduled is not None:
            run(self.writer.run_compaction(scheduled), self.clock)


@dataclass(frozen=True)
class BuiltTable:
    root: Path
    rows: int
    file_groups: int
    log_files: int
    base_files: int


def build_mor_table(root: Path, rows: int, update_rounds: int) -> BuiltTable:
    """The reader row's table: ``rows`` keys flushed as logs, compacted into base files, then
    ``update_rounds`` deltacommits rewriting 10% of the keys each, left as logs on top."""
    if not 0 <= update_rounds <= UPDATE_SHARE:
        raise ValueError(f"update_rounds must be in [0, {UPDATE_SHARE}]")
    bench = BenchTable(root)
    bench.flush(records(np.arange(rows)))
    bench.compact()
    for round_index in range(update_rounds):
        bench.flush(records(update_ids(rows, round_index), version=round_index + 1))
    data_files = [
        p for p in root.rglob("*") if p.is_file() and ".hoodie" not in p.relative_to(root).parts
    ]
    logs = sum(1 for p in data_files if ".log." in p.name)
    bases = sum(1 for p in data_files if p.suffix == ".parquet")
    groups = {p.name.split("_")[0].lstrip(".") for p in data_files if p.suffix == ".parquet"}
    return BuiltTable(root, rows, len(groups), logs, bases)


def raw_write(rows: pa.Table, folder: Path) -> int:
    """The reference: the same rows split into the same file groups, each written with a plain
    ``pyarrow.parquet.write_table`` (pyarrow's defaults); returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    for index, (_, _, chunk) in enumerate(file_group_chunks(rows)):
        path = folder / f"part-{index:05d}.parquet"
        pq.write_table(chunk, path)
        written += path.stat().st_size
    return written
