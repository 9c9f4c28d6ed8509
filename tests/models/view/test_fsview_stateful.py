"""Stateful hypothesis tests of file slicing (models/view/fsview.py) on a real MERGE_ON_READ table in
memory, written through models/write/writer.py and read through models/view/table.py and models/view/reader.py.

Hypothesis interleaves what writers and table services do to one table: deltacommits start (their
requested times come from TrueTime, a monotonic counter here), append log files to file groups or
insert base files into new ones, and complete in any order (completion times strictly increase);
compactions are scheduled (opening new slices at once), executed and completed; completions may
fail half-way (the instant stays inflight with its files); pending instants are rolled back; old
instants are archived into the LSM timeline (models/timeline/archiver.py).

The oracle is the test's own record of what it did, never ``models``' view of it:

* slicing (docs/protocol.md section 4, RFC-66): a completed log belongs to the slice with the greatest
  barrier at or before its completion time, barriers being committed base files and pending
  compactions of its file group, plus, for logs that complete before every barrier, the earliest
  completed log's instant; computed by brute force over the test's records;
* visibility: pending logs are in no latest slice; the snapshot read equals, per key, the version
  with the greatest ordering value among the records of completed deltacommits, and so does every
  time-travel read (``as_of``) with the deltacommits completed by then;
* compaction plans hold exactly the committed logs of each file group's latest slice;
* archiving: the completion time of every completed instant is still found after it left the
  active timeline (apache/hudi#14365 is the variant where it is not, and the machine catches it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from models.format.commit_metadata import WriteStat
from models.format.compaction_plan import read_compaction_plan
from models.format.properties import MERGE_ON_READ
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import InMemoryStorage
from models.timeline.archiver import archive_instants
from models.timeline.instant import Instant, State
from models.timeline.truetime import make_time_generator
from models.view.filenames import parse_log_file_name
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from models.write.rollback import rollback
from models.write.table_init import create_table
from models.write.writer import TableWriter
from tests.table_harness import START_MS

# (partition, file id) of the file groups; a key always lives in one of them
GROUPS = (
    ("part=a", "00000000-0000-4000-8000-00000000000a-0"),
    ("part=a", "00000001-0000-4000-8000-00000000000a-0"),
    ("part=b", "00000002-0000-4000-8000-00000000000b-0"),
)
KEYS_PER_GROUP = 3
MAX_ACTIVE, MIN_ACTIVE = 3, 2  # hoodie.keep.max.commits / min.commits, small to archive often
OUTCOMES = st.sampled_from(["complete", "complete", "complete", "crash", "rollback"])
COMPLETED_FILE = re.compile(r"^\.hoodie/timeline/\d{17}_\d{17}\.\w+$")


class FailingStorage(InMemoryStorage):
    """Fails the next creation of a completed instant file: a writer dying right before its
    commit, leaving an inflight instant with all its data files (and markers)."""

    fail_next_completion = False

    def create_if_absent(self, path: str, data: bytes) -> None:
        if self.fail_next_completion and COMPLETED_FILE.match(path):
            self.fail_next_completion = False
            raise OSError(f"injected crash before creating {path}")
        super().create_if_absent(path, data)


# --- ground truth --------------------------------------------------------------------------------


@dataclass
class DataFile:
    """One file the test wrote, with the records in it."""

    group: int
    name: str
    instant: str  # requested time of the writing instant
    kind: str  # "log" or "base"
    records: dict[str, tuple[int, int]]  # key -> (ts, value)
    sort_key: tuple = ()


@dataclass
class Action:
    """One deltacommit or compaction the test started."""

    instant: Instant
    stats: list[WriteStat] = field(default_factory=list)
    files: list[DataFile] = field(default_factory=list)
    completion: str | None = None
    plan_groups: frozenset[int] = frozenset()  # compaction: the file groups it compacts

    @property
    def time(self) -> str:
        return self.instant.requested_time

    @property
    def is_compaction(self) -> bool:
        return self.instant.action == "compaction"


def group_of(partition: str, file_id: str) -> int:
    return GROUPS.index((partition, file_id))


class Oracle:
    """The rules of docs/protocol.md section 4, by brute force over what the test wrote."""

    def __init__(self, actions: dict[str, Action]) -> None:
        self.actions = actions

    def completion(self, instant: str, bound: str | None = None) -> str | None:
        action = self.actions.get(instant)
        if action is None or action.completion is None:
            return None
        if bound is not None and action.completion > bound:
            return None
        return action.completion

    def files(self, group: int, kind: str) -> list[DataFile]:
        return [
            f for a in self.actions.values() for f in a.files if f.group == group and f.kind == kind
        ]

    def barriers(self, group: int) -> set[str]:
        """Committed base files and pending compactions of the group."""
        found = {f.instant for f in self.files(group, "base") if self.completion(f.instant)}
        for a in self.actions.values():
            if a.is_compaction and a.completion is None and group in a.plan_groups:
                found.add(a.time)
        return found

    def all_barriers(self, group: int) -> set[str]:
        """:meth:`barriers` plus the anchor of logs that completed before all of them."""
        barriers = self.barriers(group)
        first = min(barriers, default=None)
        early = [
            f
            for f in self.files(group, "log")
            if self.completion(f.instant) is not None
            and (first is None or self.completion(f.instant) < first)
        ]
        if early:
            barriers.add(min(early, key=lambda f: f.sort_key).instant)
        return barriers

    def home(self, log: DataFile) -> str:
        """RFC-66: the greatest barrier at or before the log's completion time."""
        completion = self.completion(log.instant)
        assert completion is not None
        barriers = self.all_barriers(log.group)
        assert completion not in barriers, f"completion {completion} equals a barrier"
        return max(b for b in barriers if b < completion)

    def latest_committed_logs(self, group: int) -> tuple[str | None, set[str]]:
        """What compaction plans and readers take: the newest committed base file and every
        committed log that completed after its instant (whenever it was requested)."""
        bases = [f for f in self.files(group, "base") if self.completion(f.instant)]
        newest = max(bases, key=lambda f: f.instant, default=None)
        cutoff = newest.instant if newest else ""
        logs = {
            f.name for f in self.files(group, "log") if (self.completion(f.instant) or "") > cutoff
        }
        return (newest.name if newest else None), logs

    def snapshot(self, bound: str | None = None) -> dict[str, tuple[int, int]]:
        """Per key the version with the greatest ordering value among the records of the
        deltacommits completed (by ``bound``); compaction only moves records around."""
        best: dict[str, tuple[int, int]] = {}
        for a in self.actions.values():
            if a.is_compaction or self.completion(a.time, bound) is None:
                continue
            for f in a.files:
                for key, version in f.records.items():
                    if key not in best or version[0] > best[key][0]:
                        best[key] = version
        return best


