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
import json
import math
import shlex
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine as hypothesis_engine

from invariants.checks import CHECKERS
from scenarios.schema import Scenario, fault_targets, load_scenario, resolved_toml
from scenarios.schema import scenario_from_dict as validate_scenario
from testbed.atomic import staged_folder
from testbed.interrupt import sigint_held
from testbed.run import simulate_and_check

RANDOM_RATES = (
    "ack_loss",
    "ack_delay_ms",
    "ack_duplicate",
    "checkpoint_failure",
    "writer_crash_per_hour",
    "coordinator_crash_per_hour",
    "storage_write_failure",
    "clock_jump_per_hour",
)
"""``[faults]`` keys that make random faults; explore sets them to 0 and draws a schedule."""

MAX_ENTRIES_PER_KIND = 16
"""Upper bound on drawn entries of one kind (per job for ACK and checkpoint faults): enough to
matter, small enough to shrink."""
DURATION_BITS = 8
"""The run's duration is one of at most 256 whole-second steps between its bounds."""

DEFAULT_SEED_RANGE = (0, 1_000_000)


# --- what to draw -------------------------------------------------------------------------------


@dataclass(frozen=True)
class KindPlan:
    """How explore draws one kind of scheduled fault: up to ``max_entries`` entries among
    ``targets``; ``bound`` is the upper bound of ``delay_ms`` / ``|delta_ms|``.

    ACK and checkpoint kinds (:data:`JOB_KINDS`) have one plan per job (``targets`` is that job)
    and pick checkpoints of it; the others pick times."""

    kind: str
    targets: tuple[str, ...]
    max_entries: int
    bound: int = 0


JOB_KINDS = ("lose_ack", "delay_ack", "duplicate_ack", "fail_checkpoint")


NO_FAULT_RATES = (
    "the scenario has no random fault rates in [faults] (ack_loss, checkpoint_failure, "
    "writer_crash_per_hour, ...), so no fault schedule was drawn: only run seeds and lengths "
    "were searched"
)


def fault_plan(scenario: Scenario) -> list[KindPlan]:
    """Which kinds to draw and how many, from the scenario's random rates.

    The cap is about twice the number of faults the rates would cause over the whole run (ACK
    and checkpoint faults per checkpoint of the job, ``ack_delay_ms`` delaying every
    notification; crashes and clock jumps per hour; storage failures per write, estimated), at
    least 1 and at most :data:`MAX_ENTRIES_PER_KIND`. A rate of 0 draws nothing of its kind.
    """
    faults = scenario.faults
    duration_s = scenario.scenario.duration_s
    hours = duration_s / 3600
    wanted: list[tuple[str, tuple[str, ...], float, int]] = [
        (kind, (job.name,), rate * duration_s / job.checkpoint_interval_s, bound)
        for kind, rate, bound in (
            ("lose_ack", faults.ack_loss, 0),
            ("delay_ack", 1.0 if faults.ack_delay_ms else 0.0, faults.ack_delay_ms),
            ("duplicate_ack", faults.ack_duplicate, 0),
            ("fail_checkpoint", faults.checkpoint_failure, 0),
        )
        for job in scenario.jobs
    ]
    # a checkpoint's writes: every task's data files (one per partition it touches) plus the
    # coordinator's instant files and heartbeats; an estimate, only used to size the cap
    writes = sum(
        duration_s / job.checkpoint_interval_s * (job.writers * scenario.table.partitions + 8)
        for job in scenario.jobs
    )
    crash = fault_targets(scenario, "crash")
    wanted += [
        (
            "crash",
            tuple(t for t in crash if "/task-" in t),
            faults.writer_crash_per_hour * hours,
            0,
        ),
        (
            "crash",
            tuple(t for t in crash if "/task-" not in t),
            faults.coordinator_crash_per_hour * hours,
            0,
        ),
        (
            "clock_jump",
            fault_targets(scenario, "clock_jump"),
            faults.clock_jump_per_hour * hours if faults.clock_jump_ms else 0,
            faults.clock_jump_ms,
        ),
        (
            "storage_failure",
            fault_targets(scenario, "storage_failure"),
            faults.storage_write_failure * writes,
            0,
        ),
    ]
    return [
        KindPlan(kind, targets, min(MAX_ENTRIES_PER_KIND, max(1, math.ceil(2 * expected))), bound)
        for kind, targets, expected, bound in wanted
        if expected > 0
    ]


