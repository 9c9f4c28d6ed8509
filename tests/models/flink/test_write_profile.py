"""The write profile (models/flink/write_profile.py): which committed file slices are small files
(copy-on-write: base files under the small-file limit; merge-on-read: base plus 0.35 of the logs
under the max file size, log-only slices included), and a profile that answers from the view of
its last reload, once per checkpoint id."""

from __future__ import annotations

from models.flink.write_profile import TableWriteProfile, small_files
from models.view.filenames import LogFileName
from models.view.fsview import BaseFile, FileSlice, LogFile


def log(file_id: str, instant: str, size: int) -> LogFile:
    return LogFile(
        f".{file_id}_{instant}.log.1", LogFileName(file_id, instant, 1, None), instant, size
    )


def test_copy_on_write_small_files_are_base_files_under_the_limit():
    slices = [
        FileSlice("p", "b", "t2", BaseFile("b.parquet", "b", "t2", 50)),
        FileSlice("p", "a", "t1", BaseFile("a.parquet", "a", "t1", 10)),
        FileSlice("p", "c", "t1", BaseFile("c.parquet", "c", "t1", 500)),
        FileSlice("q", "d", "t1", BaseFile("d.parquet", "d", "t1", 10)),
    ]
    got = small_files(slices, "p", is_mor=False, small_file_limit_bytes=100)
    assert [(f.file_id, f.instant, f.size_bytes) for f in got] == [("a", "t1", 10), ("b", "t2", 50)]


def test_merge_on_read_small_files_count_a_third_of_the_logs():
    slices = [
        FileSlice("p", "a", "t1", BaseFile("a.parquet", "a", "t1", 100), (log("a", "t3", 100),)),
        FileSlice("p", "b", "t4", None, (log("b", "t5", 200), log("b", "t4", 100))),
        FileSlice("p", "c", "t1", BaseFile("c.parquet", "c", "t1", 990), (log("c", "t3", 100),)),
    ]
    got = small_files(slices, "p", is_mor=True, max_file_size_bytes=1000)
    # a: 100 + 0.35 * 100; b (log only): 0.35 * 300, its first log's instant; c: 1025, too big
    assert [(f.file_id, f.instant, f.size_bytes) for f in got] == [
        ("a", "t1", 135),
        ("b", "t4", 105),
    ]


def test_a_profile_answers_from_its_last_reload():
    views = [[FileSlice("p", "a", "t1", BaseFile("a.parquet", "a", "t1", 10))], []]
    calls = []

    def committed():
        calls.append(1)
        return views[min(len(calls) - 1, 1)]

    profile = TableWriteProfile(committed, is_mor=False)
    assert [f.file_id for f in profile.small_files("p")] == ["a"]
    profile.reload(1)
    assert list(profile.small_files("p")) == []
    profile.reload(1)  # another task's reload of the same checkpoint reads nothing again
    assert len(calls) == 2
