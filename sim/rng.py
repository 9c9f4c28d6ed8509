"""Named random streams: one seed for a whole run, split so that streams never disturb each other.

If every part of the simulation drew from one generator, adding a single draw anywhere (a new fault
kind, one more writer) would shift every later draw and turn a known failing seed into a different
run. Instead each consumer asks for its own stream by name, ``rng.child("network").child("acks")``,
and a stream's seed is derived only from the run's seed and the stream's path. Adding, removing or
using a stream more or less often never changes what another stream draws.

The derivation uses sha256, not Python's ``hash()`` (which is randomized per process for strings),
so a seed reproduces the run on any machine and in any process (a Spark executor included).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import MutableSequence, Sequence
from typing import TypeVar

T = TypeVar("T")


def derive_seed(seed: int, names: Sequence[str]) -> int:
    """The 256-bit seed of the stream reached by child ``names`` from the root of run ``seed``.

    Hashes the JSON list ``[seed, *names]``, so names may contain any character (process names
    such as ``"job0/task-1"`` included) without two different name lists ever colliding.
    """
    material = json.dumps([seed, *names], separators=(",", ":")).encode("ascii")
    return int.from_bytes(hashlib.sha256(material).digest(), "big")


class Rng:
    """One deterministic random stream of a run, identified by its seed and child names.

    :attr:`names` are the child names leading to this stream (``()`` for the root); :attr:`path`
    joins them with ``/`` for error messages, so a bad draw can be traced to its consumer.
    ``Rng(seed, "a/b")`` is a shorthand that splits ``path`` on ``/``: it draws exactly what
    ``Rng(seed).child("a").child("b")`` draws (and not what ``child("a/b")`` draws).
    """

    seed: int
    names: tuple[str, ...]
    path: str

    def __init__(self, seed: int, path: str = "") -> None:
        if type(seed) is not int:
            raise TypeError(f"seed must be an int, got {seed!r}")
        names = tuple(path.split("/")) if path else ()
        if any(not name for name in names):
            raise ValueError(f"stream path {path!r} has an empty name in it")
        self._init(seed, names)

    def _init(self, seed: int, names: tuple[str, ...]) -> None:
        self.seed = seed
        self.names = names
        self.path = "/".join(names)
        self._random = random.Random(derive_seed(seed, names))

    def __repr__(self) -> str:
        return f"Rng(seed={self.seed}, path={self.path!r})"

    def _where(self) -> str:
        return f"stream {self.path or '<root>'!r}"

    def child(self, name: str) -> Rng:
        """An independent stream named ``name`` under this one (same name, same stream).

        Creating a child draws nothing from this stream, so children can be added at any time.
        """
        if type(name) is not str or not name:
            raise ValueError(f"{self._where()}: child names are non-empty strings, got {name!r}")
        child = Rng.__new__(Rng)
        child._init(self.seed, (*self.names, name))
        return child

    def random(self) -> float:
        """A float in [0, 1)."""
        return self._random.random()

    def uniform(self, a: float, b: float) -> float:
        """A float between ``a`` and ``b`` (one draw, even when ``a == b``)."""
        return self._random.uniform(a, b)

    def randint(self, a: int, b: int) -> int:
        """An int in [a, b], both ends included."""
        if type(a) is not int or type(b) is not int:
            raise TypeError(f"{self._where()}: randint needs ints, got {a!r}, {b!r}")
        if a > b:
            raise ValueError(f"{self._where()}: randint({a}, {b}) has an empty range")
        return self._random.randint(a, b)

    def bernoulli(self, p: float) -> bool:
        """True with probability ``p``: ``p == 0`` is never True, ``p == 1`` always.

        Always consumes exactly one draw, whatever ``p`` is, so turning a fault probability from 0
        to 0.1 changes only the outcomes of this stream, not its alignment.
        """
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"{self._where()}: probability must be in [0, 1], got {p!r}")
        return self._random.random() < p  # random() < 1 always, and never < 0

    def expovariate(self, rate_per_ms: float) -> float:
        """An exponentially distributed duration in ms with mean ``1 / rate_per_ms``."""
        if not rate_per_ms > 0:
            raise ValueError(f"{self._where()}: rate must be > 0 per ms, got {rate_per_ms!r}")
        return self._random.expovariate(rate_per_ms)

    def choice(self, seq: Sequence[T]) -> T:
        """One element of the (non-empty, ordered) sequence ``seq``.

        Pass a list or tuple, never a set: a set's order differs between processes.
        """
        if not seq:
            raise ValueError(f"{self._where()}: choice from an empty sequence")
        return self._random.choice(seq)

    def shuffle(self, items: MutableSequence[T]) -> None:
        """Shuffle ``items`` in place."""
        self._random.shuffle(items)
