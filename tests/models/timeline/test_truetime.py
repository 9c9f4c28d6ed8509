"""Tests for models/timeline/truetime.py: which generators keep instant times unique and increasing.

Processes are modelled as :class:`FakeClock` s with different skews over one :class:`FakeWorld`,
sharing one :class:`LocalLock`. Single calls go through ``ports.run``; contention is driven by
:func:`interleave`, a tiny discrete-event driver that lets several processes' effect generators run
"at once" (a blocked ``Acquire`` waits for the ``Release``, sleeps overlap) with the scheduling
choices taken from a list, so hypothesis can explore and shrink interleavings.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import HealthCheck, example, find, given, settings
from hypothesis import strategies as st

from models.ports import (
    Acquire,
    Effect,
    FakeClock,
    FakeWorld,
    LocalLock,
    Release,
    Sleep,
    Steps,
    run,
)
from models.timeline.instant_time import format_epoch_ms, parse_epoch_ms
from models.timeline.truetime import (
    DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS,
    IN_PROCESS_LOCK_MAX_EXPECTED_CLOCK_SKEW_MS,
    SPIN_MS,
    TIME_GENERATOR_VARIANTS,
    LocalClockGenerator,
    TimeGenerator,
    TimeService,
    TimeServiceGenerator,
    TrueTimeGenerator,
    make_time_generator,
)

START_MS = 1_704_164_645_000  # 2024-01-02T03:04:05.000Z

# ---------------------------------------------------------------------------------------------
# A minimal concurrent driver


def interleave(world: FakeWorld, programs: dict[str, Steps[None]], picks: tuple[int, ...]) -> None:
    """Run several processes' effect generators concurrently over ``world``'s shared real time.

    At each step the processes that can move now (not sleeping, not blocked on a held lock) are
    listed in name order and ``picks`` chooses one (index modulo the count; the first once
    ``picks`` runs out). The chosen process performs its pending effect and, unless that was a
    sleep, runs on to its next effect at once. So code between two effects is atomic, a process
    that releases a lock runs on before anyone else moves, and a waiting process acquires at the
    very moment the lock is released (the tightest hand-off TrueTime has to survive).
    """
    pending: dict[str, Effect | None] = dict.fromkeys(programs)  # None: resume the generator
    wake_ms = dict.fromkeys(programs, world.now_ms)
    choices: Iterator[int] = iter(picks)

    def resume(name: str) -> None:
        try:
            pending[name] = programs[name].send(None)
        except StopIteration:
            del pending[name]

    while pending:
        ready = [
            name
            for name in sorted(pending)
            if wake_ms[name] <= world.now_ms
            and not (isinstance(pending[name], Acquire) and pending[name].lock.held)
        ]
        if not ready:
            later = [wake_ms[name] for name in pending if wake_ms[name] > world.now_ms]
            assert later, f"deadlock: {sorted(pending)} all wait for a lock nobody releases"
            world.advance(min(later) - world.now_ms)
            continue
        name = ready[next(choices, 0) % len(ready)]
        effect = pending[name]
        if isinstance(effect, Acquire):
            effect.lock.acquire()
        elif isinstance(effect, Release):
            effect.lock.release()
        elif isinstance(effect, Sleep):
            wake_ms[name] = world.now_ms + effect.duration_ms
            pending[name] = None
            continue
        resume(name)


@dataclass(frozen=True)
class Scenario:
    """Processes with fixed clock skews each issuing a few times after some delays."""

    bound_ms: int  # max_expected_clock_skew_ms configured for truetime
    skews_ms: tuple[int, ...]  # one per process
    ops: tuple[tuple[tuple[str, int], ...], ...]  # per process: (generate|consume, delay_ms)
    picks: tuple[int, ...]  # scheduling choices for interleave()

    @property
    def relative_skew_ms(self) -> int:
        return max(self.skews_ms) - min(self.skews_ms)


def issued_times(variant: str, scenario: Scenario) -> list[tuple[str, str]]:
    """Run ``scenario`` under ``variant`` and return ``(process, time)`` in issue order.

    Issue order is lock order for truetime: a generated time is recorded right after its
    ``Release``, a consumed one inside the action, both before any other process can move.
    """
    world = FakeWorld(START_MS)
    lock = LocalLock("timeline")
    service = TimeService(FakeClock(world, 0))
    issued: list[tuple[str, str]] = []

    def program(name: str, generator: TimeGenerator, ops: tuple[tuple[str, int], ...]) -> Steps:
        for kind, delay_ms in ops:
            yield Sleep(delay_ms)
            if kind == "generate":
                issued.append((name, (yield from generator.generate_time())))
            else:
                yield from generator.consume_time(lambda time: issued.append((name, time)))

    programs = {}
    for index, (skew_ms, ops) in enumerate(zip(scenario.skews_ms, scenario.ops, strict=True)):
        generator = make_time_generator(
            variant,
            clock=FakeClock(world, skew_ms),
            lock=lock,
            time_service=service,
            max_expected_clock_skew_ms=scenario.bound_ms,
        )
        programs[f"p{index}"] = program(f"p{index}", generator, ops)
    interleave(world, programs, scenario.picks)
    assert not lock.held, "every acquisition was released"
    return issued


def first_disorder(issued: list[tuple[str, str]]) -> tuple[int, str, str] | None:
    """The first place where a time is not strictly after the one issued before it."""
    for index in range(1, len(issued)):
        if issued[index][1] <= issued[index - 1][1]:
            return index, issued[index - 1][1], issued[index][1]
    return None


@st.composite
def scenarios(draw: st.DrawFn, *, skew_factor: float, max_processes: int = 4) -> Scenario:
    """Scenarios whose relative skew is below ``skew_factor * bound`` (strictly)."""
    bound_ms = draw(st.integers(min_value=1, max_value=300))
    processes = draw(st.integers(min_value=2, max_value=max_processes))
    base_ms = draw(st.integers(min_value=-100_000, max_value=100_000))
    spread_ms = max(0, int(skew_factor * bound_ms) - 1)
    skews = tuple(
        base_ms + draw(st.integers(min_value=0, max_value=spread_ms)) for _ in range(processes)
    )
    op = st.tuples(
        st.sampled_from(("generate", "consume")), st.integers(min_value=0, max_value=3 * bound_ms)
    )
    ops = tuple(draw(st.lists(op, min_size=1, max_size=4).map(tuple)) for _ in range(processes))
    picks = tuple(draw(st.lists(st.integers(min_value=0, max_value=3), max_size=40)))
    return Scenario(bound_ms, skews, ops, picks)


# ---------------------------------------------------------------------------------------------
# truetime: Hudi's SkewAdjustingTimeGenerator


def test_truetime_locks_reads_clock_then_sleeps_then_releases() -> None:
    world = FakeWorld(START_MS)
    lock = LocalLock()
    generator = TrueTimeGenerator(FakeClock(world, 7), lock, max_expected_clock_skew_ms=200)
    steps = generator.generate_time()
    assert next(steps) == Acquire(lock)
    lock.acquire()
    assert steps.send(None) == Sleep(200), "the skew wait comes after the clock read, under lock"
    world.advance(200)
    assert steps.send(None) == Release(lock)
    lock.release()
    with pytest.raises(StopIteration) as done:
        steps.send(None)
    assert done.value.value == format_epoch_ms(START_MS + 7), "returns the reading before the wait"


def test_truetime_run_returns_reading_and_holds_lock_for_the_wait() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world, -30)
    generator = make_time_generator("truetime", clock=clock, lock=LocalLock())
    time = run(generator.generate_time(), clock)
    assert time == format_epoch_ms(START_MS - 30)
    assert world.now_ms == START_MS + DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS, "one wait of the bound"


def test_truetime_waiting_process_acquires_after_the_wait_and_reads_a_later_time() -> None:
    """Two processes contend; the second is ahead of real time by less than the bound."""
    scenario = Scenario(
        bound_ms=200,
        skews_ms=(150, -49),  # relative skew 199 < 200
        ops=((("generate", 0),), (("generate", 0),)),
        picks=(),  # p0 first wherever there is a choice
    )
    issued = issued_times("truetime", scenario)
    assert issued == [
        ("p0", format_epoch_ms(START_MS + 150)),
        ("p1", format_epoch_ms(START_MS + 200 - 49)),
    ], "p1 acquired when p0 released at +200 and read its clock then"


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(scenarios(skew_factor=1.0))
@example(  # relative skew bound-1, zero delays, immediate hand-off: the tightest safe case
    Scenario(bound_ms=5, skews_ms=(4, 0), ops=((("generate", 0),), (("consume", 0),)), picks=())
)
def test_truetime_within_bound_is_unique_and_increasing_in_lock_order(scenario: Scenario) -> None:
    assert scenario.relative_skew_ms < scenario.bound_ms
    issued = issued_times("truetime", scenario)
    assert len(issued) == sum(len(ops) for ops in scenario.ops)
    assert first_disorder(issued) is None, (
        f"time went backwards or repeated at {first_disorder(issued)} although relative skew "
        f"{scenario.relative_skew_ms} ms < bound {scenario.bound_ms} ms: {issued}"
    )


def test_truetime_above_bound_goes_backwards() -> None:
    """p0's clock runs 500 ms ahead; a 200 ms wait does not cover that."""
    scenario = Scenario(
        bound_ms=200,
        skews_ms=(500, 0),
        ops=((("generate", 0),), (("generate", 0),)),
        picks=(),
    )
    issued = issued_times("truetime", scenario)
    (_, first), (_, second) = issued
    assert second < first, f"expected p1's time {second} before p0's {first}"
    assert parse_epoch_ms(first) - parse_epoch_ms(second) == 500 - 200


