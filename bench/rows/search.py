"""Row 2, property search throughput: whole small scenarios (simulation plus every checker)
checked per second on one core.

Two ratios, both on the small scenario (``bench/small_lost_acks.toml``), in this one process:

* **explore vs plain runs**: ``testbed explore`` candidates per second (hypothesis draws a fault
  schedule, the candidate is simulated in memory and checked) against the same number of plain
  seeds of the scenario, simulated and checked the same way (``simulate_and_check``, what every
  seed of a sweep runs). Near 1 means the search itself (hypothesis, building candidate
  scenarios) costs nothing next to the runs it makes.
* **checkers' share**: simulate + check against simulate alone, per run: how much of a checked
  run the invariant checkers take.
"""

from __future__ import annotations

from bench import workloads
from bench.measure import Log, Measurement, timed
from bench.sizes import Sizes
from sim.world import World
from testbed.explore import explore
from testbed.run import simulate_and_check


def measure(sizes: Sizes, log: Log) -> list[Measurement]:
    base = workloads.with_duration(workloads.small(), sizes.search_duration_s)
    runs = sizes.search_runs
    what = f"{base.scenario.name}, {base.scenario.duration_s:g} s simulated, {runs} runs/repeat"
    search = Measurement(
        row="search",
        name="explore",
        title=f"explore candidates checked per s per core ({what})",
        ours="explore runs/s",
        reference="plain seeds/s (simulate + check)",
        unit="runs/s",
        ratio_meaning="explore / plain runs per s (1 = search costs nothing)",
        details={"scenario": base.scenario.name, "duration_s": base.scenario.duration_s},
    )
    checkers = Measurement(
        row="search",
        name="checkers",
        title=f"checked run vs simulation alone ({what})",
        ours="s per run, simulate + check",
        reference="s per run, simulate only",
        unit="s",
        ratio_meaning="(simulate + check) / simulate wall time",
    )
    for repeat in range(sizes.repeats):
        log(f"search: explore {runs} candidates, repeat {repeat + 1}/{sizes.repeats}")
        result, explored = timed(
            lambda r=repeat: explore(base, examples=runs, shrink_runs=0, seed=r, max_duration_s=0)
        )
        done = result.progress.runs
        search.details.setdefault("explore_runs", []).append(done)
        search.details.setdefault("found", []).append(result.found is not None)
        log(f"search: {runs} plain seeds, simulated and checked, then simulated only")
        scenarios = [
            workloads.vary(base, {"scenario.seed": 1000 * repeat + i}) for i in range(runs)
        ]
        checked, plain = timed(lambda s=scenarios: [simulate_and_check(x)[1] for x in s])
        _, simulated = timed(lambda s=scenarios: [World(x).run() for x in s])
        violated = {n for verdicts in checked for n, v in verdicts.items() if not v.ok}
        seen = set(checkers.details.get("violated", []))
        checkers.details["violated"] = sorted(seen | violated)  # the real protocol: stays empty
        explore_rate = done / explored.wall_s
        plain_rate = runs / plain.wall_s
        search.add(explore_rate, plain_rate, explore_rate / plain_rate)
        checkers.add(plain.wall_s / runs, simulated.wall_s / runs, plain.wall_s / simulated.wall_s)
    return [search, checkers]
