"""Expectations (scenarios/expectations.py): the modes a run's verdict is held to, and the small
language of a grid region's ``when``."""

from __future__ import annotations

import pytest

from scenarios import INVARIANTS
from scenarios.expectations import Expectation, evaluate_condition


@pytest.mark.parametrize(
    ("expectation", "violated", "holds"),
    [
        (Expectation("exact", ()), [], True),
        (Expectation("exact", ()), ["slicing"], False),
        (Expectation("exact", ("slicing", "no_data_loss")), ["no_data_loss", "slicing"], True),
        (Expectation("exact", ("slicing", "no_data_loss")), ["slicing"], False),
        (Expectation("any-of", ("slicing", "no_data_loss")), [], True),
        (Expectation("any-of", ("slicing", "no_data_loss")), ["slicing"], True),
        (Expectation("any-of", ("slicing",)), ["slicing", "liveness"], False),
        (Expectation("unchecked"), ["liveness"], True),
    ],
)
def test_expectation_modes(expectation, violated, holds):
    assert expectation.holds(violated, INVARIANTS) is holds


def test_exact_expectation_ignores_invariants_without_a_checker():
    expectation = Expectation("exact", ("slicing", "no_data_loss"))
    assert expectation.holds(["slicing"], ["slicing", "liveness"])


DATA = {
    "time": {"max_expected_skew_ms": 200, "clock_skew_ms": 50},
    "jobs": [{"writers": 2}, {"writers": 4}],
    "table": {"type": "MERGE_ON_READ"},
}


@pytest.mark.parametrize(
    ("condition", "value"),
    [
        ("time.max_expected_skew_ms > 2 * time.clock_skew_ms", True),
        ("time.max_expected_skew_ms > 4 * time.clock_skew_ms", False),
        ("time.max_expected_skew_ms >= 4 * time.clock_skew_ms", True),
        ("jobs[1].writers == 2 * jobs[0].writers and not jobs[0].writers > 3", True),
        ("table.type == 'COPY_ON_WRITE' or time.clock_skew_ms - 50 != 0", False),
        ("0 < time.clock_skew_ms < 100", True),
    ],
)
def test_conditions(condition, value):
    assert evaluate_condition(condition, DATA) is value


@pytest.mark.parametrize(
    "condition",
    [
        "__import__('os')",
        "time.nope > 1",
        "jobs[5].writers > 1",
        "time.clock_skew_ms >",
        "[1] == 1",
    ],
)
def test_conditions_outside_the_language_are_refused(condition):
    with pytest.raises(ValueError):
        evaluate_condition(condition, DATA)
