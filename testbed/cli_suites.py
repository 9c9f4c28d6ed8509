"""``testbed suite``, ``sweep`` and ``bench``: many runs at once, in worker processes or on Spark,
and the benchmarks."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from testbed.cli_bars import CountBar
from testbed.cli_common import (
    EXIT_INTERRUPTED,
    UserError,
    check_junit,
    claim_output,
    force_option,
    junit_option,
    minimize_options,
    parse_seed_range,
    seed_engine,
    seed_engine_options,
    spark_args,
    write_junit_file,
)

T = TypeVar("T")


@click.command()
@click.argument("targets", metavar="[SUITE|FILES...]", nargs=-1)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Suite folder (default: runs/suite-<suite>); its run folders are replaced (a folder "
    "the testbed did not write is refused).",
)
@click.option(
    "--seeds",
    type=click.IntRange(1, 100_000),
    help="Run each scenario on N consecutive seeds, starting at its own [scenario] seed "
    "(default: its own seed only).",
)
@click.option(
    "--workers",
    type=click.IntRange(1, 1024),
    help="Worker processes (default: the number of CPUs; 1 runs everything in this process).",
)
@click.option(
    "--master",
    default=None,
    help="Run the runs as Spark tasks instead of worker processes: local[*] (every core of "
    "this machine), local[N], or a cluster such as spark://host:7077 (each run folder travels "
    "back packed). Not with --workers.",
)
@click.option(
    "--conf",
    "conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra Spark setting with --master, repeatable (e.g. --conf spark.executor.memory=4g).",
)
@minimize_options("caught known-bad runs to their minimal counterexample")
@force_option("suite", junit=True)
@junit_option()
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def suite(
    targets: tuple[str, ...],
    out: str | None,
    seeds: int | None,
    workers: int | None,
    master: str | None,
    conf: tuple[str, ...],
    no_minimize: bool,
    minimize_runs: int,
    force: bool,
    junit: str | None,
    quiet: bool,
) -> None:
    """Run a suite of scenarios (default: the default suite of scenarios/suites.toml) or the
    scenario FILES, in parallel, and write summary.json, summary.parquet and report.html.
    Worker processes by default; with --master each run is a Spark task (same rows, verdicts,
    digests and run folders).

    \b
    Suites: smoke (quick, for CI), catalog (every catalog scenario), full (the catalog plus
    the truetime, truetime_ceiling, concurrency, markers and release grids; the default),
    truetime, concurrency, markers, releases, large (the catalog scenarios tagged large,
    which no pattern picks: millions of records).
    Each caught known-bad run is shrunk to its minimal counterexample (counterexample.toml,
    .json, .txt in its run folder) unless --no-minimize.
    Exit code 0 when every run's verdict matches its expectation, 1 when one does not (or a
    run raised, or the report could not be written), 2 on bad input, 130 when interrupted
    (the finished runs' summary and report are still written).
    """
    from scenarios.schema import ScenarioError
    from testbed import suite as suites
    from testbed.suite_summary import report_lines, summary_table

    try:
        chosen = suites.resolve(targets)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    target = Path(out) if out else suites.default_out(chosen)
    options = _suite_spark_options(master, conf, workers, target)
    check_junit(junit, force)
    claim_output(target, force)
    label = f"suite {chosen.name}" + (f" (spark {master})" if master else "")
    bar = None if quiet else CountBar(label, "runs")
    outcome = None
    try:
        with _suite_engine(options, label) as engine:
            outcome = suites.run_suite(
                chosen,
                target,
                seeds=seeds,
                workers=workers,
                minimize_runs=0 if no_minimize else minimize_runs,
                progress=bar and (lambda done, total, _row: bar.update(done, total)),
                engine=engine,
            )
    except KeyboardInterrupt:  # run_suite handles its own; this one came outside it
        if outcome is None:  # Spark was starting: no run started, nothing was written
            click.echo("interrupted before any run started: nothing ran", err=True)
            sys.exit(EXIT_INTERRUPTED)
        # Spark was stopping after the suite ended: its summary stands
    finally:
        if bar is not None:
            bar.close()
    from rich.console import Console

    Console(width=max(120, Console().width)).print(summary_table(outcome.summary))
    for line in report_lines(outcome):
        click.echo(line)
    if junit:
        from testbed.junit import suite_cases

        write_junit_file(Path(junit), f"suite {chosen.name}", suite_cases(outcome.summary, target))
    sys.exit(outcome.exit_code)


def _suite_spark_options(master, conf, workers, target: Path):
    """``testbed suite``'s Spark options (``None``: worker processes), or a one-line error."""
    if master is None:
        if conf:
            raise UserError("--conf is a Spark setting: add --master (e.g. --master 'local[*]')")
        return None
    if workers is not None:
        raise UserError(
            "--workers sets worker processes and --master runs on Spark instead: give one of "
            "them (on Spark the master sets the parallelism, e.g. --master 'local[4]')"
        )
    from replay.session import SparkConfError, SparkOptions, parse_conf
    from replay.suite_tasks import PathNeedsQuotingError, require_plain_path

    try:
        require_plain_path(target.resolve())
        return SparkOptions(**spark_args(master, parse_conf(conf)))
    except (SparkConfError, PathNeedsQuotingError) as err:
        raise UserError(str(err)) from None


def _suite_engine(options, label: str):
    """Nothing for worker processes; a Spark session and its engine for ``--master``."""
    import contextlib

    if options is None:
        return contextlib.nullcontext()
    from replay.suite_tasks import spark_runs
    from testbed.atomic import staged_folder
    from testbed.suite import execute

    return spark_runs(options, execute, staged=staged_folder, description=f"testbed {label}")


@click.command()
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option("--seeds", "seeds", required=True, help="Seeds A:B to run, both included.")
@seed_engine_options
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Output folder (default: runs/sweep-<scenario name>; replaced if it is a sweep folder).",
)
@force_option("sweep", junit=True)
@junit_option()
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def sweep(
    scenario_file: str,
    seeds: str,
    master: str | None,
    conf: tuple[str, ...],
    no_spark: bool,
    out: str | None,
    force: bool,
    junit: str | None,
    quiet: bool,
) -> None:
    """Run SCENARIO.toml once per seed in --seeds A:B on Spark and summarize the verdicts.

    Each Spark task runs whole simulations in memory with every checker; rows (verdicts,
    digest, key metrics) are written as each chunk of seeds finishes to
    <out>/sweep.parquet/part-*.parquet, and <out>/summary.json counts violations per invariant,
    gives metric distributions and lists every seed whose verdicts differ from the scenario's
    [expect] with the command that replays it. The engine never changes a verdict: --no-spark,
    local[1], local[2] and a cluster give the same rows. Ctrl-C keeps the seeds that finished
    (summary.json and report.html say interrupted, with the seeds finished and not run).
    Exit code 0 when every seed is as expected, 1 when not, 2 on bad input, 130 interrupted.
    """
    from scenarios.schema import ScenarioError, load_scenario
    from testbed.sweep import run_sweep

    source = Path(scenario_file)
    if not source.is_file():
        raise UserError(f"{scenario_file}: no such file")
    bounds = parse_seed_range(seeds, "--seeds", single=False)
    options = seed_engine(master, conf, no_spark)
    try:
        scenario = load_scenario(source)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    target = Path(out) if out else Path("runs") / f"sweep-{scenario.scenario.name}"
    check_junit(junit, force)
    claim_output(target, force)
    engine = "none" if options is None else f"spark {options.master}"
    result = run_seeds(
        options,
        engine,
        None if quiet else f"sweeping {scenario.scenario.name} ({engine})",
        lambda runner, progress: run_sweep(
            scenario, source, bounds, target, runner, engine=engine, on_progress=progress
        ),
    )
    _print_sweep_summary(result.summary, target)
    if junit:
        _write_sweep_junit(Path(junit), result.summary, target)
    exit_after_seeds(result.summary, target)


