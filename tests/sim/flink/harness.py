"""What the role tests share: a simpy environment, a history and one attempt whose job control
only records failures, so a role runs on its own, wired by hand to fakes of its peers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import simpy

from sim.flink.runtime import Attempt, Gateway
from sim.history import HistoryRecorder
from sim.network import Channel
from sim.rng import Rng

JOB = "job0"


@dataclass
class FakeControl:
    """A job that only records what its roles ask of it."""

    epoch: int = 1
    failures: list[tuple[int, str]] = field(default_factory=list)
    failed_tasks: list[int | None] = field(default_factory=list)

    def fail(self, epoch: int, cause: str, *, failed_task: int | None = None) -> None:
        self.failures.append((epoch, cause))
        self.failed_tasks.append(failed_task)


class RoleHarness:
    """``env``, ``history``, ``control``, the processes named so far (``named``) and ``attempt``."""

    def __init__(
        self,
        epoch: int = 1,
        *,
        env: simpy.Environment | None = None,
        history: HistoryRecorder | None = None,
    ) -> None:
        """``env`` and ``history``: a world's, for roles that use its table (default: new)."""
        self.env = env or simpy.Environment()
        self.history = history or HistoryRecorder(lambda: int(self.env.now))
        self.control = FakeControl(epoch)
        self.named: list[str] = []
        self.attempt = Attempt(
            self.env, self.history, JOB, epoch, control=self.control, name_process=self.named.append
        )
        self.rng = Rng(7)

    def channel(self, name: str, delay_ms: tuple[int, int] = (2, 4), **kwargs: Any) -> Channel:
        return Channel(self.env, name, self.rng.child(name), delay_ms=delay_ms, **kwargs)

    def gateway(self, name: str, deliver: Any) -> Gateway:
        return Gateway(self.channel(name), deliver)

    def events(self, f: str | None = None) -> list[Any]:
        return [e for e in self.history.events if f is None or e.f == f]
