"""Suites: named groups of scenarios for ``testbed suite``, and grids that derive scenarios.

A suite is what an engineer runs before merging a protocol change ("every catalog scenario"), so
its definition is data next to the catalog (``scenarios/suites.toml``, documented in
``docs/scenarios.md``, "Suites"), not code: adding a scenario to a suite is a one-line edit.
Patterns (``"*"``) leave out catalog scenarios tagged ``large`` (``[scenario] tags``): a
multi-million-record table would turn "every catalog scenario" from minutes into an hour, so
those run only where a suite names them exactly (the ``large`` suite).

A *grid* derives scenarios from one catalog scenario by setting dotted keys
(``time.max_expected_skew_ms``, ``jobs[*].concurrency``) over lists of values, one scenario per
combination. A derived scenario's verdict cannot always be known in advance: TrueTime with a
bound above the clocks' real skew must order every instant, but below it the ordering *may*
break, depending on how the seed drew the clock offsets. So each grid point gets its expectation
from the first matching ``[[grids.<name>.expect]]`` region, in one of four modes:

- ``none``: no invariant may be violated (the real protocol, or a region where a rule holds);
- ``exact``: exactly ``violations`` (default: the base scenario's) are violated, as in ``[expect]``;
- ``any-of``: the run may violate any of ``violations`` and nothing else (possibly none);
- ``unchecked``: the verdicts are recorded but never fail the suite (only an error does).

A region's ``when`` is a comparison over the point's resolved keys
(``time.max_expected_skew_ms > 2 * time.clock_skew_ms``), evaluated by a small whitelist
evaluator (numbers, keys, ``+ - * /``, comparisons, ``and or not``), never by ``eval``.

Like the rest of this layer it imports nothing of ours but the schema (docs/design.md).
"""

from __future__ import annotations

import ast
import fnmatch
import itertools
import operator
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scenarios.schema import (
    INVARIANTS,
    LARGE_TAG,
    Scenario,
    ScenarioError,
    load_scenario,
    scenario_from_dict,
)

__all__ = [
    "EXPECT_MODES",
    "SUITES_FILE",
    "Expectation",
    "GridRegion",
    "GridSpec",
    "Suite",
    "SuiteBook",
    "SuiteScenario",
    "SuiteSpec",
    "catalog_files",
    "evaluate_condition",
    "expand_grid",
    "files_suite",
    "large_scenarios",
    "load_suites",
    "set_key",
]

SUITES_FILE = Path(__file__).resolve().parent / "suites.toml"
"""The bundled suite definitions (package data, like the catalog)."""

EXPECT_MODES = ("none", "exact", "any-of", "unchecked")
"""How a grid region states its expectation (see the module docstring)."""


