"""A Hudi table on storage: its config, timeline, listing and file-system view in one place.

This is the I/O side of :mod:`models.view.fsview` (Hudi's ``HoodieTableMetaClient`` plus the listing
part of ``AbstractTableFileSystemView``): it reads ``hoodie.properties``, loads the active timeline,
lists the partitions, reads the pending compaction plans and completed replace commits, and hands
all of it to the pure slicing code.

Its timeline falls back to the archived (LSM) timeline for instants older than the active one
(docs/protocol.md section 8), so the logs of archived deltacommits keep their completion times; the
``archive_lookup=False`` switch reproduces apache/hudi#14365, where that lookup missed the archive.

Reading a table many times over (a checker reads it as of dozens of time-travel bounds) repeats the
same decoding: the LSM archive, compaction plans, file groups. A :class:`ReadCache` passed to
:meth:`HudiTable.timeline` and :meth:`HudiTable.file_groups` (and to ``models.view.reader``) keeps those
results, keyed by what they are computed from (file bytes, listings), never by a path alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from models.format.commit_metadata import (
    CommitMetadata,
    check_completed_instant,
    read_commit_metadata,
)
from models.format.compaction_plan import read_compaction_plan
from models.format.properties import PropertiesError, TableConfig, parse_properties
from models.storage import FileStatus, Storage, join
from models.table_errors import CorruptTableError, HoodieException
from models.timeline.active import (
    ActiveTimeline,
    ArchiveFallback,
    Timeline,
    first_write_time,
    instants_from_listing,
)
from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.instant import Instant, State
from models.timeline.lsm_timeline import ArchiveError
from models.view.filenames import is_base_file_name, is_log_file_name
from models.view.fsview import (
    FileGroup,
    FileSlice,
    SlicingError,
    build_file_groups,
    latest_file_slices,
)

META_FOLDER = ".hoodie"
PROPERTIES_PATH = ".hoodie/hoodie.properties"


class NotAHudiTableError(HoodieException, ValueError):
    """The path has no readable ``.hoodie/hoodie.properties``."""


T = TypeVar("T")

READ_CACHE_BYTES = 128 * 1024 * 1024
"""Default bound of a :class:`ReadCache`: the bytes of the values it holds plus of its keys."""


class ReadCache:
    """Results of reading a table, keyed by their inputs, for many reads of the same table.

    A key holds what the value is a pure function of: the bytes of the files decoded (a file
    rewritten in place, as without put-if-absent, has other bytes, hence another key), listings,
    settings. Bytes are used as keys directly: Python hashes a ``bytes`` object once and compares
    the same object by identity, so a hit costs next to nothing, where a digest would cost a pass
    over the data on every read. So the cache is safe even across writes; it pays only while the
    table does not change much between reads (a checker's time-travel reads of one finished run).

    Least recently used entries are dropped beyond ``max_bytes``, counting each value's Arrow
    buffers (a small constant for other values) and the ``bytes`` in its key (held by the key, if
    not by the storage too).
    """

    SMALL = 1024

    def __init__(self, max_bytes: int = READ_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The value for ``key``, computed by ``compute()`` the first time (an exception is
        raised as is and nothing is kept)."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        size = _size(value) + _key_size(key)
        if size > self.max_bytes:
            return value
        self._entries[key] = (value, size)
        self._bytes += size
        while self._bytes > self.max_bytes:
            _, (_, dropped) = self._entries.popitem(last=False)
            self._bytes -= dropped
        return value

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._bytes


def _size(value: object) -> int:
    nbytes = getattr(value, "nbytes", None)  # Arrow tables and arrays
    if isinstance(nbytes, int):
        return nbytes + ReadCache.SMALL
    if isinstance(value, tuple | list):
        return sum(_size(v) for v in value) + ReadCache.SMALL
    records = getattr(value, "records", None)  # a log data block
    if records is not None:
        return _size(records)
    keys = getattr(value, "keys", None)  # a delete block
    if keys is not None and not callable(keys):
        return _size(keys)
    return ReadCache.SMALL


def _key_size(key: object) -> int:
    if isinstance(key, bytes):
        return len(key)
    if isinstance(key, tuple):
        return sum(_key_size(k) for k in key)
    return 0


@dataclass(frozen=True)
class ViewOptions:
    """Protocol variants of the file-system view (defaults are Hudi 1.x's real rules)."""

    rule: str | None = None  # None: completion_time for table version 8+, base_instant for 6
    anchor: str = "earliest_completed"


class HudiTable:
    """Read access to a table through a :class:`~models.storage.Storage`.

    ``archive_lookup`` (default True, Hudi's intended behavior): completion times of instants that
    were archived off the active timeline are looked up in the LSM timeline. False is the variant
    of apache/hudi#14365: archived instants still count as committed, but their completion times
    are unknown, so file slicing takes their log files for pending ones and drops them (from
    snapshots and from compaction plans). It applies to every timeline this table hands out, so a
    :class:`~models.write.writer.TableWriter` over the table plans compactions the same way.
    """

    def __init__(
        self, storage: Storage, *, archive_lookup: bool = True, decode_instants: bool = True
    ) -> None:
        self.storage = storage
        self.archive_lookup = archive_lookup
        self.decode_instants = decode_instants
        self._decoded: dict[str, bytes] = {}
        try:
            text = storage.read(PROPERTIES_PATH).decode("utf-8")
        except FileNotFoundError:
            raise NotAHudiTableError(f"no {PROPERTIES_PATH}: not a Hudi table") from None
        except UnicodeDecodeError as err:
            raise NotAHudiTableError(f"{PROPERTIES_PATH} is not text: {err}") from None
        self.config = TableConfig(parse_properties(text))
        try:
            self.config.name  # noqa: B018 - validate the keys every reader needs
            self.config.version  # noqa: B018
            self.config.layout_version  # noqa: B018
            self.config.table_type  # noqa: B018
            self.config.merge_mode  # noqa: B018
        except PropertiesError as err:
            raise NotAHudiTableError(f"{PROPERTIES_PATH}: {err}") from None
        self.active_timeline = ActiveTimeline(storage, self.config)

    def timeline(self, *, cache: ReadCache | None = None) -> Timeline:
        """The active timeline, answering for archived instants through the LSM timeline."""
        return self._timeline(cache)[0]

    def _timeline(self, cache: ReadCache | None) -> tuple[Timeline, Hashable]:
        """:meth:`timeline` and, with a cache, a key that stands for it (the listing of the
        timeline folder, the bytes of the archive and the lookup switch; None without a cache)."""
        if cache is None:
            active = self.active_timeline.load()
            key: Hashable = None
        else:
            listing = tuple(self.storage.list_dir(self.active_timeline.folder))
            layout = self.config.layout_version
            key = ("active timeline", layout, listing)
            active = cache.get(key, lambda: Timeline(instants_from_listing(listing, layout)))
        self._decode_completed(active)
        if self.config.layout_version != 2:
            return active, key  # layout 1 keeps its archive in the 0.x log format, not read here
        if cache is None:
            archived = self.archived_timeline()
        else:
            archived, archive_key = self._cached_archive(cache)
            key = (key, archive_key, self.archive_lookup)
        fallback = ArchiveFallback(
            archived,
            start=first_write_time(active.instants),
            use_completion_times=self.archive_lookup,
        )
        return active.with_archive(fallback), key

    def _decode_completed(self, timeline: Timeline) -> None:
        """Decode the file of every completed instant, as Hudi reads them when it loads the
        timeline with its details (``ActiveTimelineV2`` through ``CommitMetadataSerDeV2`` and
        ``TimelineMetadataUtils``); :class:`CorruptTableError` names the first that does not.

        A file is decoded once per content: the bytes that decoded are kept by path, and a read
        that returns them again (the very object, as in-memory storage does, or equal bytes) is
        not decoded again. Off (``decode_instants=False``) for a table whose instants its own
        writers wrote, such as the simulator's, where every read is also a simulated I/O."""
        if not self.decode_instants:
            return
        for instant in timeline.instants:
            if instant.is_completed:
                self._decode_instant_file(instant)

    def _decode_instant_file(self, instant: Instant) -> None:
        path = self.active_timeline.path_of(instant)
        data = self._read_instant(instant)
        known = self._decoded.get(path)
        if known is not None and (known is data or known == data):
            return
        try:
            check_completed_instant(instant.action, data)
        except ValueError as err:
            raise CorruptTableError(f"{path}: {err}") from None
        self._decoded[path] = data

    def _cached_archive(self, cache: ReadCache) -> tuple[ArchivedTimeline, Hashable]:
        """The LSM timeline, loaded once per content of its folder (every file's name and bytes).

        Loaded at once so that what is kept is what the key's bytes say; one that fails to load
        is not kept, and fails lazily as an uncached one does."""
        archived = self.archived_timeline()
        folder = archived.folder
        content = ()
        if folder is not None:
            content = tuple(
                (status.path, self.storage.read(status.path))
                for status in self.storage.list_dir(folder)
            )
        key = ("archived timeline", folder, content)

        def load() -> ArchivedTimeline:
            archived.is_empty()  # loads the rows
            return archived

        try:
            return cache.get(key, load), key
        except ArchiveError:
            return self.archived_timeline(), key

    def archived_timeline(self) -> ArchivedTimeline:
        """A fresh (lazily loading) view of the LSM timeline."""
        return ArchivedTimeline(self.storage, self.config)

    def partitions(self) -> list[str]:
        """Partition paths ("" for a non-partitioned table): folders holding data files."""
        found: list[str] = []
        stack = [""]
        while stack:
            folder = stack.pop()
            if any(_is_data_file(f.name) for f in self.storage.list_dir(folder)):
                found.append(folder)
            for sub in reversed(self.storage.list_subdirs(folder)):
                if not sub.startswith((".", "_")):
                    stack.append(join(folder, sub))
        return sorted(found)

    def listing(self) -> dict[str, list[FileStatus]]:
        return {p: self.storage.list_dir(p) for p in self.partitions()}

    def _read_instant(self, instant: Instant) -> bytes:
        try:
            return self.active_timeline.read_content(instant)
        except FileNotFoundError:
            path = self.active_timeline.path_of(instant)
            raise CorruptTableError(f"{path}: instant file vanished while reading") from None

    def pending_compactions(
        self, timeline: Timeline, *, cache: ReadCache | None = None
    ) -> dict[str, list[tuple[str, str]]]:
        """Requested time -> (partition, file id) of every compaction not yet completed."""
        out: dict[str, list[tuple[str, str]]] = {}
        for instant in timeline.pending().with_actions("compaction"):
            requested = instant.requested()
            data = self._read_instant(requested)
            try:
                plan = decode_once(cache, "compaction plan", read_compaction_plan, data)
            except ValueError as err:
                path = self.active_timeline.path_of(requested)
                raise CorruptTableError(f"{path}: {err}") from None
            out[instant.requested_time] = sorted(
                (op.partition_path, op.file_id) for op in plan.operations
            )
        return out

    def replaced_file_groups(
        self, timeline: Timeline, *, cache: ReadCache | None = None
    ) -> set[tuple[str, str]]:
        """File groups replaced by completed replacecommits (insert overwrite, clustering)."""
        replaced: set[tuple[str, str]] = set()
        for instant in timeline.completed().with_actions("replacecommit"):
            meta = self.commit_metadata(instant, cache=cache)
            for partition, file_ids in meta.partition_to_replace_file_ids.items():
                replaced.update((partition, fid) for fid in file_ids)
        return replaced

    def commit_metadata(
        self, instant: Instant, *, cache: ReadCache | None = None
    ) -> CommitMetadata:
        if instant.state is not State.COMPLETED:
            raise ValueError(f"{instant} has no commit metadata yet")
        data = self._read_instant(instant)
        try:
            return decode_once(cache, "commit metadata", read_commit_metadata, data)
        except ValueError as err:
            raise CorruptTableError(f"{self.active_timeline.path_of(instant)}: {err}") from None

    def file_groups(
        self,
        as_of: str | None = None,
        options: ViewOptions | None = None,
        *,
        cache: ReadCache | None = None,
        only: tuple[str, str] | None = None,
    ) -> tuple[Timeline, list[FileGroup]]:
        """The timeline as of ``as_of`` (default: now) and the file groups it implies (``only``:
        the one (partition, file id), built alone after the same reads).

        With a ``cache``, the file groups are computed once per input: the timeline (its folder's
        listing and the archive's bytes), the bound, the rule, the listing of the data files and
        the pending compactions' and replacecommits' contents."""
        options = options or ViewOptions()
        timeline, timeline_key = self._timeline(cache)
        if as_of is not None:
            timeline = timeline.as_of(as_of)
        rule = options.rule or ("completion_time" if self.config.version >= 8 else "base_instant")
        listing = self.listing()
        pending = self.pending_compactions(timeline, cache=cache)
        replaced = self.replaced_file_groups(timeline, cache=cache)

        def build() -> list[FileGroup]:
            try:
                return build_file_groups(
                    timeline,
                    listing,
                    pending_compactions=pending,
                    replaced_file_groups=replaced,
                    rule=rule,
                    anchor=options.anchor,
                    only=only,
                )
            except SlicingError as err:  # equal instant times: the table breaks the protocol
                raise CorruptTableError(str(err)) from None

        if cache is None:
            return timeline, build()
        key = (
            "file groups",
            timeline_key,
            as_of,
            only,
            rule,
            options.anchor,
            tuple((p, tuple(files)) for p, files in sorted(listing.items())),
            tuple((t, tuple(m)) for t, m in sorted(pending.items())),
            tuple(sorted(replaced)),
        )
        return timeline, list(cache.get(key, lambda: tuple(build())))

    def latest_file_slices(
        self, as_of: str | None = None, options: ViewOptions | None = None
    ) -> list[FileSlice]:
        return latest_file_slices(self.file_groups(as_of, options)[1])


def decode_once(cache: ReadCache | None, kind: str, decode: Callable[[bytes], T], data: bytes) -> T:
    """``decode(data)``; with a cache, once per ``kind`` of decoding and content."""
    if cache is None:
        return decode(data)
    return cache.get((kind, data), lambda: decode(data))


def _is_data_file(name: str) -> bool:
    return is_base_file_name(name) or is_log_file_name(name)
