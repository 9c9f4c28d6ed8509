"""Writing the archived (LSM) timeline: data files, manifests, compaction and cleaning.

Follows Hudi's ``LSMTimelineWriter`` (layout in :mod:`models.timeline.lsm_timeline`,
docs/protocol.md section 8). Compaction (``compactAndClean``): when a layer holds at least
``merge_factor`` files (``hoodie.timeline.compaction.batch.size``, default 10) the oldest
``merge_factor`` of them (by name, i.e. by min instant) are merged into one file of the next layer,
repeated upwards; then manifests beyond the newest ``retained + compacted layers``
(``hoodie.timeline.manifest.retained.versions``, default 3) are deleted, and the parquet files
none of the kept manifests lists. The 1 GB size cap on a compaction group is not modeled.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from models.format.properties import TableConfig
from models.storage import Storage, join
from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.lsm_timeline import (
    LSM_FILE_PATTERN,
    MANIFEST_PREFIX,
    VERSION_FILE,
    ArchiveError,
    LSMFileEntry,
    LSMTimelineInstant,
    history_folder,
    lsm_file_bytes,
    lsm_file_name,
    parse_lsm_file_name,
    read_lsm_file,
)

DEFAULT_MERGE_FACTOR = 10
"""``hoodie.timeline.compaction.batch.size``: L(n) files merged into one L(n+1) file."""
DEFAULT_MANIFEST_RETAINED_VERSIONS = 3
"""``hoodie.timeline.manifest.retained.versions``."""


class LSMTimelineWriter:
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
        data = lsm_file_bytes(rows)
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
            rows.extend(read_lsm_file(self.storage.read(self.path(name)), self.path(name)))
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
            if LSM_FILE_PATTERN.match(status.name) and status.name not in keep_files:
                self.storage.delete(status.path)
