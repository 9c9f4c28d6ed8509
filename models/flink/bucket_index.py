"""The file id of each bucket, as a Flink write task of the bucket index assigns it.

Hudi's ``BucketStreamWriteFunction`` keeps, per task, a map partition -> bucket -> file id
(``bucketIndex``). The first record of a partition loads it (``bootstrapIndexIfNeed``) from the
latest file slices of the write client's **committed** view (``getHoodieView().
getLatestFileSlices``), keeping the buckets this task owns (``isBucketToLoad``); a bucket found
with two file ids fails the task ("Duplicate fileId ... found during the BucketStreamWriteFunction
index bootstrap"). A bucket with no file id gets a new one (``defineRecordLocation``), kept for the
task's life:

- non-NBCC: ``BucketIdentifier#newBucketFileIdPrefix``, a random UUID whose first 8 characters are
  the zero-padded bucket number, plus the write handle's ``-0``;
- NBCC: ``BucketIdentifier#newBucketFileIdForNBCC``, ``<bucket:08d>-0000-0000-0000-000000000000-0``,
  the same for every job and restart (two jobs' writes land in one file group).

Because the view holds committed files only, a task restarted while its bucket's first instant is
still pending (a task failover before the first commit, or a restart racing the recommit) mints a
second file id for the bucket: the bucket's keys then live in two file groups, and the next
bootstrap of the partition fails (apache/hudi#19907, Hudi 1.1.1). Hudi's master also adopts the
file ids the coordinator holds in pending event buffers (``EventBuffers#getPendingWriteFileIds``,
pinned by ``TestBucketStreamWriteRecommitRace``): ``[protocol] pending_file_ids = "adopted"``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from models.format.records import bucket_of
from models.table_errors import HoodieException

PENDING_FILE_IDS = ("ignored", "adopted")
"""``[protocol] pending_file_ids``: whether a bootstrap also takes the coordinator's pending file
ids (master) or only the committed view (Hudi 1.0, 1.1)."""
NBCC_SUFFIX = "-0000-0000-0000-000000000000-0"


class BucketIdParseError(HoodieException, ValueError):
    """A file id in the committed view whose first 8 characters are no bucket number (an
    append-mode file group's UUID): Hudi's ``Integer.parseInt`` in ``BucketIdentifier
    #bucketIdFromFileId`` throws ``NumberFormatException`` and the task fails."""


def _bucket(file_id: str) -> int:
    try:
        return bucket_of(file_id)
    except ValueError:
        raise BucketIdParseError(
            f'For input string: "{file_id[:8]}" (file id {file_id} is not a bucket\'s)'
        ) from None


class DuplicateFileIdError(HoodieException, RuntimeError):
    """A bucket of a partition has two file ids in the committed view (Hudi's RuntimeException
    in ``bootstrapIndexIfNeed``: the task fails)."""


def nbcc_file_id(bucket: int) -> str:
    """``newBucketFileIdForNBCC`` with the handle's ``-0``."""
    return f"{bucket:08d}{NBCC_SUFFIX}"


def new_file_id(bucket: int, uuid: str) -> str:
    """``newBucketFileIdPrefix``: ``uuid`` (36 characters) with the bucket as its first 8, and
    the handle's ``-0``."""
    if len(uuid) != 36:
        raise ValueError(f"a UUID has 36 characters, got {uuid!r}")
    return f"{bucket:08d}{uuid[8:]}-0"


@dataclass
class BucketIndex:
    """One write task's bucket -> file id map. ``owns(partition_index, bucket)`` says which
    buckets the task writes; ``mint_uuid()`` draws a UUID (the run's seeded randomness)."""

    nbcc: bool
    owns: Callable[[int, int], bool]
    mint_uuid: Callable[[], str]
    _ids: dict[str, dict[int, str]] = field(default_factory=dict)

    def is_loaded(self, partition: str) -> bool:
        return partition in self._ids

    def bootstrap(
        self,
        partition: str,
        partition_index: int,
        committed: Iterable[str],
        pending: Iterable[str] = (),
    ) -> None:
        """Load ``partition``'s owned buckets from the file ids of its committed latest slices,
        then (``pending_file_ids = "adopted"``) from the coordinator's pending ones for buckets
        still missing. :class:`DuplicateFileIdError` if the committed view has a bucket twice."""
        ids: dict[int, str] = {}
        for file_id in sorted(committed):
            bucket = _bucket(file_id)
            if not self.owns(partition_index, bucket):
                continue
            if bucket in ids and ids[bucket] != file_id:
                raise DuplicateFileIdError(
                    f"Duplicate fileId {file_id} from bucket {bucket} of partition {partition} "
                    "found during the BucketStreamWriteFunction index bootstrap."
                )
            ids[bucket] = file_id
        for file_id in sorted(pending):
            bucket = _bucket(file_id)
            if self.owns(partition_index, bucket):
                ids.setdefault(bucket, file_id)
        self._ids[partition] = ids

    def file_id(self, partition: str, bucket: int) -> str:
        """The bucket's file id, a new one if it has none (``defineRecordLocation``)."""
        ids = self._ids.setdefault(partition, {})
        if bucket not in ids:
            ids[bucket] = (
                nbcc_file_id(bucket) if self.nbcc else new_file_id(bucket, self.mint_uuid())
            )
        return ids[bucket]


__all__ = [
    "PENDING_FILE_IDS",
    "BucketIdParseError",
    "BucketIndex",
    "DuplicateFileIdError",
    "bucket_of",
    "nbcc_file_id",
    "new_file_id",
]