# --- what a run must show --------------------------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    """The verdict a suite run must get.

    ``mode`` is ``exact`` (``violations`` are exactly the violated invariants among those
    checked: the rule of ``[expect]`` and ``result.json``'s ``ok``), ``any-of`` (the violated
    invariants are a subset of ``violations``) or ``unchecked`` (any verdict will do). ``none``
    in a suite file is ``exact`` with no violations.
    """

    mode: str = "exact"
    violations: tuple[str, ...] = ()
    why: str = ""
    """Why this expectation holds (a grid region's ``why``), for the report."""

    def holds(self, violated: Iterable[str], checked: Iterable[str]) -> bool:
        violated_set = set(violated)
        if self.mode == "unchecked":
            return True
        if self.mode == "any-of":
            return violated_set <= set(self.violations)
        return violated_set == set(self.violations) & set(checked)

    @property
    def required(self) -> tuple[str, ...]:
        """Invariants the run must violate (what ``[expect] violations`` of its file says)."""
        return self.violations if self.mode == "exact" else ()

    @property
    def allowed(self) -> tuple[str, ...]:
        """Invariants the run may violate without failing the suite (``unchecked``: all)."""
        return INVARIANTS if self.mode == "unchecked" else self.violations


@dataclass(frozen=True)
class SuiteScenario:
    """One scenario of a suite, resolved: a catalog or user file, or a grid point."""

    name: str
    scenario: Scenario
    expectation: Expectation
    source: Path | None = None
    """The file it was read from; ``None`` for a grid point (the runner writes one)."""
    grid: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    """A grid point's varied dotted keys -> values (its coordinates in the grid; the keys
    ``set`` for every point are in its scenario); empty for a plain scenario."""


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    scenarios: tuple[SuiteScenario, ...]


# --- the suites file ---------------------------------------------------------------------------


@dataclass(frozen=True)
class GridRegion:
    """One ``[[grids.<name>.expect]]`` entry: where it applies and what it expects."""

    when: str
    expectation: Expectation


@dataclass(frozen=True)
class GridSpec:
    name: str
    description: str
    base: str
    """A catalog scenario name."""
    set: Mapping[str, Any]
    """Dotted key -> value applied to every point."""
    vary: Mapping[str, tuple[Any, ...]]
    """Dotted key -> values; the points are every combination, in file order."""
    regions: tuple[GridRegion, ...]


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


# --- grids ----------------------------------------------------------------------------------------


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
    vary = table.get("vary", {})
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
            if not _name_safe(option):
                raise ScenarioError(
                    source,
                    f"{key}.vary.{dotted}",
                    f"{option!r} cannot be part of a run folder name",
                    "numbers, booleans, strings of letters, digits, _ . + -",
                )
        values[dotted] = tuple(options)
    leaves = [_leaf(dotted) for dotted in values]
    if len(set(leaves)) != len(leaves):
        raise ScenarioError(
            source,
            f"{key}.vary",
            "two varied keys end in the same name, so grid points would be named alike",
            "keys with distinct last parts",
        )
    regions = []
    raw_regions = table.get("expect", [])
    if not isinstance(raw_regions, list):
        raise ScenarioError(source, f"{key}.expect", "expected an array of tables", "")
    for index, region in enumerate(raw_regions):
        rkey = f"{key}.expect[{index}]"
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
            raise ScenarioError(
                source, f"{rkey}.violations", 'mode "none" takes no violations', "[]"
            )
        if mode == "any-of" and not violations:
            raise ScenarioError(
                source, f"{rkey}.violations", 'mode "any-of" needs its invariants', "invariants"
            )
        if mode == "exact" and "violations" not in region:
            violations = load_scenario(catalog[base]).expect.violations
        expectation = Expectation(
            "exact" if mode == "none" else mode,
            violations,
            _string(region, "why", rkey, source),
        )
        regions.append(GridRegion(_string(region, "when", rkey, source), expectation))
    return GridSpec(
        name, _string(table, "description", key, source), base, fixed, values, tuple(regions)
    )


def expand_grid(
    grid: GridSpec, catalog: Mapping[str, Path], source: str = "<suites>"
) -> list[SuiteScenario]:
    """The grid's points, one scenario each, in file order of the varied keys (the last one
    varies fastest). Each point is named ``<grid>-<key>=<value>-...`` after the last part of
    each varied key and validated as a whole scenario."""
    base = load_scenario(catalog[grid.base])
    base_data = base.model_dump(mode="json")
    points: list[SuiteScenario] = []
    keys = list(grid.vary)
    for combination in itertools.product(*(grid.vary[k] for k in keys)):
        chosen = dict(zip(keys, combination, strict=True))
        name = "-".join([grid.name, *(f"{_leaf(k)}={_format(v)}" for k, v in chosen.items())])
        data = _deepcopy(base_data)
        params: dict[str, Any] = {}
        for group, pairs in (("set", grid.set), ("vary", chosen)):
            for dotted, value in pairs.items():
                try:
                    set_key(data, dotted, value)
                except KeyError as error:
                    raise ScenarioError(
                        source, f"grids.{grid.name}.{group}.{dotted}", str(error.args[0]), ""
                    ) from None
                if group == "vary":
                    params[dotted] = value
        data["scenario"]["name"] = name
        what = ", ".join(f"{k} = {_format(v)}" for k, v in params.items())
        data["scenario"]["description"] = (
            f"Grid {grid.name} ({grid.description.strip()}) over {grid.base}: {what}."
            if grid.description
            else f"Grid {grid.name} over {grid.base}: {what}."
        )
        expectation = _region_for(grid, data, source)
        data["expect"] = {"violations": list(expectation.required)}
        scenario = scenario_from_dict(data, f"{source}: grids.{grid.name} point {name}")
        points.append(SuiteScenario(name, scenario, expectation, grid=grid.name, params=params))
    return points


def _region_for(grid: GridSpec, data: dict[str, Any], source: str) -> Expectation:
    for index, region in enumerate(grid.regions):
        if not region.when:
            return region.expectation
        try:
            matched = evaluate_condition(region.when, data)
        except ValueError as error:
            raise ScenarioError(
                source, f"grids.{grid.name}.expect[{index}].when", str(error), _CONDITION_HELP
            ) from None
        if matched:
            return region.expectation
    base = data.get("expect", {}).get("violations", [])
    return Expectation("exact", tuple(base), "no region matched: the base scenario's [expect]")


_PATH_PART = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+|\*)\])?$")


