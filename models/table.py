"""A Hudi table on storage: its config, timeline, listing and file-system view in one place.

This is the I/O side of :mod:`models.fsview` (Hudi's ``HoodieTableMetaClient`` plus the listing
part of ``AbstractTableFileSystemView``): it reads ``hoodie.properties``, loads the active timeline,
lists the partitions, reads the pending compaction plans and completed replace commits, and hands
all of it to the pure slicing code.

Its timeline falls back to the archived (LSM) timeline for instants older than the active one
(PROTOCOL.md section 8), so the logs of archived deltacommits keep their completion times; the
``archive_lookup=False`` switch reproduces apache/hudi#14365, where that lookup missed the archive.
"""

from __future__ import annotations

from dataclasses import dataclass

from models.archive import ArchivedTimeline
from models.commit_metadata import CommitMetadata, read_commit_metadata, read_compaction_plan
from models.filenames import is_base_file_name, is_log_file_name
from models.fsview import (
    FileGroup,
    FileSlice,
    SlicingError,
    build_file_groups,
    latest_file_slices,
)
from models.instant import Instant, State
from models.properties import PropertiesError, TableConfig, parse_properties
from models.storage import FileStatus, Storage, join
from models.timeline import ActiveTimeline, ArchiveFallback, Timeline, first_write_time

META_FOLDER = ".hoodie"
PROPERTIES_PATH = ".hoodie/hoodie.properties"


class NotAHudiTableError(ValueError):
    """The path has no readable ``.hoodie/hoodie.properties``."""


class CorruptTableError(ValueError):
    """An instant file or table file could not be read; the message names it."""


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
    :class:`~models.writer.TableWriter` over the table plans compactions the same way.
    """

    def __init__(self, storage: Storage, *, archive_lookup: bool = True) -> None:
        self.storage = storage
        self.archive_lookup = archive_lookup
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
        except PropertiesError as err:
            raise NotAHudiTableError(f"{PROPERTIES_PATH}: {err}") from None
        self.active_timeline = ActiveTimeline(storage, self.config)

    def timeline(self) -> Timeline:
        """The active timeline, answering for archived instants through the LSM timeline."""
        active = self.active_timeline.load()
        if self.config.layout_version != 2:
            return active  # layout 1 keeps its archive in the 0.x log format, not read here
        return active.with_archive(
            ArchiveFallback(
                self.archived_timeline(),
                start=first_write_time(active.instants),
                use_completion_times=self.archive_lookup,
            )
        )

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
        except FileNotFoundError as err:
            raise CorruptTableError(f"instant file vanished: {err}") from None

    def pending_compactions(self, timeline: Timeline) -> dict[str, list[tuple[str, str]]]:
        """Requested time -> (partition, file id) of every compaction not yet completed."""
        out: dict[str, list[tuple[str, str]]] = {}
        for instant in timeline.pending().with_actions("compaction"):
            requested = instant.requested()
            data = self._read_instant(requested)
            try:
                plan = read_compaction_plan(data)
            except ValueError as err:
                path = self.active_timeline.path_of(requested)
                raise CorruptTableError(f"{path}: {err}") from None
            out[instant.requested_time] = sorted(
                (op.partition_path, op.file_id) for op in plan.operations
            )
        return out

    def replaced_file_groups(self, timeline: Timeline) -> set[tuple[str, str]]:
        """File groups replaced by completed replacecommits (insert overwrite, clustering)."""
        replaced: set[tuple[str, str]] = set()
        for instant in timeline.completed().with_actions("replacecommit"):
            meta = self.commit_metadata(instant)
            for partition, file_ids in meta.partition_to_replace_file_ids.items():
                replaced.update((partition, fid) for fid in file_ids)
        return replaced

    def commit_metadata(self, instant: Instant) -> CommitMetadata:
        if instant.state is not State.COMPLETED:
            raise ValueError(f"{instant} has no commit metadata yet")
        data = self._read_instant(instant)
        try:
            return read_commit_metadata(data)
        except ValueError as err:
            raise CorruptTableError(f"{self.active_timeline.path_of(instant)}: {err}") from None

    def file_groups(
        self, as_of: str | None = None, options: ViewOptions | None = None
    ) -> tuple[Timeline, list[FileGroup]]:
        """The timeline as of ``as_of`` (default: now) and the file groups it implies."""
        options = options or ViewOptions()
        timeline = self.timeline()
        if as_of is not None:
            timeline = timeline.as_of(as_of)
        rule = options.rule or ("completion_time" if self.config.version >= 8 else "base_instant")
        try:
            groups = build_file_groups(
                timeline,
                self.listing(),
                pending_compactions=self.pending_compactions(timeline),
                replaced_file_groups=self.replaced_file_groups(timeline),
                rule=rule,
                anchor=options.anchor,
            )
        except SlicingError as err:  # equal instant times: the table breaks the protocol
            raise CorruptTableError(str(err)) from None
        return timeline, groups

    def latest_file_slices(
        self, as_of: str | None = None, options: ViewOptions | None = None
    ) -> list[FileSlice]:
        return latest_file_slices(self.file_groups(as_of, options)[1])


def _is_data_file(name: str) -> bool:
    return is_base_file_name(name) or is_log_file_name(name)
