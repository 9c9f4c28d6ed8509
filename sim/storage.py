"""Storage as the simulation sees it: simulated modification times, injected write failures, and
counters from which the simulator charges I/O latency.

Protocol code calls storage synchronously (``models/`` never waits), so this wrapper cannot sleep.
Instead it counts what was done; the simulator reads the counters around a protocol step and
yields the matching delay (:meth:`SimStorage.latency_for`, :meth:`SimStorage.latency_since`).

Injected write failures raise *before* the inner storage is touched: an object store's failed PUT
leaves nothing behind, and a half-written instant file would be a different fault (not modelled
here). The drain phase at the end of a run switches failures off (:attr:`failures_enabled`) so
every surviving writer can finish.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from models.storage import FileStatus, Storage
from models.write.markers import MARKERS_FOLDER
from sim.rng import Rng
from sim.storage_profiles import REQUEST_KINDS, StorageProfile, local_profile

FaultHook = Callable[[str, dict[str, Any]], None]

Mark = tuple[tuple[int, ...], int, int]
"""A point in a run's storage use: requests by kind, bytes written, bytes read."""

MARKER_PATHS = MARKERS_FOLDER + "/"
METADATA_FOLDER = ".hoodie/"


@dataclass(frozen=True)
class DataFileSize:
    """A data file's size: its bytes, and a base file's rows (None for a log file)."""

    bytes: int
    records: int | None


def base_file_rows(path: str, data: bytes) -> int | None:
    """The rows of a base file, from its parquet footer (None for any other file, or bytes
    that are no parquet file)."""
    if not path.endswith(".parquet"):
        return None
    try:
        return pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
    except pa.ArrowInvalid:
        return None


def is_data_file(path: str) -> bool:
    """Whether ``path`` names a data file (a base file, or a log file ``.<file id>_<instant>
    .log.<version>_<write token>``) rather than timeline metadata or a marker."""
    if path.startswith(METADATA_FOLDER):
        return False
    return path.endswith(".parquet") or ".log." in path.rpartition("/")[2]


"""Paths under the marker folder, whose requests are also counted apart."""


@dataclass
class _Counters:
    """One process's requests by kind and bytes moved."""

    ops_by_kind: dict[str, int] = field(default_factory=lambda: dict.fromkeys(REQUEST_KINDS, 0))
    bytes_written: int = 0
    bytes_read: int = 0


def _elapsed_ms(
    profile: StorageProfile,
    mark: Mark,
    ops_by_kind: dict[str, int],
    bytes_written: int,
    bytes_read: int,
) -> int:
    """Simulated time of the requests and bytes counted since ``mark``."""
    counts, written, read = mark
    since = {k: n - before for (k, n), before in zip(ops_by_kind.items(), counts, strict=True)}
    return profile.request_ms(since) + profile.transfer_ms(
        bytes_written - written, bytes_read - read
    )


class StorageWriteError(OSError):
    """An injected write failure (e.g. an object store PUT timing out); nothing was written."""