def set_key(data: dict[str, Any], dotted: str, value: Any) -> None:
    """Set ``dotted`` (``time.clock_skew_ms``, ``jobs[0].writers``, ``jobs[*].concurrency``) in
    a scenario as parsed TOML; ``[*]`` sets it in every element. The key must exist already
    (the data is a resolved scenario, so every key does), else :class:`KeyError`."""
    parts = dotted.split(".")
    targets: list[Any] = [data]
    for position, part in enumerate(parts):
        match = _PATH_PART.match(part)
        if match is None:
            raise KeyError(f"{dotted!r}: {part!r} is not a key")
        name, index = match.groups()
        last = position == len(parts) - 1
        following: list[Any] = []
        for target in targets:
            if not isinstance(target, dict) or name not in target:
                raise KeyError(f"{dotted!r}: no key {name!r} there")
            if index is None:
                if last:
                    target[name] = value
                else:
                    following.append(target[name])
                continue
            items = target[name]
            if not isinstance(items, list):
                raise KeyError(f"{dotted!r}: {name!r} is not an array")
            chosen = range(len(items)) if index == "*" else [int(index)]
            for i in chosen:
                if i >= len(items):
                    raise KeyError(f"{dotted!r}: {name!r} has {len(items)} elements")
                if last:
                    items[i] = value
                else:
                    following.append(items[i])
        targets = following


_CONDITION_HELP = (
    "comparisons of dotted keys and numbers, e.g. time.max_expected_skew_ms > 2 * "
    "time.clock_skew_ms, joined with and / or / not"
)
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_ARITHMETIC: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def evaluate_condition(text: str, data: Mapping[str, Any]) -> bool:
    """Evaluate a region's ``when`` over a scenario as parsed TOML; :class:`ValueError` for
    anything outside the small language (no calls, no names but keys of ``data``)."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise ValueError(f"cannot parse {text!r}") from None
    return bool(_evaluate(tree.body, data, text))


def _evaluate(node: ast.AST, data: Mapping[str, Any], text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float | str | bool):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in ("true", "false"):
            return node.id == "true"
        return _lookup(data, node.id, text)
    if isinstance(node, ast.Attribute):
        return _lookup(_evaluate(node.value, data, text), node.attr, text)
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        items = _evaluate(node.value, data, text)
        index = node.slice.value
        if not isinstance(items, list) or not isinstance(index, int) or index >= len(items):
            raise ValueError(f"{text!r}: bad index {index!r}")
        return items[index]
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, data, text)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            compare = _COMPARE.get(type(op))
            if compare is None:
                raise ValueError(f"{text!r}: unsupported comparison")
            right = _evaluate(comparator, data, text)
            if not compare(left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v, data, text) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        value = _evaluate(node.operand, data, text)
        return (not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITHMETIC:
        return _ARITHMETIC[type(node.op)](
            _evaluate(node.left, data, text), _evaluate(node.right, data, text)
        )
    raise ValueError(f"{text!r}: unsupported expression {ast.unparse(node)!r}")


def _lookup(container: Any, key: str, text: str) -> Any:
    if not isinstance(container, Mapping) or key not in container:
        raise ValueError(f"{text!r}: no key {key!r}")
    return container[key]


# --- small helpers -------------------------------------------------------------------------------


def _leaf(dotted: str) -> str:
    return re.sub(r"\[.*?\]", "", dotted.rsplit(".", 1)[-1])


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _name_safe(value: Any) -> bool:
    if isinstance(value, bool | int | float):
        return True
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.+-]+", value) is not None


def _deepcopy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deepcopy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deepcopy(v) for v in value]
    return value


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
