"""TrueTime: how every requested and completion time of the timeline is generated (docs/protocol.md section 1).

Hudi 1.x needs instant times that are unique and increasing *across processes*: completion times
order log files into file slices (RFC-66), so two equal or backwards times silently misplace data.
This module models the real generator and two alternatives over the effects-based ports of
:mod:`models.ports`; it never reads the wall clock or sleeps by itself.

What Hudi's source does (apache/hudi, ``hudi-common``, ``org.apache.hudi.common.table.timeline``):

- ``TimeGenerator`` (interface): ``long generateTime(boolean skipLocking)`` and
  ``consumeTime(boolean skipLocking, Consumer<Long> func)``; its Javadoc names the two ways to get
  TrueTime semantics: (i) a mutex lock plus a wait for the maximum expected clock skew, (ii) a
  globally synchronized time service (e.g. Spanner's). Only (i) is implemented.
- ``TimeGeneratorType`` has a single value, ``WAIT_TO_ADJUST_SKEW``; ``TimeGenerators`` caches one
  generator per table base path and builds ``SkewAdjustingTimeGenerator`` for it (the class was
  called ``WaitBasedTimeGenerator``, with ``currentTimeMillis``/``consumeTimestamp``, before the
  rename). ``TimeGeneratorBase`` owns the lock: it loads the configured ``LockProvider`` lazily,
  ``lock()`` is ``tryLock`` with retries, ``unlock()`` unlocks and closes the provider.
- ``SkewAdjustingTimeGenerator.generateTime``: **lock, read the clock** (``ts =
  System.currentTimeMillis()``), **sleep** ``maxExpectedClockSkewMs``, **return ts, release**
  (in ``finally``). The clock is read *before* the sleep, and the sleep happens *while holding the
  lock*: the next holder, on any machine, acquires at least ``skew`` ms of real time after ``ts``
  was read, so its clock has passed ``ts`` as long as the two clocks differ by less than that.
- ``SkewAdjustingTimeGenerator.consumeTime``: lock, ``generateTime(skipLocking=true)`` (read clock,
  sleep), run ``func(ts)``, release. ``ActiveTimelineV2.createCompleteFileInMetaPath`` (called by
  ``transitionStateToComplete`` / ``saveAsComplete``) uses it: inside ``func`` it formats the
  completion time and creates ``<requested>_<completion>.<action>`` with put-if-absent
  (``createImmutableFileInPath``). So completed files appear in completion-time order.
- Config ``HoodieTimeGeneratorConfig``: ``hoodie.time.generator.type`` (default and only valid
  value ``WAIT_TO_ADJUST_SKEW``), ``hoodie.time.generator.max_expected_clock_skew_ms`` (default
  200; *inferred as 1* when the lock provider is the default ``InProcessLockProvider``, since one JVM
  has one clock). The lock provider is ``hoodie.write.lock.provider``, default
  ``InProcessLockProvider``. (There is no ``hoodie.write.lock.max.expected.clock.skew.ms`` key.)
- Same-process tie breaking: ``HoodieInstantTimeGenerator.createNewInstantTime(shouldLock,
  timeGenerator, millis)`` (reached through ``TimelineUtils.generateInstantTime``) keeps a JVM-wide
  ``lastInstantTime`` and loops ``do { t = format(generateTime(!shouldLock) + millis) } while
  (t <= last)``: every retry is a whole new ``generateTime`` (lock, read, sleep, release). Pre-1.0
  Hudi (0.x) had the very same loop over ``System.currentTimeMillis()`` with no lock and no wait.
  ``consumeTime`` (completion times) does **not** go through that loop and does not update
  ``lastInstantTime``; we mirror that.
- Formatting: ``HoodieInstantTimeGenerator.formatDateBasedOnTimeZone`` formats in local time or
  UTC per ``hoodie.table.timeline.timezone`` (default LOCAL). The testbed always uses UTC
  (:func:`models.timeline.instant_time.format_epoch_ms`) so runs do not depend on the host's zone.

Variants (``[protocol] time_generator`` in a scenario):

- ``truetime`` (:class:`TrueTimeGenerator`): the real rule. Safe only while the skew between any two
  processes is *below* ``max_expected_clock_skew_ms`` (at millisecond granularity and with an
  instant lock hand-off, a relative skew equal to the bound already lets two processes read the
  same millisecond; in a real system the hand-off takes time, hence Hudi's "<=").
- ``local_clock`` (:class:`LocalClockGenerator`): what 0.x did: no lock, no wait, same-process tie
  breaking only. Across processes times collide (same millisecond) and go backwards under skew.
- ``time_service`` (:class:`TimeServiceGenerator`): one central monotonic oracle shared by all
  processes (Hudi's option (ii)); always unique and increasing, never waits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar

from models.ports import Acquire, Clock, Lock, Release, Sleep, Steps
from models.timeline.instant_time import format_epoch_ms

T = TypeVar("T")

TIME_GENERATOR_VARIANTS = ("truetime", "local_clock", "time_service")
"""Allowed values of the ``time_generator`` protocol variant; ``truetime`` is Hudi's rule."""

DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS = 200
"""Hudi's default for ``hoodie.time.generator.max_expected_clock_skew_ms``."""

IN_PROCESS_LOCK_MAX_EXPECTED_CLOCK_SKEW_MS = 1
"""The value Hudi infers when the lock is the in-process lock (one JVM, one clock)."""

SPIN_MS = 1
"""Real time one pass of a busy retry loop is charged when nothing else in it lets time pass.

Hudi's tie-breaking loop spins on the wall clock until it moves; a fake or simulated clock only
moves when told to, so the loop yields ``Sleep(SPIN_MS)`` instead of spinning forever.
"""


class TimeGenerator(Protocol):
    """Produces instant times; must be unique and increasing across all processes of a table.

    ``skip_locking`` mirrors Hudi's ``skipLocking``: the caller already holds the table lock (the
    same lock the generator would take, e.g. completing a commit inside a transaction), so taking it
    again would deadlock. Variants without a lock ignore it.
    """

    def generate_time(self, *, skip_locking: bool = False) -> Steps[str]:
        """A new 17-digit instant time (a requested time); yields the effects it waits on."""
        ...

    def consume_time(self, action: Callable[[str], T], *, skip_locking: bool = False) -> Steps[T]:
        """Generate a time and run ``action(time)`` atomically with it; return the action's result.

        Hudi completes an instant this way: the completion time is generated and the completed
        file created under one lock hold, so files appear in completion-time order.
        """
        ...


class _LastIssued:
    """Same-process tie breaking: the last requested time this process issued.

    Hudi keeps this in a JVM-wide static; one generator object per simulated process plays the
    same role here.
    """

    def __init__(self) -> None:
        self.last_time: str | None = None

    def accepts(self, time: str) -> bool:
        """True if ``time`` is strictly after every time issued so far (string order = time order)."""
        return self.last_time is None or time > self.last_time

    def record(self, time: str) -> None:
        self.last_time = time


class TrueTimeGenerator:
    """Hudi's ``SkewAdjustingTimeGenerator`` plus ``HoodieInstantTimeGenerator``'s tie breaking.

    One reading is: ``Acquire(lock)``; ``ts = clock.now_ms()``; ``Sleep(max_expected_clock_skew_ms)``;
    ``Release(lock)``. Waiting out the skew while still holding the lock is what makes the next
    holder's reading larger, whatever machine it runs on, provided the skew stays below the bound.
    """

    def __init__(
        self,
        clock: Clock,
        lock: Lock,
        max_expected_clock_skew_ms: int = DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS,
    ) -> None:
        if max_expected_clock_skew_ms < 0:
            raise ValueError(
                f"max_expected_clock_skew_ms must be >= 0, got {max_expected_clock_skew_ms}"
            )
        self.clock = clock
        self.lock = lock
        self.max_expected_clock_skew_ms = max_expected_clock_skew_ms
        self._issued = _LastIssued()

    @property
    def last_time(self) -> str | None:
        """The last requested time this generator issued (``None`` before the first)."""
        return self._issued.last_time

    def _read_and_wait(self) -> Steps[int]:
        """Read the clock, then wait out the skew (``generateTime(skipLocking=true)``)."""
        ts = self.clock.now_ms()
        yield Sleep(self.max_expected_clock_skew_ms)
        return ts

    def _generate_ms(self, skip_locking: bool) -> Steps[int]:
        """``SkewAdjustingTimeGenerator.generateTime``: lock, read, sleep, release."""
        if skip_locking:
            return (yield from self._read_and_wait())
        yield Acquire(self.lock)
        ts = yield from self._read_and_wait()
        yield Release(self.lock)
        return ts

    def generate_time(self, *, skip_locking: bool = False) -> Steps[str]:
        """A new requested time: retry whole lock-read-sleep rounds until past the last one issued.

        The retry is Hudi's ``createNewInstantTime`` loop. It only ever fires within one process
        (same millisecond twice); across processes only the lock and the wait keep times apart.
        """
        while True:
            time = format_epoch_ms((yield from self._generate_ms(skip_locking)))
            if self._issued.accepts(time):
                self._issued.record(time)
                return time
            if self.max_expected_clock_skew_ms == 0:
                yield Sleep(SPIN_MS)

    def consume_time(self, action: Callable[[str], T], *, skip_locking: bool = False) -> Steps[T]:
        """Lock, read, sleep, ``action(time)``, release (``SkewAdjustingTimeGenerator.consumeTime``).

        Like Hudi, no tie breaking against requested times: the wait inside the lock already puts
        the next reading of this process past this one (when the bound is at least 1 ms). If the
        action fails (e.g. the completed file already exists) the lock is still released, as
        Hudi's ``finally`` does, and the error propagates.
        """
        if not skip_locking:
            yield Acquire(self.lock)
        try:
            time = format_epoch_ms((yield from self._read_and_wait()))
            result = action(time)
        except Exception:
            if not skip_locking:
                yield Release(self.lock)
            raise
        if not skip_locking:
            yield Release(self.lock)
        return result


