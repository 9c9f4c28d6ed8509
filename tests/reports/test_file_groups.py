"""Tests for reports/file_groups.py: file groups, their records and the index state over time
under the Flink state index and the bucket index, and the index bootstrap's cost, read from what
``testbed run`` writes (tests/reports/conftest.py)."""

from __future__ import annotations

from reports.file_groups import (
    file_group_counts,
    file_group_of,
    file_group_records,
    index_bootstraps,
    index_state_keys,
    insert_packing,
    plot_bootstrap_cost,
    plot_state_vs_bucket,
)
from reports.run_data import load_run


def test_file_groups_are_read_from_data_file_names():
    assert file_group_of("part=p0/0a1b-x_0-1-3_20260101000009057.parquet") == ("part=p0", "0a1b-x")
    assert file_group_of("part=p1/.f1-0_20260101000009057.log.2_0-1-0") == ("part=p1", "f1-0")
    assert file_group_of("part=p1/.hoodie_partition_metadata") is None


def test_the_state_index_grows_file_groups_where_the_bucket_index_keeps_them(runs, tmp_path):
    state = file_group_counts(load_run(runs["state"]))
    bucket = file_group_counts(load_run(runs["bucket"]))
    assert {count for _, count in bucket} == {8}  # 2 partitions x 4 buckets, from the first commit
    assert state[-1][1] > 8 and state[0][1] < state[-1][1]
    assert [c for _, c in state] == sorted(c for _, c in state)
    figure = plot_state_vs_bucket(runs["state"], runs["bucket"], tmp_path)
    assert figure.png.is_file() and figure.svg.is_file()
    assert f"ends with {state[-1][1]}" in figure.caption
    assert "writes 8 file groups from the start" in figure.caption


def test_state_index_file_groups_stay_small_while_bucket_index_ones_grow(runs):
    state = file_group_records(load_run(runs["state"]))
    bucket = file_group_records(load_run(runs["bucket"]))
    assert state and bucket
    assert all(median <= largest for _, median, largest in state + bucket)
    assert bucket[-1][1] > 2 * state[-1][1]  # the buckets keep growing, small files stay small
    assert [m for _, m, _ in bucket] == sorted(m for _, m, _ in bucket)


def test_small_files_take_new_keys_until_full_and_buckets_take_them_all(runs, tmp_path):
    """The state index packs part of its new keys into small files and opens new file groups
    for the rest; after its first commit the bucket index never opens one."""
    state = insert_packing(load_run(runs["state"]))
    bucket = insert_packing(load_run(runs["bucket"]))
    assert state and bucket
    for points in (state, bucket):
        assert [p for _, p, _ in points] == sorted(p for _, p, _ in points)
        assert [o for _, _, o in points] == sorted(o for _, _, o in points)
    _, packed, opened = state[-1]
    assert packed > 0 and opened > bucket[-1][2]
    assert {o for _, _, o in bucket} == {bucket[0][2]} and bucket[-1][1] > bucket[0][1]
    figure = plot_state_vs_bucket(runs["state"], runs["bucket"], tmp_path)
    assert f"{packed:,} ({packed / (packed + opened):.0%}) were packed" in figure.caption


def test_the_index_state_grows_with_the_keys_and_the_bucket_index_keeps_none(runs, tmp_path):
    state = index_state_keys(load_run(runs["state"]))
    assert index_state_keys(load_run(runs["bucket"])) == []
    keys = [k for _, k in state]
    assert keys == sorted(keys) and keys[0] > 0 and keys[-1] > keys[0]
    assert [t for t, _ in state] == sorted(t for t, _ in state)
    figure = plot_state_vs_bucket(runs["state"], runs["bucket"], tmp_path)
    assert f"{keys[-1]:,} at the last completed checkpoint" in figure.caption


def test_the_bootstrap_cost_shows_keys_time_and_what_it_buys(runs, tmp_path):
    boots = index_bootstraps(load_run(runs["state_bootstrap"]))
    assert boots and all(keys > 0 and ms >= 0 for keys, ms in boots)
    assert index_bootstraps(load_run(runs["state_lost"])) == []
    figure = plot_bootstrap_cost(runs["state_lost"], runs["state_bootstrap"], tmp_path)
    assert figure.png.is_file()
    assert f"loaded up to {max(boots)[0]:,} keys" in figure.caption
    assert "unique_key holds with it" in figure.caption
    assert "unique_key is violated" in figure.caption
