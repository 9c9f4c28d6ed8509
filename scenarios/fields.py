"""The value types of scenario keys (each constraint lives in its type, so an error can say what
is allowed), the names a scenario may use, and the base of every table."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from scenarios.errors import RuleViolation, show

INVARIANTS: tuple[str, ...] = (
    "instant_unique",
    "instant_monotonic",
    "completion_after_request",
    "commit_order",
    "exactly_once",
    "no_data_loss",
    "slicing",
    "no_uncommitted_read",
    "merge_convergence",
    "liveness",
    "unique_key",
    "placement",
    "no_orphan_files",
    "failed_writes_rolled_back",
)
"""Invariant names an ``[expect] violations`` list may use (docs/protocol.md section 9; the names are
a public contract). The one list of them: a checker added later appends its name here.
"""


# ---------------------------------------------------------------------------------------------
# value types: the constraint lives in the type, so the error text can be derived from it


def check_invariant(name: str) -> str:
    if name not in INVARIANTS:
        raise RuleViolation(f"unknown invariant {show(name)}", allowed=", ".join(INVARIANTS))
    return name


Probability = Annotated[float, Field(ge=0, le=1)]
InvariantName = Annotated[str, AfterValidator(check_invariant)]

SECONDS_PER_DAY = 86_400
MS_PER_HOUR = 3_600_000
MAX_SEED = 2**63 - 1
"""Seeds are unsigned 63-bit integers: what Spark's and parquet's int64 columns hold."""
MAX_RECORDS = 100_000_000
"""At most this many source records per run (every job's ``records_per_s`` x ``duration_s``):
a run's records live in memory."""


def number_in(low: float, high: float, *, open_low: bool = False) -> Any:
    """A number in ``[low, high]`` (``(low, high]`` with ``open_low``)."""
    if open_low:
        return Annotated[float, Field(gt=low, le=high)]
    return Annotated[float, Field(ge=low, le=high)]


def integer_in(low: int, high: int) -> Any:
    """An integer in ``[low, high]``."""
    return Annotated[int, Field(ge=low, le=high)]


Seconds = number_in(0, SECONDS_PER_DAY, open_low=True)
"""A positive duration of at most a simulated day."""
Milliseconds = integer_in(0, MS_PER_HOUR)
"""A delay or latency of at most an hour."""
PerHour = number_in(0, 3600)
"""A fault rate: at most one a second."""
_SCENARIO_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.+=-]{0,199}")
_SCENARIO_NAME_RULE = (
    "letters, digits, '_', '-', and (not first) '.', '+', '=' (as grid points use them); "
    "at most 200 characters"
)


def _check_scenario_name(name: str) -> str:
    # run folders are named after the scenario: a name is never a path
    if not _SCENARIO_NAME.fullmatch(name):
        raise RuleViolation(f"bad scenario name {show(name)}", allowed=_SCENARIO_NAME_RULE)
    return name


ScenarioName = Annotated[str, AfterValidator(_check_scenario_name)]

RESERVED_PROCESS_NAMES = ("nemesis", "world")
"""History processes that are not jobs (faults; the world itself): no job may take these names."""
_JOB_NAME_RULE = f"a non-empty name without '/', not {' or '.join(RESERVED_PROCESS_NAMES)}"


def _check_job_name(name: str) -> str:
    # History processes are "<job>/<role>" (checkers split on the first "/"), and a job's own
    # events use the bare job name, which must not be mistaken for the nemesis or the world.
    if not name or "/" in name:
        raise RuleViolation(f"job name {show(name)} is empty or has a '/'", allowed=_JOB_NAME_RULE)
    if name in RESERVED_PROCESS_NAMES:
        raise RuleViolation(f"job name {show(name)} is reserved", allowed=_JOB_NAME_RULE)
    return name


JobName = Annotated[str, AfterValidator(_check_job_name)]

RESERVED_COLUMNS = ("key", "part", "ts", "offset", "job", "value")
"""Columns of every record (and the whole-record payload): no column group may take them."""
_COLUMN_RULE = "a lower-case identifier ([a-z][a-z0-9_]*), not " + ", ".join(RESERVED_COLUMNS)
_COLUMN_PATTERN = re.compile(r"^[a-z][a-z0-9_]*\Z")


def _check_column_name(name: str) -> str:
    if not _COLUMN_PATTERN.match(name) or name in RESERVED_COLUMNS:
        raise RuleViolation(f"bad column name {show(name)}", allowed=_COLUMN_RULE)
    return name


ColumnName = Annotated[str, AfterValidator(_check_column_name)]


class Spec(BaseModel):
    """Common configuration: frozen, strict (no ``"5"`` -> 5), unknown keys and NaN rejected.

    Attribute docstrings become field descriptions, so the schema documents itself.
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )


def check_column_name_at(name: str, key: str) -> None:
    if not _COLUMN_PATTERN.match(name) or name in RESERVED_COLUMNS:
        raise RuleViolation(f"bad column name {show(name)}", key=key, allowed=_COLUMN_RULE)
