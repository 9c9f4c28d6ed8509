"""The write profile (models/flink/write_profile.py): which committed file slices are small files
(copy-on-write: base files under the small-file limit; merge-on-read: base plus 0.35 of the logs
under the max file size, log-only slices included), and a profile that answers from the view of
its last reload, once per checkpoint id, with the average record size of the newest commit that
wrote enough (each commit's metadata read once while it is on the timeline)."""

from __future__ import annotations

from models.flink.bucket_assigner import RECORD_SIZE_ESTIMATE_BYTES
from models.flink.write_profile import TableWriteProfile, small_files
from models.format.commit_metadata import CommitMetadata, WriteStat
from models.timeline.instant import Instant, State
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


def _commit(bytes_written: int, records: int) -> CommitMetadata:
    stat = WriteStat(
        file_id="a",
        path="p/a.parquet",
        partition_path="p",
        num_writes=records,
        total_write_bytes=bytes_written,
    )
    return CommitMetadata({"p": (stat,)})


def _completed(time: str) -> Instant:
    return Instant(time, State.COMPLETED, "commit", time)


def test_the_newest_commit_over_the_threshold_sets_the_average_record_size():
    commits = [
        _completed("20260101000000001"),
        _completed("20260101000000002"),
        _completed("20260101000000003"),
    ]
    metadata = {
        "20260101000000001": _commit(301, 100),
        "20260101000000002": _commit(500, 7),
        "20260101000000003": _commit(99, 1),
    }
    profile = TableWriteProfile(
        list,
        is_mor=False,
        small_file_limit_bytes=300,
        completed_commits=lambda: commits,
        commit_metadata=lambda instant: metadata[instant.requested_time],
    )
    # the newest wrote 99 bytes (not over 1.0 x 300); the one before did: ceil(500 / 7)
    assert profile.avg_size == 72
    # the oldest commit was never read
    assert sorted(profile.metadata_cache) == ["20260101000000002", "20260101000000003"]


def test_no_commit_over_the_threshold_keeps_the_estimate_and_unreadable_metadata_is_read_again():
    commits = [_completed("20260101000000001"), _completed("20260101000000002")]
    reads: list[str] = []

    def read(instant: Instant) -> CommitMetadata | None:
        reads.append(instant.requested_time)
        return None if instant.requested_time == "20260101000000001" else _commit(10, 1)

    profile = TableWriteProfile(
        list, is_mor=False, completed_commits=lambda: commits, commit_metadata=read
    )
    assert profile.avg_size == RECORD_SIZE_ESTIMATE_BYTES
    commits.pop(1)  # the newer commit left the timeline (archived)
    profile.reload(1)
    first, second = "20260101000000001", "20260101000000002"
    assert reads == [second, first, first] and profile.metadata_cache == {}
