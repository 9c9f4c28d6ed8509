"""The table as the data checkers see it, read straight from storage: which instants completed and
when, which files each completed instant's commit metadata lists, and the records in those files.

Why a second reading of the table: the checkers judge ``models/`` (the file-system view, slicing,
the reader), so what *should* be visible must not come from that same code. Everything that is a
protocol decision is made here from the raw files: the instant file names are parsed with this
module's own patterns (completion time = the ``_<completion>`` in the completed file's name), data
file names likewise, a file counts as committed only when a completed instant's write stats list it,
and the completion time of a log is that of the deltacommit listing it. From ``models`` this module
only borrows pure format decoders (the Avro of commit metadata and compaction plans, log blocks,
the rows of the LSM archive), which say what bytes mean, not what is committed.

Records are moved as Arrow tables. :class:`CommittedRows` holds every record a completed write
instant wrote (its *own* rows: ``_hoodie_commit_time`` equal to the instant, which leaves out the
rows a copy-on-write merge or a compaction carried over from older commits), in merge order
(instants by completion time, files by log version, rows in file order), so a checker can merge
them as of any time with plain vectorized filters.

:func:`load_committed` caches one reading per table object and storage state: all data checkers of
a run share it, and the reads of the system under test (:meth:`CommittedTable.sut_read`) with it.
The cache holds a reading only while someone else does (``invariants/checks.py`` keeps it for a
whole :func:`~invariants.checks.check_all`), so a checked run's table and storage are freed as
soon as the caller drops them.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.format.commit_metadata import CommitMetadata, read_commit_metadata
from models.format.compaction_plan import CompactionPlan, read_compaction_plan
from models.format.log_blocks import CommandBlock, DataBlock, DeleteBlock
from models.history import Event
from models.storage import FileStatus
from models.timeline.active import Timeline
from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.instant_time import format_epoch_ms
from models.view.fsview import FileGroup
from models.view.reader import decoded_log_blocks, decoded_parquet, read_snapshot
from models.view.table import CorruptTableError, HudiTable, ReadCache, ViewOptions

COMPACTION_ACTIONS = ("compaction", "logcompaction")
"""Actions that rewrite committed records instead of writing new ones."""
WRITE_FAMILIES = ("commit", "deltacommit", "replacecommit")
"""Completed actions whose write stats list data files."""
_COMPLETED_AS = {
    "compaction": "commit",
    "logcompaction": "deltacommit",
    "clustering": "replacecommit",
}

# Own patterns (docs/protocol.md sections 2 and 3); 14-digit legacy times are padded with 999.
_TIME = r"(\d{17}|\d{14})"
_INSTANT_FILE = re.compile(rf"^{_TIME}(?:_{_TIME})?\.([a-z]+)(?:\.(requested|inflight))?\Z")
_BASE_FILE = re.compile(rf"^([^_/]+)_(\d+-\d+-\d+)_{_TIME}\.(?:parquet|orc|hfile)\Z")
_LOG_FILE = re.compile(rf"^\.([^_/]+)_{_TIME}\.log\.(\d+)(?:_(\d+-\d+-\d+))?\Z")

META_PREFIX = "_hoodie_"
COMMIT_TIME = "_hoodie_commit_time"
RECORD_KEY = "_hoodie_record_key"
PARTITION_PATH = "_hoodie_partition_path"
FILE_NAME = "_hoodie_file_name"
IS_DELETED = "_hoodie_is_deleted"

# Columns of CommittedRows besides the data columns.
KEY = "_c_key"
PARTITION = "_c_partition"
FILE = "_c_file"  # index into CommittedRows.files
TIME = "_c_commit_time"
DELETED = "_c_deleted"
ROW_COLUMNS = (KEY, PARTITION, FILE, TIME, DELETED)


READ_CACHE_ROWS = 2_000_000
"""How many snapshot rows :meth:`CommittedTable.sut_read` keeps for the next checker."""


class CommittedTableError(CorruptTableError):
    """The table's raw files cannot be read as the checkers need them (a damaged table)."""


