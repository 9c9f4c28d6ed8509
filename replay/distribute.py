"""Run a Python function over many small inputs on Spark, with progress and Ctrl-C.

A seed sweep is embarrassingly parallel: each input (a scenario and a seed) becomes a whole
simulation plus its checkers inside one task, and only a small row comes back. So this is an RDD
``map`` over the inputs, not a DataFrame pipeline; what needs care is around it:

- **Order.** Results come back in input order whatever the partitioning, so a sweep with
  ``local[1]``, ``local[2]`` or a cluster writes the same rows in the same order.
- **Balance.** Simulations differ in cost by seed; many small partitions (up to
  ``TASKS_PER_CORE`` per core) keep every core busy until the end instead of waiting on one
  unlucky partition.
- **Progress.** ``collect`` blocks, so it runs in a helper thread under its own job group while
  the caller's thread polls Spark's status tracker and reports finished tasks.
- **Ctrl-C.** The interrupt lands in the caller's thread, which cancels the job group (Spark
  interrupts the tasks) and re-raises; earlier calls' results are already the caller's. The
  tasks themselves ignore it (:func:`ignoring_sigint`): in local mode the executors' Python
  workers are in the terminal's process group, and a task interrupted there fails with a
  traceback that Spark logs to the terminal.
"""

from __future__ import annotations

import itertools
import signal
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

T = TypeVar("T")
R = TypeVar("R")

TASKS_PER_CORE = 8
POLL_S = 0.5
_GROUPS = itertools.count()


def ignoring_sigint(fn: Callable[[T], R], item: T) -> R:
    """``fn(item)`` with SIGINT ignored, for code that runs on an executor. A terminal's Ctrl-C
    reaches every process of its group, local-mode executors' Python workers included, where it
    would interrupt the task mid-run; the driver cancels the jobs instead (Spark then kills the
    worker), and a cluster's executors never see the Ctrl-C at all."""
    if threading.current_thread() is not threading.main_thread():
        return fn(item)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return fn(item)
    finally:
        signal.signal(signal.SIGINT, previous)


def partitions_for(items: int, parallelism: int) -> int:
    """How many tasks to cut ``items`` into: one item per task up to ``TASKS_PER_CORE`` per core."""
    return max(1, min(items, max(1, parallelism) * TASKS_PER_CORE))


def map_on_spark(
    spark: SparkSession,
    fn: Callable[[T], R],
    items: Sequence[T],
    *,
    on_progress: Callable[[int, int], None] | None = None,
    description: str = "testbed",
) -> list[R]:
    """``[fn(item) for item in items]`` computed by Spark's executors, in input order.

    ``on_progress(done_tasks, total_tasks)`` is called from this thread as tasks finish.
    """
    if not items:
        return []
    context = spark.sparkContext
    slices = partitions_for(len(items), context.defaultParallelism)
    group = f"testbed-{next(_GROUPS)}"
    outcome: dict[str, Any] = {}

    def job() -> None:
        # Job groups are thread-local properties: set them in the thread that runs the job.
        context.setJobGroup(group, description, interruptOnCancel=True)
        try:
            pairs = context.parallelize(list(enumerate(items)), slices)
            outcome["rows"] = pairs.map(
                lambda pair: (pair[0], ignoring_sigint(fn, pair[1]))
            ).collect()
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    worker = threading.Thread(target=job, name=group, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(POLL_S)
            if on_progress is not None:
                on_progress(_finished_tasks(spark, group), slices)
    except BaseException:
        context.cancelJobGroup(group)
        worker.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    if on_progress is not None:
        on_progress(slices, slices)
    return [row for _, row in sorted(outcome["rows"], key=lambda pair: pair[0])]


def _finished_tasks(spark: SparkSession, group: str) -> int:
    tracker = spark.sparkContext.statusTracker()
    done = 0
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        for stage_id in info.stageIds if info is not None else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is not None:
                done += stage.numCompletedTasks
    return done
