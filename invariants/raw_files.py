"""The table's raw files as the checkers parse them: which instants the timeline (active and
archived) holds and when they completed, which data files each completed instant's commit metadata
lists, and what the data files under the table's folders are.

Why a second reading of the table: the checkers judge ``models/`` (the file-system view, slicing,
the reader), so what *should* be visible must not come from that same code. Everything that is a
protocol decision is made here from the raw files: the instant file names are parsed with this
module's own patterns (completion time = the ``_<completion>`` in the completed file's name), data
file names likewise, a file counts as committed only when a completed instant's write stats list it,
and the completion time of a log is that of the deltacommit listing it. From ``models`` this module
only borrows pure format decoders (the Avro of commit metadata and compaction plans, the rows of the
LSM archive), which say what bytes mean, not what is committed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from models.format.commit_metadata import CommitMetadata, read_commit_metadata
from models.format.compaction_plan import CompactionPlan, read_compaction_plan
from models.storage import FileStatus
from models.table_errors import CorruptTableError
from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.instant_time import format_epoch_ms
from models.view.table import HudiTable

COMPACTION_ACTIONS = ("compaction", "logcompaction")
"""Actions that rewrite committed records instead of writing new ones."""
WRITE_FAMILIES = ("commit", "deltacommit", "replacecommit")
"""Completed actions whose write stats list data files."""
COMPLETED_AS = {
    "compaction": "commit",
    "logcompaction": "deltacommit",
    "clustering": "replacecommit",
}

# Own patterns (docs/protocol.md sections 2 and 3); 14-digit legacy times are padded with 999.
TIME_PATTERN = r"(\d{17}|\d{14})"
INSTANT_FILE = re.compile(
    rf"^{TIME_PATTERN}(?:_{TIME_PATTERN})?\.([a-z]+)(?:\.(requested|inflight))?\Z"
)
BASE_FILE = re.compile(rf"^([^_/]+)_(\d+-\d+-\d+)_{TIME_PATTERN}\.(?:parquet|orc|hfile)\Z")
LOG_FILE = re.compile(rf"^\.([^_/]+)_{TIME_PATTERN}\.log\.(\d+)(?:_(\d+-\d+-\d+))?\Z")


class CommittedTableError(CorruptTableError):
    """The table's raw files cannot be read as the checkers need them (a damaged table)."""


def padded_time(text: str) -> str:
    return text + "999" if len(text) == 14 else text


def as_int(times: Sequence[str]) -> np.ndarray:
    """17-digit instant times as int64 (same order as the strings), for numpy filters."""
    return np.array([int(t) for t in times], dtype=np.int64)


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
    if match := LOG_FILE.match(name):
        file_id, instant, version, token = match.groups()
        return DataFile(
            path, partition, name, file_id, True, padded_time(instant), int(version), token or ""
        )
    if match := BASE_FILE.match(name):
        file_id, token, instant = match.groups()
        return DataFile(path, partition, name, file_id, False, padded_time(instant), 0, token)
    return None


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
    deletes: tuple[tuple[str, int], ...] = ()
    """(base file path, ``numDeletes``) of each write stat whose base file a copy-on-write merge
    wrote with records deleted: the file leaves those keys out of its file group."""

    @property
    def completed(self) -> bool:
        return self.completion is not None

    @property
    def is_compaction(self) -> bool:
        return self.action in COMPACTION_ACTIONS

    @property
    def is_write(self) -> bool:
        """A completed commit that wrote new records (not a compaction's rewrite)."""
        family = COMPLETED_AS.get(self.action, self.action)
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
        match = INSTANT_FILE.match(status.name)
        if not match:
            continue
        requested, completion, action, state = match.groups()
        requested = padded_time(requested)
        if action == "inflight" and state is None:  # "<t>.inflight" is a commit's inflight
            action, state = "commit", "inflight"
        files = out.setdefault((requested, COMPLETED_AS.get(action, action)), _ActiveFiles())
        if state is None:
            done = padded_time(completion) if completion else format_epoch_ms(status.modified_ms)
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


def read_instants(table: HudiTable) -> tuple[RawInstant, ...]:
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
            requested = padded_time(row.instant_time)
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
            completion = padded_time(row.completion_time) if row.completion_time else requested
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
        _base_file_deletes(meta) if meta is not None else (),
    )


def _base_file_deletes(meta: CommitMetadata) -> tuple[tuple[str, int], ...]:
    found = []
    for stat in meta.write_stats():
        parsed = parse_data_file(stat.path) if stat.path else None
        if stat.num_deletes and parsed is not None and not parsed.is_log:
            found.append((stat.path, stat.num_deletes))
    return tuple(sorted(found))


def _decode(reader: Any, data: bytes, what: str) -> Any:
    try:
        return reader(data)
    except ValueError as err:
        raise CommittedTableError(f"{what}: {err}") from None


def walk_data(table: HudiTable) -> list[FileStatus]:
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


__all__ = [
    "COMPACTION_ACTIONS",
    "COMPLETED_AS",
    "WRITE_FAMILIES",
    "CommittedTableError",
    "DataFile",
    "RawInstant",
    "as_int",
    "padded_time",
    "parse_data_file",
    "read_instants",
    "walk_data",
]
