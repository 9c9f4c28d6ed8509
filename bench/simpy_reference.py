"""Reference measurement: what a simulated event costs in the testbed compared with bare simpy.

Runs a scenario (default: issue 3's standard one, ``bench/eight_writers_one_hour.toml``) counting
the events simpy processes, then a bare simpy loop (processes that only wait on timeouts) with the
same number of events, and prints both costs per event and their ratio as one JSON line:

    .venv/bin/python bench/simpy_reference.py [SCENARIO.toml]

The ratio says how much of a run is the model (protocol code, Arrow, parquet, history) rather
than the event loop: a ratio near 1 would mean simpy itself is the bottleneck and only fewer
events could help; a large ratio means the cost is in what each event does. Measured here, never
asserted in tests (CI machines are noisy).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import simpy

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scenarios.schema import load_scenario  # noqa: E402
from sim.world import World  # noqa: E402

BARE_PROCESSES = 64
"""Concurrent processes in the bare loop (the standard scenario runs a few dozen)."""


def scenario_events(path: Path) -> dict[str, Any]:
    """Run the scenario, counting the events simpy processes; wall and CPU time of the run."""
    world = World(load_scenario(path))
    env = world.env
    counted = [0]
    step = env.step

    def counting_step() -> None:
        counted[0] += 1
        step()

    env.step = counting_step  # type: ignore[method-assign]
    started, cpu_started = time.perf_counter(), time.process_time()
    world.run()
    return {
        "events": counted[0],
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu_started,
    }


def bare_simpy(events: int, processes: int = BARE_PROCESSES) -> dict[str, Any]:
    """``events`` timeout events spread over ``processes`` processes that do nothing else."""
    env = simpy.Environment()
    per_process, extra = divmod(events, processes)

    def waiter(count: int, delay_ms: int) -> Generator[simpy.Event, Any, None]:
        for _ in range(count):
            yield env.timeout(delay_ms)

    for i in range(processes):
        # each process also costs one Initialize event; delays differ so the heap interleaves
        env.process(waiter(per_process + (1 if i < extra else 0) - 1, 1 + i % 7))
    started, cpu_started = time.perf_counter(), time.process_time()
    env.run()
    return {
        "events": events,
        "wall_s": time.perf_counter() - started,
        "cpu_s": time.process_time() - cpu_started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario", nargs="?", type=Path, default=HERE / "eight_writers_one_hour.toml"
    )
    args = parser.parse_args()
    model = scenario_events(args.scenario)
    bare = bare_simpy(model["events"])
    model_us = model["cpu_s"] / model["events"] * 1e6
    bare_us = bare["cpu_s"] / bare["events"] * 1e6
    print(
        json.dumps(
            {
                "scenario": args.scenario.stem,
                "events": model["events"],
                "model_cpu_s": round(model["cpu_s"], 2),
                "model_wall_s": round(model["wall_s"], 2),
                "bare_simpy_cpu_s": round(bare["cpu_s"], 3),
                "model_us_per_event": round(model_us, 1),
                "bare_simpy_us_per_event": round(bare_us, 2),
                "ratio": round(model_us / bare_us, 1),
            },
            sort_keys=True,
        )
    )


if __name__ == "__main__":
    main()
