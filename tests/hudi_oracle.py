"""Oracle helpers: what the independent reader hudi-rs (PyPI ``hudi``, 0.5.x) sees in a table.

Test helper, not tests. Every function builds a fresh ``HudiTable`` (hudi-rs caches listings per
instance) and normalizes hudi-rs's answer to the testbed's JSON shapes, so a test can compare the
two directly. ``hudi`` is imported lazily; tests should ``pytest.importorskip("hudi")`` first.

Semantics worth knowing when a comparison fails (hudi 0.5.0, checked on crafted tables):

- Snapshot/time travel pick, per file group, the slice with the greatest *base instant* (requested
  time in the base file name) ``<= as_of``; ``as_of`` defaults to the latest completed
  commit/deltacommit/replacecommit by requested time. Completion times never enter that choice.
- Layout 2 (table v8/9): a log file joins the slice with the greatest base instant ``<=`` its
  completion time (non-strict). Logs attaching to no base file form one base-less slice whose
  ``base_instant`` is the requested time of its earliest-completed log; ``base_file`` is None.
- Listed log files are not cut at ``as_of``; the reader drops blocks whose instant is ``> as_of``.
- If ``hoodie.table.metadata.partitions`` in hoodie.properties lists ``files`` (v8+), the file
  listing comes from ``.hoodie/metadata`` instead of storage; options cannot turn that off.
- No partial merging: a table that declares column groups (multi-stream partial updates,
  ``models/view/partial_update.py``) is read as whole rows. :func:`oracle_merges_like_ours` says so;
  compare file slices there, not merged rows.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa

from models.format.properties import TableConfig, parse_properties
from models.view.partial_update import declared_groups

__all__ = [
    "HUDI_AVAILABLE",
    "oracle_file_slices",
    "oracle_merges_like_ours",
    "oracle_read",
    "oracle_table",
    "oracle_timeline",
]

RECORD_KEY_COLUMN = "_hoodie_record_key"
PARTITION_PATH_COLUMN = "_hoodie_partition_path"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"

HUDI_AVAILABLE = importlib.util.find_spec("hudi") is not None


def oracle_merges_like_ours(table_path: str | Path) -> tuple[bool, str]:
    """Whether hudi-rs's merged rows can be compared with ours for this table, and why not.

    Reads ``hoodie.properties`` with the testbed's own parser (no hudi needed): a table declaring
    column groups is merged per group by us and as whole rows by hudi-rs."""
    path = Path(table_path) / ".hoodie" / "hoodie.properties"
    groups = declared_groups(TableConfig(parse_properties(path.read_text("utf-8"))))
    if groups:
        return False, f"{len(groups)} column groups are merged per group; hudi-rs merges rows"
    return True, ""


def _hudi() -> Any:
    """The ``hudi`` module (imported on first use so collecting tests never needs it)."""
    return importlib.import_module("hudi")


def oracle_table(table_path: str | Path, options: Mapping[str, str] | None = None) -> Any:
    """A fresh ``hudi.HudiTable`` for ``table_path``; ``options`` are extra hudi/storage options.

    Note: hoodie.properties wins over ``options`` for table configs (hudi-rs precedence).
    """
    builder = _hudi().HudiTableBuilder.from_base_uri(str(Path(table_path)))
    if options:
        builder = builder.with_options(dict(options))
    return builder.build()


def _read_options(as_of: str | None) -> Any:
    """Snapshot read options, pinned to ``as_of`` when given (``hoodie.read.as.of.timestamp``)."""
    opts = _hudi().HudiReadOptions()
    return opts.with_as_of_timestamp(as_of) if as_of is not None else opts


def oracle_file_slices(
    table_path: str | Path,
    as_of: str | None = None,
    *,
    options: Mapping[str, str] | None = None,
) -> list[dict[str, Any]]:
    """hudi-rs's latest file slices (as of ``as_of``), sorted by (partition, file_id).

    Shape: ``{"partition", "file_id", "base_instant", "base_file", "log_files"}``; ``partition``
    is ``""`` for non-partitioned tables, ``base_file`` is a file name or None (a log-only slice,
    which hudi-rs reports with an empty name), ``log_files`` keep hudi-rs's order (completion
    time, then log version, then write token on layout 2; base instant, version, token on v6).
    """
    table = oracle_table(table_path, options)
    slices = [
        {
            "partition": fs.partition_path,
            "file_id": fs.file_id,
            "base_instant": fs.creation_instant_time,
            "base_file": fs.base_file_name or None,
            "log_files": list(fs.log_file_names),
        }
        for fs in table.get_file_slices(_read_options(as_of))
    ]
    slices.sort(key=lambda s: (s["partition"], s["file_id"]))
    return slices


def _concat(batches: list[pa.RecordBatch]) -> pa.Table | None:
    """One table from hudi-rs's per-slice batches (schemas unified if they differ)."""
    if not batches:
        return None
    schemas = {b.schema for b in batches}
    if len(schemas) == 1:
        return pa.Table.from_batches(batches)
    tables = [pa.Table.from_batches([b]) for b in batches]
    return pa.concat_tables(tables, promote_options="permissive")