# --- the machine ---------------------------------------------------------------------------------


class FileSlicingMachine(RuleBasedStateMachine):
    """Writers, compaction, rollback and archiving on one table; invariants after every step."""

    archive_lookup = True

    def __init__(self) -> None:
        super().__init__()
        self.clock = FakeClock(FakeWorld(START_MS))
        self.generator = make_time_generator(
            "truetime", clock=self.clock, lock=LocalLock(), max_expected_clock_skew_ms=1
        )
        self.storage = FailingStorage()
        create_table(
            self.storage,
            name="t",
            table_type=MERGE_ON_READ,
            record_key_field="id",
            ordering_field="ts",
            partition_fields=("part",),
        )
        self.table = HudiTable(self.storage, archive_lookup=self.archive_lookup)
        self.writer = TableWriter(self.table, self.generator)
        self.actions: dict[str, Action] = {}
        self.oracle = Oracle(self.actions)
        self.next_ts = 1
        self.archived: list[str] = []
        self._checked: frozenset[str] | None = None

    # --- helpers ---------------------------------------------------------------------------------

    def pending(self, compaction: bool) -> list[Action]:
        return [
            a
            for a in self.actions.values()
            if a.completion is None and a.is_compaction == compaction
        ]

    @staticmethod
    def _pick(candidates: list, index: int):
        return candidates[index % len(candidates)]

    def visible(self, group: int) -> bool:
        """Writers append only to file groups they can see: a file group that an insert creates
        (a base file with a new file id) exists for others once that insert commits. (Appending
        to it earlier would let a compaction be planned from those logs while the insert is
        pending; the insert's base file then commits in a slice *below* the compaction's, whose
        output lacks its records. Hudi's writers cannot do that, and RFC-66 does not cover it.)"""
        return not any(
            f.group == group and f.kind == "base" and a.completion is None
            for a in self.actions.values()
            for f in a.files
        )

    def group_has_files(self, group: int) -> bool:
        return any(f.group == group for a in self.actions.values() for f in a.files)

    def records(self, group: int, keys: list[int]) -> pa.Table:
        partition, _ = GROUPS[group]
        n = len(keys)
        ts = list(range(self.next_ts, self.next_ts + n))
        self.next_ts += n
        return pa.table(
            {
                "id": pa.array([f"g{group}k{k}" for k in keys], pa.string()),
                "ts": pa.array(ts, pa.int64()),
                "value": pa.array([t * 7 for t in ts], pa.int64()),
                "part": pa.array([partition.split("=")[1]] * n, pa.string()),
            }
        )

    @staticmethod
    def as_records(rows: pa.Table) -> dict[str, tuple[int, int]]:
        return {
            k: (t, v)
            for k, t, v in zip(
                rows.column("id").to_pylist(),
                rows.column("ts").to_pylist(),
                rows.column("value").to_pylist(),
                strict=True,
            )
        }

    # --- writers ---------------------------------------------------------------------------------

    @rule()
    def start_deltacommit(self) -> None:
        instant = run(self.writer.start_commit(), self.clock)
        self.actions[instant.requested_time] = Action(instant)

    @precondition(lambda self: bool(self.pending(compaction=False)))
    @rule(
        index=st.integers(0, 3),
        group=st.integers(0, len(GROUPS) - 1),
        keys=st.sets(st.integers(0, KEYS_PER_GROUP - 1), min_size=1),
    )
    def append_log(self, index: int, group: int, keys: set[int]) -> None:
        self.append(self._pick(self.pending(compaction=False), index), group, keys)

    def append(self, action: Action, group: int, keys: set[int]) -> None:
        if not self.visible(group):
            return
        partition, file_id = GROUPS[group]
        rows = self.records(group, sorted(keys))
        stat = self.writer.append_log_file(action.instant, partition, file_id, rows)
        (name,) = stat.log_files
        parsed = parse_log_file_name(name)
        action.stats.append(stat)
        action.files.append(
            DataFile(group, name, action.time, "log", self.as_records(rows), parsed.sort_key())
        )

    @precondition(lambda self: bool(self.pending(compaction=False)))
    @rule(index=st.integers(0, 3), group=st.integers(0, len(GROUPS) - 1))
    def insert_base_file(self, index: int, group: int) -> None:
        """A deltacommit creates a file group with a base file (an insert into a new group)."""
        if self.group_has_files(group):
            return
        action = self._pick(self.pending(compaction=False), index)
        partition, file_id = GROUPS[group]
        rows = self.records(group, list(range(KEYS_PER_GROUP)))
        stat = self.writer.write_base_file(action.instant, partition, file_id, rows)
        action.stats.append(stat)
        name = stat.path.rsplit("/", 1)[1]
        action.files.append(DataFile(group, name, action.time, "base", self.as_records(rows)))

    @precondition(lambda self: bool(self.pending(compaction=False)))
    @rule(index=st.integers(0, 3), outcome=OUTCOMES)
    def finish_deltacommit(self, index: int, outcome: str) -> None:
        """Complete any pending deltacommit (in any order), or its writer dies right before the
        completed file is created (the instant stays inflight), or it is rolled back."""
        self.finish(self._pick(self.pending(compaction=False), index), outcome)

    def finish(self, action: Action, outcome: str) -> None:
        if outcome == "rollback":
            self.rollback(action)
            return
        self.storage.fail_next_completion = outcome == "crash"
        try:
            done = run(self.writer.commit(action.instant, action.stats), self.clock)
        except OSError:
            assert outcome == "crash"
            return
        action.instant, action.completion = done, done.completion_time

    @rule(
        writes=st.lists(
            st.tuples(
                st.integers(0, len(GROUPS) - 1),
                st.sets(st.integers(0, KEYS_PER_GROUP - 1), min_size=1),
            ),
            min_size=1,
            max_size=3,
        )
    )
    def deltacommit(self, writes: list[tuple[int, set[int]]]) -> None:
        """A whole deltacommit in one step: start, append logs, complete."""
        self.start_deltacommit()
        action = self.pending(compaction=False)[-1]
        for group, keys in writes:
            self.append(action, group, keys)
        self.finish(action, "complete")

    # --- table services --------------------------------------------------------------------------

    @rule()
    def schedule_compaction(self) -> None:
        self.schedule()

    def schedule(self) -> Action | None:
        """Plan the latest slices with committed logs; the plan must be what the oracle says."""
        busy = {g for a in self.pending(compaction=True) for g in a.plan_groups}
        expected = {}
        for g in range(len(GROUPS)):
            base, logs = self.oracle.latest_committed_logs(g)
            if logs and g not in busy:
                expected[g] = (base, logs)
        scheduled = run(self.writer.schedule_compaction(), self.clock)
        if scheduled is None:
            assert expected == {}, f"nothing planned, but committed logs wait: {expected}"
            return None
        plan = read_compaction_plan(self.writer.timeline.read_content(scheduled))
        got = {
            group_of(op.partition_path, op.file_id): (op.data_file_path, set(op.delta_file_paths))
            for op in plan.operations
        }
        assert got == expected, f"compaction plan {got} != oracle {expected}"
        action = Action(scheduled, plan_groups=frozenset(got))
        self.actions[scheduled.requested_time] = action
        return action

    @precondition(lambda self: bool(self.pending(compaction=True)))
    @rule(index=st.integers(0, 3), outcome=OUTCOMES)
    def run_compaction(self, index: int, outcome: str) -> None:
        """Execute a pending compaction, or crash before its commit (base files written, instant
        inflight), or roll it back (its plan stays: it is re-run later)."""
        self.compact(self._pick(self.pending(compaction=True), index), outcome)

    def compact(self, action: Action, outcome: str) -> None:
        if outcome == "rollback":
            self.rollback(action)
            return
        self.storage.fail_next_completion = outcome == "crash"
        try:
            done = run(self.writer.run_compaction(action.instant), self.clock)
        except OSError:
            assert outcome == "crash"
            action.instant = Instant(action.time, State.INFLIGHT, "compaction")
            return
        action.instant, action.completion = done, done.completion_time
        action.files = [
            DataFile(g, name, action.time, "base", {})
            for g in sorted(action.plan_groups)
            for name in self._base_names(action.time, g)
        ]

    def _base_names(self, instant: str, group: int) -> list[str]:
        partition, file_id = GROUPS[group]
        return [
            f.name
            for f in self.storage.list_dir(partition)
            if f.name.startswith(f"{file_id}_") and f.name.endswith(f"_{instant}.parquet")
        ]

    def rollback(self, action: Action) -> None:
        """Roll back a pending deltacommit (its files go) or a pending compaction (its written
        base files go, its plan stays)."""
        run(rollback(self.table, self.writer, action.instant, self.generator), self.clock)
        if action.is_compaction:
            action.instant = action.instant.requested()
        else:
            del self.actions[action.time]

    @rule()
    def schedule_and_run_compaction(self) -> None:
        """A compaction scheduled and completed in one step."""
        scheduled = self.schedule()
        if scheduled is not None:
            self.compact(scheduled, "complete")

    @rule()
    def archive(self) -> None:
        archived = archive_instants(self.table, max_active=MAX_ACTIVE, min_active=MIN_ACTIVE)
        self.archived.extend(i.requested_time for i in archived)

    # --- reads -----------------------------------------------------------------------------------

    @precondition(lambda self: any(a.completion for a in self.actions.values()))
    @rule(index=st.integers(0, 15), before=st.booleans())
    def time_travel(self, index: int, before: bool) -> None:
        """Read as of a completion time (or the millisecond before it)."""
        done = sorted(a.completion for a in self.actions.values() if a.completion)
        bound = self._pick(done, index)
        if before:
            bound = f"{int(bound) - 1:017d}"
        self.check_snapshot(bound)

    # --- invariants ------------------------------------------------------------------------------

    def check_snapshot(self, bound: str | None = None) -> None:
        rows = read_snapshot(self.table, as_of=bound)
        got = self.as_records(rows) if rows.num_rows else {}
        if rows.num_rows:
            assert rows.num_rows == len(got), "a key read twice"
        expected = self.oracle.snapshot(bound)
        assert got == expected, f"snapshot as of {bound}: {got} != oracle {expected}"

    @invariant()
    def table_matches_the_oracle(self) -> None:
        """All checks, after every step that changed the table (files are write-once, so the
        set of paths is a faithful fingerprint; unchanged tables were checked already)."""
        fingerprint = frozenset(self.storage.paths())
        if fingerprint == self._checked:
            return
        self.slices_follow_the_rule()
        self.completion_times_are_found()
        self.check_snapshot()
        self._checked = fingerprint

    def teardown(self) -> None:
        """Time travel to every completion time of the run (docs/protocol.md section 9, invariant 4)."""
        for bound in sorted(a.completion for a in self.actions.values() if a.completion):
            self.check_snapshot(bound)

    def slices_follow_the_rule(self) -> None:
        """Every committed log in exactly the slice the rule names, every committed base file
        heading its slice, nothing uncommitted visible in a latest slice."""
        _, groups = self.table.file_groups()
        placed: dict[str, str] = {}
        bases: set[str] = set()
        for group in groups:
            for file_slice in group.slices:
                base = file_slice.base_file
                if base is not None:
                    assert base.instant_time == file_slice.base_instant
                    assert self.oracle.completion(base.instant_time), f"{base.name} not committed"
                    bases.add(base.name)
                for log in file_slice.log_files:
                    assert log.name not in placed, f"{log.name} in two slices"
                    placed[log.name] = file_slice.base_instant
        for g in range(len(GROUPS)):
            for base in self.oracle.files(g, "base"):
                if self.oracle.completion(base.instant):
                    assert base.name in bases, f"committed base file {base.name} is in no slice"
            for log in self.oracle.files(g, "log"):
                if self.oracle.completion(log.instant) is None:
                    continue
                assert log.name in placed, f"committed log {log.name} is in no slice"
                expected = self.oracle.home(log)
                assert placed[log.name] == expected, (
                    f"{log.name} (requested {log.instant}, completed "
                    f"{self.oracle.completion(log.instant)}) in slice {placed[log.name]}, "
                    f"the rule names {expected}"
                )
        latest = self.table.latest_file_slices()
        for file_slice in latest:
            for log in file_slice.log_files:
                instant = log.instant_time
                assert self.oracle.completion(instant), f"pending log {log.name} is visible"

    def completion_times_are_found(self) -> None:
        """Every completed instant's completion time, archived or not (section 8)."""
        timeline = self.table.timeline()
        for action in self.actions.values():
            if action.completion is not None:
                found = timeline.completion_time(action.time)
                where = "archived" if action.time in self.archived else "active"
                assert found == action.completion, (
                    f"completion of {action.time} ({where}) looked up as {found}, "
                    f"is {action.completion}"
                )


