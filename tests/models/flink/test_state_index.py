"""The Flink state index (models/flink/state_index.py): a known key in the same partition is an
UPDATE of its file group, a new key takes the assigner's insert path and is remembered; a
snapshot copies the keyed state and resets the bucket map; a restore hands each subtask the keys
whose key group it owns, whatever the parallelism."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from models.flink.bucket_assigner import BucketType
from models.flink.key_groups import operator_index
from models.flink.state_index import StateIndex, restore_locations
from models.flink.write_buffer import ROW_KIND_COLUMN
from models.flink.write_files import LOCATION_FILE_ID, LOCATION_INSTANT
from models.format.records import SCHEMA
from tests.conformance.test_bucket_assigner import mock_bucket_assigner


def records(*keys_and_parts: tuple[str, str]) -> pa.Table:
    rows = [
        {"key": k, "part": p, "ts": i, "offset": i, "job": 0, "value": i}
        for i, (k, p) in enumerate(keys_and_parts)
    ]
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def test_new_keys_are_inserted_and_known_keys_update_their_file_group():
    index = StateIndex(mock_bucket_assigner())
    first = index.assign(records(("k1", "p0"), ("k2", "p0"), ("k3", "p1")))
    ids = first.column(LOCATION_FILE_ID).to_pylist()
    assert ids[0] == ids[1] != ids[2]  # one new file per partition
    assert index.locations == {
        "k1": ("part=p0", ids[0]),
        "k2": ("part=p0", ids[0]),
        "k3": ("part=p1", ids[2]),
    }
    again = index.assign(records(("k3", "p1"), ("k1", "p0"), ("k4", "p0")))
    assert again.column(LOCATION_FILE_ID).to_pylist() == [ids[2], ids[0], ids[0]]
    assert first.column("key").to_pylist() == ["k1", "k2", "k3"]  # rows keep their order


def test_a_snapshot_copies_the_state_and_resets_the_bucket_map():
    index = StateIndex(mock_bucket_assigner())
    index.assign(records(("k1", "p0")))
    snapshot = index.snapshot()
    index.assign(records(("k2", "p0")))
    assert set(snapshot) == {"k1"} and set(index.locations) == {"k1", "k2"}
    # after the snapshot the partition's new file is an UPDATE bucket (BucketAssigner#reset)
    assert index.assigner.add_insert("part=p0").bucket_type is BucketType.UPDATE


@given(st.sets(st.integers(0, 10_000), max_size=60), st.integers(1, 9))
def test_a_restore_splits_the_state_by_key_group(ids, parallelism):
    state = {f"k{i:08d}": ("part=p0", f"f{i % 3}") for i in ids}
    parts = [restore_locations(state, t, 128, parallelism) for t in range(parallelism)]
    assert sum(len(p) for p in parts) == len(state)
    for task_id, part in enumerate(parts):
        assert all(operator_index(k, 128, parallelism) == task_id for k in part)
        assert all(state[k] == v for k, v in part.items())


def test_an_entry_not_written_for_the_ttl_expires_and_its_key_is_inserted_again():
    """``index.state.ttl``: expired when written + ttl <= now (``TtlUtils#expired``); a known
    key's record refreshes its entry. (A second assigner, whose new files differ from the
    first's, tells an UPDATE from a new INSERT.)"""
    index = StateIndex(mock_bucket_assigner(), ttl_ms=1000)
    first = index.assign(records(("k1", "p0")), now_ms=0).column(LOCATION_FILE_ID)[0].as_py()
    index.assigner = mock_bucket_assigner(1, 2)
    assert (
        index.assign(records(("k1", "p0")), now_ms=999).column(LOCATION_FILE_ID)[0].as_py() == first
    )
    assert (
        index.assign(records(("k1", "p0")), now_ms=1998).column(LOCATION_FILE_ID)[0].as_py()
        == first
    )
    expired = index.assign(records(("k1", "p0")), now_ms=2998).column(LOCATION_FILE_ID)[0].as_py()
    assert expired != first and index.locations["k1"] == ("part=p0", expired)
    assert index.written_ms == {"k1": 2998}


def test_written_only_on_a_location_change_an_entry_updated_in_place_still_expires():
    """``index_state_refresh = "location_change"`` (master's ``processRecord``: "refresh the
    index only when the location is updated"): records of a known key in its partition do not
    write the entry, so it expires one TTL after the insert; the re-insert writes it again."""
    index = StateIndex(mock_bucket_assigner(), ttl_ms=1000, refresh="location_change")
    first = index.assign(records(("k1", "p0")), now_ms=0).column(LOCATION_FILE_ID)[0].as_py()
    index.assigner = mock_bucket_assigner(1, 2)
    for now_ms in (300, 600, 999):
        located = index.assign(records(("k1", "p0")), now_ms=now_ms)
        assert located.column(LOCATION_FILE_ID)[0].as_py() == first
    assert index.written_ms == {"k1": 0}
    again = index.assign(records(("k1", "p0")), now_ms=1000).column(LOCATION_FILE_ID)[0].as_py()
    assert again != first and index.written_ms == {"k1": 1000}


def test_without_a_ttl_entries_never_expire_and_no_times_are_kept():
    index = StateIndex(mock_bucket_assigner())
    first = index.assign(records(("k1", "p0")), now_ms=0).column(LOCATION_FILE_ID)[0]
    index.snapshot()
    assert index.assign(records(("k1", "p0")), now_ms=10**12).column(LOCATION_FILE_ID)[0] == first
    assert index.written_ms == {}


def test_loaded_index_records_are_written_at_the_load():
    index = StateIndex(mock_bucket_assigner(), ttl_ms=1000)
    index.load({"k1": ("part=p0", "f1")}, now_ms=500)
    assert index.written_ms == {"k1": 500}
    assert (
        index.assign(records(("k1", "p0")), now_ms=1499).column(LOCATION_FILE_ID)[0].as_py() == "f1"
    )


def test_records_carry_i_for_a_new_file_group_and_u_otherwise():
    index = StateIndex(mock_bucket_assigner())
    first = index.assign(records(("k1", "p0"), ("k2", "p0")))
    # a new file, and the next insert into it in the same interval: both INSERT buckets
    assert first.column(LOCATION_INSTANT).to_pylist() == ["I", "I"]
    index.snapshot()  # the barrier: the assigner's bucket map is reset
    again = index.assign(records(("k1", "p0"), ("k3", "p0")))
    # a known key, and an insert into last interval's new file: UPDATE buckets
    assert again.column(LOCATION_INSTANT).to_pylist() == ["U", "U"]
    assert len(set(again.column(LOCATION_FILE_ID).to_pylist())) == 1


def test_the_global_index_deletes_a_moved_key_at_its_old_location_before_inserting_it():
    """``index.global.enabled``: a record naming another partition than its key's entry is
    preceded by a delete of the key at the entry's location (old partition, old file id, tag
    "U"), then takes the insert path; every output row carries the delete flag."""
    index = StateIndex(mock_bucket_assigner(), global_index=True)
    first = index.assign(records(("k1", "p0"), ("k2", "p0")))
    assert first.column(ROW_KIND_COLUMN).to_pylist() == [False, False]
    old_file = first.column(LOCATION_FILE_ID)[0].as_py()
    moved = index.assign(records(("k2", "p0"), ("k1", "p1")))
    assert moved.column("key").to_pylist() == ["k2", "k1", "k1"]
    assert moved.column(ROW_KIND_COLUMN).to_pylist() == [False, True, False]
    delete = moved.slice(1, 1).to_pylist()[0]
    assert (delete["part"], delete[LOCATION_FILE_ID], delete[LOCATION_INSTANT]) == (
        "p0",
        old_file,
        "U",
    )
    assert index.locations["k1"][0] == "part=p1"
    assert moved.column(LOCATION_FILE_ID)[2].as_py() != old_file


def test_without_the_global_index_a_moved_key_is_only_inserted():
    index = StateIndex(mock_bucket_assigner())
    index.assign(records(("k1", "p0")))
    moved = index.assign(records(("k1", "p1")))
    assert moved.num_rows == 1 and ROW_KIND_COLUMN not in moved.column_names
    assert index.locations["k1"][0] == "part=p1"
