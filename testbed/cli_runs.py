"""``testbed run``, ``explore`` and ``check``: one scenario simulated and judged, searched for a
failure, or a recorded run re-checked."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import click

from scenarios.fields import SECONDS_PER_DAY
from testbed.cli_bars import ExploreStatus, ProgressBar, StepLine
from testbed.cli_common import (
    EXIT_INTERRUPTED,
    SEED,
    UserError,
    claim_output,
    force_option,
    parse_seed_range,
)
from testbed.interrupt import sigint_watched


@click.command()
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option(
    "--seed", type=SEED, help="Seed to run with (default: the scenario's [scenario] seed)."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Run folder to write (default: runs/<scenario name>-seed<seed>; replaced if it is a "
    "run folder).",
)
@click.option(
    "--storage",
    type=click.Choice(["memory", "local"]),
    help="Keep the table in memory, or write it as real files under <out>/table (local).",
)
@force_option("run")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def run(
    scenario_file: str,
    seed: int | None,
    out: str | None,
    storage: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Simulate SCENARIO.toml and check the invariants on its history and table.

    Writes a run folder (scenario.toml, history.jsonl, result.json and, with --storage local, the
    Hudi table in table/) and prints a summary and the command that replays the run exactly.
    Exit code 0 when the verdicts match the scenario's [expect] violations, 1 when they do not,
    2 on bad input.
    """
    from scenarios.schema import ScenarioError, load_scenario
    from testbed.run import RunawayRunError, default_out, run_scenario

    source = Path(scenario_file)
    if not source.is_file():
        raise UserError(f"{scenario_file}: no such file")
    try:
        scenario = load_scenario(source, seed=seed, storage=storage)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    target = Path(out) if out else default_out(scenario)
    claim_output(target, force)
    progress = None if quiet else ProgressBar(scenario.scenario.name)
    try:
        with sigint_watched() as watch:
            outcome = run_scenario(scenario, source, target, progress=progress and progress.update)
        watch.raise_if_seen()
    except RunawayRunError as err:
        raise UserError(f"{err}; partial run folder: {target}") from None
    finally:
        if progress is not None:
            progress.close()
    _print_run_summary(outcome)
    sys.exit(0 if outcome.ok else 1)


def _print_run_summary(outcome) -> None:
    result = outcome.result
    verdict = "as expected" if result["ok"] else "NOT as expected"
    click.echo(f"{result['scenario']} seed {result['seed']}: {verdict}")
    expected = set(result["expected_violations"])
    for name, v in result["invariants"].items():
        state = "ok" if v["ok"] else "VIOLATED"
        note = " (expected)" if (not v["ok"]) == (name in expected) else " (unexpected)"
        click.echo(f"  {name}: {state}{note}")
        for violation in v["violations"][:3]:
            click.echo(f"    - {violation['why']}")
    for name in result["unchecked_expectations"]:
        click.echo(f"  {name}: expected violated, no checker yet")
    metrics = result["metrics"]
    for job, m in metrics["jobs"].items():
        lat = m["commit_latency_ms"]
        click.echo(
            f"  {job}: {m['commits']} commits, {m['records_committed']} records committed, "
            f"{m['failovers']} failovers, commit latency p50 {lat['p50']} ms p99 {lat['p99']} ms"
        )
    click.echo(
        f"  writers blocked waiting for instants: {metrics['blocked_ms_total']} ms in total, "
        f"{metrics['commit_wait_ms_total']} ms of it waiting for a commit"
    )
    click.echo(f"  digest {result['digest']}")
    click.echo(f"run folder: {outcome.folder}")
    click.echo(f"replay: {outcome.replay}")


