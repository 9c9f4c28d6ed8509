"""What every ``testbed`` command shares: the one-line user error, exit codes, reading a table
path, output folders (``--force`` and the claim), seeds, ``--as-of`` and Spark options."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from models.storage import LocalStorage
from models.table_errors import CorruptTableError
from models.timeline.instant_time import InstantTimeError, normalize
from models.view.table import HudiTable, NotAHudiTableError
from scenarios.fields import MAX_SEED
from testbed.outputs import claimed

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
SEED = click.IntRange(0, MAX_SEED)
"""A seed: what a scenario's ``[scenario] seed`` takes."""


class UserError(click.ClickException):
    """A problem with the user's input: one line, exit code 2."""

    exit_code = EXIT_USAGE

    def show(self, file=None) -> None:
        # one line whatever the message holds (a library's error may span several)
        click.echo(f"error: {' '.join(self.format_message().split())}", err=True)


def open_table(path: str) -> HudiTable:
    root = Path(path)
    if not root.is_dir():
        raise UserError(f"{path}: no such directory")
    try:
        return HudiTable(LocalStorage(root))
    except (NotAHudiTableError, CorruptTableError) as err:
        raise UserError(f"{path}: {err}") from None


def force_option(kind: str, *, junit: bool = False) -> Any:
    also = ", and a --junit FILE the testbed did not write" if junit else ""
    return click.option(
        "--force",
        is_flag=True,
        help=f"Replace the output folder even when it is not a {kind} folder the testbed "
        f"wrote{also} (by default refused, never replaced).",
    )


def claim_output(target: Path, force: bool) -> None:
    """Hold output folder ``target`` for the rest of this command: refused (one ``error:`` line)
    when another command writes it or when it is not a folder the testbed wrote
    (:mod:`testbed.outputs`)."""
    click.get_current_context().with_resource(claimed(target, force=force))


def parse_as_of(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return normalize(value)
    except InstantTimeError as err:
        raise UserError(f"--as-of: {err}") from None


def parse_seed_range(
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


def spark_args(master: str | None, conf: tuple[tuple[str, str], ...]) -> dict:
    """``SparkOptions`` arguments; quiet when the command runs with ``-q``."""
    return {"conf": conf, "quiet": is_quiet()} | ({"master": master} if master else {})


def seed_engine_options(fn: Any) -> Any:
    """``--master``, ``--conf`` and ``--no-spark``: where a command that runs seeds (``sweep``,
    ``swarm``) runs them."""
    options = [
        click.option(
            "--master",
            default=None,
            help="Spark master (default local[*]: every core of this machine); a cluster URL "
            "such as spark://host:7077 runs the seeds on its executors.",
        ),
        click.option(
            "--conf",
            "conf",
            multiple=True,
            metavar="KEY=VALUE",
            help="Extra Spark setting, repeatable (e.g. --conf spark.executor.memory=4g).",
        ),
        click.option(
            "--no-spark", is_flag=True, help="Run every seed in this process, without Spark."
        ),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def minimize_options(what: str) -> Any:
    """``--no-minimize`` (help: don't shrink ``what``) and ``--minimize-runs`` of the commands
    that shrink what they catch to minimal counterexamples (``suite``, ``swarm``)."""
    no_minimize = click.option("--no-minimize", is_flag=True, help=f"Do not shrink {what}.")
    runs = click.option(
        "--minimize-runs",
        type=click.IntRange(1, 10_000),
        default=24,
        show_default=True,
        help="Most simulations one counterexample minimization may spend.",
    )

    def decorate(fn: Any) -> Any:
        return no_minimize(runs(fn))

    return decorate


def seed_engine(master: str | None, conf: tuple[str, ...], no_spark: bool) -> Any:
    """The Spark options of ``--master``/``--conf`` (None with ``--no-spark``), or a one-line
    error."""
    from replay.session import SparkConfError, SparkOptions, parse_conf

    if no_spark and (master or conf):
        raise UserError("--no-spark runs without Spark: drop --master/--conf, or drop --no-spark")
    if no_spark:
        return None
    try:
        return SparkOptions(**spark_args(master, parse_conf(conf)))
    except SparkConfError as err:
        raise UserError(str(err)) from None


def is_quiet() -> bool:
    """Whether the running command was given ``-q``."""
    return bool(click.get_current_context().params.get("quiet", False))


def junit_option() -> Any:
    return click.option(
        "--junit",
        "junit",
        type=click.Path(dir_okay=False),
        metavar="FILE",
        help="Also write the verdicts as JUnit XML to FILE (one test case per run; a failure "
        "carries the violation sentences and the replay command) for CI systems.",
    )


def check_junit(junit: str | None, force: bool) -> None:
    """Refuse ``--junit FILE`` before anything runs (a folder, or a file the testbed did not
    write, without ``--force``)."""
    if junit is None:
        return
    from testbed.junit import JunitTargetError, check_junit_target

    try:
        check_junit_target(Path(junit), force=force)
    except JunitTargetError as err:
        raise UserError(str(err)) from None


def write_junit_file(path: Path, suite: str, cases: list) -> None:
    from testbed.junit import write_junit

    try:
        write_junit(path, suite, cases)
    except OSError as err:
        raise UserError(f"--junit {path}: cannot be written ({err.strerror or err})") from None
    click.echo(f"junit: {path}")
