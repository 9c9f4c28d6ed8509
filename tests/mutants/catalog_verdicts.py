"""Run the catalog scenarios but those tagged ``large`` on their own seeds, in this process, until
one's verdicts differ from its ``[expect]``, and print ``{"differing": [names]}`` (that one, or
none). Exit 1 when one differs. What :mod:`tests.mutants.score` runs inside a mutant's scratch
copy: a mutant is caught as soon as one scenario tells it apart."""

from __future__ import annotations

import json
import sys

from invariants.checks import check_all
from models.view.table import HudiTable
from scenarios import catalog, load_scenario
from scenarios.schema import LARGE_TAG
from sim.world import World


def differing() -> list[str]:
    out = []
    for path in catalog():
        scenario = load_scenario(path)
        if LARGE_TAG in scenario.scenario.tags:
            continue
        outcome = World(scenario).run()
        verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
        violated = {name for name, verdict in verdicts.items() if not verdict.ok}
        if violated != set(scenario.expect.violations):
            out.append(path.stem)
            break
    return out


if __name__ == "__main__":
    found = differing()
    print(json.dumps({"differing": found}))
    sys.exit(1 if found else 0)
