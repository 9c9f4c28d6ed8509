"""Row 3, reader and writer: ``testbed read`` against hudi-rs on the same MERGE_ON_READ table with
logs, and writing a table through the testbed's writer against raw ``pyarrow.parquet.write_table``.

The table is written once per bench run, in a temporary folder, by the testbed's own writer the
way the simulator writes (:mod:`bench.tables`): every key flushed as logs, compacted into base
files, then update rounds left as logs, so a snapshot read merges base files with log blocks.

* **read**: our side is ``testbed read`` without printing (open the table, list the timeline and
  file slices, merge every slice with :func:`models.view.reader.read_snapshot`); the reference is
  hudi-rs (``hudi``) opening and reading the same snapshot. Both results are compared once
  (same keys and values), outside the timings.
* **write**: the same rows written by the testbed (meta columns, markers, parquet or log files,
  the commit on the timeline) and written raw, split into the same file groups, each file one
  ``pq.write_table`` with pyarrow's defaults: once as a write task's flush (parquet log blocks)
  and once as base files (what compaction writes).
"""

from __future__ import annotations

import importlib.util
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench import tables
from bench.measure import Log, Measurement, Target, timed
from bench.sizes import Sizes
from models.storage import LocalStorage
from models.view.reader import read_snapshot
from models.view.table import HudiTable

READ_TARGET = Target("<=", 2.0, "within 2x of hudi-rs")
WRITE_TARGET = Target("<=", 1.5, "within 1.5x of raw pyarrow")
HUDI_AVAILABLE = importlib.util.find_spec("hudi") is not None
COMPARED = ("_hoodie_record_key", "ts", "value")


def read_ours(root: Path) -> pa.Table:
    """What ``testbed read PATH`` computes (its printing aside)."""
    return read_snapshot(HudiTable(LocalStorage(root)))


def read_hudi_rs(root: Path) -> pa.Table:
    """hudi-rs opening the table and reading its latest snapshot."""
    import hudi

    table = hudi.HudiTableBuilder.from_base_uri(str(root)).build()
    batches = list(table.read(hudi.HudiReadOptions()))
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def same_rows(ours: pa.Table, theirs: pa.Table) -> bool:
    """Same record keys with the same ordering value and payload, whatever the row order."""
    if ours.num_rows != theirs.num_rows:
        return False
    if ours.num_rows == 0:
        return True

    def canonical(rows: pa.Table) -> pa.Table:
        picked = rows.select(list(COMPARED))
        return picked.sort_by([(COMPARED[0], "ascending")])

    mine, other = canonical(ours), canonical(theirs)
    # column by column: hudi-rs declares the columns non-nullable, which Table.equals would see
    return all(mine.column(name).equals(other.column(name)) for name in COMPARED)


def measure(sizes: Sizes, log: Log) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="testbed-bench-table-") as work:
        return [
            *_read(sizes, log, Path(work) / "table"),
            *_write(sizes, log, Path(work)),
        ]


def _read(sizes: Sizes, log: Log, root: Path) -> list[Measurement]:
    log(f"reader: writing the {sizes.table_rows:,}-row MOR table with the testbed's writer")
    built, build = timed(
        lambda: tables.build_mor_table(root, sizes.table_rows, sizes.table_update_rounds)
    )
    shape: dict[str, Any] = {
        "rows": built.rows,
        "file_groups": built.file_groups,
        "base_files": built.base_files,
        "log_files": built.log_files,
        "update_rounds": sizes.table_update_rounds,
        "build_s": round(build.wall_s, 3),
    }
    read = Measurement(
        row="reader",
        name="read",
        title=f"snapshot of a {built.rows:,}-row MOR table with logs",
        ours="testbed read wall s",
        reference="hudi-rs wall s",
        unit="s",
        ratio_meaning="ours / hudi-rs wall time",
        target=READ_TARGET,
        details=shape,
    )
    if not HUDI_AVAILABLE:
        read.details["skipped"] = "hudi (hudi-rs) is not installed: pip install -e .[test]"
        log("reader: hudi-rs is not installed, the read comparison is skipped")
        return [read]
    for repeat in range(sizes.repeats):
        log(f"reader: read with the testbed and hudi-rs, repeat {repeat + 1}/{sizes.repeats}")
        ours, mine = timed(lambda: read_ours(root))
        theirs, hudi_rs = timed(lambda: read_hudi_rs(root))
        read.add(mine.wall_s, hudi_rs.wall_s, mine.wall_s / hudi_rs.wall_s)
        read.details.setdefault("ours_cpu_s", []).append(round(mine.cpu_s, 3))
        read.details.setdefault("hudi_rs_cpu_s", []).append(round(hudi_rs.cpu_s, 3))
        if repeat == 0:
            read.details["rows_read"] = {"ours": ours.num_rows, "hudi_rs": theirs.num_rows}
            read.details["same_rows"] = same_rows(ours, theirs)
        del ours, theirs
    return [read]


def _write(sizes: Sizes, log: Log, work: Path) -> list[Measurement]:
    rows = tables.records(np.arange(sizes.table_rows))
    what = f"{rows.num_rows:,} rows into {len(tables.file_group_chunks(rows))} file groups"
    logs = Measurement(
        row="reader",
        name="write_logs",
        title=f"write task flush as parquet log blocks ({what})",
        ours="testbed writer wall s",
        reference="pq.write_table wall s",
        unit="s",
        ratio_meaning="ours / raw pyarrow wall time",
        target=WRITE_TARGET,
    )
    bases = Measurement(
        row="reader",
        name="write_base_files",
        title=f"base files, as compaction writes them ({what})",
        ours="testbed writer wall s",
        reference="pq.write_table wall s",
        unit="s",
        ratio_meaning="ours / raw pyarrow wall time",
        target=WRITE_TARGET,
    )
    for repeat in range(sizes.repeats):
        log(f"reader: write {rows.num_rows:,} rows, ours and raw, repeat {repeat + 1}")
        folder = work / f"write-{repeat}"
        for measurement, write in ((logs, "flush"), (bases, "write_base_files")):
            bench = tables.BenchTable(folder / f"ours-{write}")  # created outside the timing
            _, mine = timed(lambda b=bench, w=write: getattr(b, w)(rows))
            size, raw = timed(lambda f=folder / f"raw-{write}": tables.raw_write(rows, f))
            measurement.add(mine.wall_s, raw.wall_s, mine.wall_s / raw.wall_s)
            measurement.details["raw_bytes"] = size
    return [logs, bases]