def test_truetime_relative_skew_equal_to_bound_collides() -> None:
    """At ms granularity and an instant hand-off, skew == bound already gives the same time."""
    scenario = Scenario(
        bound_ms=200, skews_ms=(200, 0), ops=((("generate", 0),), (("generate", 0),)), picks=()
    )
    (_, first), (_, second) = issued_times("truetime", scenario)
    assert first == second, f"expected a collision, got {first} then {second}"


def test_hypothesis_finds_truetime_going_backwards_above_bound() -> None:
    def goes_backwards(scenario: Scenario) -> bool:
        times = [time for _, time in issued_times("truetime", scenario)]
        return any(later < earlier for earlier, later in pairwise(times))

    found = find(
        scenarios(skew_factor=3.0, max_processes=3),
        goes_backwards,
        settings=settings(database=None, derandomize=True, max_examples=2_000),
    )
    assert found.relative_skew_ms > found.bound_ms, f"backwards within the bound: {found}"


def test_truetime_same_process_retries_whole_rounds_until_past_last_time() -> None:
    """Hudi's createNewInstantTime loop: a reading not after the last one is thrown away."""
    readings = iter([1_000, 1_000, 1_000, 1_001])

    class ScriptedClock:
        def now_ms(self) -> int:
            return START_MS + next(readings)

        def sleep_ms(self, duration_ms: int) -> None:
            pass  # the clock only moves by script

    lock = LocalLock()
    generator = TrueTimeGenerator(ScriptedClock(), lock, max_expected_clock_skew_ms=1)
    first = run(generator.generate_time(), ScriptedClock())
    second = run(generator.generate_time(), ScriptedClock())
    assert (first, second) == (format_epoch_ms(START_MS + 1_000), format_epoch_ms(START_MS + 1_001))
    assert lock.acquisitions == 4, "each retry is a new lock, read, sleep, release round"
    assert generator.last_time == second


