"""Row 1, simulation speed: simulated seconds per wall second on the standard scenario, and what
one simulated event costs compared with a bare simpy loop of the same number of events.

The second ratio says where a run's time goes: near 1 would mean simpy's event loop is the
bottleneck and only fewer events could help; a large ratio means the cost is in what each event
does (protocol code, Arrow, parquet, the history), which is where optimizing pays.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from bench import workloads
from bench.measure import Log, Measurement, Target, Timing, timed
from bench.sizes import Sizes
from scenarios.schema import Scenario
from sim.world import World

REAL_TIME_TARGET = Target(">=", 1000, ">= 1000x real time")
BARE_PROCESSES = 64
"""Concurrent processes in the bare loop (the standard scenario runs a few dozen)."""


def run_counting_events(scenario: Scenario) -> tuple[int, float, Timing]:
    """Simulate ``scenario`` counting the events simpy processes: (events, simulated s, timing).

    Counting wraps ``env.step`` (one extra Python call per event, well under 1% of a model
    event's cost)."""
    world = World(scenario)
    env = world.env
    counted = [0]
    step = env.step

    def counting_step() -> None:
        counted[0] += 1
        step()

    env.step = counting_step  # type: ignore[method-assign]
    outcome, timing = timed(world.run)
    return counted[0], outcome.end_ms / 1000, timing


def bare_simpy(events: int, processes: int = BARE_PROCESSES) -> Timing:
    """``events`` timeout events spread over ``processes`` processes that do nothing else."""
    env = simpy.Environment()
    processes = max(1, min(processes, events // 2))
    per_process, extra = divmod(events, processes)

    def waiter(count: int, delay_ms: int) -> Generator[simpy.Event, Any, None]:
        for _ in range(count):
            yield env.timeout(delay_ms)

    for i in range(processes):
        # each process also costs one Initialize event; delays differ so the heap interleaves
        env.process(waiter(per_process + (1 if i < extra else 0) - 1, 1 + i % 7))
    _, timing = timed(env.run)
    return timing


def measure(sizes: Sizes, log: Log) -> list[Measurement]:
    scenario = workloads.with_duration(workloads.standard(), sizes.sim_duration_s)
    info = scenario.scenario
    job = scenario.jobs[0]
    what = (
        f"{job.writers} writers, {info.duration_s:g} s simulated, "
        f"{job.checkpoint_interval_s:g} s checkpoints, ack_loss {scenario.faults.ack_loss:g}"
    )
    speed = Measurement(
        row="simulation",
        name="speed",
        title=f"standard scenario ({what})",
        ours="wall s of the run",
        reference="simulated s (real time)",
        unit="s",
        ratio_meaning="simulated s / wall s (x real time)",
        target=REAL_TIME_TARGET,
        details={"scenario": info.name, "duration_s": info.duration_s},
    )
    per_event = Measurement(
        row="simulation",
        name="cost_per_event",
        title="model cost per simulated event",
        ours="CPU us per event (model)",
        reference="CPU us per event (bare simpy)",
        unit="us",
        ratio_meaning="model / bare simpy CPU time per event",
        details={"bare_processes": BARE_PROCESSES},
    )
    for repeat in range(sizes.repeats):
        log(f"simulation: standard scenario, repeat {repeat + 1}/{sizes.repeats}")
        events, simulated_s, run = run_counting_events(scenario)
        speed.add(run.wall_s, simulated_s, simulated_s / run.wall_s)
        speed.details.setdefault("cpu_s", []).append(round(run.cpu_s, 3))
        bare = bare_simpy(events)
        model_us = run.cpu_s / events * 1e6
        bare_us = max(bare.cpu_s, 1e-9) / events * 1e6
        per_event.add(model_us, bare_us, model_us / bare_us)
        per_event.details["events"] = events
    return [speed, per_event]
