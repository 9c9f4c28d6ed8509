"""Suites: named groups of scenarios and grids for ``testbed suite``, read from a suites file.

A suite is what an engineer runs before merging a protocol change ("every catalog scenario"), so
its definition is data next to the catalog (``scenarios/suites.toml``, documented in
``docs/scenarios.md``, "Suites"), not code: adding a scenario to a suite is a one-line edit.
Patterns (``"*"``) leave out catalog scenarios tagged ``large`` (``[scenario] tags``): a
multi-million-record table would turn "every catalog scenario" from minutes into an hour, so
those run only where a suite names them exactly (the ``large`` suite).

This module reads and checks the file (every name it mentions exists, every grid point validates,
every region evaluates) and builds a suite from it; grids are expanded by :mod:`scenarios.grids`,
and what each run must show is :mod:`scenarios.expectations`.

Like the rest of this layer it imports nothing of ours but the schema (docs/design.md).
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.expectations import EXPECT_MODES, Expectation, GridRegion
from scenarios.grids import GridSpec, expand_grid, leaf_name, name_safe
from scenarios.schema import INVARIANTS, LARGE_TAG, ScenarioError, load_scenario
from scenarios.suite_entries import Suite, SuiteScenario

SUITES_FILE = Path(__file__).resolve().parent / "suites.toml"
"""The bundled suite definitions (package data, like the catalog)."""


@dataclass(frozen=True)
class SuiteSpec:
    name: str
    description: str
    scenarios: tuple[str, ...]
    """Catalog scenario names or shell-style patterns (``*``: the whole catalog)."""
    grids: tuple[str, ...]


@dataclass(frozen=True)
class SuiteBook:
    """A parsed and checked suites file: every name it mentions exists, every grid expands."""

    default: str
    suites: Mapping[str, SuiteSpec]
    grids: Mapping[str, GridSpec]
    source: Path
    catalog: Mapping[str, Path]
    large: frozenset[str] = frozenset()
    """Catalog scenarios tagged ``large``: only a pattern that is their exact name picks them."""

    def suite(self, name: str) -> Suite:
        """The suite ``name`` with its scenarios loaded and grids expanded, in file order
        (each scenario once, at its first mention)."""
        spec = self.suites.get(name)
        if spec is None:
            raise ScenarioError(
                str(self.source), "", f"unknown suite {name!r}", ", ".join(self.suites)
            )
        entries: list[SuiteScenario] = []
        for scenario_name in _match_catalog(self, spec, f"suites.{name}.scenarios"):
            path = self.catalog[scenario_name]
            scenario = load_scenario(path)
            expectation = Expectation("exact", scenario.expect.violations)
            entries.append(SuiteScenario(scenario_name, scenario, expectation, source=path))
        for grid in spec.grids:
            entries += expand_grid(self.grids[grid], self.catalog, str(self.source))
        unique: dict[str, SuiteScenario] = {}
        for entry in entries:
            unique.setdefault(entry.name, entry)
        return Suite(name, spec.description, tuple(unique.values()))


def _match_catalog(book: SuiteBook, spec: SuiteSpec, key: str) -> list[str]:
    """The catalog names ``spec``'s patterns pick, in pattern order. A large scenario (tagged
    ``large``: minutes of CPU, gigabytes of table) is picked only by its exact name, so ``"*"``
    stays the catalog an engineer runs before every merge."""
    names: list[str] = []
    for pattern in spec.scenarios:
        if pattern in book.catalog:
            matched = [pattern]
        else:
            matched = sorted(
                n for n in book.catalog if n not in book.large and fnmatch.fnmatchcase(n, pattern)
            )
        if not matched:
            raise ScenarioError(
                str(book.source),
                key,
                f"{pattern!r} names no catalog scenario (large ones only by their exact name)",
                ", ".join(book.catalog),
            )
        names += [n for n in matched if n not in names]
    return names


def large_scenarios(catalog: Mapping[str, Path]) -> frozenset[str]:
    """The names of the catalog scenarios tagged ``large`` (each file is read and validated: a
    broken catalog file is one :class:`ScenarioError` here, as it would be when run)."""
    return frozenset(
        name for name, path in catalog.items() if LARGE_TAG in load_scenario(path).scenario.tags
    )


def catalog_files(folder: Path | None = None) -> dict[str, Path]:
    """Catalog scenario name (file stem) -> path, sorted by name."""
    folder = folder or Path(__file__).resolve().parent / "catalog"
    return {path.stem: path for path in sorted(folder.glob("*.toml"))}


def load_suites(
    path: Path = SUITES_FILE, *, catalog: Mapping[str, Path] | None = None
) -> SuiteBook:
    """Read and check a suites file: unknown keys, unknown scenarios, grids whose points do not
    validate and regions that cannot be evaluated are one-line :class:`ScenarioError`\\ s."""
    source = str(path)
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ScenarioError(
            source, "", f"cannot read the file: {error.strerror or error}"
        ) from None
    except tomllib.TOMLDecodeError as error:
        raise ScenarioError(source, "", f"invalid TOML: {error}") from None
    catalog = dict(catalog if catalog is not None else catalog_files())
    _keys(data, "", {"default", "suites", "grids"}, source)
    grids: dict[str, GridSpec] = {}
    for name, table in _tables(data.get("grids", {}), "grids", source).items():
        grids[name] = _grid_spec(name, table, source, catalog)
    suites: dict[str, SuiteSpec] = {}
    for name, table in _tables(data.get("suites", {}), "suites", source).items():
        key = f"suites.{name}"
        _keys(table, key, {"description", "scenarios", "grids"}, source)
        spec = SuiteSpec(
            name,
            _string(table, "description", key, source, required=True),
            _strings(table, "scenarios", key, source),
            _strings(table, "grids", key, source),
        )
        if not spec.scenarios and not spec.grids:
            raise ScenarioError(source, key, "names no scenario and no grid", "scenarios, grids")
        for index, grid in enumerate(spec.grids):
            if grid not in grids:
                raise ScenarioError(
                    source, f"{key}.grids[{index}]", f"unknown grid {grid!r}", ", ".join(grids)
                )
        suites[name] = spec
    default = data.get("default")
    if not isinstance(default, str) or default not in suites:
        raise ScenarioError(
            source, "default", f"{default!r} is not a suite of this file", ", ".join(suites)
        )
    book = SuiteBook(default, suites, grids, Path(path), catalog, large_scenarios(catalog))
    for spec in suites.values():
        _match_catalog(book, spec, f"suites.{spec.name}.scenarios")
    for grid in grids.values():
        expand_grid(grid, catalog, source)  # every point validates, every region evaluates
    return book


def files_suite(paths: Sequence[Path], name: str = "files") -> Suite:
    """An ad-hoc suite of scenario files, each held to its own ``[expect]``."""
    entries: list[SuiteScenario] = []
    seen: dict[str, Path] = {}
    for path in paths:
        scenario = load_scenario(path)
        scenario_name = scenario.scenario.name
        if scenario_name in seen:
            raise ScenarioError(
                str(path),
                "scenario.name",
                f"{scenario_name!r} is also the name of {seen[scenario_name]}; "
                "run folders are named after scenarios",
                "a name no other file of the suite has",
            )
        seen[scenario_name] = path
        expectation = Expectation("exact", scenario.expect.violations)
        entries.append(SuiteScenario(scenario_name, scenario, expectation, source=path))
    return Suite(name, "Scenario files: " + ", ".join(str(p) for p in paths), tuple(entries))


def _grid_spec(name: str, table: Any, source: str, catalog: Mapping[str, Path]) -> GridSpec:
    key = f"grids.{name}"
    _keys(table, key, {"description", "base", "set", "vary", "expect"}, source)
    base = _string(table, "base", key, source, required=True)
    if base not in catalog:
        raise ScenarioError(
            source, f"{key}.base", f"unknown catalog scenario {base!r}", ", ".join(catalog)
        )
    fixed = table.get("set", {})
    if not isinstance(fixed, dict):
        raise ScenarioError(source, f"{key}.set", "expected a table", "dotted key = value")
    values = _vary_values(table.get("vary", {}), key, source)
    raw_regions = table.get("expect", [])
    if not isinstance(raw_regions, list):
        raise ScenarioError(source, f"{key}.expect", "expected an array of tables", "")
    regions = [
        _grid_region(region, f"{key}.expect[{index}]", source, catalog[base])
        for index, region in enumerate(raw_regions)
    ]
    return GridSpec(
        name, _string(table, "description", key, source), base, fixed, values, tuple(regions)
    )


def _vary_values(vary: Any, key: str, source: str) -> dict[str, tuple[Any, ...]]:
    """A grid's ``vary`` table: dotted key -> its values, each usable in a run folder name, the
    keys' last parts distinct (points are named after them)."""
    if not isinstance(vary, dict) or not vary:
        raise ScenarioError(
            source, f"{key}.vary", "expected a non-empty table", "dotted key = [values]"
        )
    values: dict[str, tuple[Any, ...]] = {}
    for dotted, options in vary.items():
        if not isinstance(options, list) or not options:
            raise ScenarioError(
                source, f"{key}.vary.{dotted}", "expected a non-empty array", "[value, ...]"
            )
        for option in options:
            if not name_safe(option):
                raise ScenarioError(
                    source,
                    f"{key}.vary.{dotted}",
                    f"{option!r} cannot be part of a run folder name",
                    "numbers, booleans, strings of letters, digits, _ . + -",
                )
        values[dotted] = tuple(options)
    leaves = [leaf_name(dotted) for dotted in values]
    if len(set(leaves)) != len(leaves):
        raise ScenarioError(
            source,
            f"{key}.vary",
            "two varied keys end in the same name, so grid points would be named alike",
            "keys with distinct last parts",
        )
    return values


