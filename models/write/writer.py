"""Table writer: create a Hudi 1.x table and write commits, log appends and compactions.

This is how tests (and later the simulator) build real tables through our own protocol code, in
Hudi's on-disk format (table version 8, timeline layout 2), so that the independent reader ``hudi``
(hudi-rs) can open them. The steps are the ones a Hudi write client takes:

1. ``start_commit``: new instant time from the time generator; ``requested`` then ``inflight``.
2. ``write_base_file`` / ``append_log_file``: a marker under ``.hoodie/.temp/<instant>/`` first
   (so a rollback can find the file), then the data file named with the instant's requested time.
3. ``commit``: commit metadata (write stats + the Avro schema in ``extraMetadata``), completion time
   generated and, under the generator's lock, the write finalized (below) and the completed file
   created; markers removed.

Finalizing a write (Hudi's ``HoodieTable.finalizeWrite`` -> ``reconcileAgainstMarkers``, run by the
write client's ``commit`` after conflict resolution and before ``saveAsComplete``): every data file
a ``CREATE``/``MERGE`` marker of the instant announces (``WriteMarkers.createdAndMergedDataPaths``)
that no write stat of the commit lists is deleted. Hudi does it for the duplicate files of retried
Spark tasks; in a Flink job it is what keeps a re-commit honest: a restored instant re-committed
with the write statuses a checkpoint kept must not leave visible the files flushed into it after
that checkpoint (the source replays those records under a new instant). Completed readers take
every file named with a completed instant, so an unlisted file left behind would be visible data
nobody committed. Log files are included: table version 8+ names each log file after the
deltacommit that creates it and Hudi 1.x marks it ``CREATE``
(``WriteMarkers.createLogMarkerIfNotExists``; the ``APPEND`` markers of ``AppendMarkerHandler``
exist for table version 6 only, whose logs are shared across instants and "already fail-safe"),
so an unlisted log file is garbage of this instant like any base file; a listed one stays. One
marker listing per commit.

Compaction follows docs/protocol.md section 4: ``schedule_compaction`` plans, for each file group, the
latest slice's base file plus the logs committed by then (all of which completed before the new
compaction's requested time, since TrueTime times increase), and writes the plan as
``<t>.compaction.requested``; logs that complete later land in the slice the compaction opens.
``run_compaction`` merges each planned slice into a base file at the compaction's time.

Every method that waits (time generation) returns :data:`models.ports.Steps`; drive it with
:func:`models.ports.run` or from the simulator.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from models.format.arrow_strings import numbered_strings, repeated_string
from models.format.arrow_to_avro import avro_schema_for
from models.format.commit_metadata import CommitMetadata, WriteStat, write_commit_metadata
from models.format.compaction_plan import (
    CompactionOperation,
    CompactionPlan,
    read_compaction_plan,
    write_compaction_plan,
)
from models.format.log_blocks import DataBlock, DeleteBlock
from models.format.log_writer import write_log_blocks
from models.format.parquet_files import base_file_parquet
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
from models.ports import Steps
from models.storage import FileAlreadyExistsError, Storage, join
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.view.filenames import (
    BaseFileName,
    FileNameError,
    LogFileName,
    WriteToken,
    check_file_id,
    parse_log_file_name,
)
from models.view.fsview import BaseFile, FileSlice, LogFile, latest_file_slices
from models.view.reader import merge_file_slice, merge_versions
from models.view.table import PROPERTIES_PATH, HudiTable, ViewOptions
from models.write.rollback import delete_markers, list_markers

META_COLUMNS = (
    "_hoodie_commit_time",
    "_hoodie_commit_seqno",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "_hoodie_file_name",
)
PARTITION_METADATA = ".hoodie_partition_metadata"
MARKERS_FOLDER = ".hoodie/.temp"
RECONCILED_MARKER_TYPES = ("CREATE", "MERGE")
"""Markers whose files finalizing a write deletes when the commit does not list them
(``createdAndMergedDataPaths``)."""


class WriteError(RuntimeError):
    """A write the protocol forbids or the input cannot support."""


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


class TableWriter:
    """Writes instants and files of one table through its storage and a time generator."""

    def __init__(
        self,
        table: HudiTable,
        time_generator: object,
        *,
        data_schema: pa.Schema | None = None,
        log_block_format: str = "avro",
        view_options: ViewOptions | None = None,
        stage_id: int = 1,
    ) -> None:
        """``data_schema``: the data columns every commit carries in its metadata when it wrote no
        records itself (a coordinator commits files that write tasks wrote, so it never saw their
        records). ``log_block_format``: ``avro`` (Hudi's default) or ``parquet`` data blocks.
        ``view_options``: the file-slicing rule this writer plans with (a protocol variant).
        ``stage_id``: the middle part of write tokens (Spark stage / Flink job): two jobs writing
        the same file group name their files apart even at the same task and log version."""
        self.table = table
        self.storage = table.storage
        self.timeline = table.active_timeline
        self.time_generator = time_generator
        self.log_block_format = log_block_format
        self.view_options = view_options
        self.stage_id = stage_id
        self._schemas: dict[str, str] = {}  # instant -> Avro schema of its data columns
        self._default_schema = (
            avro_schema_for(data_schema, *self._avro_names()) if data_schema is not None else None
        )

    # --- instants -------------------------------------------------------------------------------

    @property
    def default_action(self) -> str:
        """The action of a regular write: ``deltacommit`` on MERGE_ON_READ, else ``commit``."""
        return "deltacommit" if self.table.config.is_mor else "commit"

    def start_commit(self, action: str | None = None) -> Steps[Instant]:
        """A new instant: time from the generator, then ``requested`` and ``inflight`` files."""
        action = action or self.default_action
        time = yield from self.time_generator.generate_time()  # type: ignore[attr-defined]
        requested = self.timeline.create_requested(time, action)
        return self.timeline.transition_to_inflight(requested)

    def commit(
        self,
        instant: Instant,
        stats: Iterable[WriteStat],
        operation_type: str = "UPSERT",
        *,
        compacted: bool = False,
        precommit: Callable[[], None] | None = None,
        extra_metadata: Mapping[str, str] | None = None,
    ) -> Steps[Instant]:
        """Complete ``instant`` with the given write stats; markers are removed afterwards.

        Under the table lock, right before the completed file is created: ``precommit`` (the OCC
        conflict check; raising aborts the commit), then :meth:`finalize_write`.
        ``extra_metadata`` joins the schema in the commit's ``extraMetadata``."""
        stats = tuple(stats)
        by_partition: dict[str, list[WriteStat]] = {}
        for stat in stats:
            by_partition.setdefault(stat.partition_path, []).append(stat)
        schema = (
            self._schemas.get(instant.requested_time)
            or self._default_schema
            or self._latest_schema()
        )
        extra = {**(extra_metadata or {}), **({"schema": schema} if schema else {})}
        meta = CommitMetadata(
            partition_to_write_stats={p: tuple(s) for p, s in by_partition.items()},
            compacted=compacted,
            operation_type=operation_type,
            extra_metadata=extra,
        )

        def finalize() -> None:
            if precommit is not None:
                precommit()
            self.finalize_write(instant.requested_time, stats)

        done = yield from self.timeline.complete(
            instant, write_commit_metadata(meta), self.time_generator, precommit=finalize
        )
        delete_markers(self.storage, instant.requested_time)
        return done

    def finalize_write(self, instant_time: str, stats: Iterable[WriteStat]) -> list[str]:
        """Delete the data files ``instant_time`` created that ``stats`` do not list; return them.

        Hudi's ``reconcileAgainstMarkers`` (module docstring): the instant's ``CREATE``/``MERGE``
        markers name every file it created, the write stats name the files it commits. Idempotent
        (a retried commit finalizes again; a file already gone counts as deleted)."""
        listed = {s.path for s in stats}
        invalid = sorted(
            m.data_path
            for m in list_markers(self.storage, instant_time)
            if m.marker_type in RECONCILED_MARKER_TYPES and m.data_path not in listed
        )
        for path in invalid:
            self.storage.delete(path)
        return invalid

    # --- data files -----------------------------------------------------------------------------

    def write_base_file(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table,
        *,
        task_id: int = 0,
        prev_commit: str | None = None,
        keep_meta: bool = False,
    ) -> WriteStat:
        """Write ``records`` as the base file of ``file_id`` at ``instant``.

        ``records`` holds the data columns; the meta columns are added unless ``keep_meta`` (a
        compaction keeps each record's original commit time).
        """
        self._check_writable(instant)
        check_file_id(file_id)
        name = str(BaseFileName(file_id, self._token(task_id), instant.requested_time))
        rows = records if keep_meta else self._with_meta(instant, partition, name, records, task_id)
        if keep_meta:
            rows = rows.set_column(
                rows.column_names.index("_hoodie_file_name"),
                "_hoodie_file_name",
                pa.array([name] * rows.num_rows, pa.string()),
            )
        self._remember_schema(instant, records)
        data = base_file_parquet(rows)
        self._write_data_file(instant, partition, name, data, "CREATE")
        return WriteStat(
            file_id=file_id,
            path=join(partition, name),
            partition_path=partition,
            prev_commit=prev_commit,
            num_writes=rows.num_rows,
            num_inserts=rows.num_rows if prev_commit is None else 0,
            num_update_writes=0 if prev_commit is None else rows.num_rows,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
        )

    def upsert_base_file(
        self, instant: Instant, partition: str, file_id: str, records: pa.Table, *, task_id: int = 0
    ) -> WriteStat:
        """Copy-on-write upsert: merge ``records`` into the file group's latest committed slice
        and write the result as a new base file at ``instant`` (a new file group if none)."""
        timeline, groups = self.table.file_groups(options=self.view_options)
        current = next(
            (
                s
                for s in latest_file_slices(groups)
                if (s.partition, s.file_id) == (partition, file_id)
            ),
            None,
        )
        if current is None:
            return self.write_base_file(instant, partition, file_id, records, task_id=task_id)
        old = merge_file_slice(self.table, timeline, current)
        new = self._with_meta(instant, partition, "", records, task_id)
        merged = merge_versions([old, new], [], self.table.config)
        return self.write_base_file(
            instant,
            partition,
            file_id,
            merged,
            task_id=task_id,
            prev_commit=current.base_instant,
            keep_meta=True,
        )

    def append_log_file(
        self,
        instant: Instant,
        partition: str,
        file_id: str,
        records: pa.Table | None = None,
        *,
        delete_keys: pa.Table | None = None,
        task_id: int = 0,
        version: int | None = None,
        name_instant: str | None = None,
    ) -> WriteStat:
        """Write a new log file ``.<file_id>_<instant>.log.<n>_<token>`` with a data block and/or
        a delete block (``delete_keys``: columns ``record_key``, ``partition_path``,
        ``ordering_value``). The name carries the deltacommit's own requested time (1.x).

        ``version``: the log version when the caller tracks it (saves listing the partition).
        ``name_instant``: put this instant in the name instead, the 0.x rule where a log is named
        after the base instant of the slice it targets (variant ``base_instant``); the blocks still
        carry the deltacommit's time in their headers."""
        self._check_writable(instant)
        if not self.table.config.is_mor:
            raise WriteError("log files belong to MERGE_ON_READ tables")
        check_file_id(file_id)
        in_name = name_instant or instant.requested_time
        if version is None:
            version = self._next_log_version(partition, file_id, in_name)
        name = str(LogFileName(file_id, in_name, version, self._token(task_id)))
        blocks = []
        written = 0
        if records is not None and records.num_rows:
            rows = self._with_meta(instant, partition, file_id, records, task_id)
            schema = avro_schema_for(rows.schema, *self._avro_names())
            blocks.append(DataBlock(instant.requested_time, schema, rows, self.log_block_format))
            self._remember_schema(instant, records)
            written = rows.num_rows
        if delete_keys is not None and delete_keys.num_rows:
            blocks.append(DeleteBlock(instant.requested_time, delete_keys))
        if not blocks:
            raise WriteError("a log append needs records or delete keys")
        data = write_log_blocks(blocks)
        # 1.x marks each new log file CREATE; table version 6 appended to shared logs (APPEND)
        marker_type = "CREATE" if self.table.config.version >= 8 else "APPEND"
        self._write_data_file(instant, partition, name, data, marker_type)
        return WriteStat(
            file_id=file_id,
            path=join(partition, name),
            partition_path=partition,
            prev_commit=instant.requested_time,
            num_writes=written,
            num_update_writes=written,
            num_deletes=0 if delete_keys is None else delete_keys.num_rows,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
            base_file="",
            log_files=(name,),
            log_version=version,
            log_offset=0,
            total_log_records=written,
            total_log_blocks=len(blocks),
        )

    # --- compaction -----------------------------------------------------------------------------

    def schedule_compaction(
        self, file_groups: Iterable[tuple[str, str]] | None = None
    ) -> Steps[Instant | None]:
        """Plan a compaction of the latest slices (all file groups, or the given ones) that have
        committed logs; None if there is nothing to compact."""
        time = yield from self.time_generator.generate_time()  # type: ignore[attr-defined]
        wanted = set(file_groups) if file_groups is not None else None
        _, groups = self.table.file_groups(options=self.view_options)
        busy = {(g.partition, g.file_id) for g in groups if g.pending_compactions}
        operations = []
        for s in latest_file_slices(groups):
            group = (s.partition, s.file_id)
            if not s.log_files or group in busy or (wanted is not None and group not in wanted):
                continue  # Hudi plans at most one pending compaction per file group
            if any((lf.completion_time or "") >= time for lf in s.log_files):
                raise WriteError(f"log completed after compaction time {time}: times not monotonic")
            operations.append(
                CompactionOperation(
                    base_instant_time=s.base_instant,
                    partition_path=s.partition,
                    file_id=s.file_id,
                    data_file_path=s.base_file.name if s.base_file else None,
                    delta_file_paths=tuple(lf.name for lf in s.log_files),
                )
            )
        if not operations:
            return None
        plan = write_compaction_plan(CompactionPlan(tuple(operations)))
        return self.timeline.create_requested(time, "compaction", plan)

    def run_compaction(self, scheduled: Instant) -> Steps[Instant]:
        """Execute a scheduled compaction: merge each planned slice into a new base file."""
        if scheduled.action != "compaction" or scheduled.is_completed:
            raise WriteError(f"{scheduled} is not a pending compaction")
        plan = read_compaction_plan(self.timeline.read_content(scheduled.requested()))
        inflight = (
            scheduled
            if scheduled.state is State.INFLIGHT
            else self.timeline.transition_to_inflight(scheduled)
        )
        timeline = self.table.timeline()
        stats = []
        for task_id, op in enumerate(plan.operations):
            planned = FileSlice(
                op.partition_path,
                op.file_id,
                op.base_instant_time or "",
                _planned_base(op),
                tuple(_planned_log(name, timeline) for name in op.delta_file_paths),
            )
            existing = self._existing_base_stat(inflight, op, task_id)
            if existing is not None:  # written by an earlier attempt of this compaction
                stats.append(existing)
                continue
            merged = merge_file_slice(self.table, timeline, planned)
            stats.append(
                self.write_base_file(
                    inflight,
                    op.partition_path,
                    op.file_id,
                    merged,
                    task_id=task_id,
                    prev_commit=op.base_instant_time,
                    keep_meta=True,
                )
            )
        return (yield from self.commit(inflight, stats, operation_type="COMPACT", compacted=True))

    def _existing_base_stat(
        self, instant: Instant, op: CompactionOperation, task_id: int
    ) -> WriteStat | None:
        """The stat of a base file a failed attempt of ``instant`` already wrote (files are
        created whole, so an existing one is complete); None if there is none."""
        name = str(BaseFileName(op.file_id, self._token(task_id), instant.requested_time))
        path = join(op.partition_path, name)
        if not self.storage.exists(path):
            return None
        data = self.storage.read(path)
        rows = pq.read_metadata(io.BytesIO(data)).num_rows
        return WriteStat(
            file_id=op.file_id,
            path=path,
            partition_path=op.partition_path,
            prev_commit=op.base_instant_time,
            num_writes=rows,
            num_update_writes=rows,
            total_write_bytes=len(data),
            file_size_in_bytes=len(data),
        )

    def _token(self, task_id: int) -> WriteToken:
        return WriteToken(task_id, self.stage_id, task_id)

    # --- helpers --------------------------------------------------------------------------------

    def _check_writable(self, instant: Instant) -> None:
        if instant.state is not State.INFLIGHT:
            raise WriteError(f"files are written for an inflight instant, not {instant}")

    def _with_meta(
        self, instant: Instant, partition: str, file_name: str, records: pa.Table, task_id: int
    ) -> pa.Table:
        """Prepend Hudi's five meta columns, built column-wise (no per-record Python objects)."""
        config = self.table.config
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

    def _latest_schema(self) -> str | None:
        """The schema of the latest completed commit that has one: a commit that wrote no records
        (only deletes) must still carry it, readers such as hudi-rs take the table schema from the
        latest commit."""
        for instant in reversed(self.table.timeline().by_completion_time()):
            if instant.action in ("commit", "deltacommit", "replacecommit"):
                schema = self.table.commit_metadata(instant).schema
                if schema:
                    return schema
        return None

    def _avro_names(self) -> tuple[str, str]:
        name = self.table.config.name
        return f"{name}_record", f"hoodie.{name}"

    def _remember_schema(self, instant: Instant, records: pa.Table) -> None:
        data = records.drop_columns([c for c in META_COLUMNS if c in records.column_names])
        self._schemas.setdefault(
            instant.requested_time, avro_schema_for(data.schema, *self._avro_names())
        )

    def _write_data_file(
        self, instant: Instant, partition: str, name: str, data: bytes, marker_type: str
    ) -> None:
        if partition:
            self._ensure_partition_metadata(partition, instant.requested_time)
        marker = join(
            MARKERS_FOLDER, instant.requested_time, partition, f"{name}.marker.{marker_type}"
        )
        with contextlib.suppress(FileAlreadyExistsError):  # a retried write re-creates its marker
            self.storage.create_if_absent(marker, b"")
        self.storage.create_if_absent(join(partition, name), data)

    def _ensure_partition_metadata(self, partition: str, instant_time: str) -> None:
        depth = len(partition.split("/"))
        text = f"#partition metadata\ncommitTime={instant_time}\npartitionDepth={depth}\n"
        with contextlib.suppress(FileAlreadyExistsError):
            self.storage.create_if_absent(join(partition, PARTITION_METADATA), text.encode())

    def _next_log_version(self, partition: str, file_id: str, instant_time: str) -> int:
        versions = []
        for f in self.storage.list_dir(partition):
            try:
                parsed = parse_log_file_name(f.name)
            except FileNameError:
                continue
            if (parsed.file_id, parsed.instant_time) == (file_id, instant_time):
                versions.append(parsed.version)
        return max(versions, default=0) + 1


def _planned_base(op: CompactionOperation) -> BaseFile | None:
    if not op.data_file_path:
        return None
    return BaseFile(op.data_file_path, op.file_id, op.base_instant_time or "")


def _planned_log(name: str, timeline: Timeline) -> LogFile:
    parsed = parse_log_file_name(name)
    return LogFile(name, parsed, timeline.completion_time(parsed.instant_time))
