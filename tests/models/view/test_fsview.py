"""File slicing (models/view/fsview.py): RFC-66's worked examples, Hudi's TestHoodieFileGroup steps, and
a property test against a brute-force statement of what a snapshot reader must see."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.storage import FileStatus
from models.timeline.active import Timeline
from models.timeline.instant import Instant, State
from models.view.fsview import SlicingError, build_file_groups, latest_file_slices

FG = "fg1-0"


def t(n: int) -> str:
    """A 17-digit instant time n milliseconds into 2024-01-01."""
    return f"20240101000000{n:03d}"


def done(req: int, completed: int, action: str = "deltacommit") -> Instant:
    return Instant(t(req), State.COMPLETED, action, t(completed))


def pending(req: int, action: str = "deltacommit") -> Instant:
    return Instant(t(req), State.INFLIGHT, action)


def base(req: int, file_id: str = FG) -> FileStatus:
    return FileStatus(f"{file_id}_0-1-{req}_{t(req)}.parquet", 100, 0)


def log(req: int, file_id: str = FG, version: int = 1) -> FileStatus:
    return FileStatus(f".{file_id}_{t(req)}.log.{version}_0-1-{req}", 10, 0)


def slices_of(group) -> dict[str, tuple[str | None, list[str]]]:
    return {
        s.base_instant: (s.base_file.name if s.base_file else None, [lf.name for lf in s.log_files])
        for s in group.slices
    }


def test_rfc66_worked_example():
    """RFC-66: l3 was requested before the t60 compaction but completed after: it joins t60."""
    timeline = Timeline(
        (
            done(10, 20, "commit"),
            done(21, 40),
            done(30, 50),
            done(60, 80, "commit"),
            done(35, 90),
        )
    )
    listing = {"": [base(10), log(21), log(30), base(60), log(35)]}
    (group,) = build_file_groups(timeline.as_of(t(100)), listing)
    assert slices_of(group) == {
        t(10): (base(10).name, [log(21).name, log(30).name]),
        t(60): (base(60).name, [log(35).name]),
    }
    (latest,) = latest_file_slices([group])
    assert latest.base_instant == t(60)
    assert [lf.name for lf in latest.log_files] == [log(35).name]


def test_rfc66_log_invisible_before_it_completes():
    timeline = Timeline((done(10, 20, "commit"), done(60, 80, "commit"), done(35, 90)))
    listing = {"": [base(10), base(60), log(35)]}
    (latest,) = latest_file_slices(build_file_groups(timeline.as_of(t(85)), listing))
    assert latest.base_instant == t(60) and latest.log_files == ()


def test_hoodie_file_group_get_base_instant_time_steps():
    """Hudi's TestHoodieFileGroup.testGetBaseInstantTime, step by step.

    Hudi's HoodieFileGroup anchors an empty group on whatever log comes first, pending or not:
    that is the ``earliest_log`` anchor (the behaviour behind apache/hudi#19774), so the test runs
    with it to match Hudi's own expectations exactly.
    """

    def homes(timeline, files, compactions=None):
        (group,) = build_file_groups(
            timeline, {"": files}, pending_compactions=compactions, anchor="earliest_log"
        )
        return {lf.instant_time: s.base_instant for s in group.slices for lf in s.log_files}, group

    # 001 pending deltacommit; 002 deltacommit -> 011
    tl = Timeline((pending(1), done(2, 11)))
    found, group = homes(tl, [log(1)])
    assert found == {t(1): t(1)} and [s.base_instant for s in group.slices] == [t(1)]
    found, _ = homes(tl, [log(1), log(2)])
    assert found[t(2)] == t(1)
    # a slice opens at 003 (scheduled compaction); 004 deltacommit -> 006 lands there, and 002 too
    tl = Timeline((pending(1), done(2, 11), pending(3, "compaction"), done(4, 6)))
    found, group = homes(tl, [log(1), log(2), log(4)], {t(3): [("", FG)]})
    assert [s.base_instant for s in group.slices] == [t(1), t(3)]
    assert found[t(4)] == t(3) and found[t(2)] == t(3)
    # base files at 003 and 005 (both committed at 007): 002 (done at 011) now resolves to 005
    tl = Timeline((pending(1), done(2, 11), done(3, 7, "commit"), done(4, 6), done(5, 7, "commit")))
    found, group = homes(tl, [log(1), log(2), log(4), base(3), base(5)])
    assert [s.base_instant for s in group.slices] == [t(1), t(3), t(5)]
    assert found[t(2)] == t(5)


def test_pending_compaction_opens_slice_and_reader_merges_it():
    # base 10, compaction scheduled at 50 (plan covers the slice 10 + log 20)
    timeline = Timeline(
        (done(10, 12, "commit"), done(20, 30), pending(50, "compaction"), done(40, 60))
    )
    listing = {"": [base(10), log(20), log(40)]}
    (group,) = build_file_groups(timeline, listing, pending_compactions={t(50): [("", FG)]})
    assert slices_of(group) == {
        t(10): (base(10).name, [log(20).name]),
        t(50): (None, [log(40).name]),
    }
    (latest,) = latest_file_slices([group])
    assert latest.base_instant == t(10)
    assert [lf.name for lf in latest.log_files] == [log(20).name, log(40).name]


def test_uncommitted_files_are_filtered():
    timeline = Timeline((done(10, 12, "commit"), pending(20), pending(30, "commit")))
    listing = {"": [base(10), log(20), base(30)]}
    (latest,) = latest_file_slices(build_file_groups(timeline, listing))
    assert latest.base_file.name == base(10).name and latest.log_files == ()


def test_log_only_group_with_uncommitted_earliest_log_hides_data_only_in_buggy_variant():
    """apache/hudi#19774: a failed (uncommitted) earliest log anchors the group."""
    timeline = Timeline((pending(10), done(20, 30), done(40, 50)))
    listing = {"": [log(10), log(20), log(40)]}
    (fixed,) = latest_file_slices(build_file_groups(timeline, listing))
    assert fixed.base_instant == t(20)
    assert [lf.name for lf in fixed.log_files] == [log(20).name, log(40).name]
    assert latest_file_slices(build_file_groups(timeline, listing, anchor="earliest_log")) == []


def test_replaced_file_groups_are_left_out():
    timeline = Timeline((done(10, 12, "commit"),))
    listing = {"": [base(10), base(10, "fg2-0")]}
    groups = build_file_groups(timeline, listing, replaced_file_groups=[("", "fg2-0")])
    assert [g.file_id for g in groups] == [FG]


def test_only_builds_one_file_group_as_the_whole_view_has_it():
    timeline = Timeline((done(10, 12, "commit"), done(21, 30), done(40, 45, "commit")))
    listing = {
        "p0": [base(10), log(21), base(40, "fg2-0")],
        "p1": [base(10), log(21, version=2), base(40)],
    }
    whole = build_file_groups(timeline, listing)
    for group in whole:
        key = (group.partition, group.file_id)
        assert build_file_groups(timeline, listing, only=key) == [group]
    assert build_file_groups(timeline, listing, only=("p2", FG)) == []
    assert build_file_groups(timeline, listing, only=("p0", "fg9-0")) == []
    replaced = [("p1", FG)]
    assert (
        build_file_groups(timeline, listing, replaced_file_groups=replaced, only=replaced[0]) == []
    )


def test_equal_completion_and_barrier_is_refused():
    timeline = Timeline((done(10, 12, "commit"), done(11, 20), done(20, 25, "commit")))
    with pytest.raises(SlicingError):
        build_file_groups(timeline, {"": [base(10), log(11), base(20)]})


def test_legacy_base_instant_rule_loses_log_written_during_compaction():
    """0.x: a log named after base 10 while compaction 50 (planned from slice 10) runs is never
    read again once compaction 50 completes; the 1.x rule puts it in slice 50."""
    timeline = Timeline(
        (done(10, 12, "commit"), done(20, 30), done(50, 70, "commit"), done(40, 60))
    )
    # legacy: the log written by deltacommit 40 carries base instant 10 in its name
    legacy = {"": [base(10), log(10, version=1), log(10, version=2), base(50)]}
    (latest,) = latest_file_slices(build_file_groups(timeline, legacy, rule="base_instant"))
    assert latest.base_instant == t(50) and latest.log_files == ()
    modern = {"": [base(10), log(20), log(40), base(50)]}
    (latest,) = latest_file_slices(build_file_groups(timeline, modern))
    assert [lf.name for lf in latest.log_files] == [log(40).name]


# --- property test: the view against a brute-force statement of the rule -------------------------


@dataclass(frozen=True)
class Scenario:
    timeline: Timeline
    files: list[FileStatus]
    compactions: dict[str, list[tuple[str, str]]]


@st.composite
def scenarios(draw) -> Scenario:
    """Random single-file-group histories with unique times: commits writing base files,
    deltacommits writing logs, compactions (completed or pending), some writes never completed."""
    n = draw(st.integers(1, 8))
    times = iter(
        sorted(draw(st.lists(st.integers(1, 999), min_size=2 * n, max_size=2 * n, unique=True)))
    )
    slots = [next(times) for _ in range(2 * n)]
    # interleave: each action takes a requested time, and maybe a later completion time
    reqs = sorted(draw(st.permutations(slots))[:n])
    free = sorted(set(slots) - set(reqs))
    instants, files, compactions = [], [], {}
    for i, req in enumerate(reqs):
        kind = draw(st.sampled_from(["deltacommit", "deltacommit", "commit", "compaction"]))
        if i == 0 and kind == "compaction":
            kind = "commit"
        later = [c for c in free if c > req]
        complete = (
            bool(later) and draw(st.booleans())
            if kind == "compaction"
            else bool(later) and draw(st.integers(0, 4)) > 0
        )
        if complete:
            comp = draw(st.sampled_from(later))
            free.remove(comp)
            instants.append(done(req, comp, kind if kind != "compaction" else "commit"))
            if kind in ("commit", "compaction"):
                files.append(base(req))
        else:
            instants.append(pending(req, kind))
            if kind == "compaction":
                compactions[t(req)] = [("", FG)]
            elif kind == "commit" and draw(st.booleans()):
                files.append(base(req))  # a failed write left its base file behind
        if kind == "deltacommit":
            files.append(log(req))
    return Scenario(Timeline(tuple(instants)), files, compactions)


def brute_force_visible(sc: Scenario) -> tuple[str | None, set[str]]:
    """What a snapshot reader must see: the newest committed base file, plus every committed log
    that completed after that base's instant (whenever it was requested); with no committed base,
    every committed log."""
    tl = sc.timeline
    committed_bases = [
        f for f in sc.files if not f.name.startswith(".") and tl.is_completed(f.name[-25:-8])
    ]
    newest = max(committed_bases, key=lambda f: f.name[-25:-8], default=None)
    cutoff = newest.name[-25:-8] if newest else ""
    logs = set()
    for f in sc.files:
        if f.name.startswith("."):
            completion = tl.completion_time(f.name[len(FG) + 2 : len(FG) + 19])
            if completion is not None and completion > cutoff:
                logs.add(f.name)
    return (newest.name if newest else None), logs


@settings(max_examples=300, deadline=None)
@given(scenarios())
@example(
    Scenario(
        Timeline((done(1, 5), done(2, 6), pending(10, "compaction"))),
        [log(1), log(2)],
        {t(10): [("", FG)]},
    )
)
def test_view_matches_brute_force(sc: Scenario):
    groups = build_file_groups(sc.timeline, {"": sc.files}, pending_compactions=sc.compactions)
    latest = latest_file_slices(groups)
    expected_base, expected_logs = brute_force_visible(sc)
    if expected_base is None and not expected_logs:
        assert latest == []
        return
    (got,) = latest
    assert (got.base_file.name if got.base_file else None) == expected_base
    assert {lf.name for lf in got.log_files} == expected_logs
    completions = [lf.completion_time for lf in got.log_files]
    assert completions == sorted(completions), "logs merge in completion-time order"


def test_brute_force_catches_the_earliest_slice_anchor_bug():
    """The property must be able to fail: hypothesis finds a history where apache/hudi#19774's
    anchoring hides committed data."""
    from hypothesis import find

    def hides_data(sc: Scenario) -> bool:
        groups = build_file_groups(
            sc.timeline, {"": sc.files}, pending_compactions=sc.compactions, anchor="earliest_log"
        )
        got = latest_file_slices(groups)
        _, expected_logs = brute_force_visible(sc)
        seen = {lf.name for s in got for lf in s.log_files}
        return seen != expected_logs

    counterexample = find(
        scenarios(), hides_data, settings=settings(max_examples=2000, database=None)
    )
    assert counterexample.files
