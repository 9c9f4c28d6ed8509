"""Storage port (models/storage.py): InMemoryStorage and LocalStorage must behave the same.

Every behavioural test runs against both implementations; the few tests about modification times
are per implementation, since one has a logical clock and the other the file system's.
"""

from __future__ import annotations

import os

import pytest

from models.storage import (
    FileAlreadyExistsError,
    FileStatus,
    InMemoryStorage,
    LocalStorage,
    Storage,
    join,
)

KINDS = ("memory", "local")


def make_storage(kind: str, tmp_path) -> InMemoryStorage | LocalStorage:
    if kind == "memory":
        return InMemoryStorage()
    return LocalStorage(tmp_path / "table")


@pytest.fixture(params=KINDS)
def storage(request, tmp_path) -> InMemoryStorage | LocalStorage:
    return make_storage(request.param, tmp_path)


def listing(statuses: list[FileStatus]) -> list[tuple[str, int]]:
    return [(s.path, s.size) for s in statuses]


def populate(storage: Storage) -> None:
    # "pa" shares a prefix with "p": a naive startswith would mix them up
    storage.create_if_absent("p/b", b"bbb")
    storage.create_if_absent("p/a", b"a")
    storage.create_if_absent("p/sub/c", b"cc")
    storage.create_if_absent("p/sub/deeper/d", b"d")
    storage.create_if_absent("pa/x", b"xxxx")
    storage.create_if_absent("q/y", b"")
    storage.create_if_absent("top", b"12345")


def test_both_implementations_satisfy_the_protocol(storage):
    assert isinstance(storage, Storage)


# ---------------------------------------------------------------------------------------------
# create_if_absent / write / read


def test_create_if_absent_then_read(storage):
    storage.create_if_absent(".hoodie/timeline/1.commit.requested", b"plan")
    assert storage.read(".hoodie/timeline/1.commit.requested") == b"plan"
    assert storage.exists(".hoodie/timeline/1.commit.requested")


def test_create_if_absent_twice_raises_and_keeps_the_first_content(storage):
    storage.create_if_absent("a/f", b"first")
    with pytest.raises(FileAlreadyExistsError) as err:
        storage.create_if_absent("a/f", b"second, longer")
    assert "a/f" in str(err.value)
    assert storage.read("a/f") == b"first"
    assert listing(storage.list_dir("a")) == [("a/f", 5)]


def test_file_already_exists_is_a_file_exists_error():
    assert issubclass(FileAlreadyExistsError, FileExistsError)


def test_create_if_absent_fails_over_a_written_file(storage):
    storage.write("hoodie.properties", b"x=1")
    with pytest.raises(FileAlreadyExistsError):
        storage.create_if_absent("hoodie.properties", b"x=2")
    assert storage.read("hoodie.properties") == b"x=1"


def test_write_creates_and_replaces(storage):
    storage.write(".hoodie/hoodie.properties", b"version=1")
    assert storage.read(".hoodie/hoodie.properties") == b"version=1"
    storage.write(".hoodie/hoodie.properties", b"v=2")
    assert storage.read(".hoodie/hoodie.properties") == b"v=2"
    assert listing(storage.list_dir(".hoodie")) == [(".hoodie/hoodie.properties", 3)]


def test_write_replaces_a_create_if_absent_file(storage):
    storage.create_if_absent("f", b"old content")
    storage.write("f", b"new")
    assert storage.read("f") == b"new"


def test_empty_file(storage):
    storage.create_if_absent("empty", b"")
    assert storage.read("empty") == b""
    assert listing(storage.list_dir("")) == [("empty", 0)]


def test_read_missing_raises_file_not_found(storage):
    with pytest.raises(FileNotFoundError):
        storage.read("nope")
    storage.create_if_absent("dir/f", b"1")
    with pytest.raises(FileNotFoundError):
        storage.read("dir/g")


