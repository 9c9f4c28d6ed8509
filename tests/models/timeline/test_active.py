"""The timeline (models/timeline/active.py): loading instants from a listing, the Timeline value, and the
write-once transitions of ActiveTimeline under TrueTime (docs/protocol.md sections 1-2)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from models.format.properties import TableConfig
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import FileAlreadyExistsError, FileStatus, InMemoryStorage, LocalStorage
from models.timeline.active import (
    ActiveTimeline,
    ArchiveFallback,
    Timeline,
    TimelineError,
    instants_from_listing,
)
from models.timeline.instant import Instant, State
from models.timeline.instant_time import format_epoch_ms
from models.timeline.truetime import make_time_generator

START = 1_704_164_645_000  # 2024-01-02T03:04:05.000Z
TL = ".hoodie/timeline"


def t(n: int) -> str:
    """A 17-digit instant time n milliseconds into 2024-01-01."""
    return f"20240101000000{n:03d}"


def status(name: str, modified_ms: int = 0, folder: str = TL) -> FileStatus:
    return FileStatus(f"{folder}/{name}", 0, modified_ms)


def load(*names: str, layout: int = 2) -> tuple[Instant, ...]:
    return instants_from_listing([status(n) for n in names], layout)


# ---------------------------------------------------------------------------------------------
# instants_from_listing


def test_each_instant_at_its_latest_state():
    assert load(
        f"{t(1)}.deltacommit.requested",
        f"{t(1)}.deltacommit.inflight",
        f"{t(1)}_{t(5)}.deltacommit",
        f"{t(2)}.commit.requested",
        f"{t(2)}.inflight",
        f"{t(3)}.clean.requested",
    ) == (
        Instant(t(1), State.COMPLETED, "deltacommit", t(5)),
        Instant(t(2), State.INFLIGHT, "commit"),
        Instant(t(3), State.REQUESTED, "clean"),
    )


def test_listing_order_does_not_matter():
    names = [
        f"{t(2)}_{t(4)}.commit",
        f"{t(1)}.deltacommit.inflight",
        f"{t(2)}.commit.requested",
        f"{t(1)}.deltacommit.requested",
        f"{t(2)}.inflight",
    ]
    assert load(*names) == load(*reversed(names)) == load(*sorted(names))
    assert load(*names) == (
        Instant(t(1), State.INFLIGHT, "deltacommit"),
        Instant(t(2), State.COMPLETED, "commit", t(4)),
    )


@pytest.mark.parametrize(
    ("pending", "completed"),
    [("compaction", "commit"), ("logcompaction", "deltacommit"), ("clustering", "replacecommit")],
)
def test_completed_table_service_folds_into_one_instant(pending, completed):
    assert load(
        f"{t(7)}.{pending}.requested",
        f"{t(7)}.{pending}.inflight",
        f"{t(7)}_{t(9)}.{completed}",
    ) == (Instant(t(7), State.COMPLETED, completed, t(9)),)


def test_completed_compaction_reports_action_commit():
    (instant,) = load(
        f"{t(7)}.compaction.requested", f"{t(7)}.compaction.inflight", f"{t(7)}_{t(9)}.commit"
    )
    assert instant.action == "commit"
    assert instant.completion_time == t(9)


@pytest.mark.parametrize(
    ("names", "state"),
    [
        ((f"{t(7)}.compaction.requested",), State.REQUESTED),
        ((f"{t(7)}.compaction.requested", f"{t(7)}.compaction.inflight"), State.INFLIGHT),
    ],
)
def test_pending_compaction_stays_compaction(names, state):
    assert load(*names) == (Instant(t(7), state, "compaction"),)


def test_layout_1_completion_time_comes_from_mtime():
    mtime = 1_713_461_751_234  # 2024-04-18T17:35:51.234Z
    files = [
        status("20240418173550988.commit.requested", 1, ".hoodie"),
        status("20240418173550988.inflight", 2, ".hoodie"),
        status("20240418173550988.commit", mtime, ".hoodie"),
    ]
    assert instants_from_listing(files, 1) == (
        Instant("20240418173550988", State.COMPLETED, "commit", "20240418173551234"),
    )
    assert format_epoch_ms(mtime) == "20240418173551234"


def test_non_instant_files_are_ignored():
    assert load(
        "hoodie.properties",
        ".aux",
        "history",
        f"{t(1)}.commit.requested.crc",
        f".{t(1)}.commit",
        f"{t(1)}.unknown",
        f"{t(2)}.deltacommit.requested",
    ) == (Instant(t(2), State.REQUESTED, "deltacommit"),)


def test_empty_listing():
    assert instants_from_listing([], 2) == ()


def test_legacy_14_digit_names_are_normalized():
    assert load("20240101000000.commit.requested", "20240101000000.inflight") == (
        Instant("20240101000000999", State.INFLIGHT, "commit"),
    )


# ---------------------------------------------------------------------------------------------
# Timeline queries


def sample() -> Timeline:
    return Timeline(
        (
            Instant(t(6), State.REQUESTED, "compaction"),
            Instant(t(4), State.INFLIGHT, "deltacommit"),
            Instant(t(2), State.COMPLETED, "commit", t(3)),
            Instant(t(1), State.COMPLETED, "deltacommit", t(5)),
        )
    )


def times(timeline: Timeline) -> list[str]:
    return [i.requested_time for i in timeline]


def test_timeline_is_sorted_by_requested_time():
    assert times(sample()) == [t(1), t(2), t(4), t(6)]
    assert len(sample()) == 4


def test_completion_time_and_is_completed():
    timeline = sample()
    assert timeline.completion_time(t(1)) == t(5)
    assert timeline.completion_time(t(2)) == t(3)
    assert timeline.completion_time(t(4)) is None
    assert timeline.completion_time(t(6)) is None
    assert timeline.completion_time(t(9)) is None
    assert [timeline.is_completed(t(n)) for n in (1, 2, 4, 6, 9)] == [
        True,
        True,
        False,
        False,
        False,
    ]


def test_completion_time_accepts_legacy_times():
    timeline = Timeline((Instant("20240101000000", State.COMPLETED, "commit", t(5)),))
    assert timeline.completion_time("20240101000000") == t(5)
    assert timeline.get("20240101000000999") == timeline.instants[0]


def test_get():
    assert sample().get(t(4)) == Instant(t(4), State.INFLIGHT, "deltacommit")
    assert sample().get(t(5)) is None


def test_by_completion_time_and_last_completed():
    timeline = sample()
    assert timeline.by_completion_time() == (
        Instant(t(2), State.COMPLETED, "commit", t(3)),
        Instant(t(1), State.COMPLETED, "deltacommit", t(5)),
    )
    # the last to complete, although requested first
    assert timeline.last_completed() == Instant(t(1), State.COMPLETED, "deltacommit", t(5))


def test_last_completed_of_a_pending_only_timeline_is_none():
    assert Timeline((Instant(t(1), State.INFLIGHT, "commit"),)).last_completed() is None
    assert Timeline().last_completed() is None


def test_completed_pending_and_with_actions():
    timeline = sample()
    assert times(timeline.completed()) == [t(1), t(2)]
    assert times(timeline.pending()) == [t(4), t(6)]
    assert times(timeline.with_actions("deltacommit")) == [t(1), t(4)]
    assert times(timeline.filter(lambda i: i.action == "commit")) == [t(2)]


def test_as_of_turns_later_completions_into_inflight_and_drops_later_requests():
    assert sample().as_of(t(4)).instants == (
        Instant(t(1), State.INFLIGHT, "deltacommit"),  # completed at t5 > t4
        Instant(t(2), State.COMPLETED, "commit", t(3)),
        Instant(t(4), State.INFLIGHT, "deltacommit"),  # requested at the bound: kept
        # t6 was requested after the bound: gone
    )


def test_as_of_bound_is_inclusive_for_completion():
    as_of = sample().as_of(t(5))
    assert as_of.completion_time(t(1)) == t(5)
    assert times(as_of) == [t(1), t(2), t(4)]


def test_as_of_before_everything_is_empty_and_after_everything_is_identity():
    assert sample().as_of(t(0)).instants == ()
    assert sample().as_of(t(999)) == sample()


def test_as_of_between_request_and_completion():
    as_of = sample().as_of(t(2))
    assert as_of.instants == (
        Instant(t(1), State.INFLIGHT, "deltacommit"),
        Instant(t(2), State.INFLIGHT, "commit"),
    )
    assert as_of.last_completed() is None


# ---------------------------------------------------------------------------------------------
# ActiveTimeline


class RecordingStorage(InMemoryStorage):
    """Records, for every created path, whether ``lock`` was held at that moment."""

    def __init__(self, lock: LocalLock) -> None:
        super().__init__()
        self.lock = lock
        self.held_at_create: dict[str, bool] = {}

    def create_if_absent(self, path: str, data: bytes) -> None:
        self.held_at_create[path] = self.lock.held
        super().create_if_absent(path, data)


V8 = TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "8"})


class Rig:
    def __init__(self, config: TableConfig = V8) -> None:
        self.clock = FakeClock(FakeWorld(START))
        self.lock = LocalLock()
        self.storage = RecordingStorage(self.lock)
        self.generator = make_time_generator("truetime", clock=self.clock, lock=self.lock)
        self.timeline = ActiveTimeline(self.storage, config)

    def new_time(self) -> str:
        return run(self.generator.generate_time(), self.clock)

    def complete(self, instant: Instant, content: bytes = b"{}") -> Instant:
        return run(self.timeline.complete(instant, content, self.generator), self.clock)

    def files(self) -> list[str]:
        return list(self.storage.paths())


@pytest.fixture
def rig() -> Rig:
    return Rig()


def test_full_transition_creates_the_right_files(rig):
    requested_time = rig.new_time()
    assert requested_time == "20240102030405000"
    requested = rig.timeline.create_requested(requested_time, "commit", b"plan")
    assert requested == Instant(requested_time, State.REQUESTED, "commit")
    assert rig.files() == [f"{TL}/{requested_time}.commit.requested"]

    inflight = rig.timeline.transition_to_inflight(requested, b"inflight")
    assert inflight == Instant(requested_time, State.INFLIGHT, "commit")

    done = rig.complete(inflight, b"metadata")
    # TrueTime: read the clock after the previous generator round (200 ms of skew wait)
    assert done == Instant(requested_time, State.COMPLETED, "commit", "20240102030405200")
    assert rig.files() == [
        f"{TL}/{requested_time}.commit.requested",
        f"{TL}/{requested_time}.inflight",
        f"{TL}/{requested_time}_20240102030405200.commit",
    ]
    assert rig.storage.read(f"{TL}/{requested_time}.commit.requested") == b"plan"
    assert rig.storage.read(f"{TL}/{requested_time}.inflight") == b"inflight"
    assert rig.timeline.read_content(done) == b"metadata"
    assert rig.timeline.load().instants == (done,)


def test_deltacommit_files(rig):
    time = rig.new_time()
    inflight = rig.timeline.transition_to_inflight(
        rig.timeline.create_requested(time, "deltacommit")
    )
    done = rig.complete(inflight)
    assert rig.files() == [
        f"{TL}/{time}.deltacommit.inflight",
        f"{TL}/{time}.deltacommit.requested",
        f"{TL}/{time}_{done.completion_time}.deltacommit",
    ]


def test_completed_compaction_is_written_as_commit(rig):
    time = rig.new_time()
    inflight = rig.timeline.transition_to_inflight(
        rig.timeline.create_requested(time, "compaction")
    )
    done = rig.complete(inflight)
    assert rig.timeline.path_of(done) == f"{TL}/{time}_{done.completion_time}.commit"
    assert rig.timeline.load().instants == (
        Instant(time, State.COMPLETED, "commit", done.completion_time),
    )


def test_completion_time_is_after_requested_time(rig):
    times = []
    for _ in range(3):
        time = rig.new_time()
        inflight = rig.timeline.transition_to_inflight(
            rig.timeline.create_requested(time, "deltacommit")
        )
        done = rig.complete(inflight)
        assert done.completion_time > done.requested_time
        times += [done.requested_time, done.completion_time]
    assert times == sorted(times)
    assert len(set(times)) == 6


def test_lock_is_held_while_the_completed_file_is_created(rig):
    time = rig.new_time()
    inflight = rig.timeline.transition_to_inflight(rig.timeline.create_requested(time, "commit"))
    done = rig.complete(inflight)
    assert rig.storage.held_at_create == {
        f"{TL}/{time}.commit.requested": False,
        f"{TL}/{time}.inflight": False,
        rig.timeline.path_of(done): True,
    }
    assert not rig.lock.held
    # requested time + completion time: one lock round each
    assert rig.lock.acquisitions == 2


def test_second_create_requested_of_the_same_time_fails(rig):
    time = rig.new_time()
    rig.timeline.create_requested(time, "deltacommit", b"first")
    with pytest.raises(FileAlreadyExistsError):
        rig.timeline.create_requested(time, "deltacommit", b"second")
    assert rig.storage.read(f"{TL}/{time}.deltacommit.requested") == b"first"


def test_second_transition_to_inflight_fails(rig):
    requested = rig.timeline.create_requested(rig.new_time(), "commit")
    rig.timeline.transition_to_inflight(requested)
    with pytest.raises(FileAlreadyExistsError):
        rig.timeline.transition_to_inflight(requested)


def test_only_a_requested_instant_goes_inflight(rig):
    inflight = rig.timeline.transition_to_inflight(
        rig.timeline.create_requested(rig.new_time(), "commit")
    )
    with pytest.raises(TimelineError, match="only a requested instant"):
        rig.timeline.transition_to_inflight(inflight)


def test_completing_a_requested_instant_raises(rig):
    requested = rig.timeline.create_requested(rig.new_time(), "commit")
    with pytest.raises(TimelineError, match="only an inflight instant"):
        rig.complete(requested)
    assert not rig.lock.held
    assert rig.timeline.load().instants == (requested,)


def test_completing_a_completed_instant_raises(rig):
    inflight = rig.timeline.transition_to_inflight(
        rig.timeline.create_requested(rig.new_time(), "commit")
    )
    done = rig.complete(inflight)
    files = rig.files()
    with pytest.raises(TimelineError, match="only an inflight instant"):
        rig.complete(done)
    assert rig.files() == files
    assert not rig.lock.held


def test_completing_the_same_inflight_instant_twice_raises(rig):
    time = rig.new_time()
    inflight = rig.timeline.transition_to_inflight(rig.timeline.create_requested(time, "commit"))
    rig.complete(inflight)
    with pytest.raises((TimelineError, FileAlreadyExistsError)):
        rig.complete(inflight)
    assert len([f for f in rig.files() if f.endswith(".commit")]) == 1


def test_completion_before_requested_time_is_refused_and_releases_the_lock(rig):
    # a writer whose requested time is ahead of this clock (skew)
    future = rig.timeline.create_requested("20240102030500000", "deltacommit")
    inflight = rig.timeline.transition_to_inflight(future)
    with pytest.raises(TimelineError, match="not after requested time"):
        rig.complete(inflight)
    assert not rig.lock.held
    assert rig.timeline.load().instants == (inflight,)


def test_completion_file_collision_releases_the_lock(rig):
    time = rig.new_time()
    inflight = rig.timeline.transition_to_inflight(rig.timeline.create_requested(time, "commit"))
    # someone already created the completed file the next completion time will produce
    rig.storage.create_if_absent(f"{TL}/{time}_20240102030405200.commit", b"other")
    with pytest.raises(TimelineError, match="already completed"):
        rig.complete(inflight)
    assert not rig.lock.held


@pytest.mark.parametrize("version", ["6", "5"])
def test_writing_on_layout_1_raises(version):
    rig = Rig(TableConfig({"hoodie.table.name": "t", "hoodie.table.version": version}))
    assert rig.timeline.layout_version == 1
    assert rig.timeline.folder == ".hoodie"
    with pytest.raises(TimelineError, match="layout 2"):
        rig.timeline.create_requested(t(1), "commit")
    with pytest.raises(TimelineError, match="layout 2"):
        rig.timeline.transition_to_inflight(Instant(t(1), State.REQUESTED, "commit"))
    with pytest.raises(TimelineError, match="layout 2"):
        rig.complete(Instant(t(1), State.INFLIGHT, "commit"))
    assert rig.files() == []
    assert not rig.lock.held


def test_custom_timeline_path():
    config = TableConfig(
        {"hoodie.table.name": "t", "hoodie.table.version": "9", "hoodie.timeline.path": "tl"}
    )
    rig = Rig(config)
    rig.timeline.create_requested(t(1), "clean")
    assert rig.files() == [f".hoodie/tl/{t(1)}.clean.requested"]


def test_load_layout_1_from_storage():
    storage = InMemoryStorage()
    storage.now_ms = 1_704_067_200_500  # 2024-01-01T00:00:00.500Z
    storage.create_if_absent(f".hoodie/{t(1)}.commit.requested", b"")
    storage.create_if_absent(f".hoodie/{t(1)}.commit", b"{}")
    storage.create_if_absent(".hoodie/hoodie.properties", b"")
    timeline = ActiveTimeline(
        storage, TableConfig({"hoodie.table.name": "t", "hoodie.table.version": "6"})
    ).load()
    assert timeline.instants == (Instant(t(1), State.COMPLETED, "commit", t(500)),)


def test_load_real_v8_fixture_with_a_compaction(fixture_tables):
    table = fixture_tables["quickstart_trips_table_mor_avro_v8_trips_8i3u1d"]
    timeline = ActiveTimeline(LocalStorage(table), V8).load()
    assert [(i.requested_time, i.action, i.completion_time) for i in timeline] == [
        ("20251220210108078", "deltacommit", "20251220210109593"),
        ("20251220210117766", "indexing", "20251220210118628"),
        ("20251220210123755", "deltacommit", "20251220210124336"),
        ("20251220210125441", "deltacommit", "20251220210126002"),
        ("20251220210127080", "deltacommit", "20251220210127601"),
        ("20251220210128625", "deltacommit", "20251220210129197"),
        ("20251220210129235", "commit", "20251220210129883"),  # the folded compaction
        ("20251220210130911", "deltacommit", "20251220210131755"),
    ]
    assert all(i.is_completed for i in timeline)


def test_as_of_inside_a_compaction_keeps_its_completed_action():
    timeline = Timeline(
        tuple(
            instants_from_listing(
                [
                    status(f"{t(7)}.compaction.requested"),
                    status(f"{t(7)}.compaction.inflight"),
                    status(f"{t(7)}_{t(9)}.commit"),
                ],
                2,
            )
        )
    )
    # documented: the folded compaction becomes an inflight "commit", not a pending compaction
    assert timeline.as_of(t(8)).instants == (Instant(t(7), State.INFLIGHT, "commit"),)
    assert timeline.as_of(t(9)).instants == (Instant(t(7), State.COMPLETED, "commit", t(9)),)


# ---------------------------------------------------------------------------------------------
# The archive as a completion-time fallback
# ---------------------------------------------------------------------------------------------


@dataclass
class StubArchive:
    completions: dict[str, str]
    asked: int = 0

    def completion_time(self, requested_time: str) -> str | None:
        self.asked += 1
        return self.completions.get(requested_time)


def done(n: int, c: int, action: str = "deltacommit") -> Instant:
    return Instant(t(n), State.COMPLETED, action, t(c))


def test_timeline_answers_for_archived_instants_only_before_its_start():
    archive = StubArchive({t(10): t(30)})
    timeline = Timeline((done(40, 41), done(50, 51))).with_archive(ArchiveFallback(archive, t(40)))
    assert timeline.completion_time(t(10)) == t(30)
    assert timeline.is_completed(t(10))
    assert timeline.completion_time(t(45)) is None  # never archived: not even asked
    assert archive.asked == 2
    assert timeline.completed().completion_time(t(10)) == t(30)  # derived timelines keep it
    # time travel: archived, but completed after the bound
    assert timeline.as_of(t(20)).completion_time(t(10)) is None
    assert timeline.as_of(t(35)).completion_time(t(10)) == t(30)


def test_the_14365_variant_keeps_archived_instants_committed_without_completion_times():
    archive = StubArchive({t(10): t(30)})
    fallback = ArchiveFallback(archive, t(40), use_completion_times=False)
    timeline = Timeline((done(40, 41),)).with_archive(fallback)
    assert timeline.completion_time(t(10)) is None
    assert timeline.is_completed(t(10))
    assert not timeline.is_completed(t(11))
