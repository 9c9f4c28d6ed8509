"""``testbed suite``: run a suite of scenarios in parallel and write one summary and report.

What an engineer runs before merging a protocol change, and what README's first command runs: a
suite (``scenarios/suites.toml``) or a list of scenario files, each on its own seed (or on
``--seeds N`` consecutive seeds from it), in worker processes or, with ``--master``, as Spark tasks
(:mod:`replay.suite_tasks`: each run folder travels back packed). Everything lands under one
folder:

- ``runs/<scenario>-seed<N>/``: each run folder, as ``testbed run`` writes it; a caught known-bad
  run also holds its minimal counterexample (``counterexample.toml`` / ``.json`` / ``.txt``,
  :mod:`testbed.minimize`); a run that raised holds ``error.txt`` (the traceback);
- ``scenarios/<name>.toml``: each grid point's derived scenario (the file its replay runs);
- ``summary.json``: the verdict of every run and scenario (shape below), ``summary.parquet``: one
  flat row per run, and ``report.html`` (:func:`reports.html.write_report`).

Runs are independent and deterministic, so the verdicts, digests and counterexamples do not
depend on ``--workers``, ``--master`` or completion order; rows are written in suite order, then
seed. Only ``wall_s`` varies. A run that raises is recorded as that run's error and the others go
on.

Ctrl-C keeps what finished and says what did not: the runs in flight are stopped (worker
processes terminated and joined, Spark jobs cancelled) before the command exits, so nothing lands
afterwards; the folder of every run that did not finish is removed, so ``runs/`` holds exactly
the finished runs, each with its ``result.json``; and ``summary.json`` and ``report.html`` are
written from the finished runs with ``"interrupted": true``. A Ctrl-C while those two are being
written still leaves a ``summary.json`` saying ``"interrupted": true`` (and no report).

``summary.json``::

    {"suite", "description", "seeds", "ok", "interrupted", "finished", "abandoned",
     "runs": [{"scenario", "description", "seed", "run_dir" (relative to the suite folder), "ok",
               "expected_violations", "violated", "error", "replay", "wall_s", "metrics", "grid",
               "params", "expect", "may_violate", "digest", "counterexample"}],
     "scenarios": [{"scenario", "description", "runs", "ok", "expected_violations",
                    "violated_in", "expect", "may_violate", "grid", "params"}]}

``expect`` is the expectation mode (``exact``; a grid point may have ``any-of`` or
``unchecked``, see :mod:`scenarios.expectations`), ``expected_violations`` what must be violated and
``may_violate`` what may be; ``counterexample`` is the path of a caught run's
``counterexample.toml`` relative to the suite folder, or null. ``finished`` is the number of
``runs``; ``abandoned`` the planned runs that did not finish (in flight at Ctrl-C, or never
started): 0 unless ``interrupted``. ``ok`` is false when interrupted.
"""

from __future__ import annotations

import concurrent.futures as futures
import multiprocessing
import os
import shutil
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.expectations import Expectation
from scenarios.schema import Scenario, ScenarioError, resolved_toml, scenario_from_dict
from scenarios.suite_entries import Suite
from scenarios.suites import SuiteBook, files_suite, load_suites
from testbed.atomic import staging_path, write_text_atomic
from testbed.interrupt import remove_files, sigint_held, sigint_watched
from testbed.outputs import inside, write_marker
from testbed.suite_summary import summarize, write_summary

EXIT_OK, EXIT_MISMATCH, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
FILES_SUITE = "files"
"""The name of an ad-hoc suite of scenario files (``testbed suite a.toml b.toml``)."""


# --- what to run ---------------------------------------------------------------------------------


