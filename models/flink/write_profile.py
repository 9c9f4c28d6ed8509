"""The small files a Flink bucket assigner may fill: Hudi's ``WriteProfile`` and
``DeltaWriteProfile`` (``sink/partitioner/profile``) over the table's committed view.

- copy-on-write (``WriteProfile#smallFilesProfile``): the latest committed base file of each file
  group whose size is above 0 and below ``hoodie.parquet.small.file.limit`` (100 MB);
- merge-on-read (``DeltaWriteProfile#smallFilesProfile``): the latest merged file slice of each
  file group (file groups under a pending compaction included, HUDI-4104), sized as its base file
  plus 0.35 (``hoodie.logfile.to.parquet.compression.ratio``) times its logs, below the parquet
  max file size; its instant is the base file's, or a log-only slice's first log's.

The profile answers from the view taken when it was made or last reloaded
(:meth:`TableWriteProfile.reload`: the assigner reloads it when a checkpoint completes, once per
checkpoint id, ``WriteProfile#reload``), so it sees only what was committed by then. So does the
average record size (``WriteProfile#averageBytesPerRecord``): bytes over records of the newest
completed commit that wrote more than ``hoodie.record.size.estimation.threshold`` (1.0) times the
small-file limit, else ``hoodie.copyonwrite.record.size.estimate`` (1024 bytes); each commit's
metadata is read once and kept while the commit is on the timeline (``metadataCache``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from models.flink.bucket_assigner import (
    INSERT_SPLIT_SIZE,
    PARQUET_MAX_FILE_SIZE_BYTES,
    RECORD_SIZE_ESTIMATE_BYTES,
    SmallFile,
)
from models.format.commit_metadata import CommitMetadata
from models.table_errors import CorruptTableError
from models.timeline.instant import Instant
from models.view.fsview import FileSlice

if TYPE_CHECKING:
    from models.view.table import HudiTable

SMALL_FILE_LIMIT_BYTES = 100 * 1024 * 1024
"""``hoodie.parquet.small.file.limit``."""
LOG_TO_PARQUET_COMPRESSION_RATIO = 0.35
"""``hoodie.logfile.to.parquet.compression.ratio``."""
RECORD_SIZE_ESTIMATION_THRESHOLD = 1.0
"""``hoodie.record.size.estimation.threshold``: a commit estimates the record size only if it
wrote more than this times the small-file limit."""

COMMITS_TIMELINE = ("commit", "deltacommit", "replacecommit")
"""The actions of ``HoodieTableMetaClient#getCommitsTimeline``."""
NO_COMMITS: Callable[[], Sequence[Instant]] = tuple
"""A profile without a timeline: no completed commit, the configured record size."""


def completed_commits(table: HudiTable) -> Sequence[Instant]:
    """The table's completed commits timeline, oldest first (by requested time)."""
    return table.timeline().completed().with_actions(*COMMITS_TIMELINE).instants


def commit_metadata_safely(table: HudiTable, instant: Instant) -> CommitMetadata | None:
    """``WriteProfiles#getCommitMetadataSafely``: the commit's metadata, None if unreadable."""
    try:
        return table.commit_metadata(instant)
    except (CorruptTableError, FileNotFoundError):
        return None


def small_files(
    slices: Sequence[FileSlice],
    partition_path: str,
    *,
    is_mor: bool,
    max_file_size_bytes: int = PARQUET_MAX_FILE_SIZE_BYTES,
    small_file_limit_bytes: int = SMALL_FILE_LIMIT_BYTES,
) -> list[SmallFile]:
    """The small files of ``partition_path`` among the committed latest ``slices``, by file id."""
    out = []
    for s in sorted(slices, key=lambda s: s.file_id):
        if s.partition != partition_path:
            continue
        if not is_mor:
            base = s.base_file
            if base is not None and 0 < base.size < small_file_limit_bytes:
                out.append(SmallFile(base.instant_time, s.file_id, base.size))
            continue
        logs = sum(lf.size for lf in s.log_files)
        size = (s.base_file.size if s.base_file else 0) + int(
            LOG_TO_PARQUET_COMPRESSION_RATIO * logs
        )
        if size < max_file_size_bytes:
            instant = s.base_file.instant_time if s.base_file else _first_log_instant(s)
            out.append(SmallFile(instant, s.file_id, size))
    return out


