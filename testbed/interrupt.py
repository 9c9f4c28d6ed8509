"""Ctrl-C while a command writes its last records.

A command interrupted by Ctrl-C still writes a record of what finished (``summary.json``,
``explore.json``, ...). Those writes are short, and a second Ctrl-C in the middle of one must not
leave a record that contradicts the exit code, so :func:`sigint_held` holds SIGINT for their
duration: a Ctrl-C that arrives inside the block is remembered instead of raised, and the caller
decides what it means (usually: the command was interrupted, which it already knows).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType


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


def remove_files(paths: list[Path]) -> None:
    """Delete each path that exists (a file, not a folder): leftovers of an interrupted write."""
    for path in paths:
        path.unlink(missing_ok=True)


__all__ = ["HeldSigint", "remove_files", "sigint_held"]
