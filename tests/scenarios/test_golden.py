"""Every catalog scenario still produces the history digest and verdicts stored in golden.json
(tests/scenarios/golden.py says how to rewrite it when a change is meant to alter histories)."""

from __future__ import annotations

import json

from tests.scenarios.golden import GOLDEN, catalog_names, differences, observe_all


def test_every_catalog_scenario_matches_its_golden_digest_and_verdicts() -> None:
    stored = json.loads(GOLDEN.read_text())
    observed = observe_all(catalog_names())
    changed = differences(stored, observed)
    assert not changed, (
        "these catalog scenarios no longer produce their stored history or verdicts:\n"
        + "\n".join(changed)
        + "\nif the change is meant to alter histories: .venv/bin/python -m tests.scenarios.golden"
        " and commit golden.json with it"
    )


def test_differences_name_each_changed_scenario() -> None:
    stored = {"a": {"digest": "x"}, "b": {"digest": "y"}}
    observed = {"a": {"digest": "x"}, "b": {"digest": "z"}, "c": {"digest": "w"}}
    assert differences(stored, observed) == [
        "b: stored {'digest': 'y'}, now {'digest': 'z'}",
        "c: stored None, now {'digest': 'w'}",
    ]