def resolve(targets: Sequence[str], book: SuiteBook | None = None) -> Suite:
    """``testbed suite``'s arguments as a suite: none (the default suite), one suite name, or
    scenario files. Raises :class:`ScenarioError` (one line) for anything else."""
    book = book or load_suites()
    if not targets:
        return book.suite(book.default)
    files = [t for t in targets if t.endswith(".toml") or os.sep in t or Path(t).is_file()]
    if not files:
        if len(targets) > 1:
            raise ScenarioError(
                "testbed suite",
                "",
                "give one suite name, or scenario files",
                ", ".join(book.suites),
            )
        (name,) = targets
        if name not in book.suites:
            raise ScenarioError(
                "testbed suite", "", f"unknown suite {name!r}", ", ".join(book.suites)
            )
        return book.suite(name)
    if len(files) != len(targets):
        names = [t for t in targets if t not in files]
        raise ScenarioError(
            "testbed suite",
            "",
            f"{names[0]!r} is not a scenario file; a suite name cannot be mixed with files",
            "one suite name, or .toml files",
        )
    for target in files:
        if not Path(target).is_file():
            raise ScenarioError(target, "", "no such file")
    return files_suite([Path(t) for t in files], FILES_SUITE)


def default_out(suite: Suite) -> Path:
    return Path("runs") / f"suite-{suite.name}"


@dataclass(frozen=True)
class RunTask:
    """One run of a suite: everything a worker process needs (it pickles)."""

    index: int
    name: str
    description: str
    scenario: Scenario
    """With the seed of this run."""
    source: Path
    run_dir: Path
    rel_dir: str
    expectation: Expectation
    grid: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    minimize_runs: int = 0
    """Runs the counterexample minimization may spend on a caught known-bad run (0: none)."""


def plan_runs(
    suite: Suite, out: Path, *, seeds: int | None = None, minimize_runs: int = 0
) -> list[RunTask]:
    """The suite's runs in their fixed order (suite order, then seed). Without ``seeds`` each
    scenario runs on its own ``[scenario] seed`` (the seed its expectation was established on);
    with ``seeds = N`` on N consecutive seeds starting there, so the first is always that run.
    Grid points' scenario files are written to ``<out>/scenarios/`` (their replay source)."""
    out = out.resolve()
    tasks: list[RunTask] = []
    for entry in suite.scenarios:
        source = entry.source
        if source is None:
            source = out / "scenarios" / f"{entry.name}.toml"
            source.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(source, resolved_toml(entry.scenario))
        own = entry.scenario.scenario.seed
        for seed in range(own, own + (seeds or 1)):
            scenario = entry.scenario
            if seed != own:
                scenario = scenario_from_dict(
                    scenario.model_dump(mode="json"), str(source), seed=seed
                )
            rel_dir = f"runs/{entry.name}-seed{seed}"
            if not inside(out / "runs", out / rel_dir):
                raise ScenarioError(str(source), "scenario.name", "a run folder outside the suite")
            tasks.append(
                RunTask(
                    index=len(tasks),
                    name=entry.name,
                    description=entry.scenario.scenario.description,
                    scenario=scenario,
                    source=source.resolve(),
                    run_dir=out / rel_dir,
                    rel_dir=rel_dir,
                    expectation=entry.expectation,
                    grid=entry.grid,
                    params=dict(entry.params),
                    minimize_runs=minimize_runs,
                )
            )
    return tasks


# --- one run (in a worker) -------------------------------------------------------------------------


def execute(task: RunTask) -> dict[str, Any]:
    """Run one task and return its ``summary.json`` row; any exception (a testbed bug) becomes
    the row's ``error``, with the traceback in ``<run_dir>/error.txt``."""
    from models.history import read_history
    from testbed.minimize import minimize_run
    from testbed.run import replay_command, run_scenario

    started = time.perf_counter()
    row = _row(task)
    row["replay"] = replay_command(task.source, task.scenario, task.run_dir)
    shutil.rmtree(task.run_dir, ignore_errors=True)  # nothing stale from an earlier suite run
    try:
        outcome = run_scenario(task.scenario, task.source, task.run_dir)
        result = outcome.result
        invariants = result["invariants"]
        violated = sorted(name for name, v in invariants.items() if not v["ok"])
        row.update(
            violated=violated,
            ok=task.expectation.holds(violated, invariants),
            metrics=result["metrics"],
            digest=result["digest"],
        )
        known_bad = task.expectation.mode == "exact" and task.expectation.violations
        if task.minimize_runs and known_bad and row["ok"]:
            events = read_history(task.run_dir / "history.jsonl")
            found = minimize_run(
                task.scenario,
                events,
                task.run_dir,
                max_runs=task.minimize_runs,
                verdicts=invariants,
            )
            if found is not None:
                row["counterexample"] = f"{task.rel_dir}/{found.path.name}"
    except Exception:
        trace = traceback.format_exc()
        task.run_dir.mkdir(parents=True, exist_ok=True)
        (task.run_dir / "error.txt").write_text(trace)
        row.update(ok=False, error=trace.rstrip().splitlines()[-1])
    row["wall_s"] = round(time.perf_counter() - started, 3)
    return row


