"""Golden digests: what each catalog scenario produces at its own seed, stored in ``golden.json``.

A change to the models or the simulator that alters any history, even one that every verdict
survives, changes a digest, and ``test_golden.py`` says which scenarios changed. When the change is
meant to alter histories, rewrite the file and commit it with the change (the diff then shows
which scenarios moved):

    .venv/bin/python -m tests.scenarios.golden

Each scenario runs as ``testbed run`` runs it (in memory, full ``duration_s``, every checker), in
worker processes; ``large`` scenarios are left out, as in every default run.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import multiprocessing
import sys
from pathlib import Path
from typing import Any

GOLDEN = Path(__file__).with_name("golden.json")
WORKERS = 2


def catalog_names() -> list[str]:
    """Every catalog scenario a default run simulates (not the ``large`` ones), sorted."""
    from scenarios import catalog, load_scenario
    from scenarios.schema import LARGE_TAG

    return [p.stem for p in catalog() if LARGE_TAG not in load_scenario(p).scenario.tags]


def observe(name: str) -> dict[str, Any]:
    """One catalog scenario's seed, history digest and violated invariants."""
    from scenarios import catalog_dir, load_scenario
    from testbed.run import simulate_and_check

    scenario = load_scenario(catalog_dir() / f"{name}.toml")
    outcome, verdicts = simulate_and_check(scenario)
    return {
        "seed": scenario.scenario.seed,
        "digest": outcome.history.digest(),
        "violated": sorted(n for n, v in verdicts.items() if not v.ok),
    }


def observe_all(names: list[str], workers: int = WORKERS) -> dict[str, dict[str, Any]]:
    """:func:`observe` for every name, in fresh worker processes (nothing shared with the
    caller's process), keyed and ordered by name."""
    context = multiprocessing.get_context("spawn")
    with futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        return dict(zip(names, pool.map(observe, names), strict=True))


def differences(stored: dict[str, Any], observed: dict[str, Any]) -> list[str]:
    """One line per scenario whose record differs (or is missing on either side)."""
    lines = []
    for name in sorted(set(stored) | set(observed)):
        old, new = stored.get(name), observed.get(name)
        if old != new:
            lines.append(f"{name}: stored {old}, now {new}")
    return lines


def main() -> int:
    """Rewrite ``golden.json`` and print what changed."""
    stored = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    observed = observe_all(catalog_names())
    GOLDEN.write_text(json.dumps(observed, indent=2, sort_keys=True) + "\n")
    changed = differences(stored, observed)
    print("\n".join(changed) if changed else "no scenario changed")
    print(f"{GOLDEN}: {len(observed)} scenarios")
    return 0


if __name__ == "__main__":
    sys.exit(main())
