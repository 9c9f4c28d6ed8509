"""Tests for sim/staged_storage.py: a flush's writes held back, seen by its own reads, made in
order by ``apply``."""

from __future__ import annotations

import pytest

from models.storage import FileAlreadyExistsError, InMemoryStorage, Storage
from sim.rng import Rng
from sim.staged_storage import StagedStorage
from sim.storage import SimStorage


def staged() -> tuple[InMemoryStorage, StagedStorage]:
    base = InMemoryStorage()
    base.create_if_absent("p/old.parquet", b"old")
    return base, StagedStorage(base)


def test_is_a_storage():
    assert isinstance(staged()[1], Storage)


def test_writes_wait_for_apply_and_reads_see_them():
    base, s = staged()
    s.create_if_absent("p/new.parquet", b"new")
    s.delete("p/old.parquet")
    assert not base.exists("p/new.parquet") and base.exists("p/old.parquet")
    assert s.read("p/new.parquet") == b"new" and s.exists("p/new.parquet")
    assert not s.exists("p/old.parquet")
    with pytest.raises(FileNotFoundError):
        s.read("p/old.parquet")
    assert [f.path for f in s.list_dir("p")] == ["p/new.parquet"]
    s.apply()
    assert list(base.paths()) == ["p/new.parquet"]
    assert base.read("p/new.parquet") == b"new"


def test_a_create_over_an_existing_or_staged_file_fails_at_once():
    _, s = staged()
    with pytest.raises(FileAlreadyExistsError):
        s.create_if_absent("p/old.parquet", b"x")
    s.create_if_absent("q/a", b"1")
    with pytest.raises(FileAlreadyExistsError):
        s.create_if_absent("q/a", b"2")
    s.delete("q/a")
    s.create_if_absent("q/a", b"3")
    assert s.list_subdirs("") == ["p", "q"]


def test_apply_replays_the_requests_in_order():
    """A roll file renamed over its previous file: create, delete, create, delete."""
    base, s = staged()
    s.create_if_absent("p/.roll", b"merged")
    s.delete("p/old.parquet")
    s.create_if_absent("p/old.parquet", b"merged")
    s.delete("p/.roll")
    counted = SimStorage(base, now=lambda: 0, rng=Rng(1))
    s.base = counted
    s.apply()
    assert counted.ops_by_kind["create_if_absent"] == 2 and counted.ops_by_kind["delete"] == 2
    assert list(base.paths()) == ["p/old.parquet"] and base.read("p/old.parquet") == b"merged"


def test_a_file_created_meanwhile_fails_the_apply():
    base, s = staged()
    s.create_if_absent("p/x", b"mine")
    base.create_if_absent("p/x", b"theirs")
    with pytest.raises(FileAlreadyExistsError):
        s.apply()


def test_a_partition_metadata_file_created_meanwhile_is_kept_and_the_apply_goes_on():
    """Two writers' first flushes into one partition: the second's ``trySave`` fails quietly."""
    base, s = staged()
    s.create_if_absent("p/.hoodie_partition_metadata", b"mine")
    s.create_if_absent("p/new.parquet", b"new")
    base.create_if_absent("p/.hoodie_partition_metadata", b"theirs")
    s.apply()
    assert base.read("p/.hoodie_partition_metadata") == b"theirs"
    assert base.read("p/new.parquet") == b"new"


def test_the_probe_answers_creates_without_a_request():
    inner = InMemoryStorage()
    counted = SimStorage(inner, now=lambda: 0, rng=Rng(1))
    s = StagedStorage(counted, inner)
    s.create_if_absent("p/x", b"1")
    assert counted.ops == 0
    assert not s.exists("p/y")
    assert counted.ops_by_kind["exists"] == 1
