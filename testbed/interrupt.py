"""Ctrl-C while a command writes its last records.

A command interrupted by Ctrl-C still writes a record of what finished (``summary.json``,
``explore.json``, ...). Those writes are short, and a second Ctrl-C in the middle of one must not
leave a record that contradicts the exit code, so :func:`sigint_held` holds SIGINT for their
duration: a Ctrl-C that arrives inside the block is remembered instead of raised, and the caller
decides what it means (usually: the command was interrupted, which it already knows).

A long loop of simulations runs under :func:`sigint_watched` instead: Ctrl-C still raises
``KeyboardInterrupt`` at once, but it is also remembered, because Python swallows an exception
raised while a generator is being finalised (it prints "Exception ignored in: <generator ...>"),
and the simulator's processes are generators. The loop asks the watch between simulations, and
the swallowed exception's traceback is not printed.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any


@dataclass
class HeldSigint:
    """What :func:`sigint_held` saw: ``pending`` is true when Ctrl-C arrived inside the block."""

    pending: bool = False


@contextmanager
def sigint_held() -> Iterator[HeldSigint]:
    """Run the block with SIGINT held: a Ctrl-C inside it sets ``pending`` on the yielded
    :class:`HeldSigint` instead of raising ``KeyboardInterrupt``; the previous handler is put
    back when the block ends. Outside the main thread (where no handler can be set) the block
    runs as it is."""
    held = HeldSigint()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def remember(signum: int, frame: FrameType | None) -> None:
        held.pending = True

    previous = signal.signal(signal.SIGINT, remember)
    try:
        yield held
    finally:
        signal.signal(signal.SIGINT, previous)


@dataclass
class SigintWatch:
    """What :func:`sigint_watched` saw: ``seen`` is true once Ctrl-C arrived inside the block."""

    seen: bool = False

    def raise_if_seen(self) -> None:
        """Raise ``KeyboardInterrupt`` if Ctrl-C arrived, even one that was swallowed."""
        if self.seen:
            raise KeyboardInterrupt


@contextmanager
def sigint_watched(watch: SigintWatch | None = None) -> Iterator[SigintWatch]:
    """Run the block with a SIGINT handler that remembers the Ctrl-C on ``watch`` (a new
    :class:`SigintWatch` by default), yielded, and raises ``KeyboardInterrupt``; the previous
    handler is put back when the block ends. Outside the main thread the block runs as it is."""
    watch = watch if watch is not None else SigintWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return

    def remember(signum: int, frame: FrameType | None) -> None:
        watch.seen = True
        raise KeyboardInterrupt

    unraisable = sys.unraisablehook

    def quiet(info: Any) -> None:  # the swallowed Ctrl-C is on the watch: no traceback for it
        if not (watch.seen and isinstance(info.exc_value, KeyboardInterrupt)):
            unraisable(info)

    previous = signal.signal(signal.SIGINT, remember)
    sys.unraisablehook = quiet
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = unraisable


def remove_files(paths: list[Path]) -> None:
    """Delete each path that exists (a file, not a folder): leftovers of an interrupted write."""
    for path in paths:
        path.unlink(missing_ok=True)


__all__ = ["HeldSigint", "SigintWatch", "remove_files", "sigint_held", "sigint_watched"]
