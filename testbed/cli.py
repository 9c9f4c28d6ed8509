"""The ``testbed`` command line.

Errors a user can cause (a path that is not a Hudi table, a corrupt instant file, a bad time) print
one clear line on stderr and exit with code 2; anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Any, NoReturn

import click

from testbed.cli_common import EXIT_INTERRUPTED, EXIT_USAGE
from testbed.cli_runs import check, explore, run
from testbed.cli_suites import bench, suite, sweep
from testbed.cli_swarm import swarm
from testbed.cli_tables import demo, inspect, read, verify
from testbed.outputs import OutputFolderError


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
    Start here:
      testbed suite                      every catalog scenario, a verdict table, report.html
      testbed run SCENARIO.toml          one scenario: history, verdicts, replay command
      testbed explore SCENARIO.toml      search fault schedules for a violation, shrink it
      testbed sweep SCENARIO.toml --seeds A:B   many seeds on Spark
      testbed swarm --seeds A:B          a whole scenario drawn per seed, on Spark
    Real Hudi tables (table versions 6, 8, 9): inspect, read, verify; recorded runs: check.
    Errors are one "error:" line with exit code 2; Ctrl-C exits 130 and keeps what finished;
    an output folder the testbed did not write is never replaced without --force.
    """


for _command in (inspect, read, demo, run, explore, check, suite, sweep, swarm, verify, bench):
    main.add_command(_command)


if __name__ == "__main__":  # pragma: no cover
    entry()
