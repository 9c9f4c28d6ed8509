"""``testbed inspect``, ``read``, ``demo`` and ``verify``: real Hudi tables through the testbed's
own timeline, file-system view and reader, and a table's data verified on Spark."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from models.table_errors import CorruptTableError
from models.view.table import NotAHudiTableError
from testbed.cli_bars import StepLine
from testbed.cli_common import (
    EXIT_INTERRUPTED,
    UserError,
    claim_output,
    force_option,
    open_table,
    parse_as_of,
    spark_args,
)


@click.command()
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
    table = open_table(path)
    try:
        timeline, groups = table.file_groups(as_of=parse_as_of(as_of))
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


@click.command()
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

    table = open_table(path)
    try:
        rows = read_snapshot(table, as_of=parse_as_of(as_of))
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


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="runs/demo",
    show_default=True,
    help="Folder to write the demo table into (replaced if it is a demo folder).",
)
@force_option("demo")
def demo(out: str, force: bool) -> None:
    """Write a small real Hudi 1.x MOR table through the testbed's protocol code and inspect it.

    A compaction is scheduled while a deltacommit is in flight; the deltacommit completes after it
    and its log lands in the slice the compaction opened (completion-time slicing), so the read
    shows every update.
    """
    from testbed.demo import write_demo_table

    claim_output(Path(out), force)
    target = write_demo_table(Path(out))
    click.echo(f"demo table written to {target}")
    ctx = click.get_current_context()
    ctx.invoke(inspect, path=str(target), as_json=False, as_of=None)
    ctx.invoke(read, path=str(target), as_of=None, out=None, limit=20)


@click.command()
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
        options = SparkOptions(**spark_args(master, parse_conf(conf)))
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


def _verify_with_status(verify_table, spark, target, work: Path, quiet: bool) -> dict:
    """``verify_table`` with its steps on a status line (a terminal only, and not with -q)."""
    if quiet or not sys.stderr.isatty():
        return verify_table(spark, target, work)
    status = StepLine(f"verifying {target.table_root}")
    try:
        return verify_table(spark, target, work, progress=status.update)
    finally:
        status.close()
