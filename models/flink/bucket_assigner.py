"""Where the Flink state index sends a record: Hudi's ``BucketAssigner`` of one assigner task.

Hudi's ``BucketAssignFunction`` (``sink/partitioner``) looks a record key up in its keyed state:
a key it knows in the same partition is an UPDATE of the file group that holds it
(:meth:`BucketAssigner.add_update`); any other key goes to :meth:`BucketAssigner.add_insert`, which
picks, in this order (``BucketAssigner#addInsert``, the same from 0.14 to master):

1. a **small file** of the partition with room (``getSmallFileAssign``): the write profile's small
   files that belong to this task (``smallFilesOfThisTask``: the file id's Flink key group maps to
   this task), each with room for ``(max file size - size) // average record size`` records,
   filled in the profile's order (``SmallFileAssign#assign``); an UPDATE of that file;
2. the partition's current **new file** while it has room (``NewFileAssignState``, room
   ``recordsPerBucket`` = ``hoodie.copyonwrite.insert.split.size``, 500 000): an INSERT while the
   bucket is in this checkpoint interval's map, an UPDATE after a snapshot cleared the map;
3. a **new file id** of this task (``createFileIdOfThisTask``: random UUIDs until one maps to this
   task), an INSERT, which opens the partition's new-file state.

State kept in memory, never checkpointed (``BucketAssigner``): the bucket map (cleared at every
snapshot, :meth:`reset`), the small-file assignments (cleared at every completed checkpoint,
:meth:`reload`) and the new-file states (cleared at every second completed checkpoint since the
task started: records that arrive between a snapshot and the commit of its instant keep filling
the previous new file). A restart starts all three empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from models.flink.key_groups import operator_index

DEFAULT_MAX_PARALLELISM = 1024
"""What Hudi's tests pass; a job's is Flink's default for its parallelism."""
PARQUET_MAX_FILE_SIZE_BYTES = 120 * 1024 * 1024
"""``write.parquet.max.file.size`` (120 MB) in bytes (``FlinkWriteClients#getHoodieClientConfig``)."""
INSERT_SPLIT_SIZE = 500_000
"""``hoodie.copyonwrite.insert.split.size``: records of a new file (``WriteProfile
#recordsPerBucket``)."""
RECORD_SIZE_ESTIMATE_BYTES = 1024
"""``hoodie.copyonwrite.record.size.estimate``: the average record size before any commit wrote
more than ``hoodie.parquet.small.file.limit``."""


class BucketType(Enum):
    """``BucketType``: a new file (create handle) or an existing one (merge or append handle)."""

    INSERT = "INSERT"
    UPDATE = "UPDATE"


@dataclass(frozen=True)
class BucketInfo:
    """``BucketInfo``: the bucket a record goes to."""

    bucket_type: BucketType
    file_id: str
    partition_path: str


@dataclass(frozen=True)
class SmallFile:
    """``SmallFile``: a file group of the committed view with room (its latest base file's commit
    time, or a log-only slice's first delta commit) and its size."""

    instant: str
    file_id: str
    size_bytes: int


class WriteProfile(Protocol):
    """What the assigner asks the shared write profile (``WriteProfile``)."""

    def small_files(self, partition_path: str) -> Sequence[SmallFile]: ...

    @property
    def avg_size(self) -> int: ...

    @property
    def records_per_bucket(self) -> int: ...

    def reload(self, checkpoint_id: int) -> None: ...


@dataclass
class SmallFileAssign:
    """``SmallFileAssign``: this task's small files of a partition, filled one after the other."""

    files: list[tuple[str, int]]
    """(file id, room in records)."""
    _index: int = 0
    _assigned: int = 0
    _no_space: bool = False

    def assign(self) -> bool:
        """Take one slot of the current file, moving on when it is full; False once all are."""
        if self._no_space:
            return False
        while self._index < len(self.files):
            room = self.files[self._index][1]
            if room > 0 and self._assigned < room:
                self._assigned += 1
                return True
            self._index += 1
            self._assigned = 0
        self._no_space = True
        return False

    @property
    def file_id(self) -> str:
        return self.files[self._index][0]


