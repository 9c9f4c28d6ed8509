"""Profile one simulated run with cProfile and print where the time goes.

    .venv/bin/python bench/profile_run.py [SCENARIO.toml] [--out run.prof] [--top 40]
        [--sort tottime|cumulative]

Default scenario: ``bench/eight_writers_one_hour.toml``. The profile file can be explored further
with ``python -m pstats run.prof``. cProfile charges a fixed cost to every Python-level call, so
code made of many small calls (history checks, JSON encoding, numpy glue) looks more expensive
than it is next to long C calls (parquet, Arrow kernels); confirm a hot spot with
``bench/bench_run.py`` before and after changing it.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from scenarios.schema import load_scenario  # noqa: E402
from sim.world import World  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "scenario", nargs="?", type=Path, default=HERE / "eight_writers_one_hour.toml"
    )
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
