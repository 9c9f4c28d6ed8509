"""``testbed explore``: search fault schedules and seeds for a violation, shrink it, write it down.

A scenario's random fault rates say which faults may happen and how often; they do not say which
*combination* breaks an invariant, and a failing random run is a poor bug report (hundreds of
faults, one of which matters). Explore turns the rates into explicit ``[[faults.schedule]]``
entries drawn by hypothesis (random rates set to 0), so every fault is a value hypothesis can
delete or move, runs each candidate in memory through the checkers, and lets hypothesis shrink
the first failure to the smallest schedule, then the shortest run and the smallest seed (two
cheap passes of its own finish the job, :func:`tighten`). The result is an ordinary scenario
file that ``testbed run`` replays to the same violation.

What counts as a failure depends on the scenario:

- a real-protocol scenario (``[expect] violations = []``): any violation is a bug;
- a known-bad variant: a violation of one of its expected invariants, i.e. the search proves the
  checkers catch the variant from its random faults alone.

The search is deterministic for a given ``seed`` (hypothesis is seeded, its database is off, and
shrinking is bounded by a number of runs rather than by wall time). Identical candidates are run
once. Ctrl-C stops the search and keeps the smallest failure seen so far.
"""

from __future__ import annotations

import contextlib
import math
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis.internal.conjecture import engine as hypothesis_engine

from invariants.checks import CHECKERS
from scenarios.schema import Scenario
from scenarios.schema import scenario_from_dict as validate_scenario
from testbed.explore_draw import (
    DEFAULT_SEED_RANGE,
    NO_FAULT_RATES,
    Candidate,
    candidate_scenario,
    candidates,
    fault_plan,
    make_candidate,
)
from testbed.interrupt import SigintWatch, sigint_watched
from testbed.run import simulate_and_check

# --- running one candidate -------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What the checkers said about one candidate's run."""

    violated: frozenset[str]
    verdicts: dict[str, Any]
    """Invariant name -> ``Verdict.to_json()``."""
    digest: str
    fired: tuple[tuple[int, int, int, str], ...] = ()
    """Scheduled faults that fired: (schedule index, history index, time ms, fault ``f``)."""
    error: str = ""
    """The traceback if the simulation or a checker raised (a testbed bug, not a violation)."""


def run_candidate(scenario: Scenario) -> Outcome:
    """Simulate ``scenario`` in memory and check it, as ``testbed run`` does."""
    result, verdicts = simulate_and_check(scenario)
    events = result.history.events
    fired = tuple(
        (e.value["schedule"], e.index, e.time, e.f)
        for e in events
        if e.process == "nemesis" and isinstance(e.value, dict) and "schedule" in e.value
    )
    return Outcome(
        violated=frozenset(name for name, v in verdicts.items() if not v.ok),
        verdicts={name: verdicts[name].to_json() for name in sorted(verdicts)},
        digest=result.history.digest(),
        fired=fired,
    )


# --- the search --------------------------------------------------------------------------------


@dataclass
class ExploreProgress:
    """Reported after every simulated run (for a progress line)."""

    examples: int = 0
    """Candidates run before the first failure (hypothesis' generate phase)."""
    runs: int = 0
    """Simulations run in total (identical candidates run once)."""
    shrinking: bool = False
    best: Candidate | None = None
    best_violated: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExploreResult:
    base: Scenario
    target: tuple[str, ...]
    """The invariants whose violation counts (the expected ones), or all checked ones."""
    known_bad: bool
    progress: ExploreProgress
    found: Candidate | None = None
    scenario: Scenario | None = None
    """The counterexample, resolved (``[expect]`` set as explained in :func:`explore`)."""
    outcome: Outcome | None = None
    interrupted: bool = False
    budget_spent: bool = False
    """Shrinking stopped at ``shrink_runs``: a smaller counterexample may exist."""
    note: str = ""

    @property
    def unexpected(self) -> bool:
        """Whether the user should be worried: a real-protocol violation or a testbed error was
        found, or a known-bad variant escaped the search."""
        if self.outcome is not None and self.outcome.error:
            return True
        return (self.found is None) if self.known_bad else (self.found is not None)


