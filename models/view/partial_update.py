"""Multi-stream partial updates (docs/protocol.md section 5.3): several jobs write different
*column groups* of the same keys, each group with its own ordering value, merged per group.

Why: a wide table stitched from several streams (orders, payments, shipments) at the storage
layer instead of a stateful stream join. Each stream's records carry only its own columns; a
merge must take each group from the version with that group's greatest ordering value, so the
result does not depend on which stream committed first, on how updates were split into commits,
or on when compaction folded them into base files.

What Hudi has, and what this module follows (read in apache/hudi, nothing copied):

* ``PartialUpdateAvroPayload`` (HUDI-3304, apache/hudi#4676): a payload whose null fields keep
  the stored value, with *one* ordering field for the whole row. Hudi 1.1 deprecates payloads
  (RFC-97) and maps it to ``EVENT_TIME_ORDERING`` plus partial merging; schema-partial log blocks
  (``hoodie.write.partial.update.schema``, the ``IS_PARTIAL`` block header) make the reader keep
  the previous values of the columns a block lacks. ``hoodie.table.partial.update.mode``
  (``PartialUpdateMode``) only adds value-level modes (``IGNORE_DEFAULTS``, ``FILL_UNAVAILABLE``).
* One ordering value *per column group* was never merged upstream: HUDI-4882
  (apache/hudi#6868, open) and the Tencent fork of the seed article configure it as the ordering
  field ``_ts1:name1,price1;_ts2:name2,price2`` (``MultipleOrderingVal2ColsInfo``): each group's
  columns are taken from the version whose own ordering field is greater, and a delete in any
  group deletes the whole row. HUDI-9569 (several ordering fields) compares them as one tuple,
  which is not this. Paimon's ``sequence-group`` is the same idea as HUDI-4882.

The table properties we write (table version 8, what a Hudi 1.x reader recognises as closely as
possible):

* ``hoodie.record.merge.mode = EVENT_TIME_ORDERING`` with ``hoodie.table.precombine.field = ts``
  (unchanged: every stream also carries the record-level event time ``ts``), as RFC-97 maps
  ``PartialUpdateAvroPayload``;
* ``hoodie.table.legacy.payload.class = org.apache.hudi.common.model.PartialUpdateAvroPayload``
  (Hudi 1.1's record of the payload a table was created with);
* ``hoodie.record.merge.property.hoodie.payload.ordering.field = <HUDI-4882 spec>``: the group
  declaration, under Hudi's prefix for properties a reader hands to its merger
  (``HoodieTableConfig.RECORD_MERGE_PROPERTY_PREFIX``), in the order the groups are declared.

Where our model differs from Hudi: a real Hudi 1.x reader ignores the group declaration and
merges such a table as whole-row ``EVENT_TIME_ORDERING`` on ``ts`` (the known-bad variant
``partial_update_merge = "row"``, which declares the same groups with Hudi's default payload
``DefaultHoodieRecordPayload``), and hudi-rs implements no partial merging at all, so neither is
an oracle for these tables (``testbed check`` says so and skips the comparison). Record-level
columns (Hudi's meta columns, ``ts``, ``offset``, ``job``: not in any group) of a merged row come
from the winner of its *first* group (declared order) that has one; Hudi's payload keeps the
incoming record's meta fields instead, which depends on arrival order. Deletes compete in every
group with their own ordering value (a group's field if they carry it, else the record-level
one; none: unconditional) and, as in HUDI-4882, a delete that wins any group deletes the row.

All of it is column-wise: one sort per group, no Python object per record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.format.properties import TableConfig, format_properties, parse_properties
from models.format.records import RECORD_LEVEL_FIELDS, SCHEMA, column_group_schema
from models.view.table import PROPERTIES_PATH, HudiTable

PAYLOAD_CLASS = "org.apache.hudi.common.model.PartialUpdateAvroPayload"
WHOLE_ROW_PAYLOAD_CLASS = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
"""Hudi's default payload (``EVENT_TIME_ORDERING`` on whole rows): the variant ``row``."""
LEGACY_PAYLOAD_CLASS = "hoodie.table.legacy.payload.class"
MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."
GROUPS_PROPERTY = MERGE_PROPERTY_PREFIX + "hoodie.payload.ordering.field"
"""Where the column groups are declared, in HUDI-4882's ``_ts1:a,b;_ts2:c`` form."""


