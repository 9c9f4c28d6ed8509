"""File groups and file slices: completion-time slicing of RFC-66 (docs/protocol.md section 4).

A file group (one file id in one partition) is a sequence of file slices keyed by their *base
instant*. Barriers, the base instants that open slices, are the instants of committed base files
and of compactions that are scheduled but not yet completed (a requested compaction opens its slice
at once, before its base file exists: that is what lets Hudi 1.x schedule compaction while writers
are still appending).

Placement of a log file, rule ``completion_time`` (Hudi 1.x, the default): the slice with the
greatest barrier ``<=`` the completion time of the deltacommit whose requested time is in the log's
name. Hudi's ``HoodieFileGroup.getBaseInstantTime`` walks the barriers in descending order with
``GREATER_THAN_OR_EQUALS``; RFC-66 writes the test as strict. Instant times are unique, so equality
would mean two instants share a time: we refuse it with :class:`SlicingError` rather than pick a
side silently. A log whose deltacommit has not completed is pending: Hudi files it in the latest
slice, invisible to readers. A completed log with no barrier at or before its completion opens a
slice at its own instant (Hudi does the same: ``getBaseInstantTime`` falls back to the log's
delta-commit time).

Rule ``base_instant`` (legacy, 0.x and table version 6): the instant in the log's name *is* the base
instant of its slice, read by the writer when it started. The variant shows the data loss that made
0.x forbid scheduling compaction during writes.

File groups without any committed base file or pending compaction are anchored on a log. Anchor
``earliest_completed`` (the fix) uses the earliest *completed* log; ``earliest_log`` reproduces
apache/hudi#19774, where an uncommitted earliest log anchors an uncommitted slice and hides the
committed logs placed in it.

The view is pure: it takes a timeline and a listing and never touches storage; :mod:`models.view.table`
does the I/O.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from models.storage import FileStatus
from models.table_errors import HoodieException
from models.timeline.active import Timeline
from models.view.filenames import (
    BaseFileName,
    FileNameError,
    LogFileName,
    WriteToken,
    parse_base_file_name,
    parse_log_file_name,
)

SLICING_RULES = ("completion_time", "base_instant")
LOG_ANCHORS = ("earliest_completed", "earliest_log")


class SlicingError(HoodieException, RuntimeError):
    """The timeline and files break an assumption the slicing rule depends on."""


@dataclass(frozen=True)
class BaseFile:
    name: str
    file_id: str
    instant_time: str
    size: int = 0


@dataclass(frozen=True)
class LogFile:
    """A log file and the completion time of the deltacommit that wrote it (None if pending).

    Under the ``base_instant`` rule the name's instant is the slice's base instant and the writing
    deltacommit is only known from the blocks inside, so ``completion_time`` stays None and the
    reader filters blocks by their own instant.
    """

    name: str
    parsed: LogFileName
    completion_time: str | None
    size: int = 0

    @property
    def file_id(self) -> str:
        return self.parsed.file_id

    @property
    def instant_time(self) -> str:
        return self.parsed.instant_time

    def merge_key(self) -> tuple[str, str, int, WriteToken]:
        """Merge order: completion time (the order the data became visible), then Hudi's order."""
        token = self.parsed.write_token or WriteToken(-1, -1, -1)
        return (self.completion_time or "", self.instant_time, self.parsed.version, token)


@dataclass(frozen=True)
class FileSlice:
    partition: str
    file_id: str
    base_instant: str
    base_file: BaseFile | None = None
    log_files: tuple[LogFile, ...] = ()

    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files


@dataclass(frozen=True)
class FileGroup:
    """All slices of one file group, ascending by base instant, plus the pending logs."""

    partition: str
    file_id: str
    slices: tuple[FileSlice, ...]
    committed_barriers: frozenset[str] = field(default_factory=frozenset)
    pending_compactions: frozenset[str] = field(default_factory=frozenset)
    rule: str = "completion_time"

    def is_committed(self, file_slice: FileSlice) -> bool:
        """A slice counts if its base instant committed (or anchors committed logs)."""
        return file_slice.base_instant in self.committed_barriers

    def latest_slice(self) -> FileSlice | None:
        """What a snapshot reader merges: the latest committed slice, with the slices of pending
        compactions after it merged in (Hudi's merged file slice: their base files do not exist
        yet, so their logs are read on top of the previous slice)."""
        pending_logs: list[LogFile] = []
        for s in reversed(self.slices):
            if s.base_instant in self.pending_compactions and s.base_file is None:
                pending_logs[:0] = s.log_files
                continue
            if not self.is_committed(s):
                return None  # an uncommitted slice (variant earliest_log): all of it is invisible
            if not pending_logs:
                return s
            merged = tuple(sorted(s.log_files + tuple(pending_logs), key=LogFile.merge_key))
            return replace(s, log_files=merged)
        if pending_logs:  # logs only after a pending compaction's barrier
            first = next(s for s in self.slices if s.log_files)
            return replace(first, log_files=tuple(sorted(pending_logs, key=LogFile.merge_key)))
        return None