FAST = settings(max_examples=15, stateful_step_count=40, deadline=None)
SLOW = settings(max_examples=400, stateful_step_count=60, deadline=None)


def test_file_slicing_machine() -> None:
    run_state_machine_as_test(FileSlicingMachine, settings=FAST)


@pytest.mark.slow
def test_file_slicing_machine_slow() -> None:
    run_state_machine_as_test(FileSlicingMachine, settings=SLOW)


# --- fixed schedules -----------------------------------------------------------------------------


def machine_for(archive_lookup: bool = True) -> FileSlicingMachine:
    return type("Machine", (FileSlicingMachine,), {"archive_lookup": archive_lookup})()


def start(m: FileSlicingMachine) -> Action:
    m.start_deltacommit()
    return m.pending(compaction=False)[-1]


def slices(m: FileSlicingMachine, group: int) -> dict[str, tuple[str | None, list[str]]]:
    (found,) = [g for g in m.table.file_groups()[1] if (g.partition, g.file_id) == GROUPS[group]]
    return {
        s.base_instant: (s.base_file.name if s.base_file else None, [f.name for f in s.log_files])
        for s in found.slices
    }


def test_rfc66_worked_example_through_the_writer() -> None:
    """RFC-66: base fg_t10 [t10, t20]; logs l1 [t21, t40], l2 [t30, t50], l3 [t35, t90];
    compaction t60 [t60, t80]. l3 was requested before t60 but completed after it: it belongs to
    slice t60, and nothing is lost. Here the times come from TrueTime in the same order."""
    m = machine_for()
    t10 = start(m)
    m.insert_base_file(0, 0)
    m.finish(t10, "complete")
    l1, l2, l3 = start(m), start(m), start(m)
    for action, key in ((l1, 0), (l2, 1), (l3, 2)):
        m.append(action, 0, {key})
    m.finish(l1, "complete")
    m.finish(l2, "complete")
    t60 = m.schedule()
    assert t60 is not None and t60.plan_groups == {0}
    m.compact(t60, "complete")
    m.table_matches_the_oracle()
    m.finish(l3, "complete")
    order = [t10.completion, l1.time, l2.time, l3.time, l1.completion, l2.completion]
    order += [t60.time, t60.completion, l3.completion]
    assert order == sorted(order)  # the example's order of events
    m.table_matches_the_oracle()
    (base10,), (base60,) = (t10.files, t60.files)
    assert slices(m, 0) == {
        t10.time: (base10.name, [l1.files[0].name, l2.files[0].name]),
        t60.time: (base60.name, [l3.files[0].name]),
    }
    (latest,) = m.table.latest_file_slices()
    assert latest.base_instant == t60.time
    assert [f.name for f in latest.log_files] == [l3.files[0].name]