def tighten(
    candidate: Candidate, fails: Callable[[Candidate], bool], interval_s: dict[str, float]
) -> Candidate:
    """Two passes after hypothesis' shrinking, which lowers values one at a time (or two
    neighbours together) and so leaves "lose the ACK of checkpoint 11, fail checkpoint 12" where
    "3, 4" would do, in a run long enough to hold checkpoint 12:

    1. slide each job's checkpoint-named faults earlier together (by all the room there is, else
       by 3/4, 1/2, 1/4 of it), keeping the first shift that still fails, and again from there
       until no shift fails;
    2. shorten the run to the shortest that still holds every fault and still fails (a binary
       search; failing is not monotone in the duration, so this is *a* short run, not always the
       shortest).

    ``fails`` runs a candidate (it returns False once the run budget is spent).
    """
    best = candidate
    jobs = sorted({e["target"] for e in best.entries() if "checkpoint" in e})
    for job in jobs:
        moved_once = True
        while moved_once:
            moved_once = False
            mine = [e for e in best.entries() if "checkpoint" in e and e["target"] == job]
            others = [e for e in best.entries() if e not in mine]
            room = min(e["checkpoint"] for e in mine) - 1
            for shift in sorted({room, room * 3 // 4, room // 2, room // 4} - {0}, reverse=True):
                moved = [e | {"checkpoint": e["checkpoint"] - shift} for e in mine]
                slid = make_candidate(best.seed, best.duration_s, others + moved)
                if fails(slid):
                    best, moved_once = slid, True
                    break
    ends = [
        e["checkpoint"] * interval_s[e["target"]] if "checkpoint" in e else e["at_s"]
        for e in best.entries()
    ]
    low, high = math.floor(max(ends, default=0)) + 1, math.floor(best.duration_s)
    while low < high:
        middle = (low + high) // 2
        if fails(replace(best, duration_s=float(middle))):
            high = middle
        else:
            low = middle + 1
    if high < best.duration_s:
        best = replace(best, duration_s=float(high))
    return best


class _Found(Exception):
    def __init__(self, candidate: Candidate) -> None:
        super().__init__(candidate)
        self.candidate = candidate


class _ShrinkBudgetSpent(BaseException):
    """Ends the search when shrinking has used its runs (hypothesis lets BaseExceptions other
    than SystemExit through at once; its own shrinker would go on trying candidates)."""


@contextlib.contextmanager
def _shrinking_bounded_by_runs() -> Iterator[None]:
    """Hypothesis stops shrinking after 5 minutes of wall time, which would make the result
    depend on the machine's speed; explore bounds shrinking by runs instead. (Hypothesis
    documents these engine constants as monkeypatchable.)"""
    saved = hypothesis_engine.MAX_SHRINKING_SECONDS
    hypothesis_engine.MAX_SHRINKING_SECONDS = 10**9
    try:
        yield
    finally:
        hypothesis_engine.MAX_SHRINKING_SECONDS = saved


def explore(
    scenario: Scenario,
    *,
    examples: int = 200,
    shrink_runs: int = 200,
    seed: int = 0,
    seed_range: tuple[int, int] = DEFAULT_SEED_RANGE,
    max_duration_s: float | None = None,
    progress: Callable[[ExploreProgress], None] | None = None,
    run: Callable[[Scenario], Outcome] = run_candidate,
) -> ExploreResult:
    """Search up to ``examples`` candidates for a failure, then shrink it with at most
    ``shrink_runs`` more simulations. Deterministic for a given ``seed``. Runs last whole
    seconds up to the scenario's ``duration_s`` (or ``max_duration_s``; ``0``: exactly the
    scenario's), with seeds from ``seed_range``.

    The counterexample's ``[expect] violations`` is what its run violates for a known-bad
    scenario (so ``testbed run`` replays it as expected, exit 0: a regression scenario that the
    variant is caught) and the base scenario's (none) for a real-protocol one (so ``testbed run``
    reproduces the bug, exit 1).
    """
    expected = scenario.expect.violations
    known_bad = bool(expected)
    checked = tuple(CHECKERS)
    target = tuple(name for name in expected if name in checked) if known_bad else checked
    state = ExploreProgress()
    if not target:
        return ExploreResult(
            scenario,
            target,
            known_bad,
            state,
            note="none of the expected violations ("
            + ", ".join(expected)
            + ") has a checker yet, so nothing can be found",
        )
    description = (
        f"Counterexample found by testbed explore (--seed {seed}) from scenario "
        f"{scenario.scenario.name!r}: its random faults replaced by this schedule."
    )
    plan = fault_plan(scenario)
    strategy = candidates(scenario, plan, seed_range=seed_range, max_duration_s=max_duration_s)
    cache: dict[Candidate, Outcome] = {}
    best: list[tuple[Candidate, Outcome]] = []
    watch = SigintWatch()  # the Ctrl-C watch of the search or shrink in progress

    def interesting(outcome: Outcome) -> bool:
        return bool(outcome.error) or bool(outcome.violated & set(target))

    def evaluate(candidate: Candidate) -> Outcome | None:
        """The candidate's outcome (each candidate runs once); None once shrinking has used
        its runs."""
        outcome = cache.get(candidate)
        if outcome is None:
            if state.shrinking and state.runs - state.examples >= shrink_runs:
                return None
            try:
                outcome = run(candidate_scenario(scenario, candidate, description=description))
            except Exception:
                outcome = Outcome(frozenset(), {}, "", error=traceback.format_exc())
            watch.raise_if_seen()
            if not interesting(outcome):
                outcome = replace(outcome, verdicts={})  # a long search keeps only what it shows
            cache[candidate] = outcome
            state.runs += 1
            if not state.shrinking:
                state.examples += 1
            if interesting(outcome):
                state.shrinking = True
                if not best or candidate.size() < best[0][0].size():
                    best[:] = [(candidate, outcome)]
                    state.best, state.best_violated = candidate, tuple(sorted(outcome.violated))
            if progress is not None:
                progress(state)
        return outcome

    def probe(candidate: Candidate) -> None:
        outcome = evaluate(candidate)
        if outcome is None:
            raise _ShrinkBudgetSpent
        if interesting(outcome):
            raise _Found(candidate)

    def fails(candidate: Candidate) -> bool:
        outcome = evaluate(candidate)
        return outcome is not None and interesting(outcome)

    search = settings(
        max_examples=examples,
        database=None,
        derandomize=False,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )(given(strategy)(probe))
    search = hypothesis_seed(seed)(search)
    found: Candidate | None = None
    interrupted = budget_spent = False
    with _shrinking_bounded_by_runs(), sigint_watched(watch):
        try:
            search()
        except _Found as failure:
            found = failure.candidate
        except _ShrinkBudgetSpent:
            found, budget_spent = best[0][0], True
        except KeyboardInterrupt:
            interrupted = True
            found = best[0][0] if best else None
    result = ExploreResult(
        scenario,
        target,
        known_bad,
        state,
        interrupted=interrupted,
        budget_spent=budget_spent,
        note="" if plan else NO_FAULT_RATES,
    )
    if found is None:
        return result
    if not interrupted:
        try:
            with sigint_watched(watch):
                intervals_s = {j.name: j.checkpoint_interval_s for j in scenario.jobs}
                found = tighten(found, fails, intervals_s)
        except KeyboardInterrupt:
            result = replace(result, interrupted=True)
    outcome = cache[found]
    counterexample = candidate_scenario(scenario, found, description=description)
    if known_bad and not outcome.error:
        expect = {"violations": sorted(outcome.violated)}
        counterexample = validate_scenario(
            {**counterexample.model_dump(mode="json"), "expect": expect}, "<explore>"
        )
    return replace(result, found=found, scenario=counterexample, outcome=outcome)
