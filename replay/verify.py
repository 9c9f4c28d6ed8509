"""Distributed data verification: read every file group on an executor, join with the ledger.

The in-process checkers read a whole snapshot into one Arrow table; that stops working at tens of
millions of records. Here nothing record-sized reaches the driver:

1. The driver lists the latest file slice of every file group (timeline + file names only).
2. ``mapInArrow`` over one row per file group: each task opens the table itself (cached per
   Python worker), merges its slice's base file and committed log blocks with our own reader
   (:func:`models.reader.merge_file_slice`, the same code the checkers use) and yields Arrow
   batches.
3. The ledger's model (what the history says the table must hold, :mod:`invariants.ledger`) is
   written as parquet by the driver, in slices, and read back as a DataFrame.
4. Spark joins the two on the record key and counts, per kind of damage, with a few sorted
   examples: **lost** keys (in the model, not in the table), **extra** keys (in the table only),
   **duplicated** keys (more than one live row, e.g. in two file groups), and **wrong versions**
   (both sides have the key but some column differs, a null equal only to a null).

The rule for a wrong version compares every model column, which is the same as comparing the
source position (job, offset) for whole records, since a record is a pure function of it, and is
what multi-stream partial updates need (one row built from several versions).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from invariants.ledger import build_ledger
from models.fsview import FileSlice, latest_file_slices
from models.history import Event, read_history
from models.reader import merge_file_slice
from models.records import RECORD_KEY_FIELD
from models.storage import LocalStorage
from models.table import HudiTable
from models.timeline import Timeline

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

EXAMPLES = 5
MODEL_ROWS_PER_FILE = 1_000_000
PARTITION_PATH = "_hoodie_partition_path"
FILE_ID = "_testbed_file_id"
DAMAGE = ("lost", "extra", "duplicated", "wrong_version")


class VerifyInputError(ValueError):
    """Not a table or a run folder, or a ledger that cannot be read."""


@dataclass(frozen=True)
class Target:
    """What to verify: the table's root and, when known, the history that is its ledger."""

    table_root: Path
    history: Path | None


def resolve_target(path: Path, ledger: Path | None) -> Target:
    """A run folder (``table/`` + ``history.jsonl``) or a table path (+ ``--ledger`` history)."""
    if (path / "table" / ".hoodie").is_dir():
        root, history = path / "table", path / "history.jsonl"
        if not history.is_file():
            history = None
    elif (path / ".hoodie").is_dir():
        root, history = path, None
    elif (path / "result.json").is_file():
        raise VerifyInputError(
            f"{path}: a run folder without a table (it ran with --storage memory); "
            "rerun it with --storage local to verify its table"
        )
    else:
        raise VerifyInputError(f"{path}: neither a Hudi table nor a run folder with table/")
    if ledger is not None:
        if not ledger.is_file():
            raise VerifyInputError(f"--ledger {ledger}: no such file")
        history = ledger
    return Target(root, history)


def load_history(path: Path) -> list[Event]:
    try:
        return read_history(path)
    except (OSError, ValueError) as error:
        raise VerifyInputError(f"{path}: not a testbed history ({error})") from None


def write_model(history: Path, out: Path) -> tuple[pa.Schema, int]:
    """The ledger's model as parquet files under ``out`` (one file per million rows)."""
    model = build_ledger(load_history(history)).model()
    out.mkdir(parents=True, exist_ok=True)
    for index, start in enumerate(range(0, max(model.num_rows, 1), MODEL_ROWS_PER_FILE)):
        part = model.slice(start, MODEL_ROWS_PER_FILE)
        pq.write_table(part, out / f"part-{index:05d}.parquet")
    return model.schema, model.num_rows


def slice_listing(table_root: Path) -> list[tuple[str, str]]:
    """(partition, file id) of every file group with a live slice, sorted."""
    _, slices = _open(str(table_root))
    return sorted(slices)


_OPEN: dict[str, tuple[HudiTable, dict[tuple[str, str], tuple[Timeline, FileSlice]]]] = {}
"""Per Python worker: the table opened once, its latest slices by (partition, file id)."""


def _open(root: str) -> tuple[HudiTable, dict[tuple[str, str], tuple[Timeline, FileSlice]]]:
    if root not in _OPEN:
        table = HudiTable(LocalStorage(Path(root)))
        timeline, groups = table.file_groups()
        _OPEN.clear()  # one table per worker at a time: a sweep of verifies must not pile up
        _OPEN[root] = (
            table,
            {(s.partition, s.file_id): (timeline, s) for s in latest_file_slices(groups)},
        )
    return _OPEN[root]


def output_schema(model_schema: pa.Schema | None) -> pa.Schema:
    """Columns a read task yields: the model's (or just the key), the partition, the file id."""
    fields = [pa.field(RECORD_KEY_FIELD, pa.string())]
    if model_schema is not None:
        fields = [f.with_nullable(True) for f in model_schema]
    return pa.schema(
        [*fields, pa.field(PARTITION_PATH, pa.string()), pa.field(FILE_ID, pa.string())]
    )