def _grid_region(region: Any, rkey: str, source: str, base_path: Path) -> GridRegion:
    """One ``[[grids.<name>.expect]]`` entry; ``exact`` without ``violations`` takes the base
    scenario's (the file at ``base_path``)."""
    _keys(region, rkey, {"when", "expect", "violations", "why"}, source)
    mode = region.get("expect")
    if mode not in EXPECT_MODES:
        raise ScenarioError(
            source, f"{rkey}.expect", f"unknown mode {mode!r}", ", ".join(EXPECT_MODES)
        )
    violations = _strings(region, "violations", rkey, source)
    for vindex, invariant in enumerate(violations):
        if invariant not in INVARIANTS:
            raise ScenarioError(
                source,
                f"{rkey}.violations[{vindex}]",
                f"unknown invariant {invariant!r}",
                ", ".join(INVARIANTS),
            )
    if mode == "none" and violations:
        raise ScenarioError(source, f"{rkey}.violations", 'mode "none" takes no violations', "[]")
    if mode == "any-of" and not violations:
        raise ScenarioError(
            source, f"{rkey}.violations", 'mode "any-of" needs its invariants', "invariants"
        )
    if mode == "exact" and "violations" not in region:
        violations = load_scenario(base_path).expect.violations
    expectation = Expectation(
        "exact" if mode == "none" else mode,
        violations,
        _string(region, "why", rkey, source),
    )
    return GridRegion(_string(region, "when", rkey, source), expectation)