@lru_cache(maxsize=1 << 17)
def _parse_listed(name: str) -> LogFileName | BaseFileName | None:
    """A listed name parsed as a log file (leading dot) or a base file; None for anything else.

    Memoized: names are immutable and a table keeps its files, so every view built over a growing
    table would otherwise re-parse the same tens of thousands of names."""
    try:
        if name.startswith("."):
            parsed = parse_log_file_name(name)
            return None if parsed.extension != "log" or parsed.cdc else parsed
        return parse_base_file_name(name)
    except FileNameError:
        return None  # .hoodie_partition_metadata, markers, anything else


def _split_listing(
    files: Iterable[FileStatus], partition: str
) -> tuple[dict[str, list[BaseFile]], dict[str, list[tuple[LogFileName, FileStatus]]]]:
    bases: dict[str, list[BaseFile]] = {}
    logs: dict[str, list[tuple[LogFileName, FileStatus]]] = {}
    for status in files:
        name = status.name
        parsed = _parse_listed(name)
        if parsed is None:
            continue
        if type(parsed) is LogFileName:
            logs.setdefault(parsed.file_id, []).append((parsed, status))
        else:
            bases.setdefault(parsed.file_id, []).append(
                BaseFile(name, parsed.file_id, parsed.instant_time, status.size)
            )
    return bases, logs


def build_file_groups(
    timeline: Timeline,
    listing: Mapping[str, Iterable[FileStatus]],
    *,
    pending_compactions: Mapping[str, Iterable[tuple[str, str]]] | None = None,
    replaced_file_groups: Iterable[tuple[str, str]] = (),
    rule: str = "completion_time",
    anchor: str = "earliest_completed",
    only: tuple[str, str] | None = None,
) -> list[FileGroup]:
    """File groups of the table for ``timeline`` (use ``timeline.as_of(t)`` for time travel).

    ``listing`` maps partition path -> files in it. ``pending_compactions`` maps the requested time
    of each pending compaction to the ``(partition, file_id)`` pairs in its plan. File groups in
    ``replaced_file_groups`` (by a completed replacecommit or clustering) are left out. ``only``
    (partition, file id): that file group alone, as the whole view would have it (each group's
    slices depend on its own files and the timeline only).
    """
    if rule not in SLICING_RULES:
        raise ValueError(f"unknown slicing rule {rule!r}; allowed: {', '.join(SLICING_RULES)}")
    if anchor not in LOG_ANCHORS:
        raise ValueError(f"unknown log anchor {anchor!r}; allowed: {', '.join(LOG_ANCHORS)}")
    pending_by_group: dict[tuple[str, str], set[str]] = {}
    for instant_time, members in (pending_compactions or {}).items():
        scheduled = timeline.get(instant_time)
        if scheduled is None or scheduled.is_completed:
            continue  # a plan read from a stale listing, or already completed
        for member in members:
            pending_by_group.setdefault(member, set()).add(instant_time)
    replaced = set(replaced_file_groups)
    times = _CompletionTimes(timeline)
    groups: list[FileGroup] = []
    partitions = sorted(listing) if only is None else [p for p in only[:1] if p in listing]
    for partition in partitions:
        bases, logs = _split_listing(listing[partition], partition)
        ids = set(bases) | set(logs)
        for file_id in sorted(ids) if only is None else [f for f in only[1:] if f in ids]:
            if (partition, file_id) in replaced:
                continue
            group = _build_group(
                times,
                partition,
                file_id,
                bases.get(file_id, []),
                logs.get(file_id, []),
                pending_by_group.get((partition, file_id), set()),
                rule,
                anchor,
            )
            if group.slices:
                groups.append(group)
    return groups


class _CompletionTimes:
    """Completion-time lookups on one timeline, memoized: thousands of logs share a few hundred
    instants, and each lookup on the timeline normalizes the time and may consult the archive."""

    def __init__(self, timeline: Timeline) -> None:
        self._timeline = timeline
        self._completion: dict[str, str | None] = {}
        self._completed: dict[str, bool] = {}

    def completion_time(self, requested_time: str) -> str | None:
        try:
            return self._completion[requested_time]
        except KeyError:
            found = self._completion[requested_time] = self._timeline.completion_time(
                requested_time
            )
            return found

    def is_completed(self, requested_time: str) -> bool:
        try:
            return self._completed[requested_time]
        except KeyError:
            found = self._completed[requested_time] = self._timeline.is_completed(requested_time)
            return found


