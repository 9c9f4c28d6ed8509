"""Tests for models/flink/bucket_index.py: file ids as Hudi's bucket-index writer assigns them
(UUID-prefixed per bucket, fixed under NBCC), loaded from the committed view with a duplicate
check, and pending file ids adopted only for buckets the view lacks."""

from __future__ import annotations

import itertools
import uuid

import pytest

from models.flink.bucket_index import (
    BucketIndex,
    DuplicateFileIdError,
    bucket_of,
    nbcc_file_id,
    new_file_id,
)
from models.view.filenames import check_file_id

UUIDS = (str(uuid.UUID(int=i, version=4)) for i in itertools.count(1))


def index(*, nbcc: bool = False, owned: set[int] | None = None) -> BucketIndex:
    def owns(_partition_index: int, bucket: int) -> bool:
        return owned is None or bucket in owned

    return BucketIndex(nbcc=nbcc, owns=owns, mint_uuid=lambda: next(UUIDS))


def test_file_id_shapes():
    assert nbcc_file_id(3) == "00000003-0000-0000-0000-000000000000-0"
    minted = new_file_id(12, "abcdef01-2345-4678-9abc-def012345678")
    assert minted == "00000012-2345-4678-9abc-def012345678-0"
    assert bucket_of(minted) == 12 and check_file_id(minted)
    with pytest.raises(ValueError):
        new_file_id(1, "too-short")


def test_a_new_bucket_gets_one_id_for_the_tasks_life():
    ix = index()
    first = ix.file_id("p", 1)
    assert bucket_of(first) == 1 and first.endswith("-0")
    assert ix.file_id("p", 1) == first
    assert ix.file_id("q", 1) != first  # another partition, another file group


def test_nbcc_ids_are_fixed_for_every_task():
    assert index(nbcc=True).file_id("p", 2) == index(nbcc=True).file_id("p", 2) == nbcc_file_id(2)


def test_the_bootstrap_takes_owned_committed_ids_and_refuses_two_for_a_bucket():
    committed = [new_file_id(0, next(UUIDS)), new_file_id(1, next(UUIDS))]
    ix = index(owned={0})
    ix.bootstrap("p", 0, committed)
    assert ix.is_loaded("p") and ix.file_id("p", 0) == committed[0]
    assert ix.file_id("p", 1) != committed[1]  # not this task's bucket: never loaded
    with pytest.raises(DuplicateFileIdError, match=r"Duplicate fileId .* from bucket 0"):
        index().bootstrap("p", 0, [*committed, new_file_id(0, next(UUIDS))])


def test_pending_ids_fill_only_buckets_the_committed_view_lacks():
    committed, pending = new_file_id(0, next(UUIDS)), new_file_id(1, next(UUIDS))
    other = new_file_id(0, next(UUIDS))
    ix = index()
    ix.bootstrap("p", 0, [committed], [pending, other])
    assert ix.file_id("p", 0) == committed
    assert ix.file_id("p", 1) == pending


def test_an_append_mode_file_group_in_the_view_fails_the_bootstrap():
    """Hudi's ``Integer.parseInt`` of a UUID prefix: ``NumberFormatException``, the task fails."""
    from models.flink.bucket_index import BucketIdParseError

    with pytest.raises(BucketIdParseError, match="For input string"):
        index().bootstrap("p", 0, ["3fa2c9e1-0000-4000-8000-000000000000-0"])
