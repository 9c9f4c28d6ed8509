"""Simulated machine clocks: true simulated time seen through a fixed offset, drift and NTP steps.

TrueTime's guarantee (``models/timeline/truetime.py``) holds only while clocks stay within the configured
skew of each other, so the simulator has to be able to put clocks exactly where a scenario says:
a constant offset per machine, a slow drift (crystal error, in parts per million) and sudden steps
(an NTP correction, possibly backwards). Readings are whole milliseconds, like
``System.currentTimeMillis()``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import simpy

from sim.rng import Rng


class SimClock:
    """A process's local clock over a simpy environment (implements ``models.ports.Clock``).

    ``now_ms() = epoch_ms + env.now + offset_ms + floor(env.now * drift_ppm / 1e6) + jumps``, where
    ``env.now`` is true simulated time in ms since the start of the run and ``epoch_ms`` is the
    wall-clock time the run pretends to start at.
    """

    def __init__(
        self,
        env: simpy.Environment,
        *,
        epoch_ms: int,
        offset_ms: int = 0,
        drift_ppm: float = 0.0,
    ) -> None:
        if type(epoch_ms) is not int or type(offset_ms) is not int:
            raise TypeError(f"epoch_ms and offset_ms are whole ms, got {epoch_ms!r}, {offset_ms!r}")
        if not math.isfinite(drift_ppm):
            raise ValueError(f"drift_ppm must be finite, got {drift_ppm!r}")
        self.env = env
        self.epoch_ms = epoch_ms
        self.offset_ms = offset_ms
        self.drift_ppm = drift_ppm
        self.jumps_ms = 0
        """Sum of all :meth:`jump` steps so far."""

    def _true_ms(self) -> int:
        return math.floor(self.env.now)

    def skew_ms(self) -> int:
        """How far this clock is from true time right now (positive: ahead)."""
        true_ms = self._true_ms()
        drift_ms = math.floor(true_ms * self.drift_ppm / 1e6)
        return self.offset_ms + drift_ms + self.jumps_ms

    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch as this machine sees them."""
        return self.epoch_ms + self._true_ms() + self.skew_ms()

    def jump(self, delta_ms: int) -> None:
        """Step the clock by ``delta_ms`` (an NTP step correction; negative goes back in time)."""
        if type(delta_ms) is not int:
            raise TypeError(f"clock jumps are whole ms, got {delta_ms!r}")
        self.jumps_ms += delta_ms


def make_clocks(
    env: simpy.Environment,
    rng: Rng,
    names: Iterable[str],
    *,
    epoch_ms: int,
    skew_ms: int,
    drift_ppm: float,
) -> dict[str, SimClock]:
    """One clock per process name, each offset uniform in [-skew_ms, skew_ms] (whole ms) and
    drifting uniform in [-drift_ppm, drift_ppm].

    Each clock draws from its own stream ``rng.child("clock").child(name)`` (offset first, then
    drift), so adding a process never moves another process's clock. Note that ``skew_ms`` bounds
    each clock against *true* time: two clocks can be up to ``2 * skew_ms`` apart, and that relative
    skew is what TrueTime's ``max_expected_clock_skew_ms`` must cover.
    """
    if type(skew_ms) is not int or skew_ms < 0:
        raise ValueError(f"skew_ms must be a whole number of ms >= 0, got {skew_ms!r}")
    if not (math.isfinite(drift_ppm) and drift_ppm >= 0):
        raise ValueError(f"drift_ppm must be finite and >= 0, got {drift_ppm!r}")
    streams = rng.child("clock")
    clocks: dict[str, SimClock] = {}
    for name in names:
        if name in clocks:
            raise ValueError(f"duplicate clock name {name!r}")
        stream = streams.child(name)
        offset_ms = stream.randint(-skew_ms, skew_ms)
        drift = stream.uniform(-drift_ppm, drift_ppm)
        clocks[name] = SimClock(env, epoch_ms=epoch_ms, offset_ms=offset_ms, drift_ppm=drift)
    return clocks
