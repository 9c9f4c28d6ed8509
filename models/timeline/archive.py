"""The archived (LSM) timeline: moving old instants off the active timeline (docs/protocol.md section 8).

The active timeline would grow without bound, and every reader lists it. Hudi 1.x therefore moves
old *completed* instants into ``.hoodie/timeline/history/`` (``hoodie.timeline.history.path``), an
LSM tree of parquet files. What Hudi's source does, and this module follows:

**Layout** (``LSMTimeline``, ``LSMTimelineWriter``, ``HoodieLSMTimelineManifest``):

* data files ``<minInstant>_<maxInstant>_<layer>.parquet``, one row per archived action with the
  columns of ``HoodieLSMTimelineInstant.avsc``: ``instantTime``, ``completionTime``, ``action``
  (the completed action, e.g. ``commit`` for a compaction), ``metadata`` (the completed file's
  bytes), ``plan`` (compaction/clustering/clean plan bytes) and ``version`` (1);
* every change writes ``manifest_<k>`` (JSON ``{"files": [{"fileName", "fileLen"}]}``, the valid
  files of snapshot ``k``), then replaces ``_version_`` with ``k``. A reader reads ``_version_``,
  then that manifest, then the listed files; without ``_version_`` it falls back to the greatest
  ``manifest_<k>`` listed (``LSMTimeline.latestSnapshotVersion``);
* compaction (``compactAndClean``): when a layer holds at least ``merge_factor`` files
  (``hoodie.timeline.compaction.batch.size``, default 10) the oldest ``merge_factor`` of them
  (by name, i.e. by min instant) are merged into one file of the next layer, repeated upwards; then
  manifests beyond the newest ``retained + compacted layers`` (``hoodie.timeline.manifest.retained.
  versions``, default 3) are deleted, and the parquet files none of the kept manifests lists. The
  1 GB size cap on a compaction group is not modeled.

**What may be archived** (``TimelineArchiverV2.getCommitInstantsToArchive``), only when more than
``max_active`` (``hoodie.keep.max.commits``) completed commits/deltacommits/replacecommits are on
the active timeline, keeping at least ``min_active`` (``hoodie.keep.min.commits``), oldest first,
and only commits requested before the earliest of:

1. the latest completed commit before the earliest *pending* write instant (or that pending instant
   itself if there is none): nothing pending is ever archived, nor anything after it;
2. MERGE_ON_READ: the latest completed compaction, or before any compaction the first deltacommit
   (``CompactionUtils.getEarliestInstantToRetainForCompaction`` when fewer than
   ``hoodie.compact.inline.max.delta.commits`` deltacommits follow it); with ``max_delta_commits``
   set, Hudi's exact NUM_COMMITS rule (once at least that many deltacommits follow, the point moves
   forward so that ``max_delta_commits - 1`` of them stay);
3. the first replacecommit/clustering instant (``ClusteringUtils.getEarliestInstantToRetainFor
   Clustering`` with no clean on the timeline, which this testbed never writes): the fsview learns
   which file groups were replaced from those instants, so archiving them would resurrect data;
4. the first completed savepoint (``hoodie.archive.beyond.savepoint`` false).

Completed ``clean`` and ``rollback`` instants requested before the last archived commit go along.
The metadata-table rules of Hudi do not apply (the testbed's tables have none).

**Order of the steps** (``archiveIfRequired``): leftover markers of each archived instant are
deleted, the L0 file is written and the manifest/version updated, *then* the archived instants'
files are deleted from the active timeline (requested/inflight first, then the completed files in
ascending order, so no reader sees a completed instant's plan without its completion: HUDI-7207),
then the LSM compaction and cleaning. A crash in between leaves instants both archived and active,
which readers tolerate (active wins). Hudi runs this under the table lock; the caller of
:func:`archive_instants` owns that.

:class:`ArchivedTimeline` reads it back; :class:`models.timeline.active.ArchiveFallback` plugs it into
completion-time lookups, so file slicing still places the logs of archived deltacommits.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from models.format.properties import TableConfig
from models.storage import Storage, join
from models.table_errors import CorruptTableError
from models.timeline.active import WRITE_ACTIONS
from models.timeline.instant import COMPLETED_ACTION, Instant, InstantFileNameError, State
from models.timeline.instant import parse_instant_file_name as _parse_instant
from models.timeline.instant_time import normalize

if TYPE_CHECKING:
    from models.view.table import HudiTable

HISTORY_PATH_KEY = "hoodie.timeline.history.path"
DEFAULT_HISTORY_PATH = "history"
VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
DEFAULT_MERGE_FACTOR = 10
"""``hoodie.timeline.compaction.batch.size``: L(n) files merged into one L(n+1) file."""
DEFAULT_MANIFEST_RETAINED_VERSIONS = 3
"""``hoodie.timeline.manifest.retained.versions``."""
LSM_TIMELINE_INSTANT_VERSION = 1
MARKERS_FOLDER = ".hoodie/.temp"

_LSM_FILE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet\Z", re.ASCII)
_MANIFEST_FILE = re.compile(r"^manifest_(\d+)\Z", re.ASCII)

LSM_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ]
)
"""Arrow form of ``HoodieLSMTimelineInstant`` (all fields nullable but ``version``)."""

_AVRO_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "HoodieLSMTimelineInstant",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [
            *(
                {"name": name, "type": ["null", kind], "default": None}
                for name, kind in (
                    ("instantTime", "string"),
                    ("completionTime", "string"),
                    ("action", "string"),
                    ("metadata", "bytes"),
                    ("plan", "bytes"),
                )
            ),
            {"name": "version", "type": "int", "default": 1},
        ],
    },
    separators=(",", ":"),
)
"""Stored as ``parquet.avro.schema`` like Hudi's Avro parquet writer, for Avro readers."""