def _build_group(
    timeline: _CompletionTimes,
    partition: str,
    file_id: str,
    bases: list[BaseFile],
    logs: list[tuple[LogFileName, FileStatus]],
    pending_compactions: set[str],
    rule: str,
    anchor: str,
) -> FileGroup:
    committed_bases: dict[str, BaseFile] = {}
    # Two committed base files at one instant (a retried task) keep the first by name: a choice
    # that does not depend on listing order.
    for base in sorted(bases, key=lambda b: b.name, reverse=True):
        if timeline.is_completed(base.instant_time):
            committed_bases[base.instant_time] = base
    barriers = set(committed_bases) | pending_compactions
    committed_barriers = set(committed_bases)

    log_files = [
        LogFile(status.name, parsed, _log_completion(timeline, parsed, rule), status.size)
        for parsed, status in logs
    ]
    if rule == "completion_time":
        anchor_log = _anchor(log_files, barriers, anchor)
        if anchor_log is not None:
            barriers.add(anchor_log.instant_time)
            if anchor_log.completion_time is not None:
                committed_barriers.add(anchor_log.instant_time)

    placed = _place_logs(
        timeline, log_files, barriers, committed_barriers, pending_compactions, rule
    )

    slices = []
    for base_instant in sorted(placed):
        files = placed[base_instant]
        slices.append(
            FileSlice(
                partition,
                file_id,
                base_instant,
                committed_bases.get(base_instant),
                tuple(sorted(files, key=LogFile.merge_key)),
            )
        )
    return FileGroup(
        partition,
        file_id,
        tuple(slices),
        frozenset(committed_barriers),
        frozenset(pending_compactions),
        rule,
    )


def _place_logs(
    timeline: _CompletionTimes,
    log_files: list[LogFile],
    barriers: set[str],
    committed_barriers: set[str],
    pending_compactions: set[str],
    rule: str,
) -> dict[str, list[LogFile]]:
    """Slice base instant -> the log files it holds, under slicing ``rule``; adds the named
    instants of committed logs to ``committed_barriers`` under ``base_instant``."""
    ordered_barriers = sorted(barriers)
    placed: dict[str, list[LogFile]] = {b: [] for b in barriers}
    for lf in log_files:
        if rule == "base_instant":
            home = lf.instant_time
            if timeline.is_completed(home) or home in pending_compactions:
                committed_barriers.add(home)
        elif lf.completion_time is None:
            if not ordered_barriers:
                continue  # only pending logs: nothing a reader could see
            home = ordered_barriers[-1]
        else:
            home = _slice_for(ordered_barriers, lf)
        placed.setdefault(home, []).append(lf)
    return placed


def _anchor(log_files: list[LogFile], barriers: set[str], anchor: str) -> LogFile | None:
    """The log that opens the first slice of logs that completed before any barrier.

    Hudi opens a slice at a log's own instant when no slice exists at or before its completion
    (``HoodieFileGroup.getBaseInstantTime``); later logs then land in it. The fix for
    apache/hudi#19774 anchors on the earliest *completed* such log; the buggy ``earliest_log``
    anchors on the earliest log whatever its state, possibly an uncommitted one.
    """
    first_barrier = min(barriers) if barriers else None

    def before_barriers(time: str | None) -> bool:
        return time is not None and (first_barrier is None or time < first_barrier)

    if anchor == "earliest_log":
        candidates = [
            lf for lf in log_files if before_barriers(lf.completion_time or lf.instant_time)
        ]
    else:
        candidates = [lf for lf in log_files if before_barriers(lf.completion_time)]
    return min(candidates, key=lambda lf: lf.parsed.sort_key()) if candidates else None


def _slice_for(barriers: list[str], log: LogFile) -> str:
    completion_time = log.completion_time or ""
    i = bisect_right(barriers, completion_time)
    if i and barriers[i - 1] == completion_time:
        raise SlicingError(
            f"log {log.name} completed at {completion_time}, the same time a slice starts: "
            "instant times must be unique"
        )
    if i == 0:  # cannot happen for a completed log once the anchor exists; Hudi's fallback
        return log.instant_time
    return barriers[i - 1]


def _log_completion(timeline: _CompletionTimes, parsed: LogFileName, rule: str) -> str | None:
    if rule == "base_instant":
        return None
    return timeline.completion_time(parsed.instant_time)


def latest_file_slices(groups: Iterable[FileGroup]) -> list[FileSlice]:
    """The slice a snapshot reader merges for every file group that has visible data.

    Pending logs (deltacommit not completed) are dropped from the slice. Under the legacy rule the
    name does not say which deltacommit wrote a log, so logs stay and the reader filters their
    blocks by the instant in each block's header.
    """
    out = []
    for group in groups:
        latest = group.latest_slice()
        if latest is None:
            continue
        if group.rule == "completion_time":
            latest = replace(
                latest, log_files=tuple(lf for lf in latest.log_files if lf.completion_time)
            )
        if not latest.is_empty():
            out.append(latest)
    return out
