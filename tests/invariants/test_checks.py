"""Tests for invariants/checks.py: the registry of checkers behind ``result.json``."""

from __future__ import annotations

from invariants.checks import CHECKERS
from scenarios.schema import INVARIANTS


def test_every_registered_checker_has_a_public_invariant_name():
    assert set(CHECKERS) <= set(INVARIANTS)
