"""Tests for sim/clock.py: simulated clocks read exactly what the scenario put there."""

from __future__ import annotations

import math

import pytest
import simpy
from hypothesis import given
from hypothesis import strategies as st

from models.ports import Clock
from sim.clock import SimClock, make_clocks
from sim.rng import Rng

EPOCH_MS = 1_700_000_000_000


def at(env: simpy.Environment, now_ms: int) -> None:
    env.run(until=now_ms)


def test_is_a_models_clock():
    assert isinstance(SimClock(simpy.Environment(), epoch_ms=EPOCH_MS), Clock)


def test_reads_epoch_plus_true_time_plus_offset():
    env = simpy.Environment()
    clock = SimClock(env, epoch_ms=EPOCH_MS, offset_ms=-30)
    assert clock.now_ms() == EPOCH_MS - 30
    at(env, 1234)
    assert clock.now_ms() == EPOCH_MS + 1234 - 30
    assert clock.skew_ms() == -30


def test_drift_accumulates_in_whole_ms_rounding_down():
    env = simpy.Environment()
    fast = SimClock(env, epoch_ms=0, drift_ppm=100.0)  # 100 us per second
    slow = SimClock(env, epoch_ms=0, drift_ppm=-100.0)
    at(env, 9_999)  # 0.9999 ms of drift
    assert fast.now_ms() == 9_999
    assert slow.now_ms() == 9_999 - 1  # floor(-0.9999) = -1
    at(env, 3_600_000)  # one hour: 360 ms
    assert fast.skew_ms() == 360
    assert slow.skew_ms() == -360


def test_jumps_step_the_clock_both_ways():
    env = simpy.Environment()
    clock = SimClock(env, epoch_ms=EPOCH_MS, offset_ms=5)
    at(env, 100)
    clock.jump(1_000)
    assert clock.now_ms() == EPOCH_MS + 100 + 5 + 1_000
    clock.jump(-2_500)
    assert clock.now_ms() == EPOCH_MS + 100 + 5 - 1_500
    assert clock.skew_ms() == 5 - 1_500
    with pytest.raises(TypeError):
        clock.jump(1.5)  # type: ignore[arg-type]


@given(
    st.integers(0, 10**8),
    st.integers(-(10**4), 10**4),
    st.floats(-500, 500),
    st.lists(st.integers(-(10**4), 10**4), max_size=3),
)
def test_formula(now, offset, drift, jumps):
    env = simpy.Environment(initial_time=now)
    clock = SimClock(env, epoch_ms=EPOCH_MS, offset_ms=offset, drift_ppm=drift)
    for jump in jumps:
        clock.jump(jump)
    expected_skew = offset + math.floor(now * drift / 1e6) + sum(jumps)
    assert clock.skew_ms() == expected_skew
    assert clock.now_ms() == EPOCH_MS + now + expected_skew
    assert type(clock.now_ms()) is int


def test_bad_arguments():
    env = simpy.Environment()
    with pytest.raises(TypeError):
        SimClock(env, epoch_ms=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        SimClock(env, epoch_ms=0, drift_ppm=float("nan"))
    with pytest.raises(ValueError, match="skew_ms"):
        make_clocks(env, Rng(1), ["a"], epoch_ms=0, skew_ms=-1, drift_ppm=0.0)
    with pytest.raises(ValueError, match="duplicate"):
        make_clocks(env, Rng(1), ["a", "a"], epoch_ms=0, skew_ms=1, drift_ppm=0.0)


def settings_of(clocks: dict[str, SimClock]) -> dict[str, tuple[int, float]]:
    return {name: (c.offset_ms, c.drift_ppm) for name, c in clocks.items()}


def test_make_clocks_stays_within_bounds_and_keeps_the_name_order():
    env = simpy.Environment()
    names = [f"writer-{i}" for i in range(20)]
    clocks = make_clocks(env, Rng(3), names, epoch_ms=EPOCH_MS, skew_ms=50, drift_ppm=20.0)
    assert list(clocks) == names
    for clock in clocks.values():
        assert -50 <= clock.offset_ms <= 50
        assert type(clock.offset_ms) is int
        assert -20.0 <= clock.drift_ppm <= 20.0
        assert clock.epoch_ms == EPOCH_MS
    assert len({c.offset_ms for c in clocks.values()}) > 1


def test_make_clocks_is_deterministic_and_per_name():
    env = simpy.Environment()

    def make(seed: int, names: list[str]) -> dict[str, tuple[int, float]]:
        return settings_of(
            make_clocks(env, Rng(seed), names, epoch_ms=0, skew_ms=1000, drift_ppm=50.0)
        )

    base = make(1, ["a", "b"])
    assert make(1, ["a", "b"]) == base
    # another process added, order changed: a's and b's clocks do not move
    more = make(1, ["c", "b", "a"])
    assert more["a"] == base["a"] and more["b"] == base["b"]
    assert base["a"] != base["b"]
    assert make(2, ["a", "b"]) != base


def test_make_clocks_draws_from_the_clock_stream_only():
    env = simpy.Environment()
    rng = Rng(4)
    make_clocks(env, rng, ["a"], epoch_ms=0, skew_ms=10, drift_ppm=1.0)
    assert rng.random() == Rng(4).random()
    # and from rng.child("clock").child(name): offset first, then drift
    stream = Rng(4).child("clock").child("a")
    offset = stream.randint(-10, 10)
    drift = stream.uniform(-1.0, 1.0)
    assert settings_of(make_clocks(env, Rng(4), ["a"], epoch_ms=0, skew_ms=10, drift_ppm=1.0)) == {
        "a": (offset, drift)
    }


def test_zero_skew_and_drift_give_perfect_clocks():
    env = simpy.Environment()
    clocks = make_clocks(env, Rng(5), ["a", "b"], epoch_ms=EPOCH_MS, skew_ms=0, drift_ppm=0.0)
    at(env, 777)
    assert [c.now_ms() for c in clocks.values()] == [EPOCH_MS + 777] * 2
