"""What ``testbed explore`` writes and prints: ``explore.json`` and ``counterexample.toml`` (the
counterexample replayed before it is kept), the replay command and the explanation."""

from __future__ import annotations

import json
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from scenarios.schema import Scenario, load_scenario, resolved_toml
from testbed.atomic import staged_folder
from testbed.explore import ExploreResult, Outcome, run_candidate
from testbed.interrupt import sigint_held

# --- writing it down ---------------------------------------------------------------------------


def default_out(scenario: Scenario, seed: int) -> Path:
    return Path("runs") / f"{scenario.scenario.name}-explore-seed{seed}"


def write_result(
    result: ExploreResult, out: Path, *, seed: int, check_replay: bool = True
) -> Path | None:
    """Write ``explore.json`` (and ``counterexample.toml`` if something was found) to ``out``,
    through a temporary folder renamed at the end; return the counterexample's path.

    The counterexample is replayed from the written file before anything is kept: a file that
    did not reproduce its run would be a testbed bug, raised as RuntimeError. With
    ``check_replay`` false (Ctrl-C during that replay) it is kept unchecked, and
    ``explore.json`` says so (``"replay_checked": false``).
    """
    path = None
    checked = False
    with staged_folder(out, "explore") as staging:
        if result.scenario is not None and result.outcome is not None:
            (staging / "counterexample.toml").write_text(resolved_toml(result.scenario))
            if check_replay and not result.outcome.error:
                _check_replay(staging / "counterexample.toml", result.outcome)
                checked = True
            path = out / "counterexample.toml"
        summary = summarize(result, seed=seed, counterexample=path)
        if path is not None:
            summary["replay_checked"] = checked
        (staging / "explore.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return path


def write_interrupted_result(result: ExploreResult, out: Path, *, seed: int) -> Path | None:
    """:func:`write_result` for a Ctrl-C that arrived while the result was being written: the
    result is marked interrupted and written again without replaying the counterexample, with
    SIGINT held, so ``explore.json`` exists and says ``"interrupted": true``."""
    with sigint_held():
        return write_result(replace(result, interrupted=True), out, seed=seed, check_replay=False)


def _check_replay(path: Path, expected: Outcome) -> None:
    again = run_candidate(load_scenario(path))
    if (again.digest, again.violated) != (expected.digest, expected.violated):
        raise RuntimeError(
            f"{path} does not replay its run (digest {again.digest} != {expected.digest}): "
            "the simulation is not deterministic"
        )


def replay_command(path: Path) -> str:
    """``testbed run <counterexample>`` with the file's absolute path (symlinks resolved), so
    the printed command works from any directory, as ``testbed sweep``'s do."""
    return shlex.join(["testbed", "run", str(path.resolve())])


def summarize(
    result: ExploreResult, *, seed: int, counterexample: Path | None = None
) -> dict[str, Any]:
    """``explore.json``: what was searched, how much, and what was found."""
    found = result.found
    outcome = result.outcome
    summary: dict[str, Any] = {
        "scenario": result.base.scenario.name,
        "explore_seed": seed,
        "known_bad": result.known_bad,
        "target": list(result.target),
        "examples": result.progress.examples,
        "runs": result.progress.runs,
        "interrupted": result.interrupted,
        "budget_spent": result.budget_spent,
        "found": found is not None,
        "unexpected": result.unexpected,
        "note": result.note,
    }
    if found is not None and outcome is not None:
        summary.update(
            {
                "seed": found.seed,
                "duration_s": found.duration_s,
                "schedule": found.entries(),
                "violated": sorted(outcome.violated),
                "invariants": outcome.verdicts,
                "digest": outcome.digest,
                "fired": [
                    {"schedule": s, "event": i, "time_ms": t, "f": f}
                    for s, i, t, f in outcome.fired
                ],
                "error": outcome.error,
                "counterexample": str(counterexample) if counterexample else None,
                "replay": replay_command(counterexample) if counterexample else None,
            }
        )
    return summary


def explain(result: ExploreResult, *, max_violations: int = 3) -> list[str]:
    """The counterexample in words: the schedule with the history events each entry caused, and
    the violation sentences."""
    found, outcome = result.found, result.outcome
    if found is None or outcome is None:
        return []
    base_entries = len(result.base.faults.schedule)
    count = len(found.schedule)
    faults = f"{count} scheduled fault{'s' if count != 1 else ''}" if count else "no faults"
    lines = [f"seed {found.seed}, {found.duration_s:g} s simulated, {faults}:"]
    fired: dict[int, list[tuple[int, int, str]]] = {}
    for index, event, time_ms, f in outcome.fired:
        fired.setdefault(index, []).append((event, time_ms, f))
    for position, entry in enumerate(found.entries()):
        index = base_entries + position
        options = "".join(
            f" {key}={entry[key]}" for key in ("checkpoint", "delay_ms", "delta_ms") if key in entry
        )
        caused = ", ".join(
            f"history #{e} {f} at {t / 1000:g} s" for e, t, f in fired.get(index, [])
        )
        lines.append(
            f"  [{index}] at {entry['at_s']:g} s {entry['kind']} {entry['target']}{options}"
            + (f" -> {caused}" if caused else " (did not fire)")
        )
    if outcome.error:
        lines.append("the simulation raised (a testbed bug):")
        lines += ["  " + line for line in outcome.error.rstrip().splitlines()[-3:]]
        return lines
    for name in sorted(outcome.violated):
        violations = outcome.verdicts[name]["violations"]
        note = "expected" if name in result.base.expect.violations else "unexpected"
        lines.append(f"{name} violated ({note}):")
        for violation in violations[:max_violations]:
            events = violation["events"]
            where = f" [events {', '.join(map(str, events[:8]))}]" if events else ""
            lines.append(f"  - {violation['why']}{where}")
        if len(violations) > max_violations:
            lines.append(f"  ... {len(violations) - max_violations} more")
    return lines


def report_lines(result: ExploreResult, counterexample: Path | None, out: Path) -> list[str]:
    """What ``testbed explore`` prints: the goal, the finding (explained), the replay command."""
    name = result.base.scenario.name
    progress = result.progress
    effort = f"{progress.examples} examples, {progress.runs} runs"
    if result.known_bad:
        goal = "known-bad variant: searching for a violation of " + ", ".join(
            result.base.expect.violations
        )
    else:
        goal = "real protocol: searching for any violation"
    lines = [f"explore {name}: {goal}"]
    if result.note:
        lines.append(result.note)
    outcome = result.outcome
    if result.found is None or outcome is None:
        if result.interrupted:
            lines.append(f"interrupted after {effort}: nothing found")
        elif result.known_bad:
            lines.append(f"NOT caught in {effort}: the variant escaped the search")
        else:
            lines.append(f"no violation in {effort}")
    else:
        shrunk = "shrunk"
        if result.interrupted:
            shrunk = "interrupted while shrinking, smallest so far"
        elif result.budget_spent:
            shrunk = "shrinking stopped at --shrink-runs, smallest so far"
        violated = ", ".join(sorted(outcome.violated))
        if outcome.error:
            lines.append(f"the SIMULATION FAILED after {effort} ({shrunk}): a testbed bug")
        elif result.known_bad:
            lines.append(f"caught after {effort} ({shrunk}): {violated} violated")
        else:
            lines.append(
                f"COUNTEREXAMPLE after {effort} ({shrunk}): the real protocol violates {violated}"
            )
        lines += explain(result)
    lines.append(f"search record: {out / 'explore.json'}")
    if counterexample is not None:
        lines.append(f"counterexample: {counterexample}")
        lines.append(f"replay: {replay_command(counterexample)}")
    return lines