@dataclass(frozen=True)
class Candidate:
    """One point of the search: a run seed, a duration and the drawn schedule (sorted by time;
    entries as sorted ``(key, value)`` tuples so candidates hash)."""

    seed: int
    duration_s: float
    schedule: tuple[tuple[tuple[str, Any], ...], ...]

    def entries(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self.schedule]

    def size(self) -> tuple[int, float, int]:
        """Smaller is a better counterexample: fewer faults, then a shorter run, a smaller seed."""
        return (len(self.schedule), self.duration_s, self.seed)


@st.composite
def _uniform(draw: st.DrawFn, low: int, high: int, *, bits: int = DURATION_BITS) -> int:
    """An integer in [low, high] on a grid of at most ``2**bits`` values, about uniformly
    distributed, shrinking toward ``low``; for the run's duration.

    Hypothesis' own integers favour small values (a good default for finding edge cases), which
    would make runs near ``duration_s`` rare, and a long run is what a rate's faults need to
    line up; so the duration is built from fair coin flips. (Only for a value that shrinks on
    its own: hypothesis cannot lower two such values together.)
    """
    span = high - low
    if span <= 0:
        return low
    bits = min(bits, span.bit_length())
    value = 0
    for _ in range(bits):
        value = value * 2 + draw(st.booleans())
    return low + value * span // (2**bits - 1)


def make_candidate(seed: int, duration_s: float, entries: list[dict[str, Any]]) -> Candidate:
    """A candidate with its entries in a canonical order (time, kind, target, checkpoint), so
    equal schedules are equal candidates however they were drawn."""
    ordered = sorted(entries, key=lambda e: (e["at_s"], e["kind"], e["target"], sorted(e.items())))
    return Candidate(seed, duration_s, tuple(tuple(sorted(e.items())) for e in ordered))


def _largest_first(bound: int) -> st.SearchStrategy[int]:
    """An integer in [1, bound] that shrinks toward ``bound``, so generation (which favours
    small draws) mostly gives large values: a delay or clock step big enough to matter, and the
    scenario's own bound in the counterexample unless a smaller one is needed."""
    return st.integers(min_value=0, max_value=bound - 1).map(lambda below: bound - below)


def _options(plan: KindPlan, draw: st.DrawFn) -> dict[str, Any]:
    if plan.kind == "delay_ack":
        return {"delay_ms": draw(_largest_first(plan.bound))}
    if plan.kind == "clock_jump":
        magnitude = draw(_largest_first(plan.bound))
        return {"delta_ms": -magnitude if draw(st.booleans()) else magnitude}
    return {}


def _draw_entries(
    draw: st.DrawFn, plan: KindPlan, longest_s: float, interval_s: dict[str, float]
) -> list[dict[str, Any]]:
    """The entries of one plan, placed inside a run of ``longest_s``.

    Positions do not depend on the run's drawn duration (entries past its end are dropped by
    :func:`candidates`), so shrinking the duration moves no fault. Checkpoints and times are
    hypothesis integers: they shrink toward the start (a smaller counterexample has its faults
    early); related faults that hypothesis cannot lower together (lose the ACK of checkpoint
    k, fail checkpoint k + 1) are slid earlier by :func:`tighten`.

    ACK and checkpoint faults name their checkpoint (``at_s = 0``) rather than a time: entries
    that each pick "the first notification after t" interact (delete one and the next one hits
    another checkpoint), which defeats shrinking; entries naming distinct checkpoints do not.
    A checkpoint N is triggered no earlier than N intervals into the run, so one past the end
    of the run could never fire.
    """
    if plan.kind in JOB_KINDS:
        (job,) = plan.targets
        last = max(1, math.floor(longest_s / interval_s[job]))

        @st.composite
        def at_checkpoint(inner: st.DrawFn) -> dict[str, Any]:
            return {
                "at_s": 0.0,
                "kind": plan.kind,
                "target": job,
                "checkpoint": inner(st.integers(min_value=1, max_value=last)),
            } | _options(plan, inner)

        drawn = draw(st.lists(at_checkpoint(), max_size=min(last, plan.max_entries)))
        by_checkpoint = {entry["checkpoint"]: entry for entry in reversed(drawn)}
        return [by_checkpoint[checkpoint] for checkpoint in sorted(by_checkpoint)]
    longest_ms = max(1, math.floor(longest_s * 1000))

    @st.composite
    def timed(inner: st.DrawFn) -> dict[str, Any]:
        return {
            "at_s": inner(st.integers(min_value=0, max_value=longest_ms - 1)) / 1000,
            "kind": plan.kind,
            "target": inner(st.sampled_from(plan.targets)),
        } | _options(plan, inner)

    return draw(st.lists(timed(), max_size=plan.max_entries))