def _time(text: str) -> str:
    return text + "999" if len(text) == 14 else text


def as_int(times: Sequence[str]) -> np.ndarray:
    """17-digit instant times as int64 (same order as the strings), for numpy filters."""
    return np.array([int(t) for t in times], dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Data files
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DataFile:
    """A data file named as Hudi names them; ``instant`` is the time in the name (for a 1.x log
    the deltacommit that wrote it, under the legacy rule the base instant it targeted)."""

    path: str
    partition: str
    name: str
    file_id: str
    is_log: bool
    instant: str
    version: int = 0
    token: str = ""

    def order_key(self) -> tuple[int, int, str, str]:
        """Order of files within one instant: base files, then logs by version and write token
        (compared as text, as Hudi's log comparator does)."""
        return (int(self.is_log), self.version, self.token, self.name)


def parse_data_file(path: str) -> DataFile | None:
    """The data file at ``path`` (table-relative), None if the name is no data file name."""
    partition, _, name = path.rpartition("/")
    if match := _LOG_FILE.match(name):
        file_id, instant, version, token = match.groups()
        return DataFile(
            path, partition, name, file_id, True, _time(instant), int(version), token or ""
        )
    if match := _BASE_FILE.match(name):
        file_id, token, instant = match.groups()
        return DataFile(path, partition, name, file_id, False, _time(instant), 0, token)
    return None


# --------------------------------------------------------------------------------------------
# Instants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RawInstant:
    """One action on the timeline (active or archived) as its files say.

    ``action`` is the action as requested (``compaction`` for a compaction, also once completed
    as a ``commit``). ``files`` are the data files its write stats list (completed write or
    compaction instants only); ``plan`` is a compaction's plan.
    """

    requested: str
    action: str
    completion: str | None
    archived: bool = False
    files: tuple[DataFile, ...] = ()
    plan: CompactionPlan | None = field(default=None, compare=False)
    operation: str = ""

    @property
    def completed(self) -> bool:
        return self.completion is not None

    @property
    def is_compaction(self) -> bool:
        return self.action in COMPACTION_ACTIONS

    @property
    def is_write(self) -> bool:
        """A completed commit that wrote new records (not a compaction's rewrite)."""
        family = _COMPLETED_AS.get(self.action, self.action)
        return self.completed and family in WRITE_FAMILIES and not self.is_compaction

    def completed_by(self, bound: str) -> bool:
        return self.completion is not None and self.completion <= bound

    def pending_at(self, bound: str) -> bool:
        """Requested by ``bound`` but not completed by then."""
        return self.requested <= bound and not self.completed_by(bound)

    def describe(self) -> str:
        done = f" (completed {self.completion})" if self.completion else " (pending)"
        return f"{self.action} {self.requested}{done}"


@dataclass
class _ActiveFiles:
    action: str | None = None  # action of the requested/inflight file
    requested_path: str | None = None
    completed: list[tuple[str, str, str]] = field(default_factory=list)
    """(completed action, completion time, path): normally one; several only when a storage
    without put-if-absent let two writers complete the same instant time."""


def _load_active(table: HudiTable) -> dict[tuple[str, str], _ActiveFiles]:
    out: dict[tuple[str, str], _ActiveFiles] = {}
    for status in table.storage.list_dir(table.config.timeline_dir):
        match = _INSTANT_FILE.match(status.name)
        if not match:
            continue
        requested, completion, action, state = match.groups()
        requested = _time(requested)
        if action == "inflight" and state is None:  # "<t>.inflight" is a commit's inflight
            action, state = "commit", "inflight"
        files = out.setdefault((requested, _COMPLETED_AS.get(action, action)), _ActiveFiles())
        if state is None:
            done = _time(completion) if completion else format_epoch_ms(status.modified_ms)
            files.completed.append((action, done, status.path))
        else:
            files.action = action
            if state == "requested":
                files.requested_path = status.path
    return out


def _listed_files(meta: CommitMetadata) -> tuple[DataFile, ...]:
    paths: set[str] = set()
    for stat in meta.write_stats():
        if stat.path:
            paths.add(stat.path)
        for name in stat.log_files:
            paths.add(f"{stat.partition_path}/{name}" if stat.partition_path else name)
    files = (parse_data_file(p) for p in sorted(paths))
    return tuple(sorted((f for f in files if f is not None), key=DataFile.order_key))


def _read_instants(table: HudiTable) -> tuple[RawInstant, ...]:
    storage = table.storage
    out: list[RawInstant] = []
    active = _load_active(table)
    for (requested, family), files in sorted(active.items()):
        action = files.action or (files.completed[0][0] if files.completed else family)
        plan = None
        if action in COMPACTION_ACTIONS and files.requested_path is not None:
            data = storage.read(files.requested_path)
            plan = _decode(read_compaction_plan, data, files.requested_path)
        if not files.completed:
            out.append(_raw_instant(requested, action, None, False, None, plan))
        for _, completion, path in sorted(files.completed, key=lambda c: c[1]):
            meta = None
            if family in WRITE_FAMILIES:
                meta = _decode(read_commit_metadata, storage.read(path), path)
            out.append(_raw_instant(requested, action, completion, False, meta, plan))
    if table.config.layout_version == 2:
        for row in ArchivedTimeline(storage, table.config).records():
            requested = _time(row.instant_time)
            if (requested, row.action) in active:
                continue  # archived by a crashed archiver and still active: active wins
            action = row.action
            plan = None
            if row.plan and action in ("commit", "deltacommit"):
                action = "compaction" if action == "commit" else "logcompaction"
                plan = _decode(read_compaction_plan, row.plan, f"archived {requested} plan")
            meta = None
            if row.metadata and row.action in WRITE_FAMILIES:
                meta = _decode(read_commit_metadata, row.metadata, f"archived {requested}")
            completion = _time(row.completion_time) if row.completion_time else requested
            out.append(_raw_instant(requested, action, completion, True, meta, plan))
    return tuple(sorted(out, key=lambda i: (i.requested, i.action)))


def _raw_instant(
    requested: str,
    action: str,
    completion: str | None,
    archived: bool,
    meta: CommitMetadata | None,
    plan: CompactionPlan | None,
) -> RawInstant:
    if meta is not None and (meta.compacted or meta.operation_type == "COMPACT"):
        action = "compaction" if action == "commit" else action
    return RawInstant(
        requested,
        action,
        completion,
        archived,
        _listed_files(meta) if meta is not None else (),
        plan,
        meta.operation_type if meta is not None else "",
    )


def _decode(reader: Any, data: bytes, what: str) -> Any:
    try:
        return reader(data)
    except ValueError as err:
        raise CommittedTableError(f"{what}: {err}") from None


# --------------------------------------------------------------------------------------------
# Rows
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommittedRows:
    """The own rows of every completed write instant, in merge order.

    ``table`` has the columns :data:`ROW_COLUMNS` (record key, partition path from the file's
    folder, index of the file in ``files``, the row's commit time, a delete flag) followed by the
    data columns; ``file_instants[i]`` is the instant whose commit lists ``files[i]``. Row ``r``
    comes before row ``s`` in merge order iff ``r < s``.
    """

    table: pa.Table
    files: tuple[DataFile, ...]
    file_instants: tuple[RawInstant, ...]
    cache: dict[object, Any] = field(default_factory=dict, compare=False, repr=False)
    """Derived columns the checkers compute once per run (identities...)."""

    @cached_property
    def completion(self) -> np.ndarray:
        """Completion time (int64) of the instant that committed each row."""
        per_file = as_int([i.completion or "0" for i in self.file_instants])
        return per_file[self.file_index] if len(per_file) else np.zeros(0, np.int64)

    @cached_property
    def file_index(self) -> np.ndarray:
        return self.table.column(FILE).to_numpy(zero_copy_only=False).astype(np.int64)

    @cached_property
    def instant(self) -> np.ndarray:
        """Requested time (int64) of the instant that committed each row."""
        per_file = as_int([i.requested for i in self.file_instants])
        return per_file[self.file_index] if len(per_file) else np.zeros(0, np.int64)

    def file_ids(self) -> pa.Array:
        return pa.array([f.file_id for f in self.files], pa.string()).take(
            pa.array(self.file_index)
        )

    @property
    def data_columns(self) -> list[str]:
        return [c for c in self.table.column_names if c not in ROW_COLUMNS]

    def upto(self, bound: str) -> np.ndarray:
        """Indices of the rows of instants completed by ``bound``."""
        return np.flatnonzero(self.completion <= int(bound))


def normalize_rows(
    rows: pa.Table, partition: str, file_index: int, config_key_fields: Sequence[str]
) -> pa.Table:
    """A file's rows with the :data:`ROW_COLUMNS` in front and Hudi's meta columns dropped."""
    n = rows.num_rows
    if RECORD_KEY in rows.column_names:
        key = rows.column(RECORD_KEY).cast(pa.string())
    elif len(config_key_fields) == 1 and config_key_fields[0] in rows.column_names:
        key = rows.column(config_key_fields[0]).cast(pa.string())
    else:
        raise CommittedTableError("a data file without _hoodie_record_key or record key column")
    commit = (
        rows.column(COMMIT_TIME).cast(pa.string())
        if COMMIT_TIME in rows.column_names
        else pa.nulls(n, pa.string())
    )
    deleted = (
        pc.fill_null(rows.column(IS_DELETED), False)
        if IS_DELETED in rows.column_names
        else pa.array(np.zeros(n, bool))
    )
    data = rows.drop_columns([c for c in rows.column_names if c.startswith(META_PREFIX)])
    front = pa.table(
        {
            KEY: key,
            PARTITION: pa.array(np.full(n, partition, dtype=object), pa.string()),
            FILE: pa.array(np.full(n, file_index, np.int32)),
            TIME: commit,
            DELETED: deleted,
        }
    )
    for name in data.column_names:
        front = front.append_column(data.schema.field(name), data.column(name))
    return front


def _tombstones(
    keys: pa.Table, partition: str, file_index: int, instant: str, ordering: str | None
) -> pa.Table:
    n = keys.num_rows
    out = pa.table(
        {
            KEY: keys.column("record_key").cast(pa.string()),
            PARTITION: pc.fill_null(keys.column("partition_path").cast(pa.string()), partition),
            FILE: pa.array(np.full(n, file_index, np.int32)),
            TIME: pa.array(np.full(n, instant, dtype=object), pa.string()),
            DELETED: pa.array(np.ones(n, bool)),
        }
    )
    if ordering is not None and "ordering_value" in keys.column_names:
        value = keys.column("ordering_value")
        if pa.types.is_integer(value.type) or pa.types.is_floating(value.type):
            # Hudi's "no ordering value" (0 or null): an unconditional delete
            value = pc.if_else(pc.equal(value, 0), pa.scalar(None, value.type), value)
        out = out.append_column(ordering, value)
    return out


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SystemView:
    """How the system under test reads the table: its protocol variants (``setup`` event)."""

    table: HudiTable
    options: ViewOptions

    @property
    def key(self) -> tuple[object, ...]:
        return (self.table.archive_lookup, self.options.rule, self.options.anchor)


def protocol_of(events: Sequence[Event]) -> dict[str, Any]:
    """The ``[protocol]`` variants of the run (empty for a history without a setup event)."""
    setup = next((e for e in events if e.f == "setup" and e.process == "world"), None)
    if setup is None or not isinstance(setup.value, dict):
        return {}
    return dict(setup.value.get("protocol") or {})


def system_view(events: Sequence[Event], table: HudiTable) -> SystemView:
    """The table as the run's own protocol variant reads it (``sim/world.py`` builds it so)."""
    protocol = protocol_of(events)
    lookup = bool(protocol.get("archived_completion_lookup", True))
    if lookup != table.archive_lookup:
        table = HudiTable(table.storage, archive_lookup=lookup)
    options = ViewOptions(
        rule=protocol.get("file_slicing"),
        anchor=protocol.get("slice_anchor", "earliest_completed"),
    )
    return SystemView(table, options)


class CommittedTable:
    """Committed instants, listed files and rows of a table (see the module docstring)."""

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self.fingerprint: tuple[object, ...] = ()  # the storage state read (see load_committed)
        self.config = table.config
        self.storage = table.storage
        self.instants = _read_instants(table)
        self.files: dict[str, DataFile] = {}
        for status in _walk_data(table):
            parsed = parse_data_file(status.path)
            if parsed is not None:
                self.files[parsed.path] = parsed
        listed: dict[str, list[RawInstant]] = {}
        for instant in self.instants:
            if instant.completed:
                for f in instant.files:
                    listed.setdefault(f.path, []).append(instant)
        self.listed_by = {path: tuple(found) for path, found in listed.items()}
        self.missing = tuple(
            sorted(
                (p, i.requested)
                for p, found in listed.items()
                for i in found
                if p not in self.files
            )
        )
        self._reads: dict[tuple[object, ...], pa.Table] = {}
        self.read_cache = ReadCache()
        """Decoded files, merged slices and file groups, shared by every read of this table
        (the reader's time travel, the file-system view, the base files of the rows above): one
        decoding per file content for a whole check, within the cache's bound."""

    # --- instants ------------------------------------------------------------------------------

    def writes(self) -> list[RawInstant]:
        """Completed write instants in completion order."""
        return sorted(
            (i for i in self.instants if i.is_write),
            key=lambda i: (i.completion, i.requested),
        )

    def compactions(self) -> list[RawInstant]:
        return [i for i in self.instants if i.is_compaction]

    def completed(self) -> list[RawInstant]:
        """Completed write and compaction instants in completion order."""
        done = (i for i in self.instants if i.completed and (i.is_write or i.is_compaction))
        return sorted(done, key=lambda i: (i.completion, i.requested))

    def get(self, requested: str) -> RawInstant | None:
        return next((i for i in self.instants if i.requested == requested), None)

    @cached_property
    def latest_completion(self) -> str | None:
        done = self.completed()
        return done[-1].completion if done else None

    @property
    def insert_only(self) -> bool:
        """Every write was an insert (Flink's append mode): no record is merged with another, so a
        record is identified by its file group and key rather than by its key."""
        writes = self.writes()
        return bool(writes) and all(i.operation in ("INSERT", "BULK_INSERT") for i in writes)

    # --- rows ----------------------------------------------------------------------------------

    @cached_property
    def rows(self) -> CommittedRows:
        files: list[DataFile] = []
        owners: list[RawInstant] = []
        parts: list[pa.Table] = []
        for instant in self.writes():
            for f in instant.files:
                if f.path not in self.files:
                    continue  # listed but gone: the records are lost, which the checkers see
                index = len(files)
                files.append(f)
                owners.append(instant)
                for rows in self._file_rows(f, index, only=instant.requested):
                    own = rows.filter(
                        pc.fill_null(pc.equal(rows.column(TIME), instant.requested), True)
                    )
                    if own.num_rows:
                        parts.append(own)
        if parts:
            # one chunk per column: per-point filters and takes over thousands of small
            # chunks (one per file or block) cost far more than one concatenation
            table = pa.concat_tables(parts, promote_options="permissive").combine_chunks()
            table = table.set_column(
                table.column_names.index(TIME),
                TIME,
                pc.fill_null(table.column(TIME), ""),  # files without meta columns
            )
        else:
            table = pa.table(
                {
                    KEY: pa.array([], pa.string()),
                    PARTITION: pa.array([], pa.string()),
                    FILE: pa.array([], pa.int32()),
                    TIME: pa.array([], pa.string()),
                    DELETED: pa.array([], pa.bool_()),
                }
            )
        return CommittedRows(table, tuple(files), tuple(owners))

    def file_rows(self, path: str) -> pa.Table:
        """Every record of one data file (any file, committed or not) as normalized rows, with
        ``_c_file`` = -1; blocks of all instants, except blocks a rollback command cancelled."""
        parsed = self.files.get(path) or parse_data_file(path)
        if parsed is None:
            raise CommittedTableError(f"{path} is not a data file name")
        parts = list(self._file_rows(parsed, -1, only=None))
        if not parts:
            return self.rows.table.schema.empty_table()
        return pa.concat_tables(parts, promote_options="permissive")

    def _file_rows(self, f: DataFile, index: int, *, only: str | None) -> Iterable[pa.Table]:
        try:
            data = self.storage.read(f.path)
        except FileNotFoundError:
            return
        key_fields = self.config.record_key_fields
        if not f.is_log:
            try:
                rows = decoded_parquet(data, self.read_cache)
            except (pa.ArrowException, OSError, ValueError) as err:
                raise CommittedTableError(f"{f.path}: not a readable parquet file: {err}") from None
            yield normalize_rows(rows, f.partition, index, key_fields)
            return
        try:
            # not kept: most logs are read here once (the reader needs only the latest slices'),
            # and the files a run just wrote come decoded from models.format.recent_log_files anyway
            blocks = decoded_log_blocks(data)
        except ValueError as err:
            raise CommittedTableError(f"{f.path}: {err}") from None
        cancelled = {b.target_instant_time for b in blocks if isinstance(b, CommandBlock)}
        ordering = self.config.ordering_fields[0] if self.config.ordering_fields else None
        for block in blocks:
            if block.instant_time in cancelled or (only is not None and block.instant_time != only):
                continue
            if isinstance(block, DataBlock) and block.records.num_rows:
                yield normalize_rows(block.records, f.partition, index, key_fields)
            elif isinstance(block, DeleteBlock) and block.keys.num_rows:
                yield _tombstones(block.keys, f.partition, index, block.instant_time, ordering)

    # --- the system under test -----------------------------------------------------------------

    def sut_file_groups(
        self, view: SystemView, as_of: str | None = None
    ) -> tuple[Timeline, list[FileGroup]]:
        """The file groups (at ``as_of``) of the system under test's file-system view, computed
        once per input for all checkers (:class:`~models.view.table.ReadCache`)."""
        return view.table.file_groups(as_of=as_of, options=view.options, cache=self.read_cache)

    def sut_read(self, view: SystemView, as_of: str | None = None) -> pa.Table:
        """The reader's snapshot (at ``as_of``) through the system under test's view.

        Cached, since several checkers read the same bounds, up to :data:`READ_CACHE_ROWS` rows
        in all (oldest reads dropped first): an insert-only table's snapshots grow with every
        commit."""
        key = (*view.key, as_of)
        cached = self._reads.get(key)
        if cached is not None:
            return cached
        snapshot = read_snapshot(
            view.table, as_of=as_of, options=view.options, cache=self.read_cache
        )
        self._reads[key] = snapshot
        while sum(t.num_rows for t in self._reads.values()) > READ_CACHE_ROWS and self._reads:
            del self._reads[next(iter(self._reads))]
        return snapshot


def _walk_data(table: HudiTable) -> list[FileStatus]:
    """Every file under the table's folders, skipping ``.hoodie`` and other hidden folders."""
    storage = table.storage
    out: list[FileStatus] = []
    stack = [""]
    while stack:
        folder = stack.pop()
        out.extend(storage.list_dir(folder))
        for sub in storage.list_subdirs(folder):
            if not sub.startswith((".", "_")):
                stack.append(f"{folder}/{sub}" if folder else sub)
    return sorted(out)


def _fingerprint(table: HudiTable) -> tuple[object, ...]:
    storage = table.storage
    timeline = tuple(storage.list_dir(table.config.timeline_dir))
    history = tuple(storage.list_dir(f"{table.config.timeline_dir}/history"))
    return (table.archive_lookup, timeline, history, tuple(_walk_data(table)))


_CACHE: weakref.WeakValueDictionary[int, CommittedTable] = weakref.WeakValueDictionary()
"""``id(table)`` -> its latest reading, held weakly.

Not a ``WeakKeyDictionary`` keyed by the table: its values are held strongly, and a reading holds
its table (and the table its storage), so no key ever died and every checked run stayed in memory
(``testbed explore`` grew by about 25 MB per run). Here nothing but the callers keep a reading
alive; while one is alive its table is too, so the id cannot have been reused by another object
(the identity check guards the rule anyway)."""


def load_committed(table: HudiTable) -> CommittedTable:
    """The committed view of ``table``, read once per table object and storage state as long as
    the caller (or anyone) keeps the reading it got; hold it to share it between checkers."""
    fingerprint = _fingerprint(table)
    cached = _CACHE.get(id(table))
    if cached is not None and cached.table is table and cached.fingerprint == fingerprint:
        return cached
    committed = CommittedTable(table)
    committed.fingerprint = fingerprint
    _CACHE[id(table)] = committed
    return committed


# --------------------------------------------------------------------------------------------
# History
# --------------------------------------------------------------------------------------------


def instant_events(events: Sequence[Event]) -> dict[str, tuple[int, ...]]:
    """Requested time -> indices of the history events that completed it (``commit`` ok of a
    coordinator, ``compaction`` ok of a compactor); several if it was committed more than once."""
    out: dict[str, list[int]] = {}
    for e in events:
        if e.type == "ok" and e.f in ("commit", "compaction") and isinstance(e.value, dict):
            instant = e.value.get("instant")
            if isinstance(instant, str):
                out.setdefault(instant, []).append(e.index)
    return {k: tuple(v) for k, v in out.items()}


def events_of(index: dict[str, tuple[int, ...]], *instants: str) -> tuple[int, ...]:
    """The completing events of ``instants``, sorted and without repeats."""
    return tuple(sorted({i for t in instants for i in index.get(t, ())}))


# --------------------------------------------------------------------------------------------
# Time travel
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TravelPoint:
    """A time-travel bound: the completion time of ``instant``; ``why`` it was chosen."""

    bound: str
    instant: RawInstant
    why: str


MAX_TRAVEL_POINTS = 24
READ_BUDGET_FILES = 2500
"""Time-travel reads may open about this many data files in all (the reader's cost is mostly one
parquet read per file): a table of many small file groups gets fewer points than one of few."""


def travel_points(
    committed: CommittedTable,
    limit: int = MAX_TRAVEL_POINTS,
    budget_files: int = READ_BUDGET_FILES,
) -> list[TravelPoint]:
    """A bounded, deterministic sample of time-travel bounds, most telling first.

    Reading the table as of every completed instant costs one snapshot read each (hundreds per
    run), so the checkers read at most ``limit`` bounds whose estimated reads (the files of the
    latest slices as of the bound) add up to at most ``budget_files``. Bounds are taken in tiers,
    spread evenly within a tier (first, last, middle, quarters...) until the budget runs out:
    (1) every compaction's completion, the last write completed before it was requested (what its
    plan saw) and the first write completed after it; (2) completions while an earlier-requested
    write instant was still pending (its logs are uncommitted there: where an anchor or a pending
    log can go wrong); (3) an even spread over all completions.
    """
    done = committed.completed()
    if not done:
        return []
    writes = [i for i in done if i.is_write]
    tiers: list[list[tuple[RawInstant, str]]] = [[], [], []]
    for c in committed.compactions():
        if c.completion is None:
            continue
        tiers[0].append((c, f"completion of compaction {c.requested}"))
        before = [w for w in writes if w.completion is not None and w.completion < c.requested]
        after = [w for w in writes if w.completion is not None and w.completion > c.completion]
        if before:
            tiers[0].append((before[-1], f"last write before compaction {c.requested}"))
        if after:
            tiers[0].append((after[0], f"first write after compaction {c.requested}"))
    others = [
        o
        for o in committed.instants
        if not o.is_compaction and _COMPLETED_AS.get(o.action, o.action) in WRITE_FAMILIES
    ]
    for w in writes:
        bound = w.completion or ""
        if any(o.requested < w.requested and o.pending_at(bound) for o in others):
            tiers[1].append((w, "an earlier write instant was still pending"))
    tiers[2] = [(i, "spread") for i in done]
    cost = _read_cost(committed)
    chosen: dict[str, TravelPoint] = {}
    spent = 0
    for tier in tiers:
        unique: dict[str, tuple[RawInstant, str]] = {}
        for instant, why in tier:
            unique.setdefault(instant.completion or "", (instant, why))
        bounds = sorted(unique)
        for position in _spread(len(bounds)):
            bound = bounds[position]
            if len(chosen) >= limit:
                break
            price = cost(bound)
            if bound in chosen or spent + price > budget_files:
                continue
            spent += price
            instant, why = unique[bound]
            chosen[bound] = TravelPoint(bound, instant, why)
    return [chosen[b] for b in sorted(chosen)]


def _spread(n: int) -> list[int]:
    """Positions 0..n-1 in an order that covers the range evenly early: first, last, middle,
    then the middles of the halves, and so on."""
    if n <= 0:
        return []
    order = [0] if n == 1 else [0, n - 1]
    seen = set(order)
    spans = [(0, n - 1)]
    while spans:
        next_spans = []
        for lo, hi in spans:
            mid = (lo + hi) // 2
            if mid not in seen:
                seen.add(mid)
                order.append(mid)
            if mid - lo > 1:
                next_spans.append((lo, mid))
            if hi - mid > 1:
                next_spans.append((mid, hi))
        spans = next_spans
    return order


def _read_cost(committed: CommittedTable) -> Any:
    """Estimated files a snapshot read as of a bound opens: per file group its latest committed
    base file and the committed logs that completed after that base's instant."""
    rows = []
    for instant in committed.instants:
        if instant.completion is None:
            continue
        for f in instant.files:
            rows.append((f.partition + "/" + f.file_id, f.is_log, f.instant, instant.completion))
    if not rows:
        return lambda _bound: 0
    groups = {g: i for i, g in enumerate(sorted({r[0] for r in rows}))}
    group = np.array([groups[r[0]] for r in rows], np.int64)
    is_log = np.array([r[1] for r in rows], bool)
    instant = as_int([r[2] for r in rows])
    completion = as_int([r[3] for r in rows])

    def cost(bound: str) -> int:
        visible = completion <= int(bound)
        latest_base = np.full(len(groups), -1, np.int64)
        bases = visible & ~is_log
        np.maximum.at(latest_base, group[bases], instant[bases])
        logs = visible & is_log & (completion > latest_base[group])
        return int(np.count_nonzero(latest_base >= 0) + np.count_nonzero(logs))

    return cost


__all__ = [
    "COMPACTION_ACTIONS",
    "CommittedRows",
    "CommittedTable",
    "CommittedTableError",
    "DataFile",
    "RawInstant",
    "SystemView",
    "TravelPoint",
    "as_int",
    "events_of",
    "instant_events",
    "load_committed",
    "parse_data_file",
    "protocol_of",
    "system_view",
    "travel_points",
]
