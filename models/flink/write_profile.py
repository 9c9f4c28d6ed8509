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
checkpoint id, ``WriteProfile#reload``), so it sees only what was committed by then. The average record size stays
``hoodie.copyonwrite.record.size.estimate`` (1024 bytes): Hudi estimates it from the newest commit
that wrote more than ``hoodie.record.size.estimation.threshold`` times the small-file limit (100
MB), which no simulated commit reaches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from models.flink.bucket_assigner import (
    INSERT_SPLIT_SIZE,
    PARQUET_MAX_FILE_SIZE_BYTES,
    RECORD_SIZE_ESTIMATE_BYTES,
    SmallFile,
)
from models.view.fsview import FileSlice

SMALL_FILE_LIMIT_BYTES = 100 * 1024 * 1024
"""``hoodie.parquet.small.file.limit``."""
LOG_TO_PARQUET_COMPRESSION_RATIO = 0.35
"""``hoodie.logfile.to.parquet.compression.ratio``."""


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
    _slices: Sequence[FileSlice] | None = None
    _small: dict[str, list[SmallFile]] = field(default_factory=dict)
    _reloaded: int = -1

    def __post_init__(self) -> None:
        self._slices = self.committed_slices()

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
        self._small.clear()


__all__ = [
    "LOG_TO_PARQUET_COMPRESSION_RATIO",
    "SMALL_FILE_LIMIT_BYTES",
    "TableWriteProfile",
    "small_files",
]