def _sortable(field: pa.Field) -> bool:
    """Whether pyarrow can sort on this column type."""
    t = field.type
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t) or pa.types.is_null(t))


def _sort_columns(table: pa.Table, hudi_options: Mapping[str, str]) -> list[str]:
    """Record key, then partition, then every other sortable column (a total order)."""
    names = table.column_names

    def configured(key: str) -> list[str]:
        raw = hudi_options.get(key, "")
        return [f.strip() for f in raw.split(",") if f.strip() and f.strip() in names]

    keys = [RECORD_KEY_COLUMN] if RECORD_KEY_COLUMN in names else configured(RECORD_KEY_FIELDS)
    if PARTITION_PATH_COLUMN in names:
        keys.append(PARTITION_PATH_COLUMN)
    else:
        keys += [f for f in configured(PARTITION_FIELDS) if f not in keys]
    by_name = {f.name: f for f in table.schema}
    keys += [n for n in names if n not in keys and _sortable(by_name[n])]
    return [k for k in keys if _sortable(by_name[k])]


def _empty_table(table: Any, hudi_options: Mapping[str, str]) -> pa.Table:
    """Zero rows with the schema hudi-rs would return (meta fields unless disabled)."""
    with_meta = hudi_options.get("hoodie.populate.meta.fields", "true").lower() != "false"
    try:
        schema = table.get_schema_with_meta_fields() if with_meta else table.get_schema()
    except Exception:  # no commits and no create schema: nothing to describe
        return pa.table({})
    return schema.empty_table()


def oracle_read(
    table_path: str | Path,
    as_of: str | None = None,
    *,
    options: Mapping[str, str] | None = None,
) -> pa.Table:
    """hudi-rs's snapshot (or time-travel) rows, columns as hudi-rs returns them.

    Rows are sorted by ``_hoodie_record_key`` (else the ``hoodie.table.recordkey.fields``
    columns), then partition, then the remaining sortable columns, so equal tables compare equal.
    """
    table = oracle_table(table_path, options)
    hudi_options = table.hudi_options()
    result = _concat(list(table.read(_read_options(as_of))))
    if result is None:
        return _empty_table(table, hudi_options)
    keys = _sort_columns(result, hudi_options)
    if not keys or result.num_rows == 0:
        return result
    return result.sort_by([(k, "ascending") for k in keys])


def oracle_timeline(
    table_path: str | Path, *, options: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Completed instants hudi-rs loads: commit, deltacommit and replacecommit only.

    Sorted by (requested_time, action). hudi-rs's Python API exposes no completion time
    (``completion_time`` is always None) and reports the completed state as ``""``; rollback,
    clean, compaction-requested, indexing etc. are not loaded at all.
    """
    timeline = oracle_table(table_path, options).get_timeline()
    instants = [
        *timeline.get_completed_commits(),
        *timeline.get_completed_deltacommits(),
        *timeline.get_completed_replacecommits(),
    ]
    rows = [
        {
            "requested_time": i.timestamp,
            "completion_time": None,
            "action": i.action,
            "state": i.state,
            "epoch_millis": i.epoch_mills,
        }
        for i in instants
    ]
    rows.sort(key=lambda r: (r["requested_time"], r["action"]))
    return rows