def _row(task: RunTask, error: str | None = None) -> dict[str, Any]:
    expectation = task.expectation
    return {
        "scenario": task.name,
        "description": task.description,
        "seed": task.scenario.scenario.seed,
        "run_dir": task.rel_dir,
        "ok": False,
        "expected_violations": list(expectation.required),
        "violated": [],
        "error": error,
        "replay": "",
        "wall_s": 0.0,
        "metrics": {},
        "grid": task.grid,
        "params": task.params,
        "expect": expectation.mode,
        "may_violate": list(expectation.allowed),
        "digest": None,
        "counterexample": None,
    }


# --- the whole suite -----------------------------------------------------------------------------


Progress = Callable[[int, int, dict[str, Any]], None]
"""``progress(done, total, row)`` after each finished run."""
Ended = Callable[[RunTask, dict[str, Any] | Exception], None]
Engine = Callable[[list[RunTask], Ended], None]
"""Runs the tasks somewhere other than this process or its pool (Spark:
:class:`replay.suite_tasks.SparkRuns`) and calls ``ended(task, row)`` as each run lands in
``task.run_dir``, or ``ended(task, error)`` when the engine lost it; on Ctrl-C it stops the rest
and re-raises."""


@dataclass
class SuiteOutcome:
    out: Path
    summary: dict[str, Any]
    report: Path | None = None
    report_error: str | None = None

    @property
    def exit_code(self) -> int:
        if self.summary["interrupted"]:
            return EXIT_INTERRUPTED
        return EXIT_OK if self.summary["ok"] and self.report_error is None else EXIT_MISMATCH


def run_suite(
    suite: Suite,
    out: Path,
    *,
    seeds: int | None = None,
    workers: int | None = None,
    minimize_runs: int = 0,
    progress: Progress | None = None,
    runner: Callable[[RunTask], dict[str, Any]] = execute,
    engine: Engine | None = None,
) -> SuiteOutcome:
    """Run ``suite`` into ``out`` and write ``summary.json``, ``summary.parquet`` and the
    report. ``workers`` 1 runs everything in this process (``runner`` is called directly);
    more run in that many worker processes; an ``engine`` (Spark) replaces both, and a run it
    lost is recorded as that run's error.

    Ctrl-C stops the suite: the runs in flight are abandoned (their workers stopped and joined,
    or their Spark jobs cancelled, before this returns), every run folder of a run that did not
    finish is removed, so the folders under ``runs/`` are exactly the finished runs, and the
    summary and report are written from those (``"interrupted": true``)."""
    out.mkdir(parents=True, exist_ok=True)
    write_marker(out, "suite")
    tasks = plan_runs(suite, out, seeds=seeds, minimize_runs=minimize_runs)
    workers = max(1, min(workers or os.cpu_count() or 1, len(tasks) or 1))
    rows: dict[int, dict[str, Any]] = {}

    def finished(row: dict[str, Any], index: int) -> None:
        rows[index] = row
        if progress is not None:
            progress(len(rows), len(tasks), row)

    def ended(task: RunTask, outcome: dict[str, Any] | Exception) -> None:
        if isinstance(outcome, Exception):
            outcome = _row(task, f"worker failed: {type(outcome).__name__}: {outcome}")
        finished(outcome, task.index)

    interrupted = False
    try:
        if engine is not None:
            engine(tasks, ended)
        elif workers == 1:
            with sigint_watched() as watch:
                for task in tasks:
                    row = runner(task)
                    watch.raise_if_seen()
                    finished(row, task.index)
        else:
            _run_in_pool(tasks, workers, runner, finished)
    except KeyboardInterrupt:
        interrupted = True
        with sigint_held():  # a second Ctrl-C must not leave half of the clean-up
            _discard_unfinished(tasks, rows)
    return conclude(
        suite, out, seeds or 1, [rows[i] for i in sorted(rows)], len(tasks), interrupted
    )