def run_seeds(options, engine: str, label: str | None, run: Callable[[Any, Any], T]) -> T:
    """``run(runner, on_progress)`` on the seed runner of ``options`` with a progress bar
    (``label``; None: none). Ctrl-C while Spark starts, before any seed ran, exits 130 here;
    one while Spark stops after the run keeps its result (``run`` handles its own)."""
    bar = None if label is None else CountBar(label, "seeds")
    result = None
    try:
        with sweep_runner(options, engine) as runner:
            result = run(runner, bar and bar.update)
    except KeyboardInterrupt:
        if result is None:
            click.echo("interrupted before any seed ran: nothing ran", err=True)
            sys.exit(EXIT_INTERRUPTED)
    finally:
        if bar is not None:
            bar.close()
    return result


def exit_after_seeds(summary: dict, target: Path) -> NoReturn:
    """Exit 130 (saying what finished) when interrupted, else 0 when ``summary`` is ok, 1."""
    if summary["interrupted"]:
        click.echo(
            f"interrupted: {summary['finished']} of {summary['seeds']['count']} seeds finished "
            f"(kept in {target}), {summary['abandoned']} not run",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(0 if summary["ok"] else 1)


@contextlib.contextmanager
def sweep_runner(options, engine: str):
    """The runner of a sweep's chunks: this process (``options`` None), or a Spark session's
    (stopped when the block ends)."""
    from testbed.sweep import run_here

    if options is None:
        yield run_here
        return
    import tempfile

    from replay.distribute import map_on_spark
    from replay.session import spark_session
    from testbed.sweep import evaluate_seed

    with (
        tempfile.TemporaryDirectory(prefix="testbed-spark-") as work,
        spark_session(options, Path(work)) as spark,
    ):

        def on_spark(tasks, on_progress):
            return map_on_spark(
                spark, evaluate_seed, tasks, on_progress=on_progress, description=engine
            )

        yield on_spark


def _write_sweep_junit(path: Path, summary: dict, target: Path) -> None:
    from testbed.junit import sweep_cases
    from testbed.sweep import read_rows

    replay = {f["seed"]: f["replay"] for f in summary["failing"]}
    cases = sweep_cases(read_rows(target).to_pylist(), replay)
    write_junit_file(path, f"sweep {summary['scenario']}", cases)


def _print_sweep_summary(summary: dict, target: Path) -> None:
    runs, good = summary["runs"], summary["as_expected"]
    click.echo(f"{summary['scenario']}: {good}/{runs} seeds as expected ({summary['engine']})")
    expected = set(summary["expected_violations"])
    for name, count in summary["violations"].items():
        note = "expected" if name in expected else "UNEXPECTED"
        click.echo(f"  {name}: violated in {count}/{runs} seeds ({note})")
    if summary["errors"]:
        click.echo(f"  crashed: {summary['errors']} seeds")
    for failure in summary["failing"][:10]:
        what = failure["error"] or ", ".join(failure["violated"]) or "no expected violation"
        click.echo(f"  seed {failure['seed']}: {what}\n    replay: {failure['replay']}")
    if len(summary["failing"]) > 10:
        click.echo(f"  ... {len(summary['failing']) - 10} more in {target / 'summary.json'}")
    click.echo(f"rows: {target / 'sweep.parquet'}  summary: {target / 'summary.json'}")
    echo_sweep_report(target)


def echo_sweep_report(target: Path) -> None:
    if (target / "report.html").is_file():
        click.echo(f"report: {target / 'report.html'}")
    elif (target / "report_error.txt").is_file():
        click.echo(f"report.html not written: see {target / 'report_error.txt'}")
    else:
        click.echo("report.html not written: interrupted while writing it")


@click.command()
@click.option("--quick", is_flag=True, help="Fewer repeats, smaller sizes (a smoke check).")
@click.option(
    "--only",
    metavar="ROW[,ROW]",
    help="Run only these rows (simulation, search, reader, spark, scaling).",
)
@click.option("--repeats", type=click.IntRange(1, 1000), help="Repeats per measurement.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Where to write the results (default: bench/results.json).",
)
def bench(quick: bool, only: str | None, repeats: int | None, out: str | None) -> None:
    """Run the benchmarks (the same as `python -m bench`): one table, bench/results.json.

    Each row is a ratio against a reference measured in the same run on the same machine, with
    min / median / max over repeats: simulation speed, property search throughput, the reader
    and writer against hudi-rs and raw pyarrow, Spark sweeps and verify, scaling. Progress goes
    to stderr. Exit code 0 when every row ran, 1 when one failed, 2 on bad options.
    """
    from bench.cli import BenchUsageError, run_bench

    try:
        results = run_bench(quick=quick, only=only, repeats=repeats, out=Path(out) if out else None)
    except BenchUsageError as err:
        raise UserError(str(err)) from None
    sys.exit(1 if results["errors"] else 0)
