"""``testbed run``: simulate one scenario and write its run folder.

The run folder is written under a temporary name next to the target and renamed at the end, so a
crash or Ctrl-C never leaves a half-written folder that looks complete:

- ``scenario.toml``: the resolved scenario (every default filled in, the seed that ran)
- ``history.jsonl``: every protocol step and fault, one JSON object per line
- ``result.json``: ``{"scenario", "seed", "release", "digest", "ok", "invariants", "metrics", ...}``
- ``table/``: the Hudi table itself with ``--storage local``
- ``.testbed-output.json``: the marker that says the testbed wrote the folder (:mod:`testbed.outputs`)

A run stopped by ``[sim] max_wall_s`` (:class:`RunawayRunError`) keeps ``scenario.toml``, the
history so far and ``partial.json`` (why it stopped), and no ``result.json``.

``ok`` is true when the verdicts match the scenario's ``[expect] violations``: exactly the expected
invariants are violated (a known-bad variant must be caught, the real protocol must pass).
"""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invariants.checks import check_all
from invariants.verdict import Verdict
from models.view.table import HudiTable
from reports.metrics import compute_metrics
from scenarios.schema import Scenario, resolved_toml
from sim.history import HistoryRecorder
from sim.world import RunOutcome, World
from testbed.atomic import staged_folder


@dataclass(frozen=True)
class RunResult:
    folder: Path
    result: dict[str, object]
    replay: str

    @property
    def ok(self) -> bool:
        return bool(self.result["ok"])


def default_out(scenario: Scenario) -> Path:
    return Path("runs") / f"{scenario.scenario.name}-seed{scenario.scenario.seed}"


def verdicts_match(verdicts: dict[str, Verdict], expected: tuple[str, ...]) -> bool:
    """True when exactly the expected invariants (among those checked) are violated."""
    violated = {name for name, v in verdicts.items() if not v.ok}
    return violated == {name for name in expected if name in verdicts}


def replay_command(source: Path, scenario: Scenario, out: Path) -> str:
    """The command that repeats the run: the scenario file and the run folder as absolute paths
    (symlinks resolved, as ``testbed sweep`` and ``testbed explore`` print them), so it works
    from any directory; the seed and storage as used, whatever the file says."""
    parts = ["testbed", "run", str(source.resolve()), "--seed", str(scenario.scenario.seed)]
    parts += ["--storage", scenario.table.storage, "--out", str(out.resolve())]
    return shlex.join(parts)


class RunawayRunError(Exception):
    """A run still simulating after ``[sim] max_wall_s`` of wall time; carries its history so
    far (one line for the user)."""

    def __init__(self, message: str, now_ms: int) -> None:
        super().__init__(message)
        self.now_ms = now_ms
        self.history: HistoryRecorder | None = None


def _watched(
    scenario: Scenario, progress: Callable[[int, int], None] | None
) -> Callable[[int, int], None]:
    """``progress`` that raises :class:`RunawayRunError` once the run has taken longer than
    ``[sim] max_wall_s``; the wall clock only ever stops a run, it never reaches its history."""
    limit_s = scenario.sim.max_wall_s
    started = time.monotonic()

    def watch(now_ms: int, end_ms: int) -> None:
        if progress is not None:
            progress(now_ms, end_ms)
        if time.monotonic() - started > limit_s:
            raise RunawayRunError(
                f"{scenario.scenario.name}: stopped after [sim] max_wall_s = {limit_s:g} s of "
                f"wall time, at simulated {now_ms / 1000:g} s of {end_ms / 1000:g} s",
                now_ms,
            )

    return watch


