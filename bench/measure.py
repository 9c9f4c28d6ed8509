"""What one benchmark measurement is, how it is timed, and the machine it ran on.

Every measurement is a *ratio against a reference taken in the same run on the same machine*:
absolute times on a shared machine are noise, a ratio of two things timed side by side is much
less so. Each repeat yields one sample of our side, one of the reference and their ratio; the
table shows the ratio's min / median / max, and a target (if the issue names one) is judged on
the median.
"""

from __future__ import annotations

import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, TypeVar

T = TypeVar("T")

Log = Callable[[str], None]
"""Progress sink: one line per step, to stderr in the command line."""


@dataclass(frozen=True)
class Target:
    """A bound the issue sets on a ratio: ``ratio >= value`` or ``ratio <= value``."""

    op: str
    value: float
    text: str

    def __post_init__(self) -> None:
        if self.op not in (">=", "<="):
            raise ValueError(f"target op must be >= or <=, not {self.op!r}")

    def reached(self, ratio: float) -> bool:
        return ratio >= self.value if self.op == ">=" else ratio <= self.value

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "value": self.value, "text": self.text}


@dataclass
class Measurement:
    """One line of the table: our samples, the reference's, and the ratio per repeat.

    ``ratio_meaning`` says which way the ratio reads (e.g. "simulated s / wall s", "ours / hudi-rs
    wall time"), so a reader never has to guess whether bigger is better.
    """

    row: str
    name: str
    title: str
    ours: str
    reference: str
    unit: str
    ratio_meaning: str
    ours_samples: list[float] = field(default_factory=list)
    reference_samples: list[float] = field(default_factory=list)
    ratio_samples: list[float] = field(default_factory=list)
    target: Target | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.row}.{self.name}"

    def add(self, ours: float, reference: float, ratio: float) -> None:
        """Record one repeat."""
        self.ours_samples.append(ours)
        self.reference_samples.append(reference)
        self.ratio_samples.append(ratio)

    def ratio(self) -> dict[str, float | None]:
        return spread(self.ratio_samples)

    def reached(self) -> bool | None:
        """Whether the median ratio meets the target; None without a target or samples."""
        median = self.ratio()["median"]
        if self.target is None or median is None:
            return None
        return self.target.reached(median)

    def to_json(self) -> dict[str, Any]:
        return {
            "row": self.row,
            "name": self.name,
            "title": self.title,
            "ours": self.ours,
            "reference": self.reference,
            "unit": self.unit,
            "ratio_meaning": self.ratio_meaning,
            "samples": {
                "ours": [_round(v) for v in self.ours_samples],
                "reference": [_round(v) for v in self.reference_samples],
                "ratio": [_round(v) for v in self.ratio_samples],
            },
            "ours_summary": {k: _round(v) for k, v in spread(self.ours_samples).items()},
            "reference_summary": {k: _round(v) for k, v in spread(self.reference_samples).items()},
            "ratio": {k: _round(v) for k, v in self.ratio().items()},
            "target": self.target.to_json() if self.target else None,
            "reached": self.reached(),
            "details": self.details,
        }


def spread(values: list[float]) -> dict[str, float | None]:
    """min / median / max (None when there is no sample)."""
    if not values:
        return {"min": None, "median": None, "max": None}
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def _round(value: float | None) -> float | None:
    """Four significant digits: enough for a ratio, no false precision in results.json."""
    if value is None:
        return None
    return float(f"{value:.4g}")


@dataclass(frozen=True)
class Timing:
    wall_s: float
    cpu_s: float


def timed(fn: Callable[[], T]) -> tuple[T, Timing]:
    """``fn()``'s result with its wall and CPU time (this process only, not Spark executors)."""
    started, cpu_started = time.perf_counter(), time.process_time()
    result = fn()
    return result, Timing(time.perf_counter() - started, time.process_time() - cpu_started)


def fit_exponent(xs: list[float], ys: list[float]) -> float:
    """The growth exponent ``k`` of ``y ~ c * x**k``: least squares on log y against log x."""
    import math

    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError("fitting a growth exponent needs at least two points")
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    sxx = sum((x - mx) ** 2 for x in lx)
    if sxx == 0:
        raise ValueError("fitting a growth exponent needs two different x values")
    return sum((x - mx) * (y - my) for x, y in zip(lx, ly, strict=True)) / sxx


def machine_info() -> dict[str, Any]:
    """What the numbers depend on: cores, memory, Python, platform, library versions, load."""
    try:
        memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (AttributeError, ValueError, OSError):  # not every platform has these
        memory_gb = None
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    versions = {}
    for package in ("pyarrow", "simpy", "pyspark", "hudi", "hypothesis", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gb": round(memory_gb, 1) if memory_gb else None,
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or None,
        "versions": versions,
    }


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: a busy machine makes every absolute time suspect."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def peak_rss_mb() -> float | None:
    """The most memory this process has held so far, hudi-rs included (Spark's JVM and Python
    workers are other processes, not counted)."""
    try:
        import resource
    except ImportError:  # not on every platform
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