class SimStorage:
    """Wraps an inner :class:`models.storage.Storage` (InMemoryStorage, LocalStorage) for a run.

    Before every operation the inner storage's ``now_ms`` is set from ``now()`` (so modification
    times are simulated time). Each write (``create_if_absent``, ``write``) draws exactly one value
    from ``rng``, failures enabled or not, so switching them off for the drain phase or changing the
    probability does not shift later draws.

    Counters: ``ops`` (every call, failed ones included), ``ops_by_kind``,
    ``marker_ops_by_kind`` (those under ``.hoodie/.temp``, the markers), ``bytes_written``
    (successful writes only), ``bytes_read`` and ``write_failures``. ``profile`` prices them
    (:mod:`sim.storage_profiles`; default: the local profile with ``latency_ms`` per request).
    """

    def __init__(
        self,
        inner: Storage,
        *,
        now: Callable[[], int],
        rng: Rng,
        write_failure: float = 0.0,
        on_fault: FaultHook | None = None,
        latency_ms: int = 0,
        profile: StorageProfile | None = None,
        active: Callable[[], object] | None = None,
    ) -> None:
        if not 0.0 <= write_failure <= 1.0:
            raise ValueError(f"write_failure must be in [0, 1], got {write_failure!r}")
        if type(latency_ms) is not int or latency_ms < 0:
            raise ValueError(f"latency_ms must be an int >= 0, got {latency_ms!r}")
        self.inner = inner
        self._now = now
        self.rng = rng
        self.write_failure = write_failure
        self.on_fault = on_fault
        self.latency_ms = latency_ms
        self.profile = profile or local_profile(latency_ms)
        self.failures_enabled = True
        self.ops = 0
        self.ops_by_kind: dict[str, int] = dict.fromkeys(REQUEST_KINDS, 0)
        self.marker_ops_by_kind: dict[str, int] = dict.fromkeys(REQUEST_KINDS, 0)
        self.bytes_written = 0
        self.bytes_read = 0
        self.write_failures = 0
        self.data_files: dict[str, DataFileSize] = {}
        """The size of every data file written (base and log files), by path."""
        self._active = active
        self._own: dict[object, _Counters] = {}  # process -> its own requests, when it asked

    def _begin(self, kind: str, path: str) -> None:
        self.ops += 1
        self.ops_by_kind[kind] += 1
        if path.startswith(MARKER_PATHS) or path == MARKERS_FOLDER:
            self.marker_ops_by_kind[kind] += 1
        if self._own and (own := self._owner()) is not None:
            own.ops_by_kind[kind] += 1
        self.inner.now_ms = int(self._now())  # type: ignore[attr-defined]

    def _owner(self) -> _Counters | None:
        return self._own.get(self._active()) if self._active is not None else None

    def _moved(self, written: int, read: int) -> None:
        self.bytes_written += written
        self.bytes_read += read
        if self._own and (own := self._owner()) is not None:
            own.bytes_written += written
            own.bytes_read += read

    def _wrote(self, path: str, data: bytes) -> None:
        self._moved(len(data), 0)
        if is_data_file(path):
            self.data_files[path] = DataFileSize(len(data), base_file_rows(path, data))

    def _maybe_fail(self, path: str) -> None:
        failed = self.rng.bernoulli(self.write_failure)
        if failed and self.failures_enabled:
            self.write_failures += 1
            if self.on_fault is not None:
                self.on_fault("storage_write_failure", {"path": path})
            raise StorageWriteError(f"injected write failure: {path}")

    # -- the Storage protocol --------------------------------------------------------------------

    def create_if_absent(self, path: str, data: bytes) -> None:
        self._begin("create_if_absent", path)
        self._maybe_fail(path)
        self.inner.create_if_absent(path, data)
        self._wrote(path, data)

    def write(self, path: str, data: bytes) -> None:
        self._begin("write", path)
        self._maybe_fail(path)
        self.inner.write(path, data)
        self._wrote(path, data)

    def read(self, path: str) -> bytes:
        self._begin("read", path)
        data = self.inner.read(path)
        self._moved(0, len(data))
        return data

    def exists(self, path: str) -> bool:
        self._begin("exists", path)
        return self.inner.exists(path)

    def delete(self, path: str) -> None:
        self._begin("delete", path)
        self.inner.delete(path)

    def list_dir(self, path: str) -> list[FileStatus]:
        self._begin("list_dir", path)
        return self.inner.list_dir(path)

    def list_subdirs(self, path: str) -> list[str]:
        self._begin("list_subdirs", path)
        return self.inner.list_subdirs(path)

    # -- latency accounting ----------------------------------------------------------------------

    def latency_for(self, nbytes: int) -> int:
        """Simulated time one PUT of ``nbytes`` takes under the profile (local: ``latency_ms``
        + 1 ms per MB)."""
        return self.profile.latency_ms["write"] + self.profile.transfer_ms(nbytes, 0)

    def usage(self) -> Mark:
        """A mark of the requests and bytes so far, to pass to :meth:`latency_since`."""
        return (tuple(self.ops_by_kind.values()), self.bytes_written, self.bytes_read)

    def latency_since(self, mark: Mark) -> int:
        """Simulated time the requests since ``mark`` (from :meth:`usage`) take together."""
        return _elapsed_ms(
            self.profile, mark, self.ops_by_kind, self.bytes_written, self.bytes_read
        )

    def own_usage(self) -> Mark:
        """A mark of the requests and bytes of the running process alone (it is counted apart
        from now on, until :meth:`forget_own`), for :meth:`own_latency_since`: the I/O of a
        step that waits in between (the compactor's commit takes the lock), without what other
        processes did meanwhile."""
        if self._active is None:
            return self.usage()
        own = self._own.setdefault(self._active(), _Counters())
        return (tuple(own.ops_by_kind.values()), own.bytes_written, own.bytes_read)

    def own_latency_since(self, mark: Mark) -> int:
        """Simulated time the running process's requests since ``mark`` take together."""
        own = self._owner()
        if own is None:
            return self.latency_since(mark)
        return _elapsed_ms(self.profile, mark, own.ops_by_kind, own.bytes_written, own.bytes_read)

    def forget_own(self) -> None:
        """Stop counting the running process apart."""
        if self._active is not None:
            self._own.pop(self._active(), None)

    def summary(self) -> dict[str, object]:
        """The run's storage use for ``result.json``: requests and their time by kind, bytes
        moved, under the profile."""
        latency = self.profile.latency_ms
        return {
            "profile": self.profile.name,
            "requests": dict(self.ops_by_kind),
            "request_time_ms": {k: n * latency[k] for k, n in self.ops_by_kind.items()},
            "marker_requests": dict(self.marker_ops_by_kind),
            "marker_request_time_ms": {
                k: n * latency[k] for k, n in self.marker_ops_by_kind.items()
            },
            "bytes_written": self.bytes_written,
            "bytes_read": self.bytes_read,
            "write_failures": self.write_failures,
        }
