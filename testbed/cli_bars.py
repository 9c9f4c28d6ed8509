"""Live status lines on stderr (rich): simulated time, counts, search state, steps; stdout stays
the command's result."""

from __future__ import annotations


class StderrBar:
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


class StepLine(StderrBar):
    """What a command is doing now (a pulsing bar: the number of steps is not known)."""

    def __init__(self, label: str) -> None:
        from rich.progress import TextColumn

        super().__init__(label, TextColumn("{task.description}"), total=None)

    def update(self, step: str) -> None:
        self.progress.update(self.task, description=step)


class ProgressBar(StderrBar):
    """Simulated time of one run."""

    def __init__(self, name: str) -> None:
        from rich.progress import TextColumn

        text = TextColumn("{task.completed:.0f}/{task.total:.0f} s simulated")
        super().__init__(f"simulating {name}", text, total=1)

    def update(self, now_ms: int, end_ms: int) -> None:
        self.progress.update(self.task, completed=now_ms / 1000, total=end_ms / 1000)


class ExploreStatus(StderrBar):
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


class CountBar(StderrBar):
    """Things done out of a total (seeds, runs)."""

    def __init__(self, text: str, unit: str) -> None:
        from rich.progress import MofNCompleteColumn, TextColumn

        super().__init__(text, MofNCompleteColumn(), TextColumn(unit), total=None)

    def update(self, done: int, total: int) -> None:
        self.progress.update(self.task, completed=done, total=total)