def _discard_unfinished(tasks: list[RunTask], rows: dict[int, dict[str, Any]]) -> None:
    """Remove the run folder (and its staging folder) of every task without a row: a run that
    was in flight, or one that never started and whose folder is left from an earlier suite
    run. Called once nothing runs any more, so nothing writes there again."""
    for task in tasks:
        if task.index not in rows:
            shutil.rmtree(staging_path(task.run_dir), ignore_errors=True)
            shutil.rmtree(task.run_dir, ignore_errors=True)


def conclude(
    suite: Suite,
    out: Path,
    seeds: int,
    rows: list[dict[str, Any]],
    planned: int,
    interrupted: bool,
) -> SuiteOutcome:
    """Write ``summary.json``, ``summary.parquet`` and ``report.html`` from the finished runs'
    ``rows`` (in suite order) of the ``planned`` runs.

    Ctrl-C while they are written stops the report: the summary is written again (with SIGINT
    held) saying ``"interrupted": true``, and no report is left, neither half of one nor the
    one of an earlier suite run, which would contradict it."""
    summary = summarize(suite, seeds, rows, interrupted, planned=planned)
    outcome = SuiteOutcome(out, summary)
    try:
        write_summary(out, summary)
        try:
            from reports.html import write_report

            outcome.report = write_report(out)
        except Exception as error:  # the verdicts are written; say why the report is not
            outcome.report_error = f"{type(error).__name__}: {error}"
    except KeyboardInterrupt:
        summary = summarize(suite, seeds, rows, True, planned=planned)
        with sigint_held():
            write_summary(out, summary)
            report = out / "report.html"
            remove_files([report, staging_path(report)])
        outcome = SuiteOutcome(out, summary, report_error="interrupted while writing the report")
    return outcome


def _ignore_sigint() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (a worker interrupted mid-run would
    print a traceback of its own)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_in_pool(
    tasks: list[RunTask],
    workers: int,
    runner: Callable[[RunTask], dict[str, Any]],
    finished: Callable[[dict[str, Any], int], None],
) -> None:
    """Run the tasks in ``workers`` processes, calling ``finished`` in task order among those
    that end together. On Ctrl-C the workers are stopped and joined before it is re-raised."""
    # forkserver: workers fork from a clean server that preloaded the simulator, not from this
    # process and its threads (the progress bar's)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["testbed.suite", "testbed.run", "testbed.minimize"])
    executor = futures.ProcessPoolExecutor(workers, context, initializer=_ignore_sigint)
    pending = {executor.submit(runner, task): task for task in tasks}
    try:
        while pending:
            done, _ = futures.wait(pending, return_when=futures.FIRST_COMPLETED)
            for future in sorted(done, key=lambda f: pending[f].index):
                task = pending.pop(future)
                try:
                    row = future.result()
                except Exception as error:  # the worker process itself died
                    row = _row(task, f"worker failed: {type(error).__name__}: {error}")
                finished(row, task.index)
    except KeyboardInterrupt:
        with sigint_held():
            _stop(executor)
        raise
    executor.shutdown(wait=True)


STOP_WAIT_S = 5.0
"""How long a terminated worker may take to exit before it is killed."""


def _stop(executor: futures.ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (a run can take a minute): each is
    terminated, then joined (killed if it does not exit within ``STOP_WAIT_S``), so no run
    writes anything once this returns. The processes are taken before ``shutdown``, which
    forgets them."""
    processes = list((getattr(executor, "_processes", None) or {}).values())
    executor.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(timeout=STOP_WAIT_S)
        if process.is_alive():
            process.kill()
            process.join()
