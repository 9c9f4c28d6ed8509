"""Writer heartbeats and the failed-writes cleaning policy (docs/protocol.md section 3).

A pending instant is either a write in progress or the remains of a writer that died. Hudi tells
them apart by heartbeats, as its source does it (``HoodieHeartbeatClient``, ``HoodieHeartbeatUtils``,
``HeartbeatUtils``, ``BaseHoodieTableServiceClient.getInstantsToRollback``):

* a writer creates ``.hoodie/.heartbeat/<instantTime>`` when it starts the instant and re-creates
  (overwrites) it every ``hoodie.client.heartbeat.interval_in_ms`` (default 60 000);
* the *last heartbeat time* is that file's **modification time as the storage reports it**, 0 when
  the file is missing (``getLastHeartbeatTime``); a heartbeat is expired when
  ``now - last > interval * hoodie.client.heartbeat.tolerable.misses`` (default 2), with ``now``
  the *checking* process's clock: clock skew between that process and the storage shifts the verdict,
  which the simulator can show;
* stopping deletes the file (``deleteHeartbeatFile``), as does a rollback of the instant;
* ``hoodie.cleaner.policy.failed.writes``: ``EAGER`` rolls back every pending write instant except
  the caller's own when a writer starts (safe for one writer only: it kills concurrent writers'
  instants); ``LAZY`` (required with multiple writers and NBCC) only those whose heartbeat expired,
  re-checked against a freshly loaded timeline so an instant completed meanwhile is spared;
  ``NEVER`` none. Candidates are pending commits/deltacommits/replacecommits: compactions and
  clustering are table services, re-run from their plans rather than rolled back as failed writes
  (``getInflightTimelineExcludeCompactionAndClustering``). Hudi returns them newest first, the
  order ``EAGER`` must roll back in.

Hudi writes an empty heartbeat file; the testbed writes the writer's own clock reading into it
(``now_ms``, decimal) so histories can compare it with the storage's modification time. Only the
modification time is ever used for expiry. ``models`` reads no clock: callers pass ``now_ms``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from models.storage import Storage, join
from models.timeline.active import Timeline
from models.timeline.instant import Instant
from models.timeline.instant_time import normalize


class HeartbeatClient(Protocol):
    """A write client's heartbeat client as the commit path uses it (Hudi's
    ``HoodieHeartbeatClient`` under LAZY cleaning)."""

    def start(self, instant_time: str) -> None:
        """Start (or restart) ``instant_time``'s heartbeat: ``recommitInstant`` does it before it
        commits a restored instant."""
        ...

    def abort_if_expired(self, instant_time: str) -> None:
        """Raise if ``instant_time``'s heartbeat expired (``abortIfHeartbeatExpired``, before the
        commit takes the table lock)."""
        ...

    def stop(self, instant_time: str) -> None:
        """Stop ``instant_time``'s heartbeat and delete its file (``HoodieHeartbeatClient#stop``):
        the instant looks failed to the next LAZY clean at once."""
        ...


HEARTBEAT_FOLDER = ".hoodie/.heartbeat"
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000
"""``hoodie.client.heartbeat.interval_in_ms``."""
DEFAULT_TOLERABLE_MISSES = 2
"""``hoodie.client.heartbeat.tolerable.misses``."""
FAILED_WRITES_POLICIES = ("EAGER", "LAZY", "NEVER")
"""``hoodie.cleaner.policy.failed.writes``; Hudi's default is ``EAGER``."""
ROLLBACK_CANDIDATE_ACTIONS = ("commit", "deltacommit", "replacecommit")


def heartbeat_path(instant_time: str) -> str:
    return join(HEARTBEAT_FOLDER, normalize(instant_time))


def start(storage: Storage, instant_time: str, now_ms: int) -> None:
    """Create the heartbeat of ``instant_time`` (the first beat happens at once, as in Hudi)."""
    refresh(storage, instant_time, now_ms)


def refresh(storage: Storage, instant_time: str, now_ms: int) -> None:
    """Beat: re-create the file, so its modification time becomes the storage's ``now``."""
    storage.write(heartbeat_path(instant_time), str(now_ms).encode())


def stop(storage: Storage, instant_time: str) -> None:
    """Delete the heartbeat (the writer finished, or the instant was rolled back)."""
    storage.delete(heartbeat_path(instant_time))


def heartbeat_ms(storage: Storage, instant_time: str) -> int | None:
    """Modification time of the heartbeat file, None if there is none."""
    path = heartbeat_path(instant_time)
    for status in storage.list_dir(HEARTBEAT_FOLDER):
        if status.path == path:
            return status.modified_ms
    return None


def last_heartbeat_ms(storage: Storage, instant_time: str) -> int:
    """Modification time of the heartbeat file; 0 if there is none (``getLastHeartbeatTime``)."""
    found = heartbeat_ms(storage, instant_time)
    return 0 if found is None else found


def is_expired(
    storage: Storage,
    instant_time: str,
    now_ms: int,
    interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    tolerable_misses: int = DEFAULT_TOLERABLE_MISSES,
) -> bool:
    """Whether the writer of ``instant_time`` is presumed dead at ``now_ms`` (the caller's clock).

    Strictly more than ``interval_ms * tolerable_misses`` since the last beat. A missing heartbeat
    is expired: Hudi gets that from a last beat at 0 ms, i.e. for any real clock; a simulated
    clock may start near 0, so it is explicit here.
    """
    if interval_ms <= 0 or tolerable_misses <= 0:
        raise ValueError(
            f"interval_ms and tolerable_misses must be positive, got {interval_ms}, "
            f"{tolerable_misses}"
        )
    last = heartbeat_ms(storage, instant_time)
    return last is None or now_ms - last > interval_ms * tolerable_misses


def instants_to_roll_back(
    timeline: Timeline,
    storage: Storage,
    policy: str,
    now_ms: int,
    *,
    own_instants: Iterable[str] = (),
    interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS,
    tolerable_misses: int = DEFAULT_TOLERABLE_MISSES,
) -> list[Instant]:
    """The pending write instants a writer starting at ``now_ms`` rolls back, newest first.

    ``timeline`` should be freshly loaded (Hudi re-loads it before returning LAZY's expired
    instants); ``own_instants`` are the caller's own requested times, never rolled back.
    """
    if policy not in FAILED_WRITES_POLICIES:
        raise ValueError(
            f"unknown failed-writes policy {policy!r}; allowed: {', '.join(FAILED_WRITES_POLICIES)}"
        )
    own = {normalize(t) for t in own_instants}
    candidates = [
        i
        for i in reversed(timeline.pending().instants)
        if i.action in ROLLBACK_CANDIDATE_ACTIONS and i.requested_time not in own
    ]
    if policy == "NEVER":
        return []
    if policy == "EAGER":
        return candidates
    return [
        i
        for i in candidates
        if is_expired(storage, i.requested_time, now_ms, interval_ms, tolerable_misses)
    ]