def test_truetime_same_process_tie_breaking_with_zero_bound_spins() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    generator = TrueTimeGenerator(clock, LocalLock(), max_expected_clock_skew_ms=0)
    times = [run(generator.generate_time(), clock) for _ in range(3)]
    assert times == sorted(set(times)), f"not strictly increasing: {times}"
    assert world.now_ms == START_MS + 2 * SPIN_MS, "each repeat of a millisecond costs one spin"


def test_truetime_in_process_bound_separates_consecutive_times() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    generator = make_time_generator(
        "truetime",
        clock=clock,
        lock=LocalLock(),
        max_expected_clock_skew_ms=IN_PROCESS_LOCK_MAX_EXPECTED_CLOCK_SKEW_MS,
    )
    requested = run(generator.generate_time(), clock)
    completed = run(generator.consume_time(lambda time: time), clock)
    again = run(generator.generate_time(), clock)
    assert requested < completed < again, f"{requested}, {completed}, {again}"


def test_consume_time_runs_action_under_lock_with_generated_time() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world, 3)
    lock = LocalLock()
    generator = TrueTimeGenerator(clock, lock, max_expected_clock_skew_ms=50)
    seen: list[tuple[str, bool, int]] = []

    def create_completed_file(time: str) -> str:
        seen.append((time, lock.held, world.now_ms))
        return f"001_{time}.commit"

    result = run(generator.consume_time(create_completed_file), clock)
    assert seen == [(format_epoch_ms(START_MS + 3), True, START_MS + 50)], (
        "the action gets the reading taken before the wait and runs after it, lock held"
    )
    assert result == f"001_{format_epoch_ms(START_MS + 3)}.commit"
    assert not lock.held
    assert generator.last_time is None, "completion times bypass the requested-time tie breaking"


