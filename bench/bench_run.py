"""Benchmark: how long one simulated run takes, and how much memory it peaks at.

Issue 3's target: 8 writers, 1 hour of simulated time, 5 s checkpoints, in-memory storage
(``bench/eight_writers_one_hour.toml``) in well under a minute. Targets are measured here, never
asserted in tests (CI machines are noisy).

    .venv/bin/python bench/bench_run.py [SCENARIO.toml ...] [--out bench/results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scenarios.schema import load_scenario  # noqa: E402
from sim.world import World  # noqa: E402


def measure(path: Path) -> dict[str, object]:
    scenario = load_scenario(path)
    started = time.perf_counter()
    cpu_started = time.process_time()
    outcome = World(scenario).run()
    wall_s = time.perf_counter() - started
    cpu_s = time.process_time() - cpu_started
    simulated_s = outcome.end_ms / 1000
    return {
        "scenario": scenario.scenario.name,
        "wall_s": round(wall_s, 2),
        "cpu_s": round(cpu_s, 2),
        "simulated_s": simulated_s,
        "speedup": round(simulated_s / wall_s, 1),
        "events": len(outcome.history.events),
        "drained": outcome.drained,
        "digest": outcome.history.digest(),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenarios", nargs="*", type=Path, default=[HERE / "eight_writers_one_hour.toml"]
    )
    parser.add_argument("--out", type=Path, help="Append the results as JSON lines to this file.")
    args = parser.parse_args()
    for path in args.scenarios:
        result = measure(path) | {
            "python": platform.python_version(),
            "machine": platform.machine(),
        }
        line = json.dumps(result, sort_keys=True)
        print(line)
        if args.out:
            with args.out.open("a") as sink:
                sink.write(line + "\n")


if __name__ == "__main__":
    main()
