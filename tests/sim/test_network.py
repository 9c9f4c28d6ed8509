"""Tests for sim/network.py: delays, FIFO order, loss, duplication, cancellation and alignment."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from sim.network import Channel, describe_fault, describe_message
from sim.rng import Rng


@dataclass(frozen=True)
class Ack:
    checkpoint_id: int


def sender(env: simpy.Environment, channel: Channel, gaps_ms: list[int], got: list) -> Generator:
    for i, gap in enumerate(gaps_ms):
        yield env.timeout(gap)
        channel.send(i, lambda m: got.append((env.now, m)))


def run_channel(
    seed: int, gaps_ms: list[int], **options
) -> tuple[list[tuple[int, int]], Channel, list]:
    env = simpy.Environment()
    faults: list = []
    channel = Channel(
        env, "acks", Rng(seed).child("net"), on_fault=lambda k, d: faults.append((k, d)), **options
    )
    got: list[tuple[int, int]] = []
    env.process(sender(env, channel, gaps_ms, got))
    env.run()
    return got, channel, faults


def test_delivers_after_a_delay_within_bounds():
    env = simpy.Environment()
    channel = Channel(env, "c", Rng(1), delay_ms=(5, 9))
    got: list = []
    for i in range(50):
        channel.send(i, lambda m: got.append((env.now, m)))
    env.run()
    assert sorted(m for _, m in got) == list(range(50))
    assert all(5 <= t <= 9 for t, _ in got)
    assert channel.sent == channel.delivered == 50 and channel.in_flight == 0


def test_zero_delay_delivers_at_the_same_time_in_send_order():
    env = simpy.Environment()
    channel = Channel(env, "c", Rng(1))
    got: list = []
    for i in range(5):
        channel.send(i, got.append)
    assert got == []  # never synchronously inside send
    env.run()
    assert got == [0, 1, 2, 3, 4] and env.now == 0


@given(
    seed=st.integers(0, 2**32),
    gaps=st.lists(st.integers(0, 20), max_size=30),
    low=st.integers(0, 50),
    width=st.integers(0, 200),
)
def test_fifo_channel_never_reorders(seed, gaps, low, width):
    got, _, _ = run_channel(seed, gaps, delay_ms=(low, low + width))
    assert [m for _, m in got] == list(range(len(gaps)))
    times = [t for t, _ in got]
    assert times == sorted(times)


@given(
    seed=st.integers(0, 2**32),
    gaps=st.lists(st.integers(0, 20), max_size=30),
    loss=st.floats(0, 1),
    duplicate=st.floats(0, 1),
)
def test_fifo_with_faults_delivers_a_subsequence_in_order_and_counters_add_up(
    seed, gaps, loss, duplicate
):
    got, channel, faults = run_channel(
        seed, gaps, delay_ms=(0, 100), loss=loss, duplicate=duplicate
    )
    messages = [m for _, m in got]
    assert messages == sorted(messages)
    assert channel.sent == len(gaps)
    assert channel.sent + channel.duplicated == channel.delivered + channel.dropped
    assert len(faults) == channel.dropped + channel.duplicated
    for message in set(messages):
        assert messages.count(message) in (1, 2)


def test_non_fifo_channel_may_reorder():
    got, _, _ = run_channel(3, [0] * 20, delay_ms=(0, 100), fifo=False)
    messages = [m for _, m in got]
    assert sorted(messages) == list(range(20))
    assert messages != sorted(messages)


def test_fifo_delays_a_fast_message_behind_a_slow_one():
    env = simpy.Environment()
    channel = Channel(env, "c", Rng(1), delay_ms=(0, 0))
    got: list = []
    channel.send("slow", lambda m: got.append((env.now, m)), extra_delay_ms=50)
    channel.send("fast", lambda m: got.append((env.now, m)))
    env.run()
    assert got == [(50, "slow"), (50, "fast")]


def test_loss_drops_and_reports():
    got, channel, faults = run_channel(1, [1, 1, 1], loss=1.0)
    assert got == []
    assert channel.dropped == 3 and channel.delivered == 0
    assert faults == [("drop", {"channel": "acks", "message": str(i)}) for i in range(3)]


def test_duplicates_are_delivered_twice_and_reported():
    got, channel, faults = run_channel(1, [1, 1], delay_ms=(2, 2), duplicate=1.0)
    assert got == [(3, 0), (3, 0), (4, 1), (4, 1)]
    assert channel.duplicated == 2 and channel.delivered == 4
    assert [k for k, _ in faults] == ["duplicate", "duplicate"]


def test_fault_reports_describe_messages_without_object_addresses():
    assert describe_message(Ack(3)) == "Ack"
    assert describe_message(object()) == "object"
    assert describe_message("barrier-7") == "'barrier-7'"
    assert describe_message(12) == "12"
    assert describe_message(None) == "None"
    long = describe_message("x" * 500)
    assert len(long) == 80 and long.endswith("...")


def test_faults_on_a_checkpoint_message_name_the_checkpoint():
    """A lost or duplicated checkpoint-complete notification says which checkpoint's it was, as
    a scheduled ACK fault does; messages about no checkpoint carry no such field."""
    env = simpy.Environment()
    faults: list = []
    lossy = Channel(env, "notify", Rng(1), loss=1.0, on_fault=lambda k, d: faults.append((k, d)))
    doubling = Channel(
        env, "notify", Rng(1), duplicate=1.0, on_fault=lambda k, d: faults.append((k, d))
    )
    lossy.send(Ack(4), lambda m: None)
    doubling.send(Ack(5), lambda m: None)
    doubling.send("plain", lambda m: None)
    assert faults == [
        ("drop", {"channel": "notify", "message": "Ack", "checkpoint": 4}),
        ("duplicate", {"channel": "notify", "message": "Ack", "checkpoint": 5}),
        ("duplicate", {"channel": "notify", "message": "'plain'"}),
    ]


@dataclass(frozen=True)
class NotACheckpoint:
    checkpoint_id: str


def test_only_an_int_checkpoint_id_is_reported():
    assert describe_fault("c", NotACheckpoint("x")) == {"channel": "c", "message": "NotACheckpoint"}
    assert describe_fault("c", Ack(0)) == {"channel": "c", "message": "Ack", "checkpoint": 0}


def test_cancel_pending_drops_undelivered_without_delivering():
    env = simpy.Environment()
    faults: list = []
    channel = Channel(env, "c", Rng(1), delay_ms=(10, 10), on_fault=lambda *a: faults.append(a))
    got: list = []
    channel.send("early", got.append)
    env.run(until=5)
    channel.send("late", got.append)
    env.run(until=12)
    assert got == ["early"]
    assert channel.cancel_pending() == 1
    channel.send("after failover", got.append)
    env.run()
    assert got == ["early", "after failover"]
    assert env.now == 22  # not held back behind the cancelled message's slot
    assert (channel.sent, channel.delivered, channel.dropped, channel.cancelled) == (3, 2, 1, 1)
    assert faults == []


def test_extra_delay_must_be_a_non_negative_int():
    channel = Channel(simpy.Environment(), "c", Rng(1))
    with pytest.raises(ValueError, match="extra_delay_ms"):
        channel.send("m", print, extra_delay_ms=-1)
    assert channel.sent == 0


@pytest.mark.parametrize(
    "options",
    [
        {"delay_ms": (5, 4)},
        {"delay_ms": (-1, 4)},
        {"delay_ms": (0, 1.5)},
        {"loss": 2.0},
        {"duplicate": -0.1},
    ],
)
def test_bad_options_are_refused(options):
    with pytest.raises(ValueError, match="channel 'c'"):
        Channel(simpy.Environment(), "c", Rng(1), **options)


# ---------------------------------------------------------------------------------------------
# determinism and stream alignment


def test_same_seed_same_deliveries_different_seed_different():
    gaps = [3] * 40
    options = {"delay_ms": (0, 50), "loss": 0.2, "duplicate": 0.1}
    assert run_channel(5, gaps, **options)[0] == run_channel(5, gaps, **options)[0]
    assert run_channel(5, gaps, **options)[0] != run_channel(6, gaps, **options)[0]


def test_each_send_draws_delay_then_loss_then_duplicate():
    env = simpy.Environment()
    channel = Channel(env, "c", Rng(9), delay_ms=(0, 1000), loss=0.5, duplicate=0.5, fifo=False)
    twin = Rng(9)
    expected = []
    for _ in range(20):
        delay = twin.randint(0, 1000)
        lost = twin.bernoulli(0.5)
        doubled = twin.bernoulli(0.5)
        if not lost:
            expected += [delay] * (2 if doubled else 1)
    got: list = []
    for _ in range(20):
        channel.send("m", lambda _m: got.append(env.now))
    env.run()
    assert got == sorted(expected)


def test_changing_loss_does_not_shift_the_delays_of_surviving_messages():
    gaps = [1] * 30
    clean, _, _ = run_channel(4, gaps, delay_ms=(0, 100), fifo=False)
    clean_times = {message: time for time, message in clean}
    lossy, _, _ = run_channel(4, gaps, delay_ms=(0, 100), fifo=False, loss=0.3)
    assert 0 < len(lossy) < 30
    for time, message in lossy:
        assert time == clean_times[message]


def test_other_channels_do_not_disturb_this_one():
    def deliveries(extra_channel: bool) -> list:
        env = simpy.Environment()
        root = Rng(2).child("network")
        if extra_channel:
            noisy = Channel(env, "noisy", root.child("noisy"), delay_ms=(0, 9), loss=0.5)
            for i in range(10):
                noisy.send(i, lambda _m: None)
        channel = Channel(env, "acks", root.child("acks"), delay_ms=(0, 30))
        got: list = []
        for i in range(10):
            channel.send(i, lambda m: got.append((env.now, m)))
        env.run()
        return got

    assert deliveries(False) == deliveries(True)