def test_exists(storage):
    assert not storage.exists("a/f")
    storage.create_if_absent("a/f", b"1")
    assert storage.exists("a/f")
    assert not storage.exists("a/g")


# ---------------------------------------------------------------------------------------------
# listing


def test_list_dir_lists_only_direct_files_sorted_with_sizes(storage):
    populate(storage)
    assert listing(storage.list_dir("p")) == [("p/a", 1), ("p/b", 3)]
    assert listing(storage.list_dir("p/sub")) == [("p/sub/c", 2)]
    assert listing(storage.list_dir("pa")) == [("pa/x", 4)]
    assert listing(storage.list_dir("q")) == [("q/y", 0)]


def test_list_dir_of_the_table_root(storage):
    populate(storage)
    assert listing(storage.list_dir("")) == [("top", 5)]


def test_list_dir_accepts_a_trailing_slash(storage):
    populate(storage)
    assert listing(storage.list_dir("p/")) == [("p/a", 1), ("p/b", 3)]


def test_list_dir_of_missing_or_file_path_is_empty(storage):
    populate(storage)
    assert storage.list_dir("missing") == []
    assert storage.list_dir("p/a") == []


def test_list_dir_returns_file_statuses_named_by_last_component(storage):
    populate(storage)
    statuses = storage.list_dir("p/sub")
    assert [type(s) for s in statuses] == [FileStatus]
    assert [s.name for s in statuses] == ["c"]


def test_list_subdirs(storage):
    populate(storage)
    assert storage.list_subdirs("") == ["p", "pa", "q"]
    assert storage.list_subdirs("p") == ["sub"]
    assert storage.list_subdirs("p/sub") == ["deeper"]
    assert storage.list_subdirs("p/sub/deeper") == []
    assert storage.list_subdirs("missing") == []


def test_sorting_is_by_path_not_by_creation_order(storage):
    for name in ("z", "10", "2", "a_b", "a.b", "A"):
        storage.create_if_absent(join("d", name), b"")
    assert [s.name for s in storage.list_dir("d")] == sorted(["z", "10", "2", "a_b", "a.b", "A"])


# ---------------------------------------------------------------------------------------------
# delete


def test_delete_removes_the_file(storage):
    populate(storage)
    storage.delete("p/a")
    assert not storage.exists("p/a")
    assert listing(storage.list_dir("p")) == [("p/b", 3)]
    with pytest.raises(FileNotFoundError):
        storage.read("p/a")


def test_delete_missing_is_a_no_op(storage):
    storage.delete("never/was")
    assert storage.list_dir("") == []


def test_deleted_file_can_be_created_again(storage):
    storage.create_if_absent("m/marker", b"1")
    storage.delete("m/marker")
    storage.create_if_absent("m/marker", b"22")
    assert storage.read("m/marker") == b"22"


# ---------------------------------------------------------------------------------------------
# paths escaping the table

# absolute paths and any ".." component are refused (even "a/..", which would stay inside)
ESCAPING = ("../x", "/abs", "a/../../x", "..", "a/..")

OPERATIONS = {
    "create_if_absent": lambda s, p: s.create_if_absent(p, b"x"),
    "write": lambda s, p: s.write(p, b"x"),
    "read": lambda s, p: s.read(p),
    "exists": lambda s, p: s.exists(p),
    "delete": lambda s, p: s.delete(p),
    "list_dir": lambda s, p: s.list_dir(p),
    "list_subdirs": lambda s, p: s.list_subdirs(p),
}


def _escape_cases():
    for kind in KINDS:
        for op in OPERATIONS:
            yield pytest.param(kind, op, id=f"{kind}-{op}")


@pytest.mark.parametrize(("kind", "op"), list(_escape_cases()))
def test_paths_escaping_the_table_raise_value_error(kind, op, tmp_path):
    storage = make_storage(kind, tmp_path)
    for path in ESCAPING:
        with pytest.raises(ValueError, match="relative to the table"):
            OPERATIONS[op](storage, path)


