"""Tests for reports/file_groups.py: file groups over time under the Flink state index and the
bucket index, read from what ``testbed run`` writes (tests/reports/conftest.py)."""

from __future__ import annotations

from reports.file_groups import file_group_counts, file_group_of, plot_state_vs_bucket
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
