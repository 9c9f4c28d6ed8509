"""The active timeline: loaded from storage, advanced by write-once transitions.

:class:`Timeline` is an immutable snapshot of the instants (what readers and the file-system view
use). :class:`ActiveTimeline` binds a table's storage and a time generator and performs the
transitions of docs/protocol.md sections 1-2:

* ``requested`` and ``inflight`` files are created with put-if-absent, so a second writer that got
  the same instant time fails instead of overwriting;
* completing an instant generates the completion time *and* creates the completed file while the
  time generator still holds its lock (Hudi's ``TimeGenerator.consumeTime`` used by
  ``ActiveTimelineV2.transitionStateToComplete``), so completion times are ordered like the
  completed files' appearance (invariant 2).

Layout 1 (table version 6) is read-only here: its completed files carry no completion time, which
is taken from the file's modification time as Hudi does.

Instants archived into the LSM timeline (docs/protocol.md section 8, :mod:`models.timeline.archiver`) are no longer
on the active timeline, yet file slicing still needs their completion times. A :class:`Timeline` may
carry an :class:`ArchiveFallback` that answers for instants older than the active timeline's first
write instant, like Hudi's ``CompletionTimeQueryViewV2`` (active instants first; an instant before
its cursor is loaded lazily from the archived timeline). Hudi counts *any* instant before the first
active write instant as completed (``isArchived``); here it must be found in the archive, so the
files of a write that was rolled back stay uncommitted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol

from models.format.properties import TableConfig
from models.ports import Steps
from models.storage import FileStatus, Storage, join
from models.table_errors import HoodieException
from models.timeline.instant import (
    COMPLETED_ACTION,
    Instant,
    InstantFileNameError,
    State,
    completion_from_mtime,
    parse_instant_file_name,
)
from models.timeline.instant_time import normalize


class TimelineError(HoodieException, RuntimeError):
    """A transition the protocol forbids (e.g. completing an instant twice)."""


WRITE_ACTIONS = (
    "commit",
    "deltacommit",
    "compaction",
    "logcompaction",
    "replacecommit",
    "clustering",
)
"""Hudi's write timeline (``getWriteTimeline``): the actions that write data files."""


class CompletionLookup(Protocol):
    """Where the completion time of an instant that left the active timeline is found."""

    def completion_time(self, requested_time: str) -> str | None: ...


@dataclass(frozen=True)
class ArchiveFallback:
    """How a :class:`Timeline` answers for instants archived off the active timeline.

    ``archived`` is consulted only for times before ``start`` (the requested time of the first
    write instant on the active timeline, ``None`` if there is none): archiving never passes the
    earliest pending instant, so every archived instant is older than every active write instant,
    and a pending instant never needs the (lazily loaded) archive. ``bound`` is a time-travel bound
    (:meth:`Timeline.as_of`): an archived instant that completed after it is not completed there.

    ``use_completion_times=False`` is the variant of apache/hudi#14365: the lookup ignores the
    archive, so an archived deltacommit has no completion time and its log files are taken for
    uncommitted ones (left out of slices and compaction plans: data loss). Archived instants still
    count as *committed* in that variant (Hudi's ``isArchived``), so base files stay visible.
    """

    archived: CompletionLookup
    start: str | None
    use_completion_times: bool = True
    bound: str | None = None

    def covers(self, requested_time: str) -> bool:
        """Whether ``requested_time`` lies before the active timeline (and within the bound)."""
        if self.start is not None and requested_time >= self.start:
            return False
        return self.bound is None or requested_time <= self.bound

    def archived_completion(self, requested_time: str) -> str | None:
        """The archived completion time, if the instant completed by the bound."""
        completion = self.archived.completion_time(requested_time)
        if completion is None or (self.bound is not None and completion > self.bound):
            return None
        return completion

    def bounded(self, time: str) -> ArchiveFallback:
        bound = time if self.bound is None else min(self.bound, time)
        return replace(self, bound=bound)


def first_write_time(instants: Iterable[Instant]) -> str | None:
    """Requested time of the earliest write instant (Hudi's ``firstNonSavepointCommit``)."""
    return min((i.requested_time for i in instants if i.action in WRITE_ACTIONS), default=None)


