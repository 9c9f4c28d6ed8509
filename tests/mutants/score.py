"""The mutation score: the project's own code mutants, and whether the catalog catches each.

Each ``tests/mutants/*.patch`` is one plausible protocol mistake in ``models/`` or ``sim/`` (a
wrong comparison, a missed step), as a ``git diff`` whose first lines (before ``diff --git``)
say what it breaks. :func:`score` applies each to a scratch copy of the working tree and runs
the catalog scenarios but those tagged ``large`` on their own seeds (``python -m
tests.mutants.catalog_verdicts`` in the copy): a mutant is *caught* when some scenario's
verdicts differ from its ``[expect]`` (the first such scenario is named) or a run crashes, and
*survives* otherwise. The score is caught / total; README's verification record prints it.

    python -m tests.mutants.score [NAME...]     (all mutants by default)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
COPIED = ("models", "sim", "invariants", "scenarios", "faults", "reports", "replay", "testbed")
"""The packages a scratch copy needs to simulate and check the catalog."""


@dataclass(frozen=True)
class MutantResult:
    name: str
    what: str
    caught: bool
    by: tuple[str, ...]
    """The first scenario whose verdicts differed (or ``crash: ...``)."""


def mutants() -> list[Path]:
    """Every mutant patch, by name."""
    return sorted(HERE.glob("*.patch"))


def description(patch: Path) -> str:
    """The patch's leading lines (before ``diff --git``), joined."""
    lines = []
    for line in patch.read_text().splitlines():
        if line.startswith("diff --git"):
            break
        lines.append(line.strip())
    return " ".join(x for x in lines if x)


def applies(patch: Path, tree: Path = ROOT) -> bool:
    """Whether ``patch`` applies cleanly to ``tree`` (no change made)."""
    done = subprocess.run(
        ["git", "apply", "--check", str(patch)], cwd=tree, capture_output=True, text=True
    )
    return done.returncode == 0


def _scratch_copy(target: Path) -> None:
    for package in COPIED:
        shutil.copytree(
            ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    (target / "tests" / "mutants").mkdir(parents=True)
    for name in ("__init__.py", "catalog_verdicts.py"):
        shutil.copy(HERE / name, target / "tests" / "mutants" / name)
    (target / "tests" / "__init__.py").touch()


def run_mutant(patch: Path) -> MutantResult:
    """Apply ``patch`` to a scratch copy and run the catalog there."""
    with tempfile.TemporaryDirectory(prefix="mutant-") as work:
        tree = Path(work)
        _scratch_copy(tree)
        subprocess.run(["git", "apply", str(patch)], cwd=tree, check=True)
        done = subprocess.run(
            [sys.executable, "-m", "tests.mutants.catalog_verdicts"],
            cwd=tree,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
    try:
        differing = tuple(json.loads(done.stdout)["differing"])
    except ValueError:  # the run raised (exit 1 with a traceback, not a verdict): caught
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return MutantResult(patch.stem, description(patch), True, (f"crash: {last}",))
    return MutantResult(patch.stem, description(patch), bool(differing), differing)


def score(
    names: list[str] | None = None, on_result: Callable[[MutantResult], None] | None = None
) -> list[MutantResult]:
    """Run the mutants named in ``names`` (all by default), calling ``on_result`` after each."""
    results = []
    for patch in [p for p in mutants() if not names or p.stem in names]:
        results.append(run_mutant(patch))
        if on_result is not None:
            on_result(results[-1])
    return results


def _print_result(result: MutantResult) -> None:
    verdict = "caught  " if result.caught else "SURVIVED"
    print(f"{verdict} {result.name}: {', '.join(result.by[:4]) or '-'}", flush=True)


def main(argv: list[str]) -> int:
    results = score(argv, _print_result)
    caught = sum(r.caught for r in results)
    print(f"mutation score: {caught}/{len(results)} caught by the catalog")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