def _first_log_instant(s: FileSlice) -> str:
    return min(lf.instant_time for lf in s.log_files) if s.log_files else s.base_instant


@dataclass
class TableWriteProfile:
    """The write profile of a job's assigner tasks (Hudi shares one per table and JVM:
    ``WriteProfiles#singleton``), over ``committed_slices`` (the latest committed file slices)."""

    committed_slices: Callable[[], Sequence[FileSlice]]
    is_mor: bool
    max_file_size_bytes: int = PARQUET_MAX_FILE_SIZE_BYTES
    small_file_limit_bytes: int = SMALL_FILE_LIMIT_BYTES
    records_per_bucket: int = INSERT_SPLIT_SIZE
    avg_size: int = RECORD_SIZE_ESTIMATE_BYTES
    completed_commits: Callable[[], Sequence[Instant]] = NO_COMMITS
    """The completed commits timeline (commit, deltacommit, replacecommit), oldest first."""
    commit_metadata: Callable[[Instant], CommitMetadata | None] = lambda _instant: None
    """One completed commit's metadata, None when it cannot be read
    (``WriteProfiles#getCommitMetadataSafely``)."""
    metadata_cache: dict[str, CommitMetadata] = field(default_factory=dict)
    """``metadataCache``: the metadata read so far, by requested time (an unreadable one is
    not kept: Java's ``computeIfAbsent`` keeps no null)."""
    _slices: Sequence[FileSlice] | None = None
    _small: dict[str, list[SmallFile]] = field(default_factory=dict)
    _reloaded: int = -1

    def __post_init__(self) -> None:
        self._slices = self.committed_slices()
        self._record_profile(self.completed_commits())

    def _record_profile(self, commits: Sequence[Instant]) -> None:
        """``recordProfile`` / ``averageBytesPerRecord``: the newest commit that wrote more than
        the threshold sets the average record size (rounded up), else the estimate."""
        threshold = int(RECORD_SIZE_ESTIMATION_THRESHOLD * self.small_file_limit_bytes)
        self.avg_size = RECORD_SIZE_ESTIMATE_BYTES
        for instant in reversed(commits):
            metadata = self.metadata_cache.get(instant.requested_time)
            if metadata is None:
                metadata = self.commit_metadata(instant)
                if metadata is None:
                    continue
                self.metadata_cache[instant.requested_time] = metadata
            written, records = metadata.total_bytes_written(), metadata.total_records_written()
            if written > threshold and records > 0:
                self.avg_size = math.ceil(written / records)
                return

    def small_files(self, partition_path: str) -> Sequence[SmallFile]:
        """``getSmallFiles``: cached per partition until the next reload."""
        if partition_path not in self._small:
            self._small[partition_path] = small_files(
                self._slices or (),
                partition_path,
                is_mor=self.is_mor,
                max_file_size_bytes=self.max_file_size_bytes,
                small_file_limit_bytes=self.small_file_limit_bytes,
            )
        return self._small[partition_path]

    def reload(self, checkpoint_id: int) -> None:
        """``reload``: a new view, once per checkpoint id however many tasks ask."""
        if checkpoint_id <= self._reloaded:
            return
        self._reloaded = checkpoint_id
        self._slices = self.committed_slices()
        commits = self.completed_commits()
        self._record_profile(commits)
        kept = {c.requested_time for c in commits}  # cleanMetadataCache: commits still there
        self.metadata_cache = {k: v for k, v in self.metadata_cache.items() if k in kept}
        self._small.clear()


__all__ = [
    "COMMITS_TIMELINE",
    "LOG_TO_PARQUET_COMPRESSION_RATIO",
    "NO_COMMITS",
    "RECORD_SIZE_ESTIMATION_THRESHOLD",
    "SMALL_FILE_LIMIT_BYTES",
    "TableWriteProfile",
    "commit_metadata_safely",
    "completed_commits",
    "small_files",
]
