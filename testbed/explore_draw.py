"""What ``testbed explore`` draws: the fault plan a scenario's random rates imply, hypothesis
strategies for candidates (a run seed, a duration and a ``[[faults.schedule]]``), and the scenario
a candidate stands for."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from faults import KINDS, RANDOM_RATES, fault_kind
from faults.base import Plan
from scenarios.schema import Scenario
from scenarios.schema import scenario_from_dict as validate_scenario

MAX_ENTRIES_PER_KIND = 16
"""Upper bound on drawn entries of one kind (per job for ACK and checkpoint faults): enough to
matter, small enough to shrink."""
DURATION_BITS = 8
"""The run's duration is one of at most 256 whole-second steps between its bounds."""

DEFAULT_SEED_RANGE = (0, 1_000_000)


# --- what to draw -------------------------------------------------------------------------------


KindPlan = Plan
"""How explore draws one kind (:class:`faults.base.Plan`)."""


NO_FAULT_RATES = (
    "the scenario has no random fault rates in [faults] (ack_loss, checkpoint_failure, "
    "writer_crash_per_hour, ...), so no fault schedule was drawn: only run seeds and lengths "
    "were searched"
)


def fault_plan(scenario: Scenario) -> list[KindPlan]:
    """Which kinds to draw and how many, from the scenario's random rates (each kind's
    ``wanted`` in ``faults/``, in registry order).

    The cap is about twice the number of faults the rates would cause over the whole run, at
    least 1 and at most :data:`MAX_ENTRIES_PER_KIND`. A rate of 0 draws nothing of its kind.
    """
    return [
        KindPlan(
            kind.name,
            wanted.targets,
            min(MAX_ENTRIES_PER_KIND, max(1, math.ceil(2 * wanted.expected))),
            wanted.bound,
        )
        for kind in KINDS
        for wanted in kind.wanted(scenario)
        if wanted.expected > 0
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
    kind = fault_kind(plan.kind)
    if kind.per_checkpoint:
        (job,) = plan.targets
        last = max(1, math.floor(longest_s / interval_s[job]))

        @st.composite
        def at_checkpoint(inner: st.DrawFn) -> dict[str, Any]:
            return {
                "at_s": 0.0,
                "kind": plan.kind,
                "target": job,
                "checkpoint": inner(st.integers(min_value=1, max_value=last)),
            } | kind.draw_options(plan, inner)

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
        } | kind.draw_options(plan, inner)

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
    (after the entries the base already had that fall inside the run), random rates 0, in memory,
    named ``<name>_counterexample`` (the name is part of the history, so it is set before
    running)."""
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
    # the base's own entries past a shortened run could never fire (faults stop at the drain)
    own = [entry for entry in faults["schedule"] if entry["at_s"] < candidate.duration_s]
    faults["schedule"] = [*own, *candidate.entries()]
    return validate_scenario(data, f"<explore of {base.scenario.name}>")
