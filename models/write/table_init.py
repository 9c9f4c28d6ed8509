"""Creating a table: ``hoodie.properties`` of a new Hudi 1.x table (table version 8, layout 2).

Follows ``HoodieTableMetaClient.TableBuilder.initTable``: the table's properties are written once,
and an existing table is never overwritten.
"""

from __future__ import annotations

from collections.abc import Sequence

from models.format.properties import (
    COMMIT_TIME_ORDERING,
    COPY_ON_WRITE,
    DATABASE_NAME,
    EVENT_TIME_ORDERING,
    MERGE_MODE,
    MERGE_ON_READ,
    PARTITION_FIELDS,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELDS,
    TABLE_NAME,
    TABLE_TYPE,
    TABLE_VERSION,
    TIMELINE_LAYOUT_VERSION,
    TIMELINE_PATH,
    format_properties,
)
from models.storage import Storage
from models.view.table import PROPERTIES_PATH, HudiTable
from models.write.write_handles import WriteError


def create_table(
    storage: Storage,
    *,
    name: str,
    table_type: str = MERGE_ON_READ,
    record_key_field: str,
    ordering_field: str | None = None,
    partition_fields: Sequence[str] = (),
    merge_mode: str | None = None,
    database: str = "default",
    decode_instants: bool = True,
) -> HudiTable:
    """Write ``hoodie.properties`` for a new table version 8 (layout 2) and return the table
    (``decode_instants``: see :class:`~models.view.table.HudiTable`)."""
    if table_type not in (COPY_ON_WRITE, MERGE_ON_READ):
        raise WriteError(
            f"table_type must be {COPY_ON_WRITE} or {MERGE_ON_READ}, not {table_type!r}"
        )
    mode = merge_mode or (EVENT_TIME_ORDERING if ordering_field else COMMIT_TIME_ORDERING)
    if mode == EVENT_TIME_ORDERING and not ordering_field:
        raise WriteError("EVENT_TIME_ORDERING needs an ordering_field")
    props = {
        TABLE_NAME: name,
        TABLE_TYPE: table_type,
        TABLE_VERSION: "8",
        "hoodie.table.initial.version": "8",
        TIMELINE_LAYOUT_VERSION: "2",
        TIMELINE_PATH: "timeline",
        "hoodie.timeline.history.path": "history",
        RECORD_KEY_FIELDS: record_key_field,
        MERGE_MODE: mode,
        DATABASE_NAME: database,
        "hoodie.archivelog.folder": "archived",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.partitionpath.urlencode": "false",
        "hoodie.datasource.write.drop.partition.columns": "false",
        "hoodie.table.keygenerator.type": "SIMPLE" if partition_fields else "NON_PARTITION",
    }
    if ordering_field:
        props[PRECOMBINE_FIELD] = ordering_field
    if partition_fields:
        props[PARTITION_FIELDS] = ",".join(partition_fields)
    if storage.exists(PROPERTIES_PATH):
        raise WriteError("a table already exists there (.hoodie/hoodie.properties)")
    storage.create_if_absent(PROPERTIES_PATH, format_properties(props).encode())
    return HudiTable(storage, decode_instants=decode_instants)