def _inside(entry: dict[str, Any], duration_s: float, interval_s: dict[str, float]) -> bool:
    """Whether ``entry`` can fire in a run of ``duration_s`` (faults stop when it drains)."""
    if "checkpoint" in entry:
        return entry["checkpoint"] * interval_s[entry["target"]] < duration_s
    return entry["at_s"] < duration_s


def candidates(
    scenario: Scenario,
    plan: list[KindPlan],
    *,
    seed_range: tuple[int, int] = DEFAULT_SEED_RANGE,
    max_duration_s: float | None = None,
) -> st.SearchStrategy[Candidate]:
    """Candidates for ``scenario``: the duration (whole seconds, from two checkpoint intervals up
    to the scenario's ``duration_s`` or ``max_duration_s``; ``0`` keeps the scenario's), the
    seed, then the faults of each plan. Hypothesis shrinks toward fewer choices and smaller
    values, earlier ones first: a shorter run, a smaller seed, no fault where none is needed."""
    full_s = scenario.scenario.duration_s
    fixed = max_duration_s == 0 or full_s < 1
    longest_s = max(1, math.floor(min(full_s, max_duration_s or full_s)))
    # shorter than two checkpoints, a run can hardly show anything: start there
    shortest_s = min(
        longest_s, max(1, math.ceil(2 * max(j.checkpoint_interval_s for j in scenario.jobs)))
    )
    low, high = seed_range
    intervals_s = {job.name: job.checkpoint_interval_s for job in scenario.jobs}

    @st.composite
    def candidate(draw: st.DrawFn) -> Candidate:
        duration_s = full_s
        if not fixed:
            duration_s = float(draw(_uniform(shortest_s, longest_s)))
        run_seed = draw(st.integers(min_value=low, max_value=high))
        entries = [
            entry
            for kind_plan in plan
            for entry in _draw_entries(draw, kind_plan, longest_s, intervals_s)
            if _inside(entry, duration_s, intervals_s)
        ]
        return make_candidate(run_seed, duration_s, entries)

    return candidate()


def candidate_scenario(base: Scenario, candidate: Candidate, *, description: str = "") -> Scenario:
    """The scenario a candidate runs: the base with the candidate's seed, duration and schedule
    (after any entries the base already had), random rates 0, in memory, named
    ``<name>_counterexample`` (the name is part of the history, so it is set before running)."""
    data = base.model_dump(mode="json")
    info = data["scenario"]
    info.update(seed=candidate.seed, duration_s=candidate.duration_s)
    if not info["name"].endswith("_counterexample"):
        info["name"] = f"{info['name']}_counterexample"
    if description:
        info["description"] = description
    data["table"]["storage"] = "memory"
    faults = data["faults"]
    faults.update(dict.fromkeys(RANDOM_RATES, 0))
    faults["schedule"] = [*faults["schedule"], *candidate.entries()]
    return validate_scenario(data, f"<explore of {base.scenario.name}>")


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
    with _shrinking_bounded_by_runs():
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
            found = tighten(found, fails, {j.name: j.checkpoint_interval_s for j in scenario.jobs})
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


__all__ = [
    "Candidate",
    "ExploreProgress",
    "ExploreResult",
    "KindPlan",
    "Outcome",
    "candidate_scenario",
    "candidates",
    "default_out",
    "explain",
    "explore",
    "fault_plan",
    "replay_command",
    "report_lines",
    "run_candidate",
    "summarize",
    "write_interrupted_result",
    "write_result",
]
