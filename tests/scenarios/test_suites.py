"""Suites (scenarios/suites.py, scenarios/suites.toml): every bundled suite resolves to existing
scenarios, patterns pick the catalog but its large scenarios, and a bad suites file is one line
naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios import ScenarioError, catalog, load_scenario
from scenarios.expectations import Expectation
from scenarios.schema import LARGE_TAG
from scenarios.suites import SUITES_FILE, catalog_files, files_suite, large_scenarios, load_suites

BOOK = load_suites()
CATALOG = {path.stem for path in catalog()}
LARGE = {path.stem for path in catalog() if LARGE_TAG in load_scenario(path).scenario.tags}


@pytest.mark.parametrize("name", list(BOOK.suites))
def test_every_bundled_suite_resolves_to_existing_scenarios(name):
    suite = BOOK.suite(name)
    assert suite.description.strip()
    assert suite.scenarios
    names = [entry.name for entry in suite.scenarios]
    assert len(names) == len(set(names))
    for entry in suite.scenarios:
        assert entry.scenario.scenario.name == entry.name
        if entry.grid is None:
            assert entry.name in CATALOG
            assert entry.source is not None and entry.source.is_file()
            assert entry.expectation == Expectation("exact", entry.scenario.expect.violations)
        else:
            assert entry.source is None
            assert BOOK.grids[entry.grid].base in CATALOG
            assert entry.params


def test_every_named_scenario_and_grid_exists():
    for spec in BOOK.suites.values():
        for pattern in spec.scenarios:
            assert pattern == "*" or pattern in CATALOG, pattern
        for grid in spec.grids:
            assert grid in BOOK.grids
    for grid in BOOK.grids.values():
        assert grid.base in CATALOG
        assert grid.description.strip()
        assert grid.regions, f"grid {grid.name} states no expectation"


def test_default_suite_runs_the_whole_catalog_but_the_large_scenarios():
    suite = BOOK.suite(BOOK.default)
    names = {entry.name for entry in suite.scenarios}
    assert LARGE and names >= CATALOG - LARGE and not names & LARGE
    assert BOOK.suite("catalog").scenarios == tuple(e for e in suite.scenarios if e.grid is None)


def test_the_large_suite_runs_exactly_the_large_scenarios():
    assert BOOK.large == LARGE == large_scenarios(catalog_files())
    assert {e.name for e in BOOK.suite("large").scenarios} == LARGE


def _tagged_catalog(tmp_path: Path) -> dict[str, Path]:
    """Two catalog scenarios, one of them copied and tagged ``large``."""
    catalog = {name: catalog_files()[name] for name in ("async_baseline", "blocking_stalls")}
    text = (
        catalog["async_baseline"]
        .read_text()
        .replace('name = "async_baseline"', 'name = "async_big"\ntags = ["large"]')
    )
    (tmp_path / "async_big.toml").write_text(text)
    return {**catalog, "async_big": tmp_path / "async_big.toml"}


@pytest.mark.parametrize(
    ("patterns", "picked"),
    [
        (["*"], ["async_baseline", "blocking_stalls"]),
        (["async_*"], ["async_baseline"]),
        (["async_big"], ["async_big"]),
        (["*", "async_big"], ["async_baseline", "blocking_stalls", "async_big"]),
    ],
)
def test_patterns_leave_out_large_scenarios_and_exact_names_pick_them(tmp_path, patterns, picked):
    catalog = _tagged_catalog(tmp_path)
    text = GOOD.replace(
        'scenarios = ["async_baseline"]', f"scenarios = {patterns!r}".replace("'", '"')
    )
    book = load_suites(write(tmp_path, text), catalog=catalog)
    assert book.large == {"async_big"}
    names = [e.name for e in book.suite("mine").scenarios if e.grid is None]
    assert names == picked


def test_a_pattern_that_only_matches_large_scenarios_is_an_error(tmp_path):
    text = GOOD.replace('scenarios = ["async_baseline"]', 'scenarios = ["async_b?g"]')
    with pytest.raises(ScenarioError, match="large ones only by their exact name"):
        load_suites(write(tmp_path, text), catalog=_tagged_catalog(tmp_path))


def test_smoke_is_a_handful_covering_async_blocking_and_a_known_bad_variant():
    smoke = BOOK.suite("smoke").scenarios
    assert 3 <= len(smoke) <= 6
    modes = {job.instant_generation for e in smoke for job in e.scenario.jobs}
    assert {"async", "blocking"} <= modes
    assert any(e.expectation.violations for e in smoke)
    assert all(e.scenario.scenario.duration_s <= 120 for e in smoke)


# --- bad suites files ------------------------------------------------------------------------------

GOOD = """\
default = "mine"