@dataclass
class NewFileAssignState:
    """``NewFileAssignState``: the partition's current new file and how many records it got."""

    file_id: str
    total: int
    assigned: int = 1

    def can_assign(self) -> bool:
        return self.total > 0 and self.total > self.assigned


@dataclass
class BucketAssigner:
    """One assigner task's ``BucketAssigner`` (see the module docstring)."""

    task_id: int
    parallelism: int
    profile: WriteProfile
    mint_uuid: Callable[[], str]
    max_parallelism: int = DEFAULT_MAX_PARALLELISM
    max_file_size_bytes: int = PARQUET_MAX_FILE_SIZE_BYTES
    _buckets: dict[tuple[str, str], BucketInfo] = field(default_factory=dict)
    _small: dict[str, SmallFileAssign | None] = field(default_factory=dict)
    _new: dict[str, NewFileAssignState] = field(default_factory=dict)
    _reloads: int = 0

    def add_update(self, partition_path: str, file_id: str) -> BucketInfo:
        """``addUpdate``: the file group that holds the key."""
        return self._buckets.setdefault(
            (partition_path, file_id), BucketInfo(BucketType.UPDATE, file_id, partition_path)
        )

    def add_insert(self, partition_path: str) -> BucketInfo:
        """``addInsert``: a small file, the current new file, or a new file (module docstring)."""
        small = self._small_file_assign(partition_path)
        if small is not None and small.assign():
            return BucketInfo(BucketType.UPDATE, small.file_id, partition_path)
        state = self._new.get(partition_path)
        if state is not None and state.can_assign():
            state.assigned += 1
            stored = self._buckets.get((partition_path, state.file_id))
            return stored or BucketInfo(BucketType.UPDATE, state.file_id, partition_path)
        file_id = self.create_file_id_of_this_task()
        info = BucketInfo(BucketType.INSERT, file_id, partition_path)
        self._buckets[(partition_path, file_id)] = info
        self._new[partition_path] = NewFileAssignState(file_id, self.profile.records_per_bucket)
        return info

    def file_id_of_this_task(self, file_id: str) -> bool:
        """``fileIdOfThisTask``: the file id's Flink key group maps to this task."""
        return operator_index(file_id, self.max_parallelism, self.parallelism) == self.task_id

    def create_file_id_of_this_task(self) -> str:
        """``createFileIdOfThisTask``: random UUIDs until one is this task's."""
        while True:
            file_id = self.mint_uuid()
            if self.file_id_of_this_task(file_id):
                return file_id

    def small_files_of_this_task(self, small_files: Sequence[SmallFile]) -> list[SmallFile]:
        """``smallFilesOfThisTask``: the small files this task may fill, in the profile's order."""
        return [f for f in small_files if self.file_id_of_this_task(f.file_id)]

    def _small_file_assign(self, partition_path: str) -> SmallFileAssign | None:
        if partition_path not in self._small:
            mine = self.small_files_of_this_task(self.profile.small_files(partition_path))
            avg = self.profile.avg_size
            rooms = [(f.file_id, (self.max_file_size_bytes - f.size_bytes) // avg) for f in mine]
            self._small[partition_path] = SmallFileAssign(rooms) if rooms else None
        return self._small[partition_path]

    def reset(self) -> None:
        """``reset`` (at every snapshot): the bucket map is cleared."""
        self._buckets.clear()

    def reload(self, checkpoint_id: int) -> None:
        """``reload`` (at every completed checkpoint): small-file assignments cleared, new-file
        states every second time, and the profile reloaded."""
        self._reloads += 1
        if self._reloads > 1:
            self._new.clear()
            self._reloads = 0
        self._small.clear()
        self.profile.reload(checkpoint_id)


__all__ = [
    "DEFAULT_MAX_PARALLELISM",
    "INSERT_SPLIT_SIZE",
    "PARQUET_MAX_FILE_SIZE_BYTES",
    "RECORD_SIZE_ESTIMATE_BYTES",
    "BucketAssigner",
    "BucketInfo",
    "BucketType",
    "NewFileAssignState",
    "SmallFile",
    "SmallFileAssign",
    "WriteProfile",
]