class ArchiveError(ValueError):
    """The archived timeline is unreadable, or archiving was asked for something it must not do."""


class ArchiveReadError(ArchiveError, CorruptTableError):
    """A file of the archived timeline (manifest, LSM data file) is missing or does not decode;
    the message names it. Readers of a table see it as any other damaged table file."""


# --------------------------------------------------------------------------------------------
# File names, manifests
# --------------------------------------------------------------------------------------------


def lsm_file_name(min_instant: str, max_instant: str, layer: int) -> str:
    """``<minInstant>_<maxInstant>_<layer>.parquet`` (``LSMTimelineWriter.newFileName``)."""
    return f"{min_instant}_{max_instant}_{layer}.parquet"


@dataclass(frozen=True, order=True)
class LSMFileName:
    """A parsed LSM data file name: its instant range and layer."""

    min_instant: str
    max_instant: str
    layer: int

    def __str__(self) -> str:
        return lsm_file_name(self.min_instant, self.max_instant, self.layer)


def parse_lsm_file_name(name: str) -> LSMFileName:
    match = _LSM_FILE.match(name)
    if not match:
        raise ArchiveError(f"not an LSM timeline file name: {name!r}")
    return LSMFileName(match.group(1), match.group(2), int(match.group(3)))


@dataclass(frozen=True)
class LSMFileEntry:
    """One valid data file of a snapshot (``HoodieLSMTimelineManifest.LSMFileEntry``)."""

    file_name: str
    file_len: int


