"""``testbed swarm``: a whole scenario drawn per seed, run on Hudi's real rules, on Spark."""

from __future__ import annotations

from pathlib import Path

import click

from testbed.cli_common import (
    check_junit,
    claim_output,
    force_option,
    junit_option,
    minimize_options,
    parse_seed_range,
    seed_engine,
    seed_engine_options,
    write_junit_file,
)
from testbed.cli_suites import echo_sweep_report, exit_after_seeds, run_seeds

MAX_FAILING_SHOWN = 10


@click.command()
@click.option(
    "--seeds", "seeds", required=True, help="Swarm seeds A:B to draw and run, both included."
)
@seed_engine_options
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Output folder (default: runs/swarm-A-B; replaced if it is a swarm folder).",
)
@minimize_options("failing seeds to minimal counterexamples (their scenario files are kept)")
@force_option("swarm", junit=True)
@junit_option()
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def swarm(
    seeds: str,
    master: str | None,
    conf: tuple[str, ...],
    no_spark: bool,
    out: str | None,
    no_minimize: bool,
    minimize_runs: int,
    force: bool,
    junit: str | None,
    quiet: bool,
) -> None:
    """Draw a whole scenario per seed in --seeds A:B and run it on Hudi's real rules.

    Each seed switches every feature on or off at random and draws its value within the
    documented bounds (docs/scenarios.md, "Swarm"): table type, partitions and buckets, merge
    mode, jobs and writers, async or blocking instant generation, operation, concurrency,
    failover, mini-batch flushes, empty commits, compaction, the index (bucket, or Flink's state
    index with bootstrap, small files and keys that change partition), early conflict
    detection, clock skew and drift, latencies, heartbeats, and each fault kind with its rate.
    The same seed always draws the same scenario. Rows go to <out>/swarm.parquet/ as each chunk finishes; every failing seed gets
    <out>/failing/swarm_<seed>/scenario.toml (replay it with testbed run) and, for the first
    20, its minimal counterexample; <out>/summary.json and report.html say which parameters
    the failing seeds shared. Exit code 0 when no seed violates anything, 1 when one does,
    2 on bad input, 130 interrupted (the finished seeds are kept).
    """
    from testbed.swarm import run_swarm

    bounds = parse_seed_range(seeds, "--seeds", single=False)
    options = seed_engine(master, conf, no_spark)
    target = Path(out) if out else Path("runs") / f"swarm-{bounds[0]}-{bounds[1]}"
    check_junit(junit, force)
    claim_output(target, force)
    engine = "none" if options is None else f"spark {options.master}"
    summary = run_seeds(
        options,
        engine,
        None if quiet else f"swarm ({engine})",
        lambda runner, progress: run_swarm(
            bounds,
            target,
            runner,
            engine=engine,
            minimize_runs=0 if no_minimize else minimize_runs,
            on_progress=progress,
        ),
    )
    _print_summary(summary, target)
    if junit:
        _write_junit(Path(junit), summary, target)
    exit_after_seeds(summary, target)


def _print_summary(summary: dict, target: Path) -> None:
    runs, failing = summary["runs"], summary["failing"]
    click.echo(f"swarm: {runs - len(failing)}/{runs} seeds hold ({summary['engine']})")
    for name, count in summary["violations"].items():
        click.echo(f"  {name}: violated in {count}/{runs} seeds")
    if summary["errors"]:
        click.echo(f"  crashed: {summary['errors']} seeds")
    for failure in failing[:MAX_FAILING_SHOWN]:
        what = failure["error"] or ", ".join(failure["violated"])
        click.echo(f"  seed {failure['seed']}: {what}\n    replay: {failure['replay']}")
        if failure["counterexample"]:
            click.echo(f"    minimal: testbed run {failure['counterexample']}")
    if len(failing) > MAX_FAILING_SHOWN:
        click.echo(f"  ... {len(failing) - MAX_FAILING_SHOWN} more in {target / 'summary.json'}")
    shared = summary["shared"]["by_every_failing_seed"]
    if failing and shared:
        values = ", ".join(f"{name} = {value}" for name, value in shared.items())
        click.echo(f"  every failing seed had: {values}")
    click.echo(f"rows: {target / 'swarm.parquet'}  summary: {target / 'summary.json'}")
    echo_sweep_report(target)


def _write_junit(path: Path, summary: dict, target: Path) -> None:
    from testbed.junit import sweep_cases
    from testbed.swarm import read_swarm_rows

    replay = {f["seed"]: f["replay"] for f in summary["failing"]}
    cases = sweep_cases(read_swarm_rows(target).to_pylist(), replay)
    seeds = summary["seeds"]
    write_junit_file(path, f"swarm {seeds['first']}:{seeds['last']}", cases)
