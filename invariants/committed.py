"""The table as the data checkers see it, read straight from storage: which instants completed and
when (:mod:`invariants.raw_files`), which files each completed instant's commit metadata lists, and
the records in those files (:mod:`invariants.committed_rows`); and the reads of the system under
test through the run's own view (:mod:`invariants.sut_view`), for the checkers to compare.

:func:`load_committed` caches one reading per table object and storage state: all data checkers of
a run share it, and the reads of the system under test (:meth:`CommittedTable.sut_read`) with it.
The cache holds a reading only while someone else does (``invariants/checks.py`` keeps it for a
whole :func:`~invariants.checks.check_all`), so a checked run's table and storage are freed as
soon as the caller drops them.
"""

from __future__ import annotations

import weakref
from functools import cached_property

import pyarrow as pa
import pyarrow.compute as pc

from invariants.committed_rows import (
    KEY,
    TIME,
    CommittedRows,
    file_records,
    rows_table,
    tombstones,
)
from invariants.raw_files import (
    CommittedTableError,
    DataFile,
    RawInstant,
    parse_data_file,
    read_instants,
    walk_data,
)
from invariants.sut_view import SystemView
from models.timeline.active import Timeline
from models.view.fsview import FileGroup
from models.view.reader import read_snapshot
from models.view.table import HudiTable, ReadCache

READ_CACHE_ROWS = 2_000_000
"""How many snapshot rows :meth:`CommittedTable.sut_read` keeps for the next checker."""


class CommittedTable:
    """Committed instants, listed files and rows of a table (see the module docstring)."""

    def __init__(self, table: HudiTable) -> None:
        self.table = table
        self.fingerprint: tuple[object, ...] = ()  # the storage state read (see load_committed)
        self.config = table.config
        self.storage = table.storage
        self.instants = read_instants(table)
        self.files: dict[str, DataFile] = {}
        for status in walk_data(table):
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
        bases: dict[tuple[str, str], DataFile] = {}  # a file group's last committed base file
        for instant in self.writes():
            deletes = dict(instant.deletes)
            for f in instant.files:
                if f.path not in self.files:
                    continue  # listed but gone: the records are lost, which the checkers see
                index = len(files)
                files.append(f)
                owners.append(instant)
                for rows in file_records(
                    self.table, self.read_cache, f, index, only=instant.requested
                ):
                    own = rows.filter(
                        pc.fill_null(pc.equal(rows.column(TIME), instant.requested), True)
                    )
                    if own.num_rows:
                        parts.append(own)
                previous = None if f.is_log else bases.get((f.partition, f.file_id))
                if previous is not None and deletes.get(f.path):
                    parts.extend(self._merge_deletes(previous, f, index, instant, deletes[f.path]))
                if not f.is_log:
                    bases[(f.partition, f.file_id)] = f
        return CommittedRows(rows_table(parts), tuple(files), tuple(owners))

    def _merge_deletes(
        self, previous: DataFile, f: DataFile, index: int, instant: RawInstant, count: int
    ) -> list[pa.Table]:
        """Tombstones at ``instant`` for the keys a copy-on-write merge left out of base file
        ``f`` (its write stat counts ``count`` deletes): the keys of the file group's previous
        base file that ``f`` lacks, when there are no more of them than the stat counts (more
        are keys the merge lost, which the checkers must see as still committed). Each ranks
        just above the version it removed (the next integer ordering value; an equal one for
        other types), so it beats that version and nothing newer, in any merge order."""
        ordering = self.config.ordering_fields[0] if self.config.ordering_fields else None
        old = self._base_rows(previous)
        new = self._base_rows(f).column(KEY)
        gone = old.filter(pc.invert(pc.is_in(old.column(KEY), value_set=new)))
        if not 0 < len(pc.unique(gone.column(KEY))) <= count:
            return []
        values = (
            _just_above(gone.column(ordering))
            if ordering is not None and ordering in gone.column_names
            else pa.nulls(gone.num_rows)
        )
        keys = pa.table(
            {
                "record_key": gone.column(KEY),
                "partition_path": pa.nulls(gone.num_rows, pa.string()),
                "ordering_value": values,
            }
        )
        return [tombstones(keys, f.partition, index, instant.requested, ordering)]

    def _base_rows(self, f: DataFile) -> pa.Table:
        parts = list(file_records(self.table, self.read_cache, f, -1, only=None))
        if not parts:
            return pa.table({KEY: pa.array([], pa.string())})
        return pa.concat_tables(parts, promote_options="permissive")

    def file_rows(self, path: str) -> pa.Table:
        """Every record of one data file (any file, committed or not) as normalized rows, with
        ``_c_file`` = -1; blocks of all instants, except blocks a rollback command cancelled."""
        parsed = self.files.get(path) or parse_data_file(path)
        if parsed is None:
            raise CommittedTableError(f"{path} is not a data file name")
        parts = list(file_records(self.table, self.read_cache, parsed, -1, only=None))
        if not parts:
            return self.rows.table.schema.empty_table()
        return pa.concat_tables(parts, promote_options="permissive")

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


def _just_above(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """The next integer ordering value (the values themselves for other types)."""
    if pa.types.is_integer(values.type):
        return pc.add(values, pa.scalar(1, values.type))
    return values


def _fingerprint(table: HudiTable) -> tuple[object, ...]:
    storage = table.storage
    timeline = tuple(storage.list_dir(table.config.timeline_dir))
    history = tuple(storage.list_dir(f"{table.config.timeline_dir}/history"))
    return (table.archive_lookup, timeline, history, tuple(walk_data(table)))


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


__all__ = ["READ_CACHE_ROWS", "CommittedTable", "load_committed"]
