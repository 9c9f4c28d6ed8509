"""``--junit FILE`` of ``testbed suite`` and ``sweep``: the runs' verdicts as JUnit XML, so any
CI system (GitLab, Jenkins, GitHub test reporters) shows them natively.

One ``<testsuite>`` per command, one ``<testcase>`` per run: ``classname`` is the suite (or the
swept scenario), ``name`` is ``<scenario>-seed<N>``, ``time`` the run's wall seconds. A run whose
verdict differs from its expectation is a ``<failure>``: its ``message`` says what was expected
and what was violated, its text holds each violation's sentence and the command that replays the
run; a run that raised is an ``<error>`` with the exception's last line. Runs as expected pass,
including known-bad scenarios whose expected violations were caught.

The root carries ``testbed="1"``: a file without it is not replaced (a user's file is never
touched), unless the command has ``--force``. The file is written atomically.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from testbed.atomic import write_text_atomic

MARKER_ATTRIBUTE = "testbed"


class JunitTargetError(ValueError):
    """``--junit FILE`` names something the testbed may not write (one line)."""


@dataclass(frozen=True)
class JunitCase:
    """One run as a test case."""

    name: str
    time_s: float
    failure: str | None = None
    """One line: what was expected and what was violated (None: as expected)."""
    details: tuple[str, ...] = ()
    """The violation sentences and the replay command, one per line."""
    error: str | None = None
    """The exception a run raised (its last line)."""


def check_junit_target(path: Path, *, force: bool = False) -> None:
    """Refuse a ``path`` that is a folder, or an existing file the testbed did not write."""
    if path.is_dir():
        raise JunitTargetError(f"--junit {path}: is a folder; give a file name")
    if not path.exists() or force:
        return
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError):
        root = None
    if root is None or root.get(MARKER_ATTRIBUTE) != "1":
        raise JunitTargetError(
            f"--junit {path}: exists and is not a JUnit report the testbed wrote; "
            "remove it or add --force"
        )


def write_junit(path: Path, suite: str, cases: Sequence[JunitCase]) -> None:
    """Write ``cases`` as one JUnit ``<testsuite>`` named ``suite`` to ``path``."""
    failures = sum(c.failure is not None and c.error is None for c in cases)
    errors = sum(c.error is not None for c in cases)
    total_s = sum(c.time_s for c in cases)
    root = ET.Element(
        "testsuites",
        {
            MARKER_ATTRIBUTE: "1",
            "name": f"testbed {suite}",
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": str(errors),
            "time": f"{total_s:.3f}",
        },
    )
    node = ET.SubElement(
        root,
        "testsuite",
        {
            "name": suite,
            "tests": str(len(cases)),
            "failures": str(failures),
            "errors": str(errors),
            "time": f"{total_s:.3f}",
        },
    )
    for case in cases:
        _case_element(node, suite, case)
    ET.indent(root)
    text = ET.tostring(root, encoding="unicode", xml_declaration=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, text + "\n")


def _case_element(parent: ET.Element, suite: str, case: JunitCase) -> None:
    attributes = {"classname": suite, "name": case.name, "time": f"{case.time_s:.3f}"}
    element = ET.SubElement(parent, "testcase", attributes)
    if case.error is not None:
        child = ET.SubElement(element, "error", {"message": case.error})
        child.text = "\n".join(case.details)
    elif case.failure is not None:
        child = ET.SubElement(element, "failure", {"message": case.failure})
        child.text = "\n".join(case.details)


def verdict_line(expected: Iterable[str], violated: Iterable[str]) -> str:
    """``expected [a, b], violated [b, c]``: the failure message of a run."""
    return f"expected {sorted(expected) or 'none'}, violated {sorted(violated) or 'none'}"


def suite_cases(summary: dict, out: Path) -> list[JunitCase]:
    """The test cases of a suite's ``summary.json`` (``out``: the suite folder, whose run
    folders' ``result.json`` hold the violation sentences)."""
    cases = []
    for row in summary["runs"]:
        name = f"{row['scenario']}-seed{row['seed']}"
        replay = (f"replay: {row['replay']}",) if row.get("replay") else ()
        if row.get("error"):
            cases.append(JunitCase(name, row["wall_s"] or 0.0, error=row["error"], details=replay))
            continue
        failure = None
        details: tuple[str, ...] = ()
        if not row["ok"]:
            failure = verdict_line(row["expected_violations"], row["violated"])
            details = (*_result_sentences(out / row["run_dir"] / "result.json"), *replay)
        cases.append(JunitCase(name, row["wall_s"] or 0.0, failure, details))
    return cases


def _result_sentences(path: Path) -> list[str]:
    """``<invariant>: <why>`` for every violation in a run's ``result.json``."""
    try:
        invariants = json.loads(path.read_text())["invariants"]
    except (OSError, ValueError, KeyError):
        return [f"(no result.json in {path.parent})"]
    return [
        f"{name}: {violation['why']}"
        for name, verdict in sorted(invariants.items())
        for violation in verdict["violations"]
    ]


def sweep_cases(rows: Iterable[dict], replay: dict[int, str]) -> list[JunitCase]:
    """The test cases of a sweep's rows (``sweep.parquet``), ``replay`` by failing seed."""
    cases = []
    for row in rows:
        name = f"{row['scenario']}-seed{row['seed']}"
        wall_s = row.get("wall_s") or 0.0
        more = (f"replay: {replay[row['seed']]}",) if row["seed"] in replay else ()
        if row.get("error"):
            cases.append(JunitCase(name, wall_s, error=row["error"], details=more))
        elif not row["ok"]:
            why = json.loads(row.get("why") or "{}")
            sentences = tuple(f"{n}: {w}" for n, ws in sorted(why.items()) for w in ws)
            failure = verdict_line(row["expected_violations"], row["violated"])
            cases.append(JunitCase(name, wall_s, failure, (*sentences, *more)))
        else:
            cases.append(JunitCase(name, wall_s))
    return cases


__all__ = [
    "JunitCase",
    "JunitTargetError",
    "check_junit_target",
    "suite_cases",
    "sweep_cases",
    "verdict_line",
    "write_junit",
]
