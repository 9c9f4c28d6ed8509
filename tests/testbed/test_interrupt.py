"""Ctrl-C handling helpers: a Ctrl-C swallowed by a generator's finalisation is still seen."""

from __future__ import annotations

import gc
import signal
from collections.abc import Iterator

import pytest

from testbed.interrupt import sigint_held, sigint_watched


def _interrupted_when_closed() -> Iterator[int]:
    """A generator that receives Ctrl-C while it is being finalised, as a simulator process can."""
    try:
        yield 1
    finally:
        signal.raise_signal(signal.SIGINT)


def test_a_ctrl_c_swallowed_by_a_finalised_generator_is_still_seen(capsys):
    with sigint_watched() as watch:
        process = _interrupted_when_closed()
        next(process)
        del process  # finalised here: Python swallows the KeyboardInterrupt raised inside
        gc.collect()
        assert watch.seen
        with pytest.raises(KeyboardInterrupt):
            watch.raise_if_seen()
    assert "Traceback" not in capsys.readouterr().err


def test_the_handler_from_before_the_watch_is_put_back():
    before = signal.getsignal(signal.SIGINT)
    with sigint_watched() as watch:
        watch.raise_if_seen()  # nothing seen: no exception
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        assert watch.seen
    assert signal.getsignal(signal.SIGINT) is before


def test_a_ctrl_c_inside_a_held_block_is_remembered_not_raised():
    with sigint_held() as held:
        signal.raise_signal(signal.SIGINT)
    assert held.pending