def test_rejected_writes_leave_nothing_behind(storage, tmp_path):
    for path in ESCAPING:
        with pytest.raises(ValueError):
            storage.create_if_absent(path, b"x")
        with pytest.raises(ValueError):
            storage.write(path, b"x")
    assert storage.list_dir("") == []
    assert storage.list_subdirs("") == []
    assert not (tmp_path / "x").exists()
    assert not (tmp_path / "abs").exists()


def test_dotted_names_that_stay_inside_are_fine(storage):
    storage.create_if_absent("..hidden/.x..y", b"1")
    assert storage.read("..hidden/.x..y") == b"1"
    assert storage.list_subdirs("") == ["..hidden"]


# ---------------------------------------------------------------------------------------------
# modification times


def test_in_memory_modified_ms_comes_from_its_logical_clock():
    storage = InMemoryStorage()
    storage.now_ms = 1_000
    storage.create_if_absent("t/a", b"1")
    storage.now_ms = 2_500
    storage.create_if_absent("t/b", b"1")
    assert [(s.path, s.modified_ms) for s in storage.list_dir("t")] == [
        ("t/a", 1_000),
        ("t/b", 2_500),
    ]
    storage.now_ms = 4_000
    storage.write("t/a", b"22")
    assert storage.list_dir("t")[0] == FileStatus("t/a", 2, 4_000)


def test_in_memory_paths_are_sorted():
    storage = InMemoryStorage()
    for p in ("b", "a/c", "a/b"):
        storage.create_if_absent(p, b"")
    assert list(storage.paths()) == ["a/b", "a/c", "b"]


def test_local_modified_ms_is_the_file_mtime_in_ms(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.create_if_absent("t/a", b"1")
    os.utime(tmp_path / "t" / "a", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    assert storage.list_dir("t") == [FileStatus("t/a", 1, 1_700_000_000_123)]


def test_local_storage_writes_real_files(tmp_path):
    storage = LocalStorage(tmp_path)
    storage.create_if_absent(".hoodie/timeline/1.commit.requested", b"plan")
    storage.write(".hoodie/hoodie.properties", b"a=b")
    assert (tmp_path / ".hoodie" / "timeline" / "1.commit.requested").read_bytes() == b"plan"
    assert (tmp_path / ".hoodie" / "hoodie.properties").read_bytes() == b"a=b"
    # the atomic replace leaves no temporary file behind
    assert sorted(p.name for p in (tmp_path / ".hoodie").iterdir()) == [
        "hoodie.properties",
        "timeline",
    ]


# ---------------------------------------------------------------------------------------------
# join


@pytest.mark.parametrize(
    ("parts", "expected"),
    [
        (("a", "b"), "a/b"),
        (("a", "", "b"), "a/b"),
        (("", "f.parquet"), "f.parquet"),
        (("city=sf", ""), "city=sf"),
        (("a/", "/b/", "c"), "a/b/c"),
        (("/", "x"), "x"),
        ((".hoodie", "timeline", "1.commit"), ".hoodie/timeline/1.commit"),
        (("",), ""),
        ((), ""),
    ],
)
def test_join_skips_empty_parts(parts, expected):
    assert join(*parts) == expected


def test_list_dir_follows_every_change_after_a_listing(storage):
    storage.create_if_absent("p/a", b"1")
    first = storage.list_dir("p")
    first.clear()  # a caller changing its copy does not change the next listing
    assert listing(storage.list_dir("p")) == [("p/a", 1)]
    storage.create_if_absent("p/b", b"22")
    assert listing(storage.list_dir("p")) == [("p/a", 1), ("p/b", 2)]
    storage.write("p/a", b"333")
    assert listing(storage.list_dir("p")) == [("p/a", 3), ("p/b", 2)]
    storage.delete("p/b")
    assert listing(storage.list_dir("p")) == [("p/a", 3)]
    assert [f.name for f in storage.list_dir("p")] == ["a"]