def read_file_groups(root: str, schema: pa.Schema):
    """The ``mapInArrow`` function: (partition, file_id) rows in, the slices' live rows out."""

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table, slices = _open(root)
        for batch in batches:
            for partition, file_id in zip(
                batch.column("partition").to_pylist(),
                batch.column("file_id").to_pylist(),
                strict=True,
            ):
                timeline, file_slice = slices[partition, file_id]
                rows = merge_file_slice(table, timeline, file_slice)
                yield from _shaped(rows, schema, partition, file_id).to_batches()

    return read


def _shaped(rows: pa.Table, schema: pa.Schema, partition: str, file_id: str) -> pa.Table:
    n = rows.num_rows
    columns = []
    for field in schema:
        if field.name == PARTITION_PATH:
            columns.append(pa.repeat(pa.scalar(partition, pa.string()), n))
        elif field.name == FILE_ID:
            columns.append(pa.repeat(pa.scalar(file_id, pa.string()), n))
        elif field.name in rows.column_names:
            columns.append(rows.column(field.name).cast(field.type))
        else:  # a column group no stream wrote into this slice
            columns.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(columns, schema=schema)


def table_rows(spark: SparkSession, table_root: Path, schema: pa.Schema) -> tuple[DataFrame, int]:
    """The table's live rows as a DataFrame, one task per file group; and the group count."""
    from pyspark.sql.pandas.types import from_arrow_schema

    groups = slice_listing(table_root)
    listing = spark.createDataFrame(groups or [("", "")], "partition string, file_id string")
    if not groups:
        listing = listing.limit(0)
    listing = listing.repartition(max(1, len(groups)))
    rows = listing.mapInArrow(
        read_file_groups(str(table_root.resolve()), schema), from_arrow_schema(schema)
    )
    return rows, len(groups)


def verify(
    spark: SparkSession, target: Target, work_dir: Path, *, examples: int = EXAMPLES
) -> dict[str, Any]:
    """Compare the table with its ledger on Spark; the report ``verify.json`` carries."""
    from pyspark.sql import functions as F

    model_schema = None
    model_rows = None
    if target.history is not None:
        model_schema, model_rows = write_model(target.history, work_dir / "model")
    rows, file_groups = table_rows(spark, target.table_root, output_schema(model_schema))
    rows = rows.cache()
    key = RECORD_KEY_FIELD
    counts = rows.groupBy(key).agg(F.count(F.lit(1)).alias("copies"))
    duplicated = counts.where(F.col("copies") > 1)
    report: dict[str, Any] = {
        "table": str(target.table_root),
        "ledger": str(target.history) if target.history else None,
        "file_groups": file_groups,
        "rows": {"table": rows.count(), "model": model_rows},
        "duplicated": _damage(duplicated, key, examples),
    }
    if model_schema is not None:
        model = spark.read.parquet(str(work_dir / "model"))
        first = rows.dropDuplicates([key])
        in_model = F.col("m.__present").isNotNull()
        in_table = F.col(f"t.{FILE_ID}").isNotNull()
        joined = (
            model.withColumn("__present", F.lit(True))
            .alias("m")
            .join(first.alias("t"), on=key, how="full_outer")
        )
        differs = F.lit(False)
        for name in model_schema.names:
            if name != key:
                differs = differs | ~F.col(f"m.{name}").eqNullSafe(F.col(f"t.{name}"))
        report["lost"] = _damage(joined.where(in_model & ~in_table), key, examples)
        report["extra"] = _damage(joined.where(~in_model & in_table), key, examples)
        report["wrong_version"] = _damage(
            joined.where(in_model & in_table & differs), key, examples
        )
    rows.unpersist()
    report["ok"] = all(report[kind]["count"] == 0 for kind in DAMAGE if kind in report)
    return report


def _damage(rows: DataFrame, key: str, examples: int) -> dict[str, Any]:
    picked = rows.select(key).orderBy(key).limit(examples).collect()
    return {"count": rows.count(), "examples": [row[key] for row in picked]}


def describe(report: dict[str, Any]) -> list[str]:
    """The report as lines a person reads (``testbed verify``'s output)."""
    verdict = "ok" if report["ok"] else "DAMAGED"
    rows = report["rows"]
    model = f", ledger model {rows['model']}" if rows["model"] is not None else ", no ledger"
    lines = [
        f"{report['table']}: {verdict} ({report['file_groups']} file groups, "
        f"{rows['table']} live rows{model})"
    ]
    for kind in DAMAGE:
        if kind in report:
            found = report[kind]
            shown = ", ".join(found["examples"])
            more = f" (e.g. {shown})" if found["count"] else ""
            lines.append(f"  {kind.replace('_', ' ')}: {found['count']} keys{more}")
    return lines
