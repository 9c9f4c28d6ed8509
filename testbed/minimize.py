"""Shrink a caught known-bad run to its minimal counterexample, for the suite report.

A suite run of a known-bad variant proves the checkers catch it, but its history holds every
fault the random rates made (a dozen lost ACKs and crashes, most irrelevant) in a run of minutes:
a poor thing to put in front of a design review. This module turns that very run into the
smallest scenario that still shows an expected violation, without a blind search (``testbed
explore`` searches from the rates; here the caught run already says which faults happened):

1. the start is the first of these candidates that still fails, looked for in runs of growing
   length (step 3): the file's own hand-placed ``[[faults.schedule]]`` alone with every random
   rate 0 (one run that removes every random fault when the schedule reproduces the bug, as
   the catalog's known-bad scenarios are written to, or when the variant shows with no fault at
   all); the random faults that fired (``drop`` and ``duplicate`` of a checkpoint
   notification, ``checkpoint_failure``, ``crash``, ``clock_jump``, a one-job
   ``storage_write_failure``) as entries next to the file's own, rates 0; at the first and the
   full length also the same with ``ack_delay_ms`` kept (a late ACK is not recorded as a fault)
   and, failing all, the caught run itself with its random faults;
2. every remaining random rate is set to 0 if the violation survives without it;
3. the run is cut to the shortest whole number of seconds that still fails (entries that could
   not fire in it are dropped): the start is looked for first in a run just past the evidence
   of the caught run (the earliest moment one expected violation had all the events it points
   at), or, when that is the run's end (a loss the final snapshot shows), in the shortest run
   worth trying (two checkpoints of the slowest job), then in runs twice as long each time up to
   the full run; found at the first length it is kept (a run ending before the evidence rarely
   shows the violation), else a binary search between the last length that passed and this one
   finds the shortest;
4. the entries that did not fire are deleted, then all entries of one kind at once (the
   crashes, the lost ACKs, ...), then entries by delta debugging (halves, quarters, ... then one
   at a time);
5. :func:`testbed.explore.tighten` slides checkpoint-named entries earlier and shortens again;
6. every entry and random rate left is deleted alone once more at the final length: the result
   is *minimal* (1-minimal: every entry necessary) when none of those runs shows an expected
   violation any more.

Step 3 comes before 2 and 4 because every later run is then shorter, hence cheaper; identical
candidates run once (so step 6 mostly reuses step 4's runs).

Every simulation is in memory and counted against ``max_runs`` and, by its ``duration_s``,
against ``max_simulated_s`` (bounds in runs and simulated time, so the result never depends on
the machine's speed); when either is spent, the smallest failing candidate so far is kept and
called "the smallest found within the run budget" instead of minimal. The result is written
into the run folder:
``counterexample.toml`` (a scenario ``testbed run`` replays with exit code 0: its ``[expect]``
is what it violates), ``counterexample.json`` (``testbed explore``'s record format) and
``counterexample.txt`` (the explanation and the replay command). It is replayed from the
written file before it is kept; a file that does not reproduce its run raises RuntimeError.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from invariants.checks import CHECKERS
from models.history import Event
from scenarios.schema import Scenario, load_scenario, resolved_toml, scenario_from_dict
from testbed.atomic import write_text_atomic
from testbed.explore import (
    ExploreProgress,
    ExploreResult,
    Outcome,
    run_candidate,
    tighten,
)
from testbed.explore_draw import (
    RANDOM_RATES,
    Candidate,
    make_candidate,
)
from testbed.explore_report import (
    explain,
    replay_command,
    summarize,
)
from testbed.history_faults import faults_from_history

DEFAULT_MAX_RUNS = 24
"""Simulations one minimization may spend (each a part of the scenario's run, in memory)."""
DEFAULT_MAX_SIMULATED_S = 600.0
"""And the simulated seconds they may add up to (each run counts its ``duration_s``): about half
a minute of CPU for a two-job scenario, whatever the scenario's own length."""

FILES = ("counterexample.toml", "counterexample.json", "counterexample.txt")


@dataclass(frozen=True)
class Minimized:
    """What :func:`minimize_run` found and wrote (``path`` is ``counterexample.toml``)."""

    path: Path
    candidate: Candidate
    kept_rates: dict[str, float]
    outcome: Outcome
    runs: int
    budget_spent: bool
    minimal: bool = False
    """1-minimal: deleting any one entry or random rate was tried and no longer fails."""


@dataclass(frozen=True)
class _Point:
    """One candidate of the minimization: the schedule, duration and seed (``Candidate``) plus
    the random rates still on."""

    candidate: Candidate
    kept: tuple[str, ...]


def _fits(entry: dict[str, Any], duration_s: float, interval_s: dict[str, float]) -> bool:
    """Whether ``entry`` belongs in a run of ``duration_s``: valid there (``at_s`` before its
    end) and able to fire (a named checkpoint is triggered no earlier than that many
    intervals in)."""
    if entry["at_s"] >= duration_s:
        return False
    if "checkpoint" in entry:
        return entry["checkpoint"] * interval_s[entry["target"]] < duration_s
    return True


class _Search:
    """Runs candidates (each once, within the budget) and remembers the smallest failure."""

    def __init__(
        self,
        scenario: Scenario,
        max_runs: int,
        max_simulated_s: float,
        run: Callable[[Scenario], Outcome],
    ) -> None:
        self.scenario = scenario
        data = scenario.model_dump(mode="json")
        data["faults"]["schedule"] = []
        data["table"]["storage"] = "memory"
        name = data["scenario"]["name"]
        if not name.endswith("_counterexample"):
            data["scenario"]["name"] = f"{name}_counterexample"
        data["scenario"]["description"] = (
            f"Minimal counterexample of scenario {name!r}, shrunk by testbed suite from a caught "
            f"run (seed {scenario.scenario.seed}): its random faults replaced by this schedule."
        )
        self.base_data = data
        self.target = set(scenario.expect.violations) & set(CHECKERS)
        self.max_runs = max_runs
        self.max_simulated_s = max_simulated_s
        self.run = run
        self.runs = 0
        self.simulated_s = 0.0
        self.budget_spent = False
        self.cache: dict[_Point, Outcome] = {}
        self.interval_s = {job.name: job.checkpoint_interval_s for job in scenario.jobs}

    def shortest_s(self) -> int:
        """The shortest run worth trying: two checkpoints of the slowest job."""
        return max(1, math.ceil(2 * max(self.interval_s.values())))

    def scenario_for(self, point: _Point, expect: Sequence[str] | None = None) -> Scenario:
        data = json.loads(json.dumps(self.base_data))
        data["scenario"].update(seed=point.candidate.seed, duration_s=point.candidate.duration_s)
        faults = data["faults"]
        for rate in RANDOM_RATES:
            if rate not in point.kept:
                faults[rate] = 0
        faults["schedule"] = point.candidate.entries()
        if expect is not None:
            data["expect"] = {"violations": list(expect)}
        return scenario_from_dict(data, f"<minimize of {self.scenario.scenario.name}>")

    def fails(self, point: _Point) -> bool:
        outcome = self.cache.get(point)
        if outcome is None:
            cost_s = point.candidate.duration_s
            if self.runs >= self.max_runs or self.simulated_s + cost_s > self.max_simulated_s:
                self.budget_spent = True
                return False
            self.runs += 1
            self.simulated_s += cost_s
            try:
                outcome = self.run(self.scenario_for(point))
            except Exception as error:  # a testbed bug on a candidate: not a counterexample
                outcome = Outcome(frozenset(), {}, "", error=repr(error))
            self.cache[point] = outcome
        return not outcome.error and bool(outcome.violated & self.target)

    def point(
        self, entries: list[dict[str, Any]], duration_s: float, kept: Sequence[str]
    ) -> _Point:
        fitting = [e for e in entries if _fits(e, duration_s, self.interval_s)]
        candidate = make_candidate(self.scenario.scenario.seed, duration_s, fitting)
        return _Point(candidate, tuple(sorted(kept)))


def minimize_run(
    scenario: Scenario,
    events: Sequence[Event],
    run_dir: Path,
    *,
    max_runs: int = DEFAULT_MAX_RUNS,
    max_simulated_s: float = DEFAULT_MAX_SIMULATED_S,
    verdicts: dict[str, Any] | None = None,
    run: Callable[[Scenario], Outcome] = run_candidate,
) -> Minimized | None:
    """Shrink the caught run of ``scenario`` (its history ``events``; ``verdicts``, its
    ``result.json`` invariants, if at hand, say where the violation showed) and write the
    counterexample files into ``run_dir``; ``None`` when no candidate shows an expected
    violation (nothing is written then)."""
    search = _Search(scenario, max_runs, max_simulated_s, run)
    if not search.target:
        return None
    faults = scenario.faults
    rates = [rate for rate in RANDOM_RATES if getattr(faults, rate)]
    own = [entry.model_dump(mode="json") for entry in faults.schedule]
    converted = faults_from_history(events, scenario)
    full_s = scenario.scenario.duration_s
    unrecorded = [rate for rate in rates if rate == "ack_delay_ms"]
    evidence_s = _evidence_s(events, verdicts, search.target)
    best, passed_s = None, 0.0
    lengths = _ladder(_cut_s(evidence_s, search.shortest_s(), full_s), full_s)
    for length in lengths:  # 1. and 3.: the first start that fails, shortest run first
        starts = [search.point(own, length, [])]  # the hand-placed faults alone
        starts.append(search.point(own + converted, length, []))
        if length in (lengths[0], full_s):  # rates, which make longer runs, at both ends only
            if unrecorded:
                starts.append(search.point(own + converted, length, unrecorded))
            starts.append(search.point(own, length, rates))  # the caught run (cut there)
        best = next((start for start in dict.fromkeys(starts) if search.fails(start)), None)
        if best is not None:
            break
        passed_s = length
    if best is None:
        return None
    if passed_s:  # not at the first length tried: between the last that passed and this one
        best = _shorten(search, best, math.floor(passed_s) + 1)  # 3.
    for rate in best.kept:  # 2. rates not needed
        without = _Point(best.candidate, tuple(r for r in best.kept if r != rate))
        if search.fails(without):
            best = without
    best = _delete_unfired(search, best)  # 4.
    best = _delete_kinds(search, best)
    best = _delete_entries(search, best)
    kept = best.kept

    def fails(candidate: Candidate) -> bool:
        return search.fails(_Point(candidate, kept))

    best = _Point(tighten(best.candidate, fails, search.interval_s), kept)  # 5.
    best, minimal = _one_minimal(search, best)  # 6.
    outcome = search.cache[best]
    return _write(search, best, outcome, run_dir, minimal=minimal)


def _evidence_s(
    events: Sequence[Event], verdicts: dict[str, Any] | None, target: set[str]
) -> float | None:
    """When the caught run first had the whole evidence of one expected violation (seconds), if
    known: for each violation of an expected invariant the latest event it points at, and the
    earliest of those. One violation is all a counterexample needs, and the latest event of all
    would mostly be the run's end (an invariant judged on the final table points there), where
    no cut is possible; a time-travel or ordering violation often completes early."""
    if not verdicts:
        return None
    times = {event.index: event.time for event in events}
    complete = [
        max(pointed)
        for name in sorted(target)
        for violation in verdicts.get(name, {}).get("violations", [])
        if (pointed := [times[i] for i in violation.get("events", []) if i in times])
    ]
    return min(complete) / 1000 if complete else None


def _cut_s(evidence_s: float | None, shortest_s: int, longest_s: float) -> int | None:
    """The first length to try: the whole second just past the evidence, at least the shortest
    run worth trying; that shortest run when the evidence is unknown or at the end (a loss the
    final snapshot shows); None when no run below ``longest_s`` is worth trying."""
    cut_s = max(shortest_s, math.floor(evidence_s or 0) + 1)
    if cut_s >= longest_s:
        cut_s = shortest_s
    return cut_s if cut_s < longest_s else None


def _ladder(first_s: int | None, full_s: float) -> list[float]:
    """The lengths the start is looked for at, shortest first: ``first_s`` (just past the
    evidence, or the shortest run worth trying), doubling up to the full run. A loss that the
    final snapshot shows (its evidence is the run's end) often happened in the first seconds,
    and each shorter try costs at most half the next."""
    lengths: list[float] = []
    length = first_s
    while length is not None and length < full_s:
        lengths.append(float(length))
        length *= 2
    return [*lengths, full_s]


def _shorten(search: _Search, best: _Point, low_s: int) -> _Point:
    """The shortest whole-second run of at least ``low_s`` that still fails (binary search;
    entries that cannot fire in a shorter run are dropped, which is the point: it removes late
    faults cheaply)."""
    entries = best.candidate.entries()
    low, high = low_s, math.floor(best.candidate.duration_s)
    found = best
    while low < high:
        middle = (low + high) // 2
        point = search.point(entries, float(middle), best.kept)
        if search.fails(point):
            found, high = point, middle
        else:
            low = middle + 1
    return found


def _delete_unfired(search: _Search, best: _Point) -> _Point:
    """Delete the entries that did not fire in the best run (an ACK of a checkpoint that never
    completed, a fault after the job stopped): one run."""
    fired = {index for index, *_ in search.cache[best].fired}
    entries = best.candidate.entries()
    rest = [entry for index, entry in enumerate(entries) if index in fired]
    if len(rest) < len(entries):
        point = search.point(rest, best.candidate.duration_s, best.kept)
        if search.fails(point):
            return point
    return best


def _delete_kinds(search: _Search, best: _Point) -> _Point:
    """Delete every entry of one kind at once (kinds in a fixed order), keeping each deletion
    that still fails: a few runs that often remove most of a random schedule."""
    for kind in sorted({entry["kind"] for entry in best.candidate.entries()}):
        rest = [e for e in best.candidate.entries() if e["kind"] != kind]
        if len(rest) < len(best.candidate.schedule):
            point = search.point(rest, best.candidate.duration_s, best.kept)
            if search.fails(point):
                best = point
    return best


def _delete_entries(search: _Search, best: _Point) -> _Point:
    """Delta debugging over the schedule: try deleting chunks (halves, then quarters, ...,
    single entries); keep any deletion that still fails."""
    entries = best.candidate.entries()
    chunks = 2
    while entries and chunks <= 2 * len(entries):
        size = max(1, math.ceil(len(entries) / chunks))
        deleted = False
        for start in range(0, len(entries), size):
            rest = entries[:start] + entries[start + size :]
            point = search.point(rest, best.candidate.duration_s, best.kept)
            if search.fails(point):
                entries, best, deleted = rest, point, True
                break
        if search.budget_spent:
            break
        if deleted:
            chunks = max(2, chunks - 1)
        elif size == 1:
            break
        else:
            chunks *= 2
    return best


def _one_minimal(search: _Search, best: _Point) -> tuple[_Point, bool]:
    """Check that every entry (and every random rate still on) is necessary: delete each alone
    at the final length; a deletion that still fails is taken and the check starts again.
    Returns the point and whether it is 1-minimal, i.e. every such deletion was run (not
    refused by the budget) and none failed. Deletions the delta debugging already ran on the
    same candidate are cached, so this usually costs a run per entry only when :func:`tighten`
    moved or shortened the schedule."""
    while True:
        entries = best.candidate.entries()
        duration_s = best.candidate.duration_s
        smaller = [
            search.point(entries[:i] + entries[i + 1 :], duration_s, best.kept)
            for i in range(len(entries))
        ] + [_Point(best.candidate, tuple(r for r in best.kept if r != rate)) for rate in best.kept]
        failing = next((point for point in smaller if search.fails(point)), None)
        if failing is None:
            return best, all(point in search.cache for point in smaller)
        best = failing


def _write(
    search: _Search, best: _Point, outcome: Outcome, run_dir: Path, *, minimal: bool
) -> Minimized:
    counterexample = search.scenario_for(best, expect=sorted(outcome.violated))
    base = scenario_from_dict(
        {**search.scenario.model_dump(mode="json"), "faults": search.base_data["faults"]},
        "<minimize>",
    )
    result = ExploreResult(
        base=base,
        target=tuple(sorted(search.target)),
        known_bad=True,
        progress=ExploreProgress(runs=search.runs, shrinking=True, best=best.candidate),
        found=best.candidate,
        scenario=counterexample,
        outcome=outcome,
        budget_spent=search.budget_spent,
    )
    path = run_dir / "counterexample.toml"
    kept_rates = {rate: getattr(search.scenario.faults, rate) for rate in best.kept}
    write_text_atomic(path, resolved_toml(counterexample))
    again = search.run(load_scenario(path))
    if (again.digest, again.violated) != (outcome.digest, outcome.violated):
        path.unlink()
        raise RuntimeError(
            f"{path} does not replay its run (digest {again.digest} != {outcome.digest}): "
            "the simulation is not deterministic"
        )
    record = summarize(result, seed=0, counterexample=path)
    del record["explore_seed"]  # not from a search
    record["minimize"] = {
        "runs": search.runs,
        "max_runs": search.max_runs,
        "simulated_s": search.simulated_s,
        "max_simulated_s": search.max_simulated_s,
        "budget_spent": search.budget_spent,
        "minimal": minimal,
        "kept_rates": kept_rates,
        "from_duration_s": search.scenario.scenario.duration_s,
        "from_seed": search.scenario.scenario.seed,
    }
    write_text_atomic(
        run_dir / "counterexample.json", json.dumps(record, indent=2, sort_keys=True) + "\n"
    )
    lines = explain(result)
    if kept_rates:
        lines.insert(
            1, "  plus random faults: " + ", ".join(f"{k} = {v:g}" for k, v in kept_rates.items())
        )
    how = "minimal" if minimal else "smallest found within the run budget"
    lines = [
        f"{how} counterexample of {search.scenario.scenario.name} "
        f"(shrunk in {search.runs} runs from seed {search.scenario.scenario.seed}, "
        f"{search.scenario.scenario.duration_s:g} s):",
        *lines,
        f"replay: {replay_command(path)}",
    ]
    write_text_atomic(run_dir / "counterexample.txt", "\n".join(lines) + "\n")
    return Minimized(
        path, best.candidate, kept_rates, outcome, search.runs, search.budget_spent, minimal
    )


__all__ = [
    "DEFAULT_MAX_RUNS",
    "DEFAULT_MAX_SIMULATED_S",
    "FILES",
    "Minimized",
    "minimize_run",
]
