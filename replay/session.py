"""The testbed's own Spark session: local mode by default, a cluster by ``master``.

Why a module of its own: every Spark entry point (``testbed sweep``, ``testbed verify``, the suite
on Spark) needs the same four things, and each is easy to get subtly wrong:

- **Master and conf.** ``local[*]`` unless the user passes ``--master URL``; ``--conf k=v`` pairs
  go to the builder verbatim, after our defaults, so the user always wins. The UI is off in local
  mode (a port per session is a nuisance on CI machines) but left to the cluster's defaults
  elsewhere.
- **Shipping the code.** Executors on a cluster do not have this repository. The project's
  packages are zipped (sources only, plus the scenario catalog) and added with ``addPyFile``, so a
  task can ``import models`` anywhere. Local mode gets the same zip, which keeps the two modes
  identical (and catches a module that only works from the source tree).
- **Quiet logs.** Spark's INFO chatter drowns the testbed's own progress: the driver JVM starts
  with a log4j2 configuration at ``WARN`` (written into the work folder; the user's own
  ``spark.driver.extraJavaOptions`` replace it) and the context's level is set to ``WARN`` too;
  ``quiet`` (``-q``) raises both to ``ERROR`` and turns the stage progress bar off everywhere.
- **Clean stop.** ``with spark_session(...)`` cancels running jobs and stops the session on any
  exit, Ctrl-C included, so no JVM is left behind and the caller's ``KeyboardInterrupt`` still
  propagates (the caller keeps what finished). A Ctrl-C while the session starts takes effect
  once it is up (and is stopped), since PySpark interrupted mid-launch leaves its JVM running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyspark is heavy to import; only the session itself needs it at run time
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[*]"
PROJECT_PACKAGES = ("models", "sim", "invariants", "scenarios", "reports", "replay", "testbed")
"""The packages an executor may need (as in pyproject's ``[tool.setuptools] packages``)."""
_SHIPPED_SUFFIXES = (".py", ".toml")
LOG_LEVEL = "WARN"
QUIET_LOG_LEVEL = "ERROR"
LOG4J2_PROPERTIES = """\
# Written by the testbed: Spark's own start-up INFO lines would drown the testbed's progress.
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""


class SparkConfError(ValueError):
    """A ``--conf`` value that is not ``key=value``."""


@dataclass(frozen=True)
class SparkOptions:
    """How to start Spark: ``master`` and extra ``conf`` pairs (applied last, so they win)."""

    master: str = DEFAULT_MASTER
    conf: tuple[tuple[str, str], ...] = field(default_factory=tuple)
    app_name: str = "hudi-commit-testbed"
    quiet: bool = False
    """``-q``: no stage progress bar on any master, and only Spark's errors (not its WARN lines)
    reach the terminal."""

    @property
    def local(self) -> bool:
        return self.master == "local" or self.master.startswith("local[")

    def settings(self) -> dict[str, str]:
        """Every builder setting, defaults first then the user's ``conf`` (which override)."""
        values = {
            "spark.app.name": self.app_name,
            # One Python worker per task, reused: simulations are CPU-bound Python.
            "spark.python.worker.reuse": "true",
            # The driver's interpreter on every executor of a local run (a venv, not system python).
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.sql.execution.arrow.pyspark.enabled": "true",
        }
        if self.local:
            values["spark.ui.enabled"] = "false"
        if self.local or self.quiet:
            values["spark.ui.showConsoleProgress"] = "false"
        else:  # a cluster has its own interpreters; never point it at ours
            del values["spark.pyspark.python"]
        values.update(dict(self.conf))
        return values


def parse_conf(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``["k=v", ...]`` from the command line into pairs; a pair without ``=`` is an error."""
    parsed = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise SparkConfError(
                f"--conf {pair!r}: expected key=value, e.g. spark.executor.memory=4g"
            )
        parsed.append((key.strip(), value))
    return tuple(parsed)


def package_zip(dest: Path, root: Path | None = None) -> Path:
    """Zip the project's packages (``.py`` and ``.toml`` files) into ``dest`` for ``addPyFile``.

    Entries are written in sorted order with a fixed timestamp, so the same sources always give
    the same bytes (Spark caches files by name; a stable zip makes reruns predictable)."""
    root = root or Path(__file__).resolve().parent.parent
    files = sorted(
        path
        for package in PROJECT_PACKAGES
        for path in (root / package).rglob("*")
        if path.is_file() and path.suffix in _SHIPPED_SUFFIXES and "__pycache__" not in path.parts
    )
    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(dest, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for path in files:
            info = zipfile.ZipInfo(
                path.relative_to(root).as_posix(), date_time=(1980, 1, 1, 0, 0, 0)
            )
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    return dest


def _log_level(options: SparkOptions) -> str:
    return QUIET_LOG_LEVEL if options.quiet else LOG_LEVEL


def _start(builder: SparkSession.Builder) -> SparkSession:
    """``builder.getOrCreate()`` with Ctrl-C held until the session is up, then stopped and
    raised. PySpark interrupted while it launches the driver JVM leaves that JVM running after
    the command exits; holding the Ctrl-C for the few seconds of the start lets the session be
    stopped. The handler PySpark installs while starting (it cancels the jobs) is kept."""
    if threading.current_thread() is not threading.main_thread():
        return builder.getOrCreate()
    pressed: list[int] = []

    def remember(signum: int, frame: object) -> None:
        pressed.append(signum)

    previous = signal.signal(signal.SIGINT, remember)
    try:
        session = builder.getOrCreate()
    finally:
        if signal.getsignal(signal.SIGINT) is remember:
            signal.signal(signal.SIGINT, previous)
    if pressed:
        session.stop()
        raise KeyboardInterrupt
    return session


@contextlib.contextmanager
def spark_session(options: SparkOptions, work_dir: Path) -> Iterator[SparkSession]:
    """A started session with the project shipped; always stopped on exit (Ctrl-C included).

    ``work_dir`` holds the shipped zip (the caller's run folder, so nothing lands in the repo).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if options.local:  # no "hostname resolves to a loopback address" warning on every start
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    work_dir.mkdir(parents=True, exist_ok=True)
    settings = options.settings()
    if "spark.driver.extraJavaOptions" not in settings:  # the user's own JVM options win
        log_config = work_dir / "log4j2.properties"
        log_config.write_text(LOG4J2_PROPERTIES.replace("{level}", _log_level(options).lower()))
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={log_config}"
    builder = SparkSession.builder.master(options.master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    session = _start(builder)
    context = session.sparkContext
    context.setLogLevel(_log_level(options))
    try:
        context.addPyFile(str(package_zip(work_dir / "testbed-packages.zip")))
        yield session
    except BaseException:
        context.cancelAllJobs()
        raise
    finally:
        session.stop()
