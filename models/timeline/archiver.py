"""Archiving: moving old instants off the active timeline into the LSM timeline.

The active timeline would grow without bound, and every reader lists it (docs/protocol.md
section 8). What Hudi's ``TimelineArchiverV2`` does, and this module follows:

  1 GB size cap on a compaction group is not modeled.

**What may be archived** (``TimelineArchiverV2.getCommitInstantsToArchive``), only when more than
``max_active`` (``hoodie.keep.max.commits``) completed commits/deltacommits/replacecommits are on
the active timeline, keeping at least ``min_active`` (``hoodie.keep.min.commits``), oldest first,
and only commits requested before the earliest of:

1. the latest completed commit before the earliest *pending* write instant (or that pending instant
   itself if there is none): nothing pending is ever archived, nor anything after it;
2. MERGE_ON_READ: the latest completed compaction, or before any compaction the first deltacommit
   (``CompactionUtils.getEarliestInstantToRetainForCompaction`` when fewer than
   ``hoodie.compact.inline.max.delta.commits`` deltacommits follow it); with ``max_delta_commits``
   set, Hudi's exact NUM_COMMITS rule (once at least that many deltacommits follow, the point moves
   forward so that ``max_delta_commits - 1`` of them stay);
3. the first replacecommit/clustering instant (``ClusteringUtils.getEarliestInstantToRetainFor
   Clustering`` with no clean on the timeline, which this testbed never writes): the fsview learns
   which file groups were replaced from those instants, so archiving them would resurrect data;
4. the first completed savepoint (``hoodie.archive.beyond.savepoint`` false).

Completed ``clean`` and ``rollback`` instants requested before the last archived commit go along.
The metadata-table rules of Hudi do not apply (the testbed's tables have none).

**Order of the steps** (``archiveIfRequired``): leftover markers of each archived instant are
deleted, the L0 file is written and the manifest/version updated, *then* the archived instants'
files are deleted from the active timeline (requested/inflight first, then the completed files in
ascending order, so no reader sees a completed instant's plan without its completion: HUDI-7207),
then the LSM compaction and cleaning. A crash in between leaves instants both archived and active,
which readers tolerate (active wins). Hudi runs this under the table lock; the caller of
:func:`archive_instants` owns that.

"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from models.storage import Storage, join
from models.timeline.active import WRITE_ACTIONS
from models.timeline.instant import COMPLETED_ACTION, Instant, InstantFileNameError, State
from models.timeline.instant import parse_instant_file_name as _parse_instant
from models.timeline.lsm_timeline import ArchiveError, LSMTimelineInstant, lsm_file_name
from models.timeline.lsm_writer import (
    DEFAULT_MANIFEST_RETAINED_VERSIONS,
    DEFAULT_MERGE_FACTOR,
    LSMTimelineWriter,
)

if TYPE_CHECKING:
    from models.view.table import HudiTable

MARKERS_FOLDER = ".hoodie/.temp"


@dataclass
class _ActionFiles:
    """The files of one action on the active timeline (``ActiveAction``)."""

    requested: str | None = None
    inflight: str | None = None
    completed: str | None = None
    pending_action: str | None = None
    extra: list[str] = field(default_factory=list)


def _comparable_action(action: str) -> str:
    """``InstantComparatorV2.getComparableAction``: a table service and its completed action."""
    return COMPLETED_ACTION.get(action, action)


def _active_files(storage: Storage, folder: str) -> dict[tuple[str, str], _ActionFiles]:
    """(requested time, comparable action) -> the files of that action on the active timeline."""
    out: dict[tuple[str, str], _ActionFiles] = {}
    for status in storage.list_dir(folder):
        try:
            parsed = _parse_instant(status.name)
        except InstantFileNameError:
            continue
        files = out.setdefault(
            (parsed.requested_time, _comparable_action(parsed.action)), _ActionFiles()
        )
        if parsed.state is State.COMPLETED:
            if files.completed is not None:
                files.extra.append(status.path)  # a second completed file: keep it for deletion
            else:
                files.completed = status.path
        else:
            files.pending_action = parsed.action
            if parsed.state is State.REQUESTED:
                files.requested = status.path
            else:
                files.inflight = status.path
    return out


_COMMITS = ("commit", "deltacommit", "replacecommit")


def _retention_candidates(
    timeline_instants: Sequence[Instant], is_mor: bool, max_delta_commits: int | None
) -> list[str]:
    """Requested times of the instants archiving must stop before (rules 1-3 of the module doc)."""
    completed_commits = [i for i in timeline_instants if i.is_completed and i.action in _COMMITS]
    candidates: list[str] = []
    pending_writes = [
        i for i in timeline_instants if not i.is_completed and i.action in WRITE_ACTIONS
    ]
    if pending_writes:
        earliest_pending = pending_writes[0].requested_time
        before = [c for c in completed_commits if c.requested_time < earliest_pending]
        candidates.append(before[-1].requested_time if before else earliest_pending)
    if is_mor:
        # completed compactions show as completed "commit" instants on a MOR timeline
        compactions = [i for i in completed_commits if i.action == "commit"]
        last = compactions[-1].requested_time if compactions else None
        deltas = [
            i
            for i in timeline_instants
            if i.action == "deltacommit" and (last is None or i.requested_time > last)
        ]
        anchor = last if last is not None else (deltas[0].requested_time if deltas else None)
        if max_delta_commits is not None and len(deltas) >= max_delta_commits:
            anchor = deltas[len(deltas) - max_delta_commits].requested_time
        if anchor is not None:
            candidates.append(anchor)
    replaces = [i for i in timeline_instants if i.action in ("replacecommit", "clustering")]
    if replaces:
        candidates.append(replaces[0].requested_time)
    return candidates


def instants_to_archive(
    table: HudiTable,
    *,
    max_active: int,
    min_active: int,
    max_delta_commits: int | None = None,
) -> list[Instant]:
    """The completed instants :func:`archive_instants` would move, oldest first (writes nothing)."""
    if not 0 < min_active < max_active:
        raise ArchiveError(
            f"need 0 < min_active < max_active (hoodie.keep.min.commits < hoodie.keep.max.commits),"
            f" got min_active={min_active}, max_active={max_active}"
        )
    if max_delta_commits is not None and max_delta_commits < 1:
        raise ArchiveError(f"max_delta_commits must be >= 1, got {max_delta_commits}")
    instants = table.active_timeline.load().instants
    commits = [i for i in instants if i.is_completed and i.action in _COMMITS]
    if len(commits) <= max_active:
        return []
    candidates = _retention_candidates(instants, table.config.is_mor, max_delta_commits)
    retain_from = min(candidates, default=None)
    savepoints = [i for i in instants if i.is_completed and i.action == "savepoint"]
    stop = min(
        [t for t in (retain_from, savepoints[0].requested_time if savepoints else None) if t],
        default=None,
    )
    eligible = [c for c in commits if stop is None or c.requested_time < stop]
    chosen = eligible[: max(0, len(commits) - min_active)]
    if not chosen:
        return []
    last = chosen[-1].requested_time
    services = [
        i
        for i in instants
        if i.is_completed and i.action in ("clean", "rollback") and i.requested_time < last
    ]
    return sorted([*chosen, *services], key=lambda i: (i.requested_time, i.action))


def archive_instants(
    table: HudiTable,
    *,
    max_active: int,
    min_active: int,
    merge_factor: int = DEFAULT_MERGE_FACTOR,
    max_delta_commits: int | None = None,
    manifest_retained_versions: int = DEFAULT_MANIFEST_RETAINED_VERSIONS,
) -> list[Instant]:
    """Archive old completed instants into the LSM timeline; returns the archived instants.

    Nothing happens while at most ``max_active`` completed commits are active. See the module
    docstring for the rules and the order of the steps (Hudi's ``TimelineArchiverV2``).
    """
    chosen = instants_to_archive(
        table, max_active=max_active, min_active=min_active, max_delta_commits=max_delta_commits
    )
    if not chosen:
        return []
    storage = table.storage
    writer = LSMTimelineWriter(storage, table.config)
    files = _active_files(storage, table.active_timeline.folder)
    rows = []
    actions = []
    for instant in chosen:
        action_files = files.get((instant.requested_time, _comparable_action(instant.action)))
        if action_files is None or action_files.completed is None:
            continue  # archived meanwhile by another archiver
        _delete_markers(storage, instant.requested_time)
        rows.append(_lsm_row(storage, instant, action_files))
        actions.append((instant, action_files))
    if not rows:
        return []
    name = lsm_file_name(rows[0].instant_time, rows[-1].instant_time, 0)
    if not writer.is_committed(name):  # else: a previous attempt committed it, only delete
        writer.update_manifest((), writer.write_file(name, rows))
    for _, action_files in actions:  # pending states first ...
        for path in (action_files.requested, action_files.inflight):
            if path is not None:
                storage.delete(path)
    for _, action_files in actions:  # ... then completed files, ascending (HUDI-7207)
        for path in (action_files.completed, *action_files.extra):
            if path is not None:
                storage.delete(path)
    writer.compact_and_clean(merge_factor, manifest_retained_versions)
    return [instant for instant, _ in actions]


def _read_or_none(storage: Storage, path: str | None) -> bytes | None:
    if path is None:
        return None
    try:
        data = storage.read(path)
    except FileNotFoundError:
        return None
    return data or None


def _lsm_row(storage: Storage, instant: Instant, files: _ActionFiles) -> LSMTimelineInstant:
    """``MetadataConversionUtils.createLSMTimelineInstant``: metadata = the completed file's bytes;
    plan = the compaction/logcompaction plan, the clean plan, or for replace/clustering the
    requested metadata overridden by a non-empty inflight file."""
    pending = files.pending_action or instant.action
    plan = None
    if pending in ("compaction", "logcompaction", "clean"):
        plan = _read_or_none(storage, files.requested)
    elif pending in ("replacecommit", "clustering"):
        plan = _read_or_none(storage, files.inflight) or _read_or_none(storage, files.requested)
    return LSMTimelineInstant(
        instant_time=instant.requested_time,
        completion_time=instant.completion_time,
        action=instant.action,
        metadata=_read_or_none(storage, files.completed),
        plan=plan,
    )


def _delete_markers(storage: Storage, instant_time: str) -> None:
    """Markers an archived instant left behind (``deleteAnyLeftOverMarkers``)."""
    stack = [join(MARKERS_FOLDER, instant_time)]
    while stack:
        folder = stack.pop()
        for status in storage.list_dir(folder):
            storage.delete(status.path)
        stack.extend(join(folder, d) for d in storage.list_subdirs(folder))