@pytest.mark.parametrize("archive_lookup", [True, False])
def test_archived_deltacommit_in_the_latest_slice(archive_lookup: bool) -> None:
    """A deltacommit requested before compaction c and completed after it has its log in slice
    c; archiving moves it off the active timeline. Completion-time lookup through the archive
    keeps the log in the slice; without it (apache/hudi#14365) the log counts as pending and its
    record is lost from the snapshot."""
    m = machine_for(archive_lookup)
    for key in (0, 0):
        m.deltacommit([(0, {key})])
    late = start(m)
    m.append(late, 0, {1})
    m.schedule_and_run_compaction()
    m.finish(late, "complete")
    for _ in range(2):
        m.deltacommit([(0, {0})])
    m.table_matches_the_oracle()
    m.archive()
    assert late.time in m.archived
    if archive_lookup:
        m.table_matches_the_oracle()
        return
    with pytest.raises(AssertionError, match="looked up as None"):
        m.completion_times_are_found()
    with pytest.raises(AssertionError, match="g0k1"):
        m.check_snapshot()


@pytest.mark.slow
def test_machine_finds_the_archived_lookup_loss() -> None:
    """The search itself finds apache/hudi#14365 when the archive lookup is switched off."""
    variant = type("NoArchiveLookup", (FileSlicingMachine,), {"archive_lookup": False})
    with pytest.raises(AssertionError):
        run_state_machine_as_test(variant, settings=SLOW)
