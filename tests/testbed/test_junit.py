"""``--junit FILE`` (testbed/junit.py): one JUnit test case per run of ``suite`` and ``sweep``; a
failure carries the violation sentences and the replay command; a user's file is never replaced."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from testbed.cli import main
from testbed.junit import (
    JunitCase,
    JunitTargetError,
    check_junit_target,
    sweep_cases,
    write_junit,
)
from tests.testbed.test_suite import REAL, fake_report  # noqa: F401 (a fixture)
from tests.testbed.test_sweep import BAD as SWEEP_BAD

MISSED = REAL.replace('name = "tiny_real"', 'name = "tiny_missed"') + (
    '\n[expect]\nviolations = ["exactly_once"]\n'
)
"""A real-protocol run that expects a violation it cannot have: a failing verdict."""


def cases_of(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.get("testbed") == "1"
    (suite,) = root.findall("testsuite")
    return {case.get("name"): case for case in suite.findall("testcase")}


def test_passing_failing_and_crashed_runs(tmp_path):
    path = tmp_path / "junit.xml"
    write_junit(
        path,
        "suite demo",
        [
            JunitCase("a-seed1", 1.5),
            JunitCase("b-seed2", 2.0, "expected none, violated ['liveness']", ("liveness: x",)),
            JunitCase("c-seed3", 0.5, error="RuntimeError: boom"),
        ],
    )
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    cases = cases_of(path)
    assert list(cases["a-seed1"]) == []
    failure = cases["b-seed2"].find("failure")
    assert failure is not None and failure.get("message") == "expected none, violated ['liveness']"
    assert failure.text == "liveness: x"
    error = cases["c-seed3"].find("error")
    assert error is not None and error.get("message") == "RuntimeError: boom"
    assert cases["a-seed1"].get("classname") == "suite demo"
    assert cases["b-seed2"].get("time") == "2.000"


def test_a_users_file_or_a_folder_is_refused_but_our_own_report_is_replaced(tmp_path):
    mine, theirs = tmp_path / "mine.xml", tmp_path / "theirs.xml"
    write_junit(mine, "suite demo", [JunitCase("a-seed1", 1.0)])
    check_junit_target(mine)  # ours: replaceable
    theirs.write_text("<testsuites><testsuite name='pytest'/></testsuites>")
    with pytest.raises(JunitTargetError, match="not a JUnit report the testbed wrote"):
        check_junit_target(theirs)
    check_junit_target(theirs, force=True)
    with pytest.raises(JunitTargetError, match="is a folder"):
        check_junit_target(tmp_path)
    check_junit_target(tmp_path / "new.xml")


def test_sweep_rows_become_cases_with_sentences_and_replay():
    rows = [
        {"scenario": "s", "seed": 1, "ok": True, "error": None, "wall_s": 1.0},
        {
            "scenario": "s",
            "seed": 2,
            "ok": False,
            "error": None,
            "wall_s": 2.0,
            "expected_violations": [],
            "violated": ["exactly_once"],
            "why": '{"exactly_once": ["lost 3 records"]}',
        },
    ]
    first, second = sweep_cases(rows, {2: "testbed run s.toml --seed 2"})
    assert first == JunitCase("s-seed1", 1.0)
    assert second.failure == "expected none, violated ['exactly_once']"
    assert second.details == ("exactly_once: lost 3 records", "replay: testbed run s.toml --seed 2")


def test_cli_suite_writes_one_case_per_run(tmp_path, fake_report):  # noqa: F811
    real, missed = tmp_path / "real.toml", tmp_path / "missed.toml"
    real.write_text(REAL)
    missed.write_text(MISSED)
    junit = tmp_path / "ci" / "suite.xml"
    args = ["suite", str(real), str(missed), "--out", str(tmp_path / "out"), "--workers", "1"]
    result = CliRunner().invoke(main, [*args, "--no-minimize", "--junit", str(junit), "-q"])
    assert result.exit_code == 1, result.output
    assert f"junit: {junit}" in result.output
    cases = cases_of(junit)
    assert set(cases) == {"tiny_real-seed1", "tiny_missed-seed1"}
    assert list(cases["tiny_real-seed1"]) == []
    failure = cases["tiny_missed-seed1"].find("failure")
    assert failure is not None
    assert failure.get("message") == "expected ['exactly_once'], violated none"
    assert failure.text is not None and "replay: testbed run" in failure.text


def test_cli_sweep_writes_failures_with_their_sentences(tmp_path):
    scenario = tmp_path / "bad.toml"
    scenario.write_text(SWEEP_BAD)
    junit = tmp_path / "sweep.xml"
    args = ["sweep", str(scenario), "--seeds", "1:2", "--no-spark", "-q"]
    result = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "o"), "--junit", str(junit)])
    assert result.exit_code == 1, result.output
    cases = cases_of(junit)
    assert set(cases) == {"sweep_bad-seed1", "sweep_bad-seed2"}
    failures = [c.find("failure") for c in cases.values()]
    assert any(f is not None and "data loss" in (f.text or "") for f in failures)
    assert all(f is None or "replay: testbed run" in (f.text or "") for f in failures)


def test_cli_refuses_a_foreign_junit_file_before_running(tmp_path):
    scenario = tmp_path / "real.toml"
    scenario.write_text(REAL)
    theirs = tmp_path / "theirs.xml"
    theirs.write_text("not xml at all")
    args = ["suite", str(scenario), "--out", str(tmp_path / "out"), "--junit", str(theirs)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"error: --junit {theirs}: exists and is not a JUnit report the testbed wrote; "
        "remove it or add --force"
    ]
    assert theirs.read_text() == "not xml at all"
    assert not (tmp_path / "out").exists()