def simulate_and_check(
    scenario: Scenario,
    *,
    table_root: Path | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[RunOutcome, dict[str, Verdict]]:
    """Simulate ``scenario`` and run every checker on its history and table (``testbed run``,
    ``explore`` and ``sweep`` all judge a run this one way). Raises :class:`RunawayRunError`
    when the simulation outlasts ``[sim] max_wall_s``."""
    world = World(scenario, table_root=table_root)
    try:
        outcome = world.run(_watched(scenario, progress))
    except RunawayRunError as err:
        err.history = world.history
        raise
    # Checkers read with the real rules, whatever variant wrote the table.
    return outcome, check_all(outcome.history.events, HudiTable(outcome.storage))


def result_json(
    scenario: Scenario, outcome: RunOutcome, verdicts: dict[str, Verdict]
) -> dict[str, Any]:
    """The run's ``result.json`` (a public contract: fields are only ever added)."""
    expected = scenario.expect.violations
    return {
        "scenario": scenario.scenario.name,
        "seed": scenario.scenario.seed,
        "release": scenario.protocol.release,
        "digest": outcome.history.digest(),
        "ok": verdicts_match(verdicts, expected),
        "expected_violations": list(expected),
        "unchecked_expectations": [n for n in expected if n not in verdicts],
        "drained": outcome.drained,
        "invariants": {name: verdicts[name].to_json() for name in sorted(verdicts)},
        "metrics": compute_metrics(outcome.history.events),
        "storage": storage_summary(outcome.storage),
        "markers": outcome.markers,
        "data_files": data_files(outcome.storage),
        "index": (
            {
                job: {"state_keys": [list(point) for point in points]}
                for job, points in outcome.index_state.items()
            }
            if outcome.index_state
            else None
        ),
    }


def data_files(storage: object) -> dict[str, dict[str, int | None]] | None:
    """Every data file the run wrote, by path: its bytes and a base file's records (None for a
    storage that does not count them)."""
    files = getattr(storage, "data_files", None)
    if files is None:
        return None
    return {path: {"bytes": f.bytes, "records": f.records} for path, f in files.items()}


def storage_summary(storage: object) -> dict[str, object] | None:
    """The run's storage requests and their time by kind (None for a storage without counters)."""
    summary = getattr(storage, "summary", None)
    return summary() if callable(summary) else None


def run_scenario(
    scenario: Scenario,
    source: Path,
    out: Path,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> RunResult:
    """Simulate ``scenario`` (read from ``source``) and write the run folder ``out``. A runaway
    run (:class:`RunawayRunError`) leaves a partial run folder (:func:`write_partial`)."""
    with staged_folder(out) as staging:
        table_root = staging / "table" if scenario.table.storage == "local" else None
        if table_root is not None:
            table_root.mkdir()
        try:
            outcome, verdicts = simulate_and_check(
                scenario, table_root=table_root, progress=progress
            )
        except RunawayRunError as err:
            write_partial(staging, scenario, err)
            runaway = err
        else:
            runaway = None
            result = _write_run(staging, scenario, outcome, verdicts)
    if runaway is not None:
        raise runaway
    return RunResult(out, result, replay_command(source, scenario, out))


def write_partial(folder: Path, scenario: Scenario, err: RunawayRunError) -> None:
    """A stopped run's folder: ``scenario.toml``, the history so far and ``partial.json``
    saying why it stopped; no ``result.json``, so nothing takes it for a finished run."""
    (folder / "scenario.toml").write_text(resolved_toml(scenario))
    if err.history is not None:
        (folder / "history.jsonl").write_bytes(err.history.jsonl_bytes())
    partial = {"partial": True, "reason": str(err), "simulated_ms": err.now_ms}
    (folder / "partial.json").write_text(json.dumps(partial, indent=2, sort_keys=True) + "\n")


def _write_run(
    staging: Path, scenario: Scenario, outcome: RunOutcome, verdicts: dict[str, Verdict]
) -> dict[str, Any]:
    """The finished run's files; returns its ``result.json``."""
    result = result_json(scenario, outcome, verdicts)
    (staging / "scenario.toml").write_text(resolved_toml(scenario))
    (staging / "history.jsonl").write_bytes(outcome.history.jsonl_bytes())
    (staging / "result.json").write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return result