def test_consume_time_releases_lock_when_action_fails() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    lock = LocalLock()
    generator = TrueTimeGenerator(clock, lock)

    def collide(time: str) -> None:
        raise FileExistsError(time)

    with pytest.raises(FileExistsError):
        run(generator.consume_time(collide), clock)
    assert not lock.held, "a failed completion must not leave the table lock held"


def test_skip_locking_uses_the_callers_lock_hold() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    lock = LocalLock()
    generator = TrueTimeGenerator(clock, lock, max_expected_clock_skew_ms=10)
    lock.acquire()  # e.g. the writer's transaction
    time = run(generator.generate_time(skip_locking=True), clock)
    completed = run(generator.consume_time(lambda t: t, skip_locking=True), clock)
    assert lock.held and lock.acquisitions == 1, "the generator never touched the held lock"
    assert time < completed
    assert world.now_ms == START_MS + 20, "the skew wait still happens"


# ---------------------------------------------------------------------------------------------
# local_clock: pre-1.0 behaviour


def test_local_clock_collides_across_processes_without_any_skew() -> None:
    world = FakeWorld(START_MS)
    first = make_time_generator("local_clock", clock=FakeClock(world))
    second = make_time_generator("local_clock", clock=FakeClock(world))
    a = run(first.generate_time(), FakeClock(world))
    b = run(second.generate_time(), FakeClock(world))
    assert a == b, f"two processes in the same millisecond should collide, got {a} and {b}"


def test_local_clock_goes_backwards_under_skew() -> None:
    world = FakeWorld(START_MS)
    ahead = FakeClock(world, 100)
    behind = FakeClock(world, 0)
    a = run(make_time_generator("local_clock", clock=ahead).generate_time(), ahead)
    world.advance(50)
    b = run(make_time_generator("local_clock", clock=behind).consume_time(lambda t: t), behind)
    assert b < a, f"a later time {b} from the slower clock should sort before {a}"