def _keys(table: Any, key: str, allowed: set[str], source: str) -> None:
    if not isinstance(table, dict):
        raise ScenarioError(source, key, "expected a table", ", ".join(sorted(allowed)))
    for name in table:
        if name not in allowed:
            where = f"{key}.{name}" if key else name
            raise ScenarioError(source, where, f"unknown key {name!r}", ", ".join(sorted(allowed)))


def _tables(value: Any, key: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScenarioError(source, key, "expected a table of tables", f"[{key}.<name>]")
    for name, table in value.items():
        if not isinstance(table, dict):
            raise ScenarioError(source, f"{key}.{name}", "expected a table", f"[{key}.{name}]")
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ScenarioError(source, f"{key}.{name}", "bad name", "letters, digits, _ and -")
    return value


def _string(
    table: dict[str, Any], name: str, key: str, source: str, *, required: bool = False
) -> str:
    value = table.get(name, "")
    if not isinstance(value, str) or (required and not value):
        raise ScenarioError(source, f"{key}.{name}", "expected a non-empty string", "a string")
    return value


def _strings(table: dict[str, Any], name: str, key: str, source: str) -> tuple[str, ...]:
    value = table.get(name, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ScenarioError(source, f"{key}.{name}", "expected an array of strings", "[...]")
    return tuple(value)


__all__ = [
    "SUITES_FILE",
    "SuiteBook",
    "SuiteSpec",
    "catalog_files",
    "files_suite",
    "large_scenarios",
    "load_suites",
]