@dataclass(frozen=True)
class Timeline:
    """Instants sorted by requested time (then state, action); a value, never mutated.

    ``archive``, when set, extends :meth:`completion_time` and :meth:`is_completed` to instants that
    were archived (see :class:`ArchiveFallback`); derived timelines keep it.
    """

    instants: tuple[Instant, ...] = ()
    archive: ArchiveFallback | None = field(default=None, repr=False, compare=False)
    _by_time: dict[str, list[Instant]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        ordered = tuple(
            sorted(self.instants, key=lambda i: (i.requested_time, i.state.value, i.action))
        )
        object.__setattr__(self, "instants", ordered)
        for instant in ordered:
            self._by_time.setdefault(instant.requested_time, []).append(instant)

    def __iter__(self) -> Iterator[Instant]:
        return iter(self.instants)

    def __len__(self) -> int:
        return len(self.instants)

    def get(self, requested_time: str) -> Instant | None:
        """The instant with this requested time (the first, if a collision put several there)."""
        found = self._by_time.get(normalize(requested_time))
        return found[0] if found else None

    def completed(self) -> Timeline:
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        return self.filter(lambda i: not i.is_completed)

    def filter(self, predicate: Callable[[Instant], bool]) -> Timeline:
        return Timeline(tuple(i for i in self.instants if predicate(i)), self.archive)

    def with_archive(self, archive: ArchiveFallback | None) -> Timeline:
        """The same instants, answering for archived ones through ``archive``."""
        return Timeline(self.instants, archive)

    def with_actions(self, *actions: str) -> Timeline:
        return self.filter(lambda i: i.action in actions)

    def completion_time(self, requested_time: str) -> str | None:
        """Completion time of the instant requested at ``requested_time``, None if not completed.

        The active timeline first; an instant older than it is looked up in the archive when this
        timeline carries one (section 8) and the #14365 variant is not switched on.
        """
        time = normalize(requested_time)
        for instant in self._by_time.get(time, ()):
            if instant.is_completed:
                return instant.completion_time
        archive = self.archive
        if archive is not None and archive.use_completion_times and archive.covers(time):
            return archive.archived_completion(time)
        return None

    def is_completed(self, requested_time: str) -> bool:
        """Whether the instant committed: on the active timeline, or archived (always committed).

        In the #14365 variant an archived instant is committed although its completion time is
        unknown, as with Hudi's ``CompletionTimeQueryView.isCompleted`` (``isArchived``).
        """
        if self.completion_time(requested_time) is not None:
            return True
        archive = self.archive
        if archive is None or archive.use_completion_times:
            return False
        time = normalize(requested_time)
        return archive.covers(time) and archive.archived_completion(time) is not None

    def by_completion_time(self) -> tuple[Instant, ...]:
        """Completed instants in completion-time order (the order commits became visible)."""
        done = [i for i in self.instants if i.is_completed]
        return tuple(sorted(done, key=lambda i: (i.completion_time, i.requested_time)))

    def last_completed(self) -> Instant | None:
        """The completed instant with the greatest completion time."""
        done = self.by_completion_time()
        return done[-1] if done else None

    def as_of(self, time: str) -> Timeline:
        """The timeline a reader at ``time`` sees: instants requested at or before ``time``, with
        the ones that completed after ``time`` turned back into pending (inflight) instants.

        This is Hudi 1.x time travel: a commit is part of the table as of ``time`` iff it
        completed by then. A completed compaction keeps its completed action (``commit``) here, so
        as of a time inside its run it does not open a slice; that only changes how its pending
        logs are grouped, not what a reader sees (its base file is not yet visible either way).
        hudi-rs differs: it keeps instants *requested* by ``time`` even if they completed later.
        """
        bound = normalize(time)
        out = []
        for instant in self.instants:
            if instant.requested_time > bound:
                continue
            if instant.is_completed and instant.completion_time > bound:  # type: ignore[operator]
                out.append(Instant(instant.requested_time, State.INFLIGHT, instant.action))
            else:
                out.append(instant)
        return Timeline(tuple(out), self.archive.bounded(bound) if self.archive else None)


def instants_from_listing(files: Iterable[FileStatus], layout_version: int) -> tuple[Instant, ...]:
    """Build instants (each at its latest state) from the timeline folder's listing.

    Files that are not instant files (``hoodie.properties``, ``.aux``, ...) are skipped. A pending
    compaction/logcompaction/clustering and its completed ``commit``/``deltacommit``/
    ``replacecommit`` file are one instant.
    """
    groups: dict[str, list[tuple[object, FileStatus]]] = {}
    for status in files:
        try:
            parsed = parse_instant_file_name(status.name)
        except InstantFileNameError:
            continue
        groups.setdefault(parsed.requested_time, []).append((parsed, status))
    out: list[Instant] = []
    for time in sorted(groups):
        latest: dict[str, tuple[State, str | None]] = {}
        for parsed, status in groups[time]:
            action = parsed.action  # type: ignore[attr-defined]
            state = parsed.state  # type: ignore[attr-defined]
            completion = parsed.completion_time  # type: ignore[attr-defined]
            if state is State.COMPLETED and completion is None:
                completion = completion_from_mtime(status.modified_ms)
            current = latest.get(action)
            if current is None or state.value > current[0].value:
                latest[action] = (state, completion)
        # fold pending table services into their completed file's action
        for pending, completed in COMPLETED_ACTION.items():
            if (
                pending in latest
                and completed in latest
                and latest[completed][0] is State.COMPLETED
            ):
                del latest[pending]
        for action in sorted(latest):
            state, completion = latest[action]
            out.append(
                Instant(time, state, action, completion if state is State.COMPLETED else None)
            )
    return tuple(out)


class ActiveTimeline:
    """A table's timeline on storage: load it, and move instants through their states.

    ``put_if_absent`` (default True, Hudi's requirement on storage) makes every instant file
    write-once. False is the protocol variant of a storage without atomic put-if-absent (an object
    store without conditional writes): a create silently overwrites a file of the same name, and
    completing an instant does not look for a completed file of it under another completion time
    (in layout 2 that check is what makes the completed state write-once, since the name carries
    the completion time; Hudi itself just writes ``<t>_<completion>``). Two writers that drew the
    same instant time then both write data files under it and both complete it. They share the
    instant's markers, so the first commit's finalization (``reconcileAgainstMarkers``) deletes
    the files the other writer created so far, and the second commit names files that are gone:
    a lost write, and no error anywhere.
    """

    def __init__(
        self, storage: Storage, config: TableConfig, *, put_if_absent: bool = True
    ) -> None:
        self.storage = storage
        self.config = config
        self.layout_version = config.layout_version
        self.folder = config.timeline_dir
        self.put_if_absent = put_if_absent

    def _create(self, path: str, content: bytes) -> None:
        """Create an instant file: put-if-absent, or a silent overwrite (the variant)."""
        if self.put_if_absent:
            self.storage.create_if_absent(path, content)
        else:
            self.storage.write(path, content)

    def load(self) -> Timeline:
        return Timeline(
            instants_from_listing(self.storage.list_dir(self.folder), self.layout_version)
        )

    def path_of(self, instant: Instant) -> str:
        return join(self.folder, instant.file_name(self.layout_version))

    def read_content(self, instant: Instant) -> bytes:
        """The bytes of the instant's file at its current state."""
        return self.storage.read(self.path_of(instant))

    def _require_writable(self) -> None:
        if self.layout_version != 2:
            raise TimelineError(
                "writing is supported for timeline layout 2 (table version 8+) only"
            )

    def create_requested(self, requested_time: str, action: str, content: bytes = b"") -> Instant:
        """Create ``<t>.<action>.requested``; FileAlreadyExistsError if that instant exists."""
        self._require_writable()
        instant = Instant(requested_time, State.REQUESTED, action)
        self._create(self.path_of(instant), content)
        return instant

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        self._require_writable()
        if instant.state is not State.REQUESTED:
            raise TimelineError(f"only a requested instant goes inflight, not {instant}")
        inflight = Instant(instant.requested_time, State.INFLIGHT, instant.action)
        self._create(self.path_of(inflight), content)
        return inflight

    def complete(
        self,
        instant: Instant,
        content: bytes,
        time_generator: object,
        *,
        precommit: Callable[[], None] | None = None,
    ) -> Steps[Instant]:
        """Generate the completion time and create the completed file under the generator's lock.

        ``time_generator`` is a :class:`models.timeline.truetime.TimeGenerator`; its ``consume_time`` keeps
        the lock while the file is created. ``precommit`` runs under that same lock hold just
        before the file is created (Hudi's conflict resolution inside the commit transaction);
        if it raises, nothing is written. The inflight file must still exist (Hudi's
        ``transitionStateToComplete`` checks it): a rolled-back instant never completes.
        """
        self._require_writable()
        if instant.state is not State.INFLIGHT:
            raise TimelineError(f"only an inflight instant completes, not {instant}")

        prefix = f"{instant.requested_time}_"

        def create(completion_time: str) -> Instant:
            # checked under the lock: a completed file of this instant under any completion time
            if self.put_if_absent and any(
                f.name.startswith(prefix) for f in self.storage.list_dir(self.folder)
            ):
                raise TimelineError(f"{instant} is already completed")
            # "Ensures old state exists in timeline" (transitionStateToComplete): an instant a
            # rollback removed meanwhile cannot complete
            if not self.storage.exists(self.path_of(instant)):
                raise TimelineError(f"File {self.path_of(instant)} does not exist!")
            if completion_time <= instant.requested_time:
                raise TimelineError(
                    f"completion time {completion_time} is not after requested time of {instant}"
                )
            if precommit is not None:
                precommit()
            done = Instant(instant.requested_time, State.COMPLETED, instant.action, completion_time)
            self._create(self.path_of(done), content)
            return done

        return (yield from time_generator.consume_time(create))  # type: ignore[attr-defined]
