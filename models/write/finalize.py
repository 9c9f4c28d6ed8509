"""Finalizing a write (Hudi's ``HoodieTable.finalizeWrite`` -> ``reconcileAgainstMarkers``, run by
the write client's ``commit`` after conflict resolution and before ``saveAsComplete``): every data file
a ``CREATE``/``MERGE`` marker of the instant announces (``WriteMarkers.createdAndMergedDataPaths``)
that no write stat of the commit lists is deleted. Hudi does it for the duplicate files of retried
Spark tasks; in a Flink job it is what keeps a re-commit honest: a restored instant re-committed
with the write statuses a checkpoint kept must not leave visible the files flushed into it after
that checkpoint (the source replays those records under a new instant). Completed readers take
every file named with a completed instant, so an unlisted file left behind would be visible data
nobody committed. Log files are included: table version 8+ names each log file after the
deltacommit that creates it and Hudi 1.x marks it ``CREATE``
(``WriteMarkers.createLogMarkerIfNotExists``; the ``APPEND`` markers of ``AppendMarkerHandler``
exist for table version 6 only, whose logs are shared across instants and "already fail-safe"),
so an unlisted log file is garbage of this instant like any base file; a listed one stays. One
marker listing per commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from models.format.commit_metadata import WriteStat
from models.storage import Storage
from models.write.markers import RECONCILED_MARKER_TYPES, created_and_merged_data_paths


def finalize_write(
    storage: Storage,
    instant_time: str,
    stats: Iterable[WriteStat],
    marked: Callable[[str], list[str]] | None = None,
) -> list[str]:
    """Delete the data files ``instant_time`` created that ``stats`` do not list; return them.

    Hudi's ``reconcileAgainstMarkers``: the instant's ``CREATE``/``MERGE`` markers name every file
    it created (``marked``, ``WriteMarkers#createdAndMergedDataPaths``: read from storage unless
    given, as a timeline server answers from memory), the write stats name the files it commits.
    Idempotent (a retried commit finalizes again; a file already gone counts as deleted)."""
    listed = {s.path for s in stats}
    if marked is None:
        paths = created_and_merged_data_paths(storage, instant_time)
    else:
        paths = marked(instant_time)
    invalid = [p for p in paths if p not in listed]
    for path in invalid:
        storage.delete(path)
    return invalid


__all__ = ["RECONCILED_MARKER_TYPES", "finalize_write"]
