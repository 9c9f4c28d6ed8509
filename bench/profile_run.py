"""Profile one simulated run with cProfile and print where the time goes.

    python -m bench.profile_run [SCENARIO.toml] [--out run.prof] [--top 40]
        [--sort tottime|cumulative]

Default scenario: the simulation-speed row's standard one (``bench/eight_writers_one_hour.toml``).
The profile file can be explored further with ``python -m pstats run.prof``. cProfile charges a
fixed cost to every Python-level call, so code made of many small calls (history checks, JSON
encoding, numpy glue) looks more expensive than it is next to long C calls (parquet, Arrow
kernels); confirm a hot spot with ``python -m bench --only simulation`` before and after changing
it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
from pathlib import Path

from bench.workloads import STANDARD
from scenarios.schema import load_scenario
from sim.world import World


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path, default=STANDARD)
    parser.add_argument("--out", type=Path, help="Also write the raw profile to this file.")
    parser.add_argument("--top", type=int, default=40, help="How many functions to print.")
    parser.add_argument("--sort", choices=("tottime", "cumulative"), default="tottime")
    args = parser.parse_args()
    world = World(load_scenario(args.scenario))
    profiler = cProfile.Profile()
    profiler.runcall(world.run)
    if args.out:
        profiler.dump_stats(args.out)
    stats = pstats.Stats(profiler).strip_dirs().sort_stats(args.sort)
    stats.print_stats(args.top)


if __name__ == "__main__":
    main()
