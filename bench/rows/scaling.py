"""Row 5, scaling: how a simulation's cost grows with writers, checkpoint frequency and key space.

Each dimension varies one knob of the standard scenario (shortened), the others fixed, and times
the simulation (in memory, no checkers: row 2 prices those). The fitted growth exponent ``k`` of
``wall ~ x**k`` (least squares on log-log) is one sample per repeat; the table shows its
min / median / max, and the runtimes per point go to results.json and a small table.

Reading ``k``: 0 means the knob costs nothing, 1 linear. With the source's load fixed
(``records_per_s``), more writers mean more, smaller flushes and files; more frequent checkpoints
mean more instants and commits; a bigger key space means fewer updates per key, so larger
merged files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench import workloads
from bench.measure import Log, Measurement, fit_exponent, timed
from bench.sizes import Sizes
from scenarios.schema import Scenario
from sim.world import World


@dataclass(frozen=True)
class Dimension:
    name: str
    key: str
    """The scenario key varied (dotted, as :func:`bench.workloads.vary` takes it)."""
    label: str
    values: tuple[float, ...]
    to_x: Any
    """The x of the fit for a value (checkpoint interval -> frequency)."""


def dimensions(sizes: Sizes) -> list[Dimension]:
    return [
        Dimension(
            "writers",
            "jobs.0.writers",
            "writers",
            sizes.scaling_writers,
            float,
        ),
        Dimension(
            "checkpoint_frequency",
            "jobs.0.checkpoint_interval_s",
            "checkpoint interval s (fit on 1/interval)",
            sizes.scaling_checkpoint_s,
            lambda interval: 1.0 / interval,
        ),
        Dimension(
            "key_space",
            "jobs.0.key_space",
            "key space",
            sizes.scaling_key_space,
            float,
        ),
    ]


def measure(sizes: Sizes, log: Log) -> list[Measurement]:
    base = workloads.with_duration(workloads.standard(), sizes.scaling_duration_s)
    measurements = []
    for dim in dimensions(sizes):
        points = [_point(base, dim, value) for value in dim.values]
        m = Measurement(
            row="scaling",
            name=dim.name,
            title=f"cost vs {dim.label}: {', '.join(f'{v:g}' for v in dim.values)}",
            ours=f"wall s at {dim.values[-1]:g}",
            reference=f"wall s at {dim.values[0]:g}",
            unit="s",
            ratio_meaning="fitted exponent k of wall ~ x**k",
            details={
                "base": f"{base.scenario.name}, {base.scenario.duration_s:g} s simulated",
                "key": dim.key,
                "values": list(dim.values),
                "runtime_s": [[] for _ in dim.values],
            },
        )
        for repeat in range(sizes.repeats):
            log(f"scaling: {dim.name} {list(dim.values)}, repeat {repeat + 1}/{sizes.repeats}")
            walls = []
            for index, scenario in enumerate(points):
                _, timing = timed(World(scenario).run)
                walls.append(timing.wall_s)
                m.details["runtime_s"][index].append(round(timing.wall_s, 3))
            xs = [dim.to_x(v) for v in dim.values]
            m.add(walls[-1], walls[0], fit_exponent(xs, walls))
        measurements.append(m)
    return measurements


def _point(base: Scenario, dim: Dimension, value: float) -> Scenario:
    return workloads.vary(base, {dim.key: int(value) if float(value).is_integer() else value})
