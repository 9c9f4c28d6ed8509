"""Tests for scenarios/cleaning.py: the cleaning policy and the clean operators resolved as Hudi's
Flink sink resolves them, directly and through a parsed scenario."""

from __future__ import annotations

import pytest

from scenarios.cleaning import auto_cleaning, clean_operator
from scenarios.schema import parse_scenario

MINIMAL = '[scenario]\nname = "s"\n'


@pytest.mark.parametrize(
    ("jobs", "release", "expected"),
    [
        ([{}], "latest", "LAZY"),
        ([{}], "1.0", "EAGER"),
        ([{"instant_generation": "blocking"}], "latest", "EAGER"),
        ([{"concurrency": "occ"}], "1.0", "LAZY"),
        ([{}, {}], "1.0", "LAZY"),
    ],
)
def test_auto_cleaning(jobs: list[dict], release: str, expected: str) -> None:
    assert auto_cleaning(jobs, release) == expected


def test_only_the_table_services_job_has_a_clean_operator() -> None:
    protocol = {"failed_writes_cleaning": "LAZY"}
    assert clean_operator({"table_services": True}, protocol, "auto")
    assert not clean_operator({"table_services": False}, protocol, "auto")
    assert not clean_operator({}, protocol, "auto")


def test_an_append_job_follows_append_clean() -> None:
    job = {"table_services": True, "operation": "insert"}
    lazy = {"failed_writes_cleaning": "LAZY"}
    assert clean_operator(job, lazy, "auto")  # latest: write_config
    assert not clean_operator(job, {**lazy, "append_clean": "flink_conf"}, "auto")
    assert clean_operator(job, {**lazy, "append_clean": "flink_conf"}, "LAZY")
    assert not clean_operator(job, {**lazy, "release": "1.1"}, "auto")
    assert not clean_operator(job, {"failed_writes_cleaning": "EAGER"}, "auto")
    # a release of the wrong type is left to validation: no KeyError, the remedy's answer
    assert clean_operator(job, {**lazy, "release": 11}, "auto") is True


@pytest.mark.parametrize(
    ("jobs", "protocol", "expected"),
    [
        ('[[jobs]]\n[[jobs]]\noperation = "insert"\n', "", [True, False]),
        ('[[jobs]]\noperation = "insert"\n', "", [True]),
        ('[[jobs]]\noperation = "insert"\n', 'append_clean = "flink_conf"', [False]),
        ('[[jobs]]\noperation = "insert"\n', 'release = "1.1"', [False]),
        (
            '[[jobs]]\noperation = "insert"\n',
            'release = "1.1"\nfailed_writes_cleaning = "LAZY"',
            [True],
        ),
        ('[[jobs]]\noperation = "insert"\nconcurrency = "occ"\n', 'release = "1.0"', [False]),
        (
            '[[jobs]]\noperation = "insert"\n',
            'append_clean = "flink_conf"\nrelease = "1.0"',
            [False],
        ),
        ("[[jobs]]\n", 'release = "1.1"', [True]),
        ('[[jobs]]\noperation = "insert"\nclean_operator = false\n', "", [False]),
    ],
)
def test_clean_operator_follows_hudis_sink(jobs: str, protocol: str, expected: list[bool]) -> None:
    """``HoodieTableSink``: an upsert job's pipeline always cleans; an append job's only when
    LAZY is in its Flink options (``flink_conf``, 1.0 and 1.1) or, as remedied, whenever its
    write client cleans LAZY; no job but the table-services one."""
    scenario = parse_scenario(f"{MINIMAL}{jobs}[protocol]\n{protocol}\n")
    assert [job.clean_operator for job in scenario.jobs] == expected