@dataclass(frozen=True)
class ColumnGroup:
    """One stream's columns and the field holding their ordering value."""

    ordering_field: str
    columns: tuple[str, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        """The ordering field and the columns: everything this group owns."""
        return (self.ordering_field, *self.columns)


def check_groups(groups: Sequence[ColumnGroup]) -> None:
    """Raise ValueError unless the groups own distinct, valid columns (at least one group)."""
    if not groups:
        raise ValueError("partial updates need at least one column group")
    seen: dict[str, int] = {}
    for index, group in enumerate(groups):
        column_group_schema(group.columns, group.ordering_field)  # names, duplicates in one group
        for name in group.fields:
            if name in seen:
                raise ValueError(f"column {name!r} is in groups {seen[name]} and {index}")
            seen[name] = index


def format_column_groups(groups: Sequence[ColumnGroup]) -> str:
    """HUDI-4882's form: ``ordering:col,col;ordering:col``, groups in declared order."""
    check_groups(groups)
    return ";".join(f"{g.ordering_field}:{','.join(g.columns)}" for g in groups)


def parse_column_groups(text: str) -> tuple[ColumnGroup, ...]:
    """The groups of a declaration written by :func:`format_column_groups`."""
    groups = []
    for part in text.split(";"):
        ordering, sep, columns = part.partition(":")
        if not sep:
            raise ValueError(f"{GROUPS_PROPERTY}: {part!r} is not <ordering field>:<columns>")
        groups.append(ColumnGroup(ordering.strip(), tuple(c.strip() for c in columns.split(","))))
    check_groups(groups)
    return tuple(groups)


def declared_groups(config: TableConfig) -> tuple[ColumnGroup, ...]:
    """The column groups a table declares, whatever payload merges them (the table's columns)."""
    text = config.raw.get(GROUPS_PROPERTY, "")
    return parse_column_groups(text) if text else ()


def column_groups(config: TableConfig) -> tuple[ColumnGroup, ...]:
    """The column groups a table merges by: the declared ones if its payload is
    ``PartialUpdateAvroPayload``; empty for a whole-row table."""
    if config.raw.get(LEGACY_PAYLOAD_CLASS) != PAYLOAD_CLASS:
        return ()
    return declared_groups(config)


def declare_column_groups(
    table: HudiTable, groups: Sequence[ColumnGroup], *, payload_class: str = PAYLOAD_CLASS
) -> None:
    """Declare ``groups`` in the table's ``hoodie.properties`` (rewritten whole, as Hudi's
    ``HoodieTableConfig.update`` does) and refresh ``table.config``. ``payload_class``
    :data:`WHOLE_ROW_PAYLOAD_CLASS` is the known-bad variant: the streams' columns are declared
    but the table keeps Hudi's default payload, which merges whole rows on ``ts``."""
    props = parse_properties(table.storage.read(PROPERTIES_PATH).decode("utf-8"))
    props[GROUPS_PROPERTY] = format_column_groups(groups)
    props[LEGACY_PAYLOAD_CLASS] = payload_class
    table.storage.write(PROPERTIES_PATH, format_properties(props).encode())
    table.config = TableConfig(props)


def table_schema(groups: Sequence[ColumnGroup]) -> pa.Schema:
    """The whole table's data columns: the record-level ones, then every group's (nullable: a
    key one stream never wrote has nulls in that stream's columns)."""
    check_groups(groups)
    fields = [SCHEMA.field(name) for name in RECORD_LEVEL_FIELDS]
    for group in groups:
        schema = column_group_schema(group.columns, group.ordering_field)
        fields += [schema.field(name).with_nullable(True) for name in group.fields]
    return pa.schema(fields)


def merge_column_groups(
    rows: pa.Table,
    keys: pa.Array | pa.ChunkedArray,
    deleted: np.ndarray,
    groups: Sequence[ColumnGroup],
    record_ordering: str | None,
) -> pa.Table:
    """The live records among the versions ``rows`` (in merge order; ``keys[i]`` is row ``i``'s
    record key, ``deleted[i]`` whether it is a delete), merged per column group; one row per
    live key, in key order, with the columns of ``rows``.

    Per group: the versions that carry the group's ordering value compete with every delete; the
    greatest ordering value wins (nulls lowest, a delete without a value above all), ties to the
    later version. A key whose group winner is a delete is deleted; otherwise each group's columns
    come from its winner (null where the group has none) and the other columns from the winner of
    the first group that has one."""
    n = rows.num_rows
    if n == 0:
        return rows
    codes = pc.dictionary_encode(keys).combine_chunks()
    code = codes.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_keys = len(codes.dictionary)
    deleted = np.asarray(deleted, bool)
    seq = np.arange(n, dtype=np.int64)
    winners = np.full((len(groups), n_keys), -1, np.int64)
    for g, group in enumerate(groups):
        _rank_group(winners[g], rows, group, code, deleted, seq, record_ordering)
    has = winners >= 0
    killed = (has & deleted[np.maximum(winners, 0)]).any(axis=0)
    live = np.flatnonzero(has.any(axis=0) & ~killed)
    first = np.argmax(has[:, live], axis=0)  # the first group that has a winner
    representative = winners[first, live]
    out = rows.take(pa.array(representative))
    for g, group in enumerate(groups):
        picked = winners[g, live]
        index = pa.array(np.maximum(picked, 0), mask=picked < 0)
        for name in group.fields:
            if name in out.column_names:
                position = out.column_names.index(name)
                # null where the group has no winner, so never declared non-nullable
                field = out.schema.field(name).with_nullable(True)
                out = out.set_column(position, field, rows.column(name).take(index))
    names = codes.dictionary.take(pa.array(code[representative]))
    return out.take(pc.sort_indices(names))


def _rank_group(
    winners_of_group: np.ndarray,
    rows: pa.Table,
    group: ColumnGroup,
    code: np.ndarray,
    deleted: np.ndarray,
    seq: np.ndarray,
    record_ordering: str | None,
) -> None:
    """Set ``winners_of_group[k]`` to the row that wins ``group`` for key code ``k`` (see
    :func:`merge_column_groups`); keys without a candidate keep -1."""
    value = _group_ordering(rows, group.ordering_field, deleted, record_ordering)
    carries = pc.is_valid(value).to_numpy(zero_copy_only=False) & ~deleted
    candidates = np.flatnonzero(carries | deleted)
    if not len(candidates):
        return
    taken = pa.array(candidates)
    value_of = value.take(taken)
    unconditional = deleted[candidates] & ~pc.is_valid(value_of).to_numpy(zero_copy_only=False)
    order = pc.sort_indices(
        pa.table(
            {
                "code": code[candidates],
                "last": unconditional,
                "value": value_of,
                "seq": seq[candidates],
            }
        ),
        sort_keys=[
            ("code", "ascending"),
            ("last", "ascending"),
            ("value", "ascending", "at_start"),
            ("seq", "ascending"),
        ],
    ).to_numpy()
    ranked = code[candidates][order]
    last = np.ones(len(order), bool)
    last[:-1] = ranked[1:] != ranked[:-1]
    winners_of_group[ranked[last]] = candidates[order][last]


def with_group_columns(rows: pa.Table, groups: Sequence[ColumnGroup]) -> pa.Table:
    """``rows`` with every column of ``groups`` (all null where no file read had it): a snapshot
    has the table's columns even before every stream has written into the slices read. The
    declaration names no types, so an absent column has Arrow's null type."""
    for group in groups:
        for name in group.fields:
            if name not in rows.column_names:
                rows = rows.append_column(name, pa.nulls(rows.num_rows))
    return rows


def _group_ordering(
    rows: pa.Table, field: str, deleted: np.ndarray, record_ordering: str | None
) -> pa.ChunkedArray | pa.Array:
    """Each row's ordering value in one group: the group's field, and for a delete that lacks it
    the record-level ordering value (a delete block's ``ordering_value``)."""
    n = rows.num_rows
    value = rows.column(field) if field in rows.column_names else pa.nulls(n, pa.int64())
    if record_ordering is not None and record_ordering in rows.column_names and deleted.any():
        fallback = rows.column(record_ordering)
        if fallback.type != value.type:
            try:
                fallback = fallback.cast(value.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return value
        mask = pa.array(deleted)
        value = pc.coalesce(value, pc.if_else(mask, fallback, pa.scalar(None, value.type)))
    return value


__all__ = [
    "GROUPS_PROPERTY",
    "LEGACY_PAYLOAD_CLASS",
    "PAYLOAD_CLASS",
    "WHOLE_ROW_PAYLOAD_CLASS",
    "ColumnGroup",
    "check_groups",
    "column_groups",
    "declare_column_groups",
    "declared_groups",
    "format_column_groups",
    "merge_column_groups",
    "parse_column_groups",
    "table_schema",
    "with_group_columns",
]