@dataclass(frozen=True)
class LSMManifest:
    """The valid data files of one snapshot version, in the order they were added."""

    files: tuple[LSMFileEntry, ...] = ()

    def file_names(self) -> tuple[str, ...]:
        return tuple(f.file_name for f in self.files)

    def to_json(self) -> bytes:
        entries = [{"fileName": f.file_name, "fileLen": f.file_len} for f in self.files]
        return json.dumps({"files": entries}, indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes, what: str) -> LSMManifest:
        if not data.strip():  # Hudi reads an empty manifest as an empty snapshot
            return cls()
        try:
            raw = json.loads(data)
            files = tuple(
                LSMFileEntry(str(f["fileName"]), int(f.get("fileLen", 0))) for f in raw["files"]
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ArchiveReadError(f"{what} is not an LSM timeline manifest: {err}") from None
        return cls(files)

    def without(self, names: Iterable[str]) -> LSMManifest:
        drop = set(names)
        return LSMManifest(tuple(f for f in self.files if f.file_name not in drop))

    def plus(self, entry: LSMFileEntry) -> LSMManifest:
        return LSMManifest((*self.files, entry))


def history_folder(config: TableConfig) -> str | None:
    """Folder of the LSM timeline; None for layout 1, whose ``.hoodie/archived`` log files (the
    0.x archive format) are not read here."""
    if config.layout_version != 2:
        return None
    return join(config.timeline_dir, config.raw.get(HISTORY_PATH_KEY, DEFAULT_HISTORY_PATH))


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LSMTimelineInstant:
    """One archived action (a row of an LSM data file, ``HoodieLSMTimelineInstant``)."""

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None = None
    plan: bytes | None = None
    version: int = LSM_TIMELINE_INSTANT_VERSION

    def to_instant(self) -> Instant:
        """The completed instant; a missing completion time reads as the instant time, as
        ``CompletionTimeQueryViewV2.setCompletionTime`` does for meta-server instants."""
        return Instant(
            self.instant_time,
            State.COMPLETED,
            self.action,
            self.completion_time or self.instant_time,
        )


def _to_parquet(rows: Sequence[LSMTimelineInstant]) -> bytes:
    table = pa.Table.from_pydict(
        {
            "instantTime": [r.instant_time for r in rows],
            "completionTime": [r.completion_time for r in rows],
            "action": [r.action for r in rows],
            "metadata": [r.metadata for r in rows],
            "plan": [r.plan for r in rows],
            "version": [r.version for r in rows],
        },
        schema=LSM_SCHEMA.with_metadata({"parquet.avro.schema": _AVRO_SCHEMA}),
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _from_parquet(data: bytes, what: str) -> list[LSMTimelineInstant]:
    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as err:
        raise ArchiveReadError(f"{what} is not a readable parquet file: {err}") from None
    missing = {"instantTime", "action"} - set(table.column_names)
    if missing:
        raise ArchiveReadError(f"{what} lacks the LSM timeline columns {sorted(missing)}")

    def column(name: str) -> list:
        return table.column(name).to_pylist() if name in table.column_names else [None] * len(table)

    out = []
    for t, c, a, m, p, v in zip(
        column("instantTime"),
        column("completionTime"),
        column("action"),
        column("metadata"),
        column("plan"),
        column("version"),
        strict=True,
    ):
        if t is None or a is None:
            raise ArchiveReadError(f"{what}: a row without instantTime or action")
        out.append(LSMTimelineInstant(t, c, a, m, p, v if v is not None else 1))
    return out


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


class ArchivedTimeline:
    """The LSM timeline of a table, read through its storage: ``_version_`` -> manifest -> files.

    Loading is lazy and happens once per object (Hudi's ``CompletionTimeQueryView`` loads archived
    instants lazily too); make a new object to see later archiving. Implements
    :class:`models.timeline.active.CompletionLookup`.
    """

    def __init__(self, storage: Storage, config: TableConfig) -> None:
        self.storage = storage
        self.config = config
        self.folder = history_folder(config)
        self._rows: dict[str, list[LSMTimelineInstant]] | None = None

    # --- snapshot metadata ----------------------------------------------------------------------

    def manifest_versions(self) -> list[int]:
        """Versions of every ``manifest_<k>`` in the folder, ascending."""
        if self.folder is None:
            return []
        versions = []
        for status in self.storage.list_dir(self.folder):
            match = _MANIFEST_FILE.match(status.name)
            if match:
                versions.append(int(match.group(1)))
        return sorted(versions)

    def latest_version(self) -> int:
        """The current snapshot version, -1 if nothing was ever archived."""
        if self.folder is None:
            return -1
        try:
            text = self.storage.read(join(self.folder, VERSION_FILE)).decode("ascii").strip()
            return int(text)
        except (FileNotFoundError, UnicodeDecodeError, ValueError):
            # a missing or torn version file: fall back to listing the manifests, as Hudi does
            return max(self.manifest_versions(), default=-1)

    def manifest(self, version: int | None = None) -> LSMManifest:
        """The valid files of ``version`` (default: the latest); empty if there is none."""
        version = self.latest_version() if version is None else version
        if version < 0 or self.folder is None:
            return LSMManifest()
        path = join(self.folder, f"{MANIFEST_PREFIX}{version}")
        try:
            data = self.storage.read(path)
        except FileNotFoundError:
            raise ArchiveReadError(f"{path} is named by {VERSION_FILE} but missing") from None
        return LSMManifest.from_json(data, path)

    # --- instants -------------------------------------------------------------------------------

    def _load(self) -> dict[str, list[LSMTimelineInstant]]:
        if self._rows is None:
            rows: dict[str, list[LSMTimelineInstant]] = {}
            seen: set[tuple[str, str]] = set()
            for name in self.manifest().file_names():
                path = join(self.folder or "", name)
                try:
                    data = self.storage.read(path)
                except FileNotFoundError:
                    raise ArchiveReadError(
                        f"{path} is listed in the manifest but missing"
                    ) from None
                for row in _from_parquet(data, path):
                    key = (row.instant_time, row.action)
                    if key not in seen:  # a file left over by a crash may repeat rows
                        seen.add(key)
                        rows.setdefault(normalize(row.instant_time), []).append(row)
            self._rows = rows
        return self._rows

    def records(self) -> list[LSMTimelineInstant]:
        """Every archived action with its metadata, by instant time then action."""
        rows = self._load()
        return [r for t in sorted(rows) for r in sorted(rows[t], key=lambda r: r.action)]

    def instants(self) -> tuple[Instant, ...]:
        """The archived instants (all completed), in requested-time order."""
        return tuple(r.to_instant() for r in self.records())

    def completion_time(self, requested_time: str) -> str | None:
        """Completion time of the archived instant requested at ``requested_time``, else None."""
        for row in self._load().get(normalize(requested_time), ()):
            return row.completion_time or row.instant_time
        return None

    def is_empty(self) -> bool:
        return not self._load()


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


class _Writer:
    """``LSMTimelineWriter``: data files, manifests and the version file of one table."""

    def __init__(self, storage: Storage, config: TableConfig) -> None:
        folder = history_folder(config)
        if folder is None:
            raise ArchiveError("archiving needs timeline layout 2 (table version 8+)")
        self.storage = storage
        self.config = config
        self.folder = folder

    def reader(self) -> ArchivedTimeline:
        return ArchivedTimeline(self.storage, self.config)

    def path(self, name: str) -> str:
        return join(self.folder, name)

    def write_file(self, name: str, rows: Sequence[LSMTimelineInstant]) -> LSMFileEntry:
        """Write a data file, replacing a leftover of a failed attempt (not yet in a manifest)."""
        data = _to_parquet(rows)
        path = self.path(name)
        self.storage.delete(path)
        self.storage.create_if_absent(path, data)
        return LSMFileEntry(name, len(data))

    def update_manifest(self, remove: Iterable[str], add: LSMFileEntry) -> int:
        """New snapshot = latest minus ``remove`` plus ``add``: ``manifest_<k+1>``, then
        ``_version_`` (delete and re-create, as Hudi does); returns ``k+1``."""
        reader = self.reader()
        version = reader.latest_version()
        manifest = reader.manifest(version).without(remove).plus(add)
        new_version = 1 if version < 0 else version + 1
        manifest_path = self.path(f"{MANIFEST_PREFIX}{new_version}")
        self.storage.delete(manifest_path)  # left by an attempt that died before _version_
        self.storage.create_if_absent(manifest_path, manifest.to_json())
        version_path = self.path(VERSION_FILE)
        self.storage.delete(version_path)
        self.storage.create_if_absent(version_path, str(new_version).encode())
        return new_version

    def is_committed(self, name: str) -> bool:
        return name in self.reader().manifest().file_names()

    def compact_and_clean(self, merge_factor: int, retained_versions: int) -> None:
        """Merge ``merge_factor`` files of a layer into the next, layer by layer; then clean."""
        layer = 0
        while self._compact_layer(layer, merge_factor):
            layer += 1
        self._clean(retained_versions + layer)

    def _compact_layer(self, layer: int, merge_factor: int) -> bool:
        manifest = self.reader().manifest()
        files = sorted(f for f in manifest.file_names() if parse_lsm_file_name(f).layer == layer)
        if len(files) < merge_factor or merge_factor < 2:
            return False
        sources = files[:merge_factor]
        parsed = [parse_lsm_file_name(f) for f in sources]
        target = lsm_file_name(
            min(p.min_instant for p in parsed), max(p.max_instant for p in parsed), layer + 1
        )
        rows: list[LSMTimelineInstant] = []
        for name in sources:
            rows.extend(_from_parquet(self.storage.read(self.path(name)), self.path(name)))
        entry = self.write_file(target, rows)
        self.update_manifest(sources, entry)
        return True

    def _clean(self, versions_to_keep: int) -> None:
        reader = self.reader()
        versions = reader.manifest_versions()
        if len(versions) <= versions_to_keep:
            return
        keep = sorted(versions, reverse=True)[:versions_to_keep]
        keep_files = {name for v in keep for name in reader.manifest(v).file_names()}
        for version in versions:
            if version not in keep:
                self.storage.delete(self.path(f"{MANIFEST_PREFIX}{version}"))
        for status in self.storage.list_dir(self.folder):
            if _LSM_FILE.match(status.name) and status.name not in keep_files:
                self.storage.delete(status.path)


@dataclass
class _ActionFiles:
    """The files of one action on the active timeline (``ActiveAction``)."""

    requested: str | None = None
    inflight: str | None = None
    completed: str | None = None
    pending_action: str | None = None
    extra: list[str] = field(default_factory=list)


def _comparable_action(action: str) -> str:
    """``InstantComparatorV2.getComparableAction``: a table service and its completed action."""
    return COMPLETED_ACTION.get(action, action)


def _active_files(storage: Storage, folder: str) -> dict[tuple[str, str], _ActionFiles]:
    """(requested time, comparable action) -> the files of that action on the active timeline."""
    out: dict[tuple[str, str], _ActionFiles] = {}
    for status in storage.list_dir(folder):
        try:
            parsed = _parse_instant(status.name)
        except InstantFileNameError:
            continue
        files = out.setdefault(
            (parsed.requested_time, _comparable_action(parsed.action)), _ActionFiles()
        )
        if parsed.state is State.COMPLETED:
            if files.completed is not None:
                files.extra.append(status.path)  # a second completed file: keep it for deletion
            else:
                files.completed = status.path
        else:
            files.pending_action = parsed.action
            if parsed.state is State.REQUESTED:
                files.requested = status.path
            else:
                files.inflight = status.path
    return out


_COMMITS = ("commit", "deltacommit", "replacecommit")


def _retention_candidates(
    timeline_instants: Sequence[Instant], is_mor: bool, max_delta_commits: int | None
) -> list[str]:
    """Requested times of the instants archiving must stop before (rules 1-3 of the module doc)."""
    completed_commits = [i for i in timeline_instants if i.is_completed and i.action in _COMMITS]
    candidates: list[str] = []
    pending_writes = [
        i for i in timeline_instants if not i.is_completed and i.action in WRITE_ACTIONS
    ]
    if pending_writes:
        earliest_pending = pending_writes[0].requested_time
        before = [c for c in completed_commits if c.requested_time < earliest_pending]
        candidates.append(before[-1].requested_time if before else earliest_pending)
    if is_mor:
        # completed compactions show as completed "commit" instants on a MOR timeline
        compactions = [i for i in completed_commits if i.action == "commit"]
        last = compactions[-1].requested_time if compactions else None
        deltas = [
            i
            for i in timeline_instants
            if i.action == "deltacommit" and (last is None or i.requested_time > last)
        ]
        anchor = last if last is not None else (deltas[0].requested_time if deltas else None)
        if max_delta_commits is not None and len(deltas) >= max_delta_commits:
            anchor = deltas[len(deltas) - max_delta_commits].requested_time
        if anchor is not None:
            candidates.append(anchor)
    replaces = [i for i in timeline_instants if i.action in ("replacecommit", "clustering")]
    if replaces:
        candidates.append(replaces[0].requested_time)
    return candidates


def instants_to_archive(
    table: HudiTable,
    *,
    max_active: int,
    min_active: int,
    max_delta_commits: int | None = None,
) -> list[Instant]:
    """The completed instants :func:`archive_instants` would move, oldest first (writes nothing)."""
    if not 0 < min_active < max_active:
        raise ArchiveError(
            f"need 0 < min_active < max_active (hoodie.keep.min.commits < hoodie.keep.max.commits),"
            f" got min_active={min_active}, max_active={max_active}"
        )
    if max_delta_commits is not None and max_delta_commits < 1:
        raise ArchiveError(f"max_delta_commits must be >= 1, got {max_delta_commits}")
    instants = table.active_timeline.load().instants
    commits = [i for i in instants if i.is_completed and i.action in _COMMITS]
    if len(commits) <= max_active:
        return []
    candidates = _retention_candidates(instants, table.config.is_mor, max_delta_commits)
    retain_from = min(candidates, default=None)
    savepoints = [i for i in instants if i.is_completed and i.action == "savepoint"]
    stop = min(
        [t for t in (retain_from, savepoints[0].requested_time if savepoints else None) if t],
        default=None,
    )
    eligible = [c for c in commits if stop is None or c.requested_time < stop]
    chosen = eligible[: max(0, len(commits) - min_active)]
    if not chosen:
        return []
    last = chosen[-1].requested_time
    services = [
        i
        for i in instants
        if i.is_completed and i.action in ("clean", "rollback") and i.requested_time < last
    ]
    return sorted([*chosen, *services], key=lambda i: (i.requested_time, i.action))


def archive_instants(
    table: HudiTable,
    *,
    max_active: int,
    min_active: int,
    merge_factor: int = DEFAULT_MERGE_FACTOR,
    max_delta_commits: int | None = None,
    manifest_retained_versions: int = DEFAULT_MANIFEST_RETAINED_VERSIONS,
) -> list[Instant]:
    """Archive old completed instants into the LSM timeline; returns the archived instants.

    Nothing happens while at most ``max_active`` completed commits are active. See the module
    docstring for the rules and the order of the steps (Hudi's ``TimelineArchiverV2``).
    """
    chosen = instants_to_archive(
        table, max_active=max_active, min_active=min_active, max_delta_commits=max_delta_commits
    )
    if not chosen:
        return []
    storage = table.storage
    writer = _Writer(storage, table.config)
    files = _active_files(storage, table.active_timeline.folder)
    rows = []
    actions = []
    for instant in chosen:
        action_files = files.get((instant.requested_time, _comparable_action(instant.action)))
        if action_files is None or action_files.completed is None:
            continue  # archived meanwhile by another archiver
        _delete_markers(storage, instant.requested_time)
        rows.append(_lsm_row(storage, instant, action_files))
        actions.append((instant, action_files))
    if not rows:
        return []
    name = lsm_file_name(rows[0].instant_time, rows[-1].instant_time, 0)
    if not writer.is_committed(name):  # else: a previous attempt committed it, only delete
        writer.update_manifest((), writer.write_file(name, rows))
    for _, action_files in actions:  # pending states first ...
        for path in (action_files.requested, action_files.inflight):
            if path is not None:
                storage.delete(path)
    for _, action_files in actions:  # ... then completed files, ascending (HUDI-7207)
        for path in (action_files.completed, *action_files.extra):
            if path is not None:
                storage.delete(path)
    writer.compact_and_clean(merge_factor, manifest_retained_versions)
    return [instant for instant, _ in actions]


def _read_or_none(storage: Storage, path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    return data or None


def _lsm_row(storage: Storage, instant: Instant, files: _ActionFiles) -> LSMTimelineInstant:
    """``MetadataConversionUtils.createLSMTimelineInstant``: metadata = the completed file's bytes;
    plan = the compaction/logcompaction plan, the clean plan, or for replace/clustering the
    requested metadata overridden by a non-empty inflight file."""
    pending = files.pending_action or instant.action
    plan = None
    if pending in ("compaction", "logcompaction", "clean"):
        plan = _read_or_none(storage, files.requested)
    elif pending in ("replacecommit", "clustering"):
        plan = _read_or_none(storage, files.inflight) or _read_or_none(storage, files.requested)
    return LSMTimelineInstant(
        instant_time=instant.requested_time,
        completion_time=instant.completion_time,
        action=instant.action,
        metadata=_read_or_none(storage, files.completed),
        plan=plan,
    )


def _delete_markers(storage: Storage, instant_time: str) -> None:
    """Markers an archived instant left behind (``deleteAnyLeftOverMarkers``)."""
    stack = [join(MARKERS_FOLDER, instant_time)]
    while stack:
        folder = stack.pop()
        for status in storage.list_dir(folder):
            storage.delete(status.path)
        stack.extend(join(folder, d) for d in storage.list_subdirs(folder))


__all__ = [
    "DEFAULT_MANIFEST_RETAINED_VERSIONS",
    "DEFAULT_MERGE_FACTOR",
    "LSM_SCHEMA",
    "ArchiveError",
    "ArchiveReadError",
    "ArchivedTimeline",
    "LSMFileEntry",
    "LSMFileName",
    "LSMManifest",
    "LSMTimelineInstant",
    "archive_instants",
    "history_folder",
    "instants_to_archive",
    "lsm_file_name",
    "parse_lsm_file_name",
]