def test_local_clock_keeps_same_process_tie_breaking() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    generator = LocalClockGenerator(clock)
    first = run(generator.generate_time(), clock)
    second = run(generator.generate_time(), clock)
    assert first < second == format_epoch_ms(START_MS + SPIN_MS), (first, second)
    assert world.now_ms == START_MS + SPIN_MS, "spun one millisecond, like 0.x's busy loop"


def test_local_clock_takes_no_lock_and_never_waits() -> None:
    world = FakeWorld(START_MS)
    lock = LocalLock()
    clock = FakeClock(world)
    generator = make_time_generator("local_clock", clock=clock, lock=lock)
    run(generator.generate_time(), clock)
    run(generator.consume_time(lambda t: t), clock)
    assert lock.acquisitions == 0 and world.now_ms == START_MS


def test_hypothesis_finds_local_clock_collision_with_zero_skew() -> None:
    found = find(
        scenarios(skew_factor=0.0, max_processes=2),
        lambda scenario: first_disorder(issued_times("local_clock", scenario)) is not None,
        settings=settings(database=None, derandomize=True, max_examples=1_000),
    )
    assert found.relative_skew_ms == 0, "no skew was needed"


# ---------------------------------------------------------------------------------------------
# time_service: a central oracle


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=200)
@given(scenarios(skew_factor=50.0))
def test_time_service_is_always_unique_and_increasing(scenario: Scenario) -> None:
    issued = issued_times("time_service", scenario)
    assert first_disorder(issued) is None, f"{first_disorder(issued)} in {issued}"


def test_time_service_survives_its_clock_stepping_back() -> None:
    readings = iter([5_000, 4_000, 4_000, 6_000])

    class SteppingClock:
        def now_ms(self) -> int:
            return START_MS + next(readings)

    service = TimeService(SteppingClock())
    generator = TimeServiceGenerator(service)
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    times = [run(generator.generate_time(), clock) for _ in range(4)]
    assert [parse_epoch_ms(t) - START_MS for t in times] == [5_000, 5_001, 5_002, 6_000]
    assert world.now_ms == START_MS, "no waiting"


# ---------------------------------------------------------------------------------------------
# The factory


def test_factory_builds_each_variant() -> None:
    world = FakeWorld(START_MS)
    clock = FakeClock(world)
    service = TimeService(clock)
    built = {
        variant: make_time_generator(variant, clock=clock, lock=LocalLock(), time_service=service)
        for variant in TIME_GENERATOR_VARIANTS
    }
    assert isinstance(built["truetime"], TrueTimeGenerator)
    assert built["truetime"].max_expected_clock_skew_ms == DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS
    assert isinstance(built["local_clock"], LocalClockGenerator)
    assert isinstance(built["time_service"], TimeServiceGenerator)


def test_factory_rejects_unknown_variant_naming_allowed_values() -> None:
    with pytest.raises(ValueError) as error:
        make_time_generator("ntp", clock=FakeClock(FakeWorld(0)), lock=LocalLock())
    for variant in TIME_GENERATOR_VARIANTS:
        assert variant in str(error.value), f"{variant} missing from: {error.value}"


@pytest.mark.parametrize(
    ("variant", "kwargs", "message"),
    [
        ("truetime", {}, "lock"),
        ("time_service", {}, "time_service"),
        ("truetime", {"lock": LocalLock(), "max_expected_clock_skew_ms": -1}, ">= 0"),
    ],
)
def test_factory_rejects_missing_parts(variant: str, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make_time_generator(variant, clock=FakeClock(FakeWorld(0)), **kwargs)


def test_interleave_reports_deadlock() -> None:
    """The driver itself: a process that never releases starves the other, loudly."""
    world = FakeWorld(START_MS)
    lock = LocalLock()

    def hog() -> Steps[None]:
        yield Acquire(lock)

    def victim() -> Steps[None]:
        yield Acquire(lock)
        yield Release(lock)

    with pytest.raises(AssertionError, match="deadlock"):
        interleave(world, {"a": hog(), "b": victim()}, ())
