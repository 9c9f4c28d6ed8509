"""Storage profiles: what each kind of storage request costs in simulated time.

The simulator charges a step's I/O after it ran (:meth:`sim.storage.SimStorage.latency_since`):
every request a latency by its kind, plus the bytes it moved at the profile's bandwidth. Two
profiles, ``[table] storage_profile``:

``local``
    A file system: every request takes ``[sim] storage_latency_ms`` (default 5 ms) and writes
    move 1 MB per ms; reads move for free (the page cache). The default.
``object_store``
    An object store such as S3, where every request is a round trip and none is atomic across
    objects (no rename: Hudi's roll files are a copy and a delete). AWS's S3 performance
    whitepaper ("Timeouts and Retries for Latency-Sensitive Applications") puts the median
    latency of small requests "in the tens of milliseconds"; the profile assumes 30 ms for a
    GET, 20 ms for a HEAD (``exists``), 50 ms for a PUT, a conditional PUT
    (``create_if_absent``) and a LIST, 30 ms for a DELETE, and 100 MB/s per request stream both
    ways (an assumption: a single connection is capped, at no documented rate). These are a
    design review's round numbers, not measurements. ``[sim] storage_latency_ms`` does not
    apply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

REQUEST_KINDS: tuple[str, ...] = (
    "create_if_absent",
    "write",
    "read",
    "exists",
    "delete",
    "list_dir",
    "list_subdirs",
)
"""The storage requests the models make (:class:`models.storage.Storage`'s methods)."""

STORAGE_PROFILES: tuple[str, ...] = ("local", "object_store")

LOCAL_BYTES_PER_MS = 1_000_000
"""A local write moves 1 MB per ms."""


@dataclass(frozen=True)
class StorageProfile:
    """Latency per request kind, and transfer speed (``bytes_per_ms``; reads are charged only
    when ``charge_reads``)."""

    name: str
    latency_ms: Mapping[str, int]
    bytes_per_ms: int
    charge_reads: bool

    def __post_init__(self) -> None:
        if set(self.latency_ms) != set(REQUEST_KINDS):
            raise ValueError(f"a profile prices every request kind: {REQUEST_KINDS}")
        if any(type(v) is not int or v < 0 for v in self.latency_ms.values()):
            raise ValueError("request latencies are integers >= 0 (ms)")
        if self.bytes_per_ms < 1:
            raise ValueError("bytes_per_ms must be >= 1")

    def request_ms(self, counts: Mapping[str, int]) -> int:
        """Latency of ``counts`` requests by kind, transfer left out."""
        return sum(self.latency_ms[kind] * n for kind, n in counts.items())

    def transfer_ms(self, written: int, read: int) -> int:
        """Time to move ``written`` and ``read`` bytes."""
        moved = written + (read if self.charge_reads else 0)
        return moved // self.bytes_per_ms


def local_profile(latency_ms: int) -> StorageProfile:
    """Every request ``latency_ms``, writes at 1 MB per ms, reads free."""
    return StorageProfile(
        "local",
        MappingProxyType(dict.fromkeys(REQUEST_KINDS, latency_ms)),
        LOCAL_BYTES_PER_MS,
        charge_reads=False,
    )


OBJECT_STORE = StorageProfile(
    "object_store",
    MappingProxyType(
        {
            "create_if_absent": 50,
            "write": 50,
            "read": 30,
            "exists": 20,
            "delete": 30,
            "list_dir": 50,
            "list_subdirs": 50,
        }
    ),
    bytes_per_ms=100_000,
    charge_reads=True,
)


def storage_profile(name: str, latency_ms: int) -> StorageProfile:
    """The profile ``[table] storage_profile`` names (``latency_ms``: ``[sim]
    storage_latency_ms``, for ``local``)."""
    if name == "local":
        return local_profile(latency_ms)
    if name == "object_store":
        return OBJECT_STORE
    raise ValueError(f"unknown storage profile {name!r}; allowed: {', '.join(STORAGE_PROFILES)}")


__all__ = [
    "OBJECT_STORE",
    "REQUEST_KINDS",
    "STORAGE_PROFILES",
    "StorageProfile",
    "local_profile",
    "storage_profile",
]
