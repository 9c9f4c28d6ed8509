"""Grids (scenarios/grids.py): the bundled grids expand to valid scenarios, named and ordered by
their varied keys, with the right expectation per region; dotted keys are set in one element or
all."""

from __future__ import annotations

import pytest

from scenarios.grids import set_key
from tests.scenarios.test_suites import BOOK


def test_truetime_grid_expects_order_exactly_where_the_bound_exceeds_twice_the_skew():
    points = [e for e in BOOK.suite("truetime").scenarios if e.grid == "truetime"]
    assert len(points) == 12
    for point in points:
        time = point.scenario.time
        assert time.generator == "truetime"
        assert point.scenario.scenario.duration_s == 60
        assert point.params == {
            "time.max_expected_skew_ms": time.max_expected_skew_ms,
            "time.clock_skew_ms": time.clock_skew_ms,
        }
        if time.max_expected_skew_ms > 2 * time.clock_skew_ms:
            assert point.expectation.mode == "exact"
            assert point.expectation.violations == ()
        else:
            assert point.expectation.mode == "any-of"
            assert "instant_monotonic" in point.expectation.violations
            assert "liveness" not in point.expectation.violations
        # the file the runner writes must not claim a violation it cannot promise
        assert point.scenario.expect.violations == ()
    assert {p.expectation.mode for p in points} == {"exact", "any-of"}


def test_truetime_ceiling_grid_asks_one_to_sixteen_instants_a_second_under_two_bounds():
    points = [e for e in BOOK.suite("truetime").scenarios if e.grid == "truetime_ceiling"]
    asked = {
        (
            p.scenario.time.max_expected_skew_ms,
            sum(1 / job.checkpoint_interval_s for job in p.scenario.jobs),
        )
        for p in points
    }
    assert asked == {(b, a) for b in (50, 200) for a in (1, 2, 4, 8, 16)}
    for point in points:
        assert point.expectation.mode == "exact" and point.expectation.violations == ()
        time = point.scenario.time
        assert time.max_expected_skew_ms > 2 * time.clock_skew_ms  # the real rule


def test_grid_point_names_and_order():
    names = [e.name for e in BOOK.suite("concurrency").scenarios]
    assert names == [
        f"concurrency-concurrency={c}-buckets_per_partition={b}"
        for c in ("occ", "nbcc")
        for b in (1, 2, 8)
    ]
    point = BOOK.suite("concurrency").scenarios[3]
    assert [job.concurrency for job in point.scenario.jobs] == ["nbcc", "nbcc"]
    assert point.scenario.table.buckets_per_partition == 1


def test_set_key_sets_one_element_or_all():
    data = {"jobs": [{"writers": 2}, {"writers": 4}], "time": {"clock_skew_ms": 1}}
    set_key(data, "jobs[*].writers", 8)
    set_key(data, "time.clock_skew_ms", 9)
    set_key(data, "jobs[0].writers", 1)
    assert data == {"jobs": [{"writers": 1}, {"writers": 8}], "time": {"clock_skew_ms": 9}}
    for bad in ("time.nope", "jobs[2].writers", "time[0].x", "jobs..writers"):
        with pytest.raises(KeyError):
            set_key(data, bad, 1)


def test_defaults_derived_from_other_keys_are_derived_again_per_point():
    """A point's cleaning policy and clean operators follow its own jobs and release, not the
    base's: the twin of a COPY_ON_WRITE async upsert runs blocking, so EAGER; the twin of
    append_never_cleans gets its clean operator back."""
    twins = {e.name: e.scenario for e in BOOK.suite("twins").scenarios}
    cow = twins["twin_cow_async_upsert-instant_generation=blocking"]
    assert cow.protocol.failed_writes_cleaning == "EAGER"
    append = twins["twin_append_never_cleans-append_clean=write_config"]
    assert [job.clean_operator for job in append.jobs] == [True]
    releases = {e.name: e.scenario for e in BOOK.suite("releases").scenarios}
    points = [f"release_19215-release={r}" for r in ("1.0", "1.1", "latest")]
    assert [releases[p].jobs[0].clean_operator for p in points] == [False, False, True]