class LocalClockGenerator:
    """Variant ``local_clock``: pre-1.0 Hudi, each process formats its own clock's reading.

    Keeps 0.x's same-process tie breaking (the ``lastInstantTime`` loop predates TrueTime), so a
    single process is still monotonic; what is missing is anything *across* processes: two
    processes at the same millisecond collide, and a process whose clock is behind issues times
    before ones already on the timeline.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._issued = _LastIssued()

    @property
    def last_time(self) -> str | None:
        """The last requested time this generator issued (``None`` before the first)."""
        return self._issued.last_time

    def generate_time(self, *, skip_locking: bool = False) -> Steps[str]:
        """Format the clock; spin (``Sleep(SPIN_MS)``) while not past this process's last time."""
        while True:
            time = format_epoch_ms(self.clock.now_ms())
            if self._issued.accepts(time):
                self._issued.record(time)
                return time
            yield Sleep(SPIN_MS)

    def consume_time(self, action: Callable[[str], T], *, skip_locking: bool = False) -> Steps[T]:
        """Read the clock and run ``action`` at once: no lock, so nothing orders it against others."""
        return action(format_epoch_ms(self.clock.now_ms()))
        yield  # pragma: no cover - makes this a generator


class TimeService:
    """A central monotonic time oracle (Spanner-style), one per table, shared by all processes.

    Returns ``max(last + 1, own clock)``: it follows its own clock when that moves forward and never
    repeats or goes back when it does not, so callers need no lock and no wait.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.last_ms: int | None = None

    def next_ms(self) -> int:
        """The next time in epoch milliseconds, strictly after every one handed out before."""
        now = self.clock.now_ms()
        ms = now if self.last_ms is None else max(self.last_ms + 1, now)
        self.last_ms = ms
        return ms


class TimeServiceGenerator:
    """Variant ``time_service``: every process asks one shared :class:`TimeService`; no skew wait.

    ``consume_time`` runs the action right after asking, with no lock: times stay unique and
    increasing, but two processes' completed files may appear in a different order than their
    completion times (that needs the lock, which only ``truetime`` takes).
    """

    def __init__(self, service: TimeService) -> None:
        self.service = service

    def generate_time(self, *, skip_locking: bool = False) -> Steps[str]:
        return format_epoch_ms(self.service.next_ms())
        yield  # pragma: no cover - makes this a generator

    def consume_time(self, action: Callable[[str], T], *, skip_locking: bool = False) -> Steps[T]:
        return action(format_epoch_ms(self.service.next_ms()))
        yield  # pragma: no cover - makes this a generator


def make_time_generator(
    variant: str,
    *,
    clock: Clock,
    lock: Lock | None = None,
    time_service: TimeService | None = None,
    max_expected_clock_skew_ms: int = DEFAULT_MAX_EXPECTED_CLOCK_SKEW_MS,
) -> TimeGenerator:
    """Build one process's generator for ``variant`` (one of :data:`TIME_GENERATOR_VARIANTS`).

    ``truetime`` needs the table-wide ``lock``; ``time_service`` needs the one ``time_service``
    shared by all processes (a fresh one per process would defeat its purpose, so none is made up).
    """
    if variant == "truetime":
        if lock is None:
            raise ValueError("time generator 'truetime' needs a lock")
        return TrueTimeGenerator(clock, lock, max_expected_clock_skew_ms)
    if variant == "local_clock":
        return LocalClockGenerator(clock)
    if variant == "time_service":
        if time_service is None:
            raise ValueError("time generator 'time_service' needs the shared time_service")
        return TimeServiceGenerator(time_service)
    allowed = ", ".join(repr(v) for v in TIME_GENERATOR_VARIANTS)
    raise ValueError(f"unknown time generator {variant!r}; allowed values: {allowed}")
