"""How big each measurement is: the full bench, ``--quick``, and the tiny sizes the tests use.

One place for every knob, so a row's measuring code is the same at every size and the test that
runs it on tiny sizes exercises exactly what the full bench runs.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Sizes:
    name: str
    repeats: int
    sim_duration_s: float | None
    """Simulated time of the standard scenario (None: its own 3600 s)."""
    search_runs: int
    """Runs per repeat in the property-search row (explore candidates, plain seeds)."""
    search_duration_s: float
    """Simulated time of the small scenario the search, sweep and verify rows run."""
    table_rows: int
    """Live rows of the MOR table the reader row reads (and the writer row writes)."""
    table_update_rounds: int
    """Deltacommits of updates (10% of the keys each) on top of the compacted table."""
    sweep_seeds: int
    spark_masters: tuple[str, ...]
    verify_duration_s: float
    verify_key_space: int
    verify_records_per_s: int
    scaling_duration_s: float
    scaling_writers: tuple[int, ...]
    scaling_checkpoint_s: tuple[float, ...]
    scaling_key_space: tuple[int, ...]


FULL = Sizes(
    name="full",
    repeats=3,
    sim_duration_s=None,
    search_runs=8,
    search_duration_s=20,
    table_rows=1_000_000,
    table_update_rounds=3,
    sweep_seeds=64,
    spark_masters=("local[1]", "local[2]"),
    verify_duration_s=60,
    verify_key_space=200_000,
    verify_records_per_s=4000,
    scaling_duration_s=60,
    scaling_writers=(1, 2, 4, 8, 16),
    scaling_checkpoint_s=(1, 2, 5, 10, 20),
    scaling_key_space=(1_000, 10_000, 100_000, 1_000_000),
)

QUICK = replace(
    FULL,
    name="quick",
    repeats=2,
    sim_duration_s=300,
    search_runs=3,
    search_duration_s=10,
    table_rows=200_000,
    table_update_rounds=2,
    sweep_seeds=6,
    verify_duration_s=20,
    verify_key_space=20_000,
    verify_records_per_s=2000,
    scaling_duration_s=20,
    scaling_writers=(1, 4, 16),
    scaling_checkpoint_s=(1, 2, 5),
    scaling_key_space=(1_000, 100_000),
)

TINY = replace(
    QUICK,
    name="tiny",
    repeats=1,
    sim_duration_s=5,
    search_runs=1,
    search_duration_s=5,
    table_rows=4_000,
    table_update_rounds=1,
    sweep_seeds=2,
    verify_duration_s=5,
    verify_key_space=1_000,
    verify_records_per_s=200,
    scaling_duration_s=3,
    scaling_writers=(1, 2),
    scaling_checkpoint_s=(1, 2),
    scaling_key_space=(100, 1_000),
)
"""For the tests: every measurement runs end to end in well under a second (Spark aside)."""

PRESETS = {s.name: s for s in (FULL, QUICK, TINY)}
