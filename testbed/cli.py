"""The ``testbed`` command line.

Errors a user can cause (a path that is not a Hudi table, a corrupt instant file, a bad time) print
one clear line on stderr and exit with code 2; anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from models.storage import LocalStorage
from models.timeline.instant_time import InstantTimeError, normalize
from models.view.table import CorruptTableError, HudiTable, NotAHudiTableError
from scenarios.fields import MAX_SEED, SECONDS_PER_DAY
from testbed.outputs import OutputFolderError, claimed

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
_SEED = click.IntRange(0, MAX_SEED)
"""A seed: what a scenario's ``[scenario] seed`` takes."""


class UserError(click.ClickException):
    """A problem with the user's input: one line, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        click.echo(f"error: {self.format_message()}", err=True)


def _open_table(path: str) -> HudiTable:
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"{path}: no such directory")
    try:
        return HudiTable(LocalStorage(root))
    except (NotAHudiTableError, CorruptTableError) as err:
        raise UserError(f"{path}: {err}") from None


def _force_option(kind: str) -> Any:
    return click.option(
        "--force",
        is_flag=True,
        help=f"Replace the output folder even when it is not a {kind} folder the testbed wrote "
        "(by default such a folder is refused, never replaced).",
    )


def _claim(target: Path, force: bool) -> None:
    """Hold output folder ``target`` for the rest of this command: refused (one ``error:`` line)
    when another command writes it or when it is not a folder the testbed wrote
    (:mod:`testbed.outputs`)."""
    click.get_current_context().with_resource(claimed(target, force=force))


def _as_of(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalize(value)
    except InstantTimeError as err:
        raise UserError(f"--as-of: {err}") from None


class _Testbed(click.Group):
    """The ``testbed`` group: every error a user can cause ends as one ``error:`` line on stderr
    with exit code 2 (click's usage errors included), Ctrl-C as ``interrupted`` with 130."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        if not standalone_mode:  # a caller that handles click's exceptions itself
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except click.UsageError as err:
            where = f" (see '{err.ctx.command_path} --help')" if err.ctx is not None else ""
            _fail(f"{err.format_message()}{where}")
        except click.ClickException as err:
            err.show()
            sys.exit(err.exit_code)
        except click.Abort:
            click.echo("interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except OutputFolderError as err:
            _fail(str(err))
        except OSError as err:
            if err.filename is None:
                raise
            _fail(f"{err.filename}: {err.strerror or err}")
        sys.exit(code if isinstance(code, int) else 0)


def _fail(message: str) -> NoReturn:
    click.echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(EXIT_USAGE)


def entry() -> None:
    """The ``testbed`` console script: :data:`main`, then an exit that skips interpreter
    teardown, so Arrow's thread pools are never torn down mid-flight (an exit code 134
    after the output was printed); every output is written and flushed by then."""
    try:
        main()
        code: int | str | None = 0
    except SystemExit as done:
        code = done.code
    if isinstance(code, str):
        click.echo(code, err=True)
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


@click.group(cls=_Testbed, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hudi-commit-testbed")
def main() -> None:
    """Simulation and verification testbed for Apache Hudi's commit protocol.

    \b
    Inspect and read real Hudi tables (table versions 6, 8, 9) with the testbed's own
    implementation of the timeline and completion-time file slicing:
      testbed inspect PATH [--json] [--as-of TIME]
      testbed read PATH [--as-of TIME] [--out FILE.parquet]
    """


@main.command()
@click.argument("path", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of tables.")
@click.option(
    "--as-of",
    metavar="TIME",
    help="Time travel: show the table as of this instant time (17 digits, or 14 legacy).",
)
@click.option(
    "--plot",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Also draw the whole timeline and every file slice into FILE (.png or .svg).",
)
def inspect(path: str, as_json: bool, as_of: str | None, plot: str | None = None) -> None:
    """Print the timeline and the latest file slice of every file group of the table at PATH.

    Instants show requested time, completion time, action and state. File slices are those a
    snapshot reader merges (at --as-of if given): base file and committed log files in merge order.
    With --plot, the timeline (instants as requested -> completed intervals per action) and the
    file slices of every file group over time are drawn into FILE as well.
    """
    if plot is not None and Path(plot).suffix.lower() not in (".png", ".svg"):
        raise UserError(f"--plot: {plot}: unsupported format (allowed: .png, .svg)")
    table = _open_table(path)
    try:
        timeline, groups = table.file_groups(as_of=_as_of(as_of))
        from models.view.fsview import latest_file_slices

        slices = latest_file_slices(groups)
    except CorruptTableError as err:
        raise UserError(f"{path}: {err}") from None
    report = {
        "table": dict(sorted(table.config.raw.items())),
        "instants": [
            {
                "requested": i.requested_time,
                "completed": i.completion_time,
                "action": i.action,
                "state": i.state.name,
            }
            for i in timeline
        ],
        "file_slices": [
            {
                "partition": s.partition,
                "file_id": s.file_id,
                "base_instant": s.base_instant,
                "base_file": s.base_file.name if s.base_file else None,
                "log_files": [lf.name for lf in s.log_files],
            }
            for s in slices
        ],
    }
    if plot is not None:
        from reports.table_plots import plot_table

        try:
            plot_table(Path(path), Path(plot), table=table)
        except CorruptTableError as err:
            raise UserError(f"{path}: {err}") from None
        click.echo(f"plot written to {plot}", err=True)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    _print_inspect(report)


def _print_inspect(report: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    props = report["table"]
    console.print(
        f"[bold]{props.get('hoodie.table.name', '?')}[/bold]  "
        f"{props.get('hoodie.table.type', '?')}  table version {props.get('hoodie.table.version', '?')}"
    )
    instants = Table(title="Timeline", title_justify="left")
    for col in ("requested", "completed", "action", "state"):
        instants.add_column(col)
    for i in report["instants"]:
        instants.add_row(i["requested"], i["completed"] or "-", i["action"], i["state"])
    console.print(instants)
    slices = Table(title="Latest file slices", title_justify="left")
    for col in ("partition", "file id", "base instant", "base file", "log files"):
        slices.add_column(col, overflow="fold")
    for s in report["file_slices"]:
        slices.add_row(
            s["partition"] or "(none)",
            s["file_id"],
            s["base_instant"],
            s["base_file"] or "-",
            "\n".join(s["log_files"]) or "-",
        )
    console.print(slices)


@main.command()
@click.argument("path", type=click.Path(file_okay=False))
@click.option(
    "--as-of", metavar="TIME", help="Time travel: read the table as of this instant time."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the rows to this parquet file instead of printing them.",
)
@click.option(
    "--limit",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="Print at most this many rows (0: all of them); --out always writes every row.",
)
def read(path: str, as_of: str | None, out: str | None, limit: int) -> None:
    """Read the merged snapshot of the table at PATH (base files merged with committed logs).

    Prints the first --limit rows, fitted to the terminal, and how many more there are; --out
    writes every row to a parquet file instead."""
    from models.view.reader import read_snapshot

    table = _open_table(path)
    try:
        rows = read_snapshot(table, as_of=_as_of(as_of))
    except CorruptTableError as err:
        raise UserError(f"{path}: {err}") from None
    if out:
        import pyarrow.parquet as pq

        target = Path(out)
        from testbed.atomic import staging_path

        tmp = staging_path(target)
        pq.write_table(rows, tmp)
        tmp.replace(target)  # never leave a half-written file behind
        click.echo(f"{rows.num_rows} rows -> {out}", err=True)
        return
    _print_rows(rows, limit)


def _print_rows(rows, limit: int) -> None:
    """The first ``limit`` rows (all for 0) as a table as wide as the terminal, then how many
    rows were left out."""
    from rich.console import Console
    from rich.table import Table

    shown = rows if limit == 0 else rows.slice(0, limit)
    view = Table(title=f"{rows.num_rows} rows", title_justify="left")
    for name in rows.column_names:
        view.add_column(name, overflow="fold")
    for record in shown.to_pylist():
        view.add_row(*("" if v is None else str(v) for v in record.values()))
    Console().print(view)
    rest = rows.num_rows - shown.num_rows
    if rest:
        click.echo(f"... and {rest} more rows (--limit 0 prints all, --out FILE writes them all)")


@main.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="runs/demo",
    show_default=True,
    help="Folder to write the demo table into (replaced if it is a demo folder).",
)
@_force_option("demo")
def demo(out: str, force: bool) -> None:
    """Write a small real Hudi 1.x MOR table through the testbed's protocol code and inspect it.

    A compaction is scheduled while a deltacommit is in flight; the deltacommit completes after it
    and its log lands in the slice the compaction opened (completion-time slicing), so the read
    shows every update.
    """
    from testbed.demo import write_demo_table

    _claim(Path(out), force)
    target = write_demo_table(Path(out))
    click.echo(f"demo table written to {target}")
    ctx = click.get_current_context()
    ctx.invoke(inspect, path=str(target), as_json=False, as_of=None)
    ctx.invoke(read, path=str(target), as_of=None, out=None, limit=20)


@main.command()
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option(
    "--seed", type=_SEED, help="Seed to run with (default: the scenario's [scenario] seed)."
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
@_force_option("run")
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
    _claim(target, force)
    progress = None if quiet else _ProgressBar(scenario.scenario.name)
    try:
        outcome = run_scenario(scenario, source, target, progress=progress and progress.update)
    except RunawayRunError as err:
        raise UserError(f"{err}; partial run folder: {target}") from None
    finally:
        if progress is not None:
            progress.close()
    _print_run_summary(outcome)
    sys.exit(0 if outcome.ok else 1)


class _StderrBar:
    """A live rich progress line on stderr (stdout stays parseable): ``label``, a bar, then
    ``columns``, then the elapsed time; gone when closed."""

    def __init__(self, label: str, *columns, total: float | None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.progress = Progress(
            TextColumn(label),
            BarColumn(),
            *columns,
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.progress.add_task("", total=total)
        self.progress.start()

    def close(self) -> None:
        self.progress.stop()


class _StepLine(_StderrBar):
    """What a command is doing now (a pulsing bar: the number of steps is not known)."""

    def __init__(self, label: str) -> None:
        from rich.progress import TextColumn

        super().__init__(label, TextColumn("{task.description}"), total=None)

    def update(self, step: str) -> None:
        self.progress.update(self.task, description=step)


class _ProgressBar(_StderrBar):
    """Simulated time of one run."""

    def __init__(self, name: str) -> None:
        from rich.progress import TextColumn

        text = TextColumn("{task.completed:.0f}/{task.total:.0f} s simulated")
        super().__init__(f"simulating {name}", text, total=1)

    def update(self, now_ms: int, end_ms: int) -> None:
        self.progress.update(self.task, completed=now_ms / 1000, total=end_ms / 1000)


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


def _seed_range(
    value: str, option: str = "--seed-range", *, single: bool = True
) -> tuple[int, int]:
    """``LOW:HIGH`` (both included) or, with ``single``, one seed ``N``; else a one-line error."""
    low, sep, high = value.partition(":")
    if not sep and single:
        low = high = value
    try:
        bounds = (int(low), int(high))  # no ":" and not single: high is "", an error
    except ValueError:
        bounds = (-1, -1)
    if not 0 <= bounds[0] <= bounds[1] <= MAX_SEED:
        allowed = f"LOW:HIGH with 0 <= LOW <= HIGH <= {MAX_SEED}" + (
            ", or one seed N" if single else ""
        )
        raise UserError(f"{option}: {value!r} is not a range (allowed: {allowed})")
    return bounds


@main.command()
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
    type=_SEED,
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
@_force_option("explore")
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

    source = Path(scenario_file)
    if not source.is_file():
        raise UserError(f"{scenario_file}: no such file")
    try:
        scenario = load_scenario(source)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    seeds = _seed_range(seed_range)
    target = Path(out) if out else search.default_out(scenario, search_seed)
    _claim(target, force)
    status = None if quiet else _ExploreStatus(scenario.scenario.name, examples)
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
        counterexample = search.write_result(result, target, seed=search_seed)
    except KeyboardInterrupt:  # while the counterexample's replay was being checked
        result = dataclasses.replace(result, interrupted=True)
        counterexample = search.write_interrupted_result(result, target, seed=search_seed)
    for line in search.report_lines(result, counterexample, target):
        click.echo(line)
    if result.interrupted:
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(1 if result.unexpected else 0)


class _ExploreStatus(_StderrBar):
    """Examples tried, runs, the best failure so far."""

    def __init__(self, name: str, examples: int) -> None:
        from rich.progress import TextColumn

        super().__init__(f"exploring {name}", TextColumn("{task.description}"), total=examples)

    def update(self, state) -> None:
        if state.best is None:
            text = f"{state.examples} examples, nothing yet"
        else:
            best = state.best
            text = (
                f"{state.examples} examples, shrinking ({state.runs} runs): "
                f"{len(best.schedule)} faults, {best.duration_s:g} s, seed {best.seed} -> "
                + ", ".join(state.best_violated or ("error",))
            )
        self.progress.update(self.task, completed=state.examples, description=text)


@main.command()
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

    status = None if quiet or not sys.stderr.isatty() else _StepLine(f"checking {run_dir}")
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


@main.command()
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
@click.option(
    "--no-minimize",
    is_flag=True,
    help="Do not shrink caught known-bad runs to their minimal counterexample.",
)
@click.option(
    "--minimize-runs",
    type=click.IntRange(1, 10_000),
    default=24,
    show_default=True,
    help="Most simulations one counterexample minimization may spend.",
)
@_force_option("suite")
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
    quiet: bool,
) -> None:
    """Run a suite of scenarios (default: the default suite of scenarios/suites.toml) or the
    scenario FILES, in parallel, and write summary.json, summary.parquet and report.html.
    Worker processes by default; with --master each run is a Spark task (same rows, verdicts,
    digests and run folders).

    \b
    Suites: smoke (quick, for CI), catalog (every catalog scenario), full (the catalog plus
    the truetime and concurrency grids; the default), truetime, concurrency, large (the
    catalog scenarios tagged large, which no pattern picks: millions of records).
    Each caught known-bad run is shrunk to its minimal counterexample (counterexample.toml,
    .json, .txt in its run folder) unless --no-minimize.
    Exit code 0 when every run's verdict matches its expectation, 1 when one does not (or a
    run raised, or the report could not be written), 2 on bad input, 130 when interrupted
    (the finished runs' summary and report are still written).
    """
    from scenarios.schema import ScenarioError
    from testbed import suite as suites

    try:
        chosen = suites.resolve(targets)
    except ScenarioError as err:
        raise UserError(str(err)) from None
    target = Path(out) if out else suites.default_out(chosen)
    options = _suite_spark_options(master, conf, workers, target)
    _claim(target, force)
    label = f"suite {chosen.name}" + (f" (spark {master})" if master else "")
    bar = None if quiet else _CountBar(label, "runs")
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

    Console(width=max(120, Console().width)).print(suites.summary_table(outcome.summary))
    for line in suites.report_lines(outcome):
        click.echo(line)
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
        return SparkOptions(**_spark_args(master, parse_conf(conf)))
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


@main.command()
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option("--seeds", "seeds", required=True, help="Seeds A:B to run, both included.")
@click.option(
    "--master",
    default=None,
    help="Spark master (default local[*]: every core of this machine); a cluster URL such as "
    "spark://host:7077 runs the seeds on its executors.",
)
@click.option(
    "--conf",
    "conf",
    multiple=True,
    metavar="KEY=VALUE",
    help="Extra Spark setting, repeatable (e.g. --conf spark.executor.memory=4g).",
)
@click.option("--no-spark", is_flag=True, help="Run every seed in this process, without Spark.")
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    help="Output folder (default: runs/sweep-<scenario name>; replaced if it is a sweep folder).",
)
@_force_option("sweep")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def sweep(
    scenario_file: str,
    seeds: str,
    master: str | None,
    conf: tuple[str, ...],
    no_spark: bool,
    out: str | None,
    force: bool,
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
    from replay.session import SparkConfError, SparkOptions, parse_conf
    from scenarios.schema import ScenarioError, load_scenario
    from testbed.sweep import run_sweep

    source = Path(scenario_file)
    if not source.is_file():
        raise UserError(f"{scenario_file}: no such file")
    bounds = _seed_range(seeds, "--seeds", single=False)
    if no_spark and (master or conf):
        raise UserError("--no-spark runs without Spark: drop --master/--conf, or drop --no-spark")
    try:
        scenario = load_scenario(source)
        options = None if no_spark else SparkOptions(**_spark_args(master, parse_conf(conf)))
    except (ScenarioError, SparkConfError) as err:
        raise UserError(str(err)) from None
    target = Path(out) if out else Path("runs") / f"sweep-{scenario.scenario.name}"
    _claim(target, force)
    engine = "none" if options is None else f"spark {options.master}"
    bar = None if quiet else _CountBar(f"sweeping {scenario.scenario.name} ({engine})", "seeds")
    result = None
    try:
        with _sweep_runner(options, engine) as runner:
            result = run_sweep(
                scenario,
                source,
                bounds,
                target,
                runner,
                engine=engine,
                on_progress=bar and bar.update,
            )
    except KeyboardInterrupt:  # run_sweep handles its own; this one came outside it
        if result is None:  # Spark was starting: no seed ran, nothing was written
            click.echo("interrupted before any seed ran: nothing ran", err=True)
            sys.exit(EXIT_INTERRUPTED)
        # Spark was stopping after the sweep ended: its summary stands
    finally:
        if bar is not None:
            bar.close()
    _print_sweep_summary(result.summary, target)
    if result.interrupted:
        summary = result.summary
        click.echo(
            f"interrupted: {summary['finished']} of {summary['seeds']['count']} seeds finished "
            f"(kept in {target}), {summary['abandoned']} not run",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    sys.exit(0 if result.ok else 1)


@main.command()
@click.argument("path", metavar="RUN_DIR|TABLE_PATH", type=click.Path(file_okay=False))
@click.option(
    "--ledger",
    type=click.Path(dir_okay=False),
    help="The history.jsonl whose ledger the table must match (default: RUN_DIR/history.jsonl; "
    "without one only duplicated keys are checked).",
)
@click.option("--master", default=None, help="Spark master (default local[*]).")
@click.option(
    "--conf", "conf", multiple=True, metavar="KEY=VALUE", help="Extra Spark setting, repeatable."
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    help="Write the report as JSON here too (default: RUN_DIR/verify.json for a run folder).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress line, only Spark's errors.")
def verify(
    path: str,
    ledger: str | None,
    master: str | None,
    conf: tuple[str, ...],
    out: str | None,
    quiet: bool,
) -> None:
    """Verify the data of a table written by the testbed, on Spark.

    One task per file group reads its latest file slice with the testbed's own reader (base file
    merged with committed log blocks); Spark joins the live rows with the ledger's model (the
    records the history's completed checkpoints cover, merged by the table's rule) and reports
    lost keys, extra keys, duplicated keys and wrong versions, with counts and examples. No
    record is collected to the driver, so it scales with the cluster. Exit code 0 when the data
    matches, 1 when it is damaged, 2 on bad input, 130 when interrupted (nothing is written).
    """
    import tempfile

    from replay.session import SparkConfError, SparkOptions, parse_conf, spark_session
    from replay.verify import VerifyInputError, describe, resolve_target
    from replay.verify import verify as verify_table

    try:
        target = resolve_target(Path(path), Path(ledger) if ledger else None)
        options = SparkOptions(**_spark_args(master, parse_conf(conf)))
    except (VerifyInputError, SparkConfError) as err:
        raise UserError(str(err)) from None
    except (NotAHudiTableError, CorruptTableError) as err:
        raise UserError(f"{path}: {err}") from None
    report = None
    try:
        with (
            tempfile.TemporaryDirectory(prefix="testbed-verify-") as work,
            spark_session(options, Path(work)) as spark,
        ):
            try:
                report = _verify_with_status(verify_table, spark, target, Path(work), quiet)
            except VerifyInputError as err:
                raise UserError(str(err)) from None
            except (NotAHudiTableError, CorruptTableError) as err:
                raise UserError(f"{target.table_root}: {err}") from None
    except KeyboardInterrupt:
        if report is None:  # nothing is written: a verify.json of an earlier run stays as it was
            click.echo("interrupted: nothing verified, nothing written", err=True)
            sys.exit(EXIT_INTERRUPTED)
        # Spark was stopping after the verification ended: the report stands
    report["engine"] = f"spark {options.master}"
    for line in describe(report):
        click.echo(line)
    run_folder = target.table_root != Path(path)
    dest = Path(out) if out else (Path(path) / "verify.json" if run_folder else None)
    if dest is not None:
        from testbed.atomic import write_text_atomic
        from testbed.interrupt import sigint_held

        with sigint_held():  # the report is complete: a Ctrl-C now does not cut its file short
            write_text_atomic(dest, json.dumps(report, indent=2, sort_keys=True) + "\n")
        click.echo(f"report: {dest}")
    sys.exit(0 if report["ok"] else 1)


@main.command()
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


def _verify_with_status(verify_table, spark, target, work: Path, quiet: bool) -> dict:
    """``verify_table`` with its steps on a status line (a terminal only, and not with -q)."""
    if quiet or not sys.stderr.isatty():
        return verify_table(spark, target, work)
    status = _StepLine(f"verifying {target.table_root}")
    try:
        return verify_table(spark, target, work, progress=status.update)
    finally:
        status.close()


def _spark_args(master: str | None, conf: tuple[tuple[str, str], ...]) -> dict:
    """``SparkOptions`` arguments; quiet when the command runs with ``-q``."""
    return {"conf": conf, "quiet": _quiet()} | ({"master": master} if master else {})


def _quiet() -> bool:
    """Whether the running command was given ``-q``."""
    return bool(click.get_current_context().params.get("quiet", False))


@contextlib.contextmanager
def _sweep_runner(options, engine: str):
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


class _CountBar(_StderrBar):
    """Things done out of a total (seeds, runs)."""

    def __init__(self, text: str, unit: str) -> None:
        from rich.progress import MofNCompleteColumn, TextColumn

        super().__init__(text, MofNCompleteColumn(), TextColumn(unit), total=None)

    def update(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)


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
    _echo_sweep_report(target)


def _echo_sweep_report(target: Path) -> None:
    if (target / "report.html").is_file():
        click.echo(f"report: {target / 'report.html'}")
    elif (target / "report_error.txt").is_file():
        click.echo(f"report.html not written: see {target / 'report_error.txt'}")
    else:
        click.echo("report.html not written: interrupted while writing it")


if __name__ == "__main__":  # pragma: no cover
    entry()
