"""Write handles: how one data file is written, with its meta columns, marker and partition file.

What Hudi's write handles share (``HoodieWriteHandle``, ``HoodieCreateHandle``,
``HoodieAppendHandle``) and ``WriteMarkers``: a marker under ``.hoodie/.temp/<instant>/`` is
created before the data file (so a rollback can find the file), the partition gets its
``.hoodie_partition_metadata`` once, Hudi's five meta columns are prepended to the records, and a
new log file takes the next free log version of its file group and instant.
"""

from __future__ import annotations

import contextlib

import pyarrow as pa
import pyarrow.compute as pc

from models.format.arrow_strings import numbered_strings, repeated_string
from models.format.properties import TableConfig
from models.storage import FileAlreadyExistsError, Storage, join
from models.table_errors import HoodieException
from models.timeline.instant import Instant
from models.view.filenames import FileNameError, parse_log_file_name
from models.write.markers import DirectWriteMarkers, WriteMarkers

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
PARTITION_METADATA = ".hoodie_partition_metadata"


class WriteError(HoodieException, RuntimeError):
    """A write the protocol forbids or the input cannot support."""


def with_meta_columns(
    config: TableConfig,
    instant: Instant,
    partition: str,
    file_name: str,
    records: pa.Table,
    task_id: int,
) -> pa.Table:
    """Prepend Hudi's five meta columns, built column-wise (no per-record Python objects)."""
    (key_field,) = config.record_key_fields or (None,)
    if key_field is None or key_field not in records.column_names:
        raise WriteError(f"records need the record key column {key_field!r}")
    present = records.column_names
    data = records.drop_columns([c for c in META_COLUMNS if c in present])
    n = data.num_rows
    key = data.column(key_field)
    meta = {
        "_hoodie_commit_time": repeated_string(instant.requested_time, n),
        "_hoodie_commit_seqno": numbered_strings(f"{instant.requested_time}_{task_id}_", n),
        "_hoodie_record_key": key if key.type == pa.string() else pc.cast(key, pa.string()),
        "_hoodie_partition_path": repeated_string(partition, n),
        "_hoodie_file_name": repeated_string(file_name, n),
    }
    columns = list(meta.values()) + list(data.columns)
    names = list(meta) + data.column_names
    return pa.Table.from_arrays(columns, names=names)


def with_file_name(rows: pa.Table, file_name: str) -> pa.Table:
    """``rows`` (with meta columns) with ``_hoodie_file_name`` set to ``file_name`` for all."""
    return rows.set_column(
        rows.column_names.index("_hoodie_file_name"),
        "_hoodie_file_name",
        repeated_string(file_name, rows.num_rows),
    )


def write_data_file(
    storage: Storage,
    instant: Instant,
    partition: str,
    name: str,
    data: bytes,
    marker_type: str,
    markers: WriteMarkers | None = None,
) -> None:
    """The marker first, then the data file (``WriteMarkers.createIfNotExists``, then the
    handle's write); ``markers``: direct markers on ``storage`` unless given."""
    if partition:
        ensure_partition_metadata(storage, partition, instant.requested_time)
    if markers is None:
        markers = DirectWriteMarkers(storage)
    markers.create_if_not_exists(instant.requested_time, partition, name, marker_type)
    storage.create_if_absent(join(partition, name), data)


def ensure_partition_metadata(storage: Storage, partition: str, instant_time: str) -> None:
    """``.hoodie_partition_metadata`` of ``partition``, written once (``HoodiePartitionMetadata``)."""
    depth = len(partition.split("/"))
    text = f"#partition metadata\ncommitTime={instant_time}\npartitionDepth={depth}\n"
    with contextlib.suppress(FileAlreadyExistsError):
        storage.create_if_absent(join(partition, PARTITION_METADATA), text.encode())


def next_log_version(storage: Storage, partition: str, file_id: str, instant_time: str) -> int:
    """One more than the highest version of the log files of ``file_id`` named ``instant_time``."""
    versions = []
    for f in storage.list_dir(partition):
        if not f.name.startswith("."):  # a base file: a log file's name starts with a dot
            continue
        try:
            parsed = parse_log_file_name(f.name)
        except FileNameError:
            continue
        if (parsed.file_id, parsed.instant_time) == (file_id, instant_time):
            versions.append(parsed.version)
    return max(versions, default=0) + 1
