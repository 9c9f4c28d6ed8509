"""The project's code mutants (tests/mutants/score.py): each patch still applies to the code it
mutates and says what it breaks; the slow test runs the catalog against each and holds the
mutation score."""

from __future__ import annotations

import pytest

from tests.mutants.score import applies, description, mutants, score

MIN_SCORE = 0.9


@pytest.mark.parametrize("patch", mutants(), ids=lambda p: p.stem)
def test_a_mutant_applies_and_says_what_it_breaks(patch):
    assert applies(patch), f"{patch.name} no longer applies: update it to the code it mutates"
    assert len(description(patch)) > 40


@pytest.mark.slow
def test_the_catalog_catches_the_mutants():
    results = score()
    survivors = [r.name for r in results if not r.caught]
    caught = len(results) - len(survivors)
    assert caught / len(results) >= MIN_SCORE, f"survivors: {survivors}"
