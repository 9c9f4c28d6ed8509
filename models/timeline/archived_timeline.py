"""Reading the archived (LSM) timeline: ``_version_`` -> manifest -> data files.

Follows Hudi's ``HoodieArchivedTimeline`` and ``LSMTimeline.latestSnapshotVersion`` (layout in
:mod:`models.timeline.lsm_timeline`, docs/protocol.md section 8).
:class:`models.timeline.active.ArchiveFallback` plugs :class:`ArchivedTimeline` into
completion-time lookups, so file slicing still places the logs of archived deltacommits.
"""

from __future__ import annotations

from models.format.properties import TableConfig
from models.storage import Storage, join
from models.timeline.instant import Instant
from models.timeline.instant_time import normalize
from models.timeline.lsm_timeline import (
    MANIFEST_FILE_PATTERN,
    MANIFEST_PREFIX,
    VERSION_FILE,
    ArchiveReadError,
    LSMManifest,
    LSMTimelineInstant,
    history_folder,
    read_lsm_file,
)


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
            match = MANIFEST_FILE_PATTERN.match(status.name)
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
                for row in read_lsm_file(data, path):
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
