"""What every role of a simulated Flink job runs inside: its execution attempt, the job-control
interface through which it fails the job, and the gateways that carry its messages.

Flink runs each operator subtask in a ``Task`` (``org.apache.flink.runtime.taskmanager.Task``):
an exception escaping the operator fails the task, which reports it to the JobMaster
(``updateTaskExecutionState``), whose failover strategy restarts what failed; the operator
coordinator fails the job through ``OperatorCoordinator.Context#failJob``. :meth:`Attempt.run` is
that wrapper: an error a Hudi job fails on is recorded as an ``error`` event of the process and
fails the attempt over; an interrupt (the failover cancelling the attempt) ends the process.

A role never holds the job itself: it holds its :class:`Attempt` (the simpy environment, the
history, its job's name and attempt number, and a :class:`JobControl`), so a restart path that
replaces one role (one task, or the coordinator alone) only has to build that role again.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any, Protocol

import simpy

from models.storage import FileAlreadyExistsError
from models.table_errors import HoodieException
from sim.history import HistoryRecorder
from sim.network import Channel

JOB_FAILURES: tuple[type[BaseException], ...] = (
    HoodieException,  # every protocol error of models (Hudi's HoodieException)
    OSError,  # storage write failures, FileAlreadyExistsError (a time collision)
)
"""Errors that fail a Flink job running Hudi's sink (and restart it), never the simulator: what
Hudi's ``NonThrownExecutor`` hands to ``context.failJob`` on the coordinator, and what fails a
task (Flink's ``Task`` reports it to the JobMaster). Anything else is a bug of the testbed and
ends the run."""


class JobControl(Protocol):
    """The job as its roles see it: Flink's JobMaster receiving a task's or the coordinator's
    failure (``updateTaskExecutionState``, ``OperatorCoordinator.Context#failJob``)."""

    @property
    def epoch(self) -> int:
        """The job's current execution attempt (each failover starts the next)."""
        ...

    def fail(self, epoch: int, cause: str, *, failed_task: int | None = None) -> None:
        """Fail attempt ``epoch`` over; nothing if it is no longer current or already failing.
        ``failed_task``: the write task whose failure it is (Flink may restart its region
        alone); None for a failure of the whole job (``failJob``, a failed checkpoint)."""
        ...


@dataclass(frozen=True)
class Attempt:
    """One execution attempt of a job, as each of its roles sees it.

    ``name_process`` is the fault hook every process fires when it starts (the nemesis learns the
    history name of the running simpy process, so ``storage_failure`` can target it);
    ``processes`` collects the attempt's simpy processes, which a failover interrupts in order.
    """

    env: simpy.Environment
    history: HistoryRecorder
    job: str
    epoch: int
    control: JobControl
    name_process: Callable[[str], None]
    processes: list[simpy.Process] = field(default_factory=list)

    def process_name(self, role: str) -> str:
        """``<job>/<role>``: the process's name in the history."""
        return f"{self.job}/{role}"

    def is_current(self, epoch: int) -> bool:
        """Whether a message stamped with ``epoch`` belongs to the job's current attempt (Flink
        drops RPCs addressed to an earlier execution attempt)."""
        return epoch == self.control.epoch

    def is_running(self) -> bool:
        """Whether the attempt still runs: a failover interrupts every process it started."""
        return any(p.is_alive for p in self.processes)

    def fail(self, cause: str, *, failed_task: int | None = None) -> None:
        """Fail this attempt over: the job (Flink's ``failJob``) or, with ``failed_task``, that
        write task (``updateTaskExecutionState``)."""
        self.control.fail(self.epoch, cause, failed_task=failed_task)

    def start(self, process: Generator[Any, Any, None]) -> simpy.Process:
        """Start a role's process (its ``run()``) as a simpy process of this attempt."""
        started = self.env.process(process)
        self.processes.append(started)
        return started

    def spawn(self, role: str, body: Generator[Any, Any, None]) -> simpy.Process:
        """Start ``body`` as the process ``<job>/<role>`` of this attempt, under :meth:`run`."""
        return self.start(self.run(role, body))

    def run(self, role: str, body: Generator[Any, Any, None]) -> Generator[Any, Any, None]:
        """Run a role's body as Flink's ``Task`` runs an operator: errors in
        :data:`JOB_FAILURES` are recorded and fail the attempt over, an interrupt ends it."""
        self.name_process(self.process_name(role))
        try:
            yield from body
        except simpy.Interrupt:
            return
        except JOB_FAILURES as error:
            self.history.fail(self.process_name(role), "error", {"error": describe(error)})
            self.fail(f"{role}: {describe(error)}", failed_task=task_index(role))


@dataclass(frozen=True)
class Gateway:
    """One direction between two roles: an RPC channel and the receiver's delivery function
    (Flink's ``OperatorEventGateway`` from a subtask to its coordinator, the coordinator's
    ``SubtaskGateway`` back, a task's RPCs to the JobMaster). Two gateways may share a channel,
    as a task's events and its checkpoint ACKs do (an event sent before an ACK arrives first)."""

    channel: Channel
    deliver: Callable[[Any], None]

    def send(self, message: Any) -> None:
        """Send ``message``; it is delivered after the channel's delay, or lost by it."""
        self.channel.send(message, self.deliver)


def task_index(role: str) -> int | None:
    """The write task a role name ``task-<i>`` names (None for any other role)."""
    prefix, _, index = role.partition("-")
    return int(index) if prefix == "task" and index.isdigit() else None


def describe(error: BaseException) -> str:
    """``<ExceptionClass>: <message>``, as the history records an error."""
    if isinstance(error, FileAlreadyExistsError):
        return f"FileAlreadyExistsError: {error}"
    return f"{type(error).__name__}: {error}"


__all__ = ["JOB_FAILURES", "Attempt", "Gateway", "JobControl", "describe", "task_index"]