@click.command()
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option(
    "--examples",
    type=click.IntRange(1, 1_000_000),
    default=200,
    show_default=True,
    help="Candidates (run seed + fault schedule) to try before giving up.",
)
@click.option(
    "--shrink-runs",
    type=click.IntRange(0, 1_000_000),
    default=200,
    show_default=True,
    help="Most simulations spent shrinking a failure once one is found.",
)
@click.option(
    "--seed",
    "search_seed",
    type=SEED,
    default=0,
    show_default=True,
    help="Seed of the search itself: the same seed tries the same candidates.",
)
@click.option(
    "--seed-range",
    metavar="LOW:HIGH",
    default="0:1000000",
    show_default=True,
    help="Run seeds to draw from, both ends included (or one seed N).",
)
@click.option(
    "--max-duration-s",
    type=click.IntRange(0, SECONDS_PER_DAY),
    help="Longest run to try, in simulated seconds (default: the scenario's duration_s; "
    "0: always exactly duration_s, no shorter runs).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Folder for explore.json and counterexample.toml "
    "(default: runs/<scenario name>-explore-seed<seed>; replaced if it is an explore folder).",
)
@force_option("explore")
@click.option("--quiet", "-q", is_flag=True, help="No progress line.")
def explore(
    scenario_file: str,
    examples: int,
    shrink_runs: int,
    search_seed: int,
    seed_range: str,
    max_duration_s: int | None,
    out: str | None,
    force: bool,
    quiet: bool,
) -> None:
    """Search fault schedules and seeds for SCENARIO.toml until an invariant breaks.

    The scenario's random fault rates become explicit [[faults.schedule]] entries drawn by
    hypothesis (rates set to 0); each candidate is simulated in memory and checked. The first
    failure is shrunk to the smallest schedule, shortest run and smallest seed, written as a
    scenario file that `testbed run` replays, and explained.

    \b
    A failure is any violation for a real-protocol scenario ([expect] violations = []), and a
    violation of an expected invariant for a known-bad variant. Exit code 0 when nothing
    unexpected happened (real protocol: no violation found; known-bad: the violation was
    found), 1 otherwise (a real-protocol counterexample, an escaped variant, a simulator
    error), 2 on bad input, 130 when interrupted (what was found is still written).
    """
    from scenarios.schema import ScenarioError, load_scenario
    from testbed import explore as search
    from testbed import explore_report

    source = Path(scenario_file)
    if not source.is_file():
        raise UserError(f"{scenario_file}: no such file")
    try:
        scenario = load_scenario(source)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    seeds = parse_seed_range(seed_range)
    target = Path(out) if out else explore_report.default_out(scenario, search_seed)
    claim_output(target, force)
    status = None if quiet else ExploreStatus(scenario.scenario.name, examples)
    try:
        result = search.explore(
            scenario,
            examples=examples,
            shrink_runs=shrink_runs,
            seed=search_seed,
            seed_range=seeds,
            max_duration_s=max_duration_s,
            progress=status and status.update,
        )
    finally:
        if status is not None:
            status.close()
    try:
        counterexample = explore_report.write_result(result, target, seed=search_seed)
    except KeyboardInterrupt:  # while the counterexample's replay was being checked
        result = dataclasses.replace(result, interrupted=True)
        counterexample = explore_report.write_interrupted_result(result, target, seed=search_seed)
    for line in explore_report.report_lines(result, counterexample, target):
        click.echo(line)
    if result.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(1 if result.unexpected else 0)


@click.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=False))
@click.option("--quiet", "-q", is_flag=True, help="No progress line.")
def check(run_dir: str, quiet: bool) -> None:
    """Re-check the recorded run folder RUN_DIR and compare with its result.json.

    Runs every checker over history.jsonl and the run's table: table/ for a local run (also
    read by the independent reader hudi-rs, whose snapshot must equal ours), or, for a memory
    run, a table rebuilt by re-running scenario.toml (valid only if the re-run replays the
    recorded history exactly). Prints the verdicts like `testbed run`, then every difference.
    Exit code 0 when everything matches result.json, 1 on a mismatch, 2 on bad input.
    """
    from testbed.check import CheckInputError, check_run, report_lines

    status = None if quiet or not sys.stderr.isatty() else StepLine(f"checking {run_dir}")
    try:
        report = check_run(Path(run_dir), progress=status and status.update)
    except CheckInputError as err:
        raise UserError(str(err)) from None
    finally:
        if status is not None:
            status.close()
    for line in report_lines(report):
        click.echo(line)
    sys.exit(0 if report.match else 1)