[suites.mine]
description = "one scenario and a grid"
scenarios = ["async_baseline"]
grids = ["g"]

[grids.g]
description = "writers"
base = "async_baseline"
set = { "scenario.duration_s" = 10 }

[grids.g.vary]
"jobs[*].writers" = [2, 3]

[[grids.g.expect]]
when = "jobs[0].writers > 2"
expect = "unchecked"

[[grids.g.expect]]
expect = "none"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "suites.toml"
    path.write_text(text)
    return path


def test_a_small_suites_file(tmp_path):
    book = load_suites(write(tmp_path, GOOD))
    suite = book.suite(book.default)
    assert [e.name for e in suite.scenarios] == ["async_baseline", "g-writers=2", "g-writers=3"]
    two, three = suite.scenarios[1:]
    assert two.expectation == Expectation("exact", ())
    assert three.expectation.mode == "unchecked"
    assert three.params == {"jobs[*].writers": 3}
    assert [j.writers for j in three.scenario.jobs] == [3]
    assert three.scenario.scenario.duration_s == 10
    assert "g-writers=3" in three.scenario.scenario.name


@pytest.mark.parametrize(
    ("change", "key", "fragment"),
    [
        (('default = "mine"', 'default = "nope"'), "default", "is not a suite"),
        (
            ('scenarios = ["async_baseline"]', 'scenarios = ["nope"]'),
            "suites.mine.scenarios",
            "names no catalog",
        ),
        (('grids = ["g"]', 'grids = ["h"]'), "suites.mine.grids[0]", "unknown grid"),
        (('base = "async_baseline"', 'base = "nope"'), "grids.g.base", "unknown catalog"),
        (('expect = "none"', 'expect = "sometimes"'), "grids.g.expect[1].expect", "unknown mode"),
        (
            ('"jobs[*].writers" = [2, 3]', '"jobs[*].writers" = [0]'),
            "jobs[0].writers",
            "out of range",
        ),
        (
            ('"jobs[*].writers" = [2, 3]', '"jobs[*].wrters" = [2]'),
            "grids.g.vary.jobs[*].wrters",
            "no key",
        ),
        (
            ('when = "jobs[0].writers > 2"', 'when = "open(1)"'),
            "grids.g.expect[0].when",
            "unsupported",
        ),
        (('description = "one', 'descripton = "one'), "suites.mine.descripton", "unknown key"),
    ],
)
def test_bad_suites_file_is_one_line_naming_the_key(tmp_path, change, key, fragment):
    path = write(tmp_path, GOOD.replace(*change))
    with pytest.raises(ScenarioError) as error:
        load_suites(path)
    text = str(error.value)
    assert "\n" not in text
    assert key in text and fragment in text


def test_any_of_needs_invariants_and_they_must_exist(tmp_path):
    text = GOOD.replace('expect = "none"', 'expect = "any-of"\nviolations = ["slicng"]')
    with pytest.raises(ScenarioError, match="unknown invariant"):
        load_suites(write(tmp_path, text))
    text = GOOD.replace('expect = "none"', 'expect = "any-of"')
    with pytest.raises(ScenarioError, match="needs its invariants"):
        load_suites(write(tmp_path, text))


def test_unknown_suite_lists_the_suites():
    with pytest.raises(ScenarioError) as error:
        BOOK.suite("nightly")
    assert "unknown suite 'nightly'" in str(error.value)
    assert "smoke" in str(error.value) and "full" in str(error.value)


def test_files_suite_refuses_two_files_with_one_name(tmp_path):
    source = catalog_files()["async_baseline"]
    copy = tmp_path / "copy.toml"
    copy.write_text(source.read_text())
    with pytest.raises(ScenarioError, match="also the name of"):
        files_suite([source, copy])
    suite = files_suite([source])
    assert suite.scenarios[0].expectation == Expectation("exact", ())
    assert suite.scenarios[0].scenario == load_scenario(source)


def test_suites_file_is_package_data():
    assert SUITES_FILE.is_file()
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"suites.toml"' in text
