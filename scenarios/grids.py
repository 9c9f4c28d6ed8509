"""Grids: scenarios derived from one catalog scenario by setting dotted keys
(``time.max_expected_skew_ms``, ``jobs[*].concurrency``) over lists of values, one scenario per
combination, each named after its varied keys and validated as a whole scenario; each point's
expectation comes from the grid's regions (:mod:`scenarios.expectations`). A grid over
``protocol.release`` gives each point its release's preset for the switches the base file does
not write (docs/scenarios.md, "Releases as presets").
"""

from __future__ import annotations

import itertools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scenarios.expectations import GridRegion, region_expectation
from scenarios.schema import ScenarioError, load_scenario, scenario_from_dict
from scenarios.suite_entries import SuiteScenario


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


def expand_grid(
    grid: GridSpec, catalog: Mapping[str, Path], source: str = "<suites>"
) -> list[SuiteScenario]:
    """The grid's points, one scenario each, in file order of the varied keys (the last one
    varies fastest). Each point is named ``<grid>-<key>=<value>-...`` after the last part of
    each varied key and validated as a whole scenario."""
    base = load_scenario(catalog[grid.base])
    base_data = _rederived(base.model_dump(mode="json"), catalog[grid.base], grid)
    if RELEASE_KEY in grid.set or RELEASE_KEY in grid.vary:
        base_data["protocol"] = _release_free_protocol(
            base_data["protocol"], catalog[grid.base], grid
        )
    points: list[SuiteScenario] = []
    keys = list(grid.vary)
    for combination in itertools.product(*(grid.vary[k] for k in keys)):
        chosen = dict(zip(keys, combination, strict=True))
        name = "-".join([grid.name, *(f"{leaf_name(k)}={_format(v)}" for k, v in chosen.items())])
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
        expectation = region_expectation(grid.name, grid.regions, data, source)
        data["expect"] = {"violations": list(expectation.required)}
        scenario = scenario_from_dict(data, f"{source}: grids.{grid.name} point {name}")
        points.append(SuiteScenario(name, scenario, expectation, grid=grid.name, params=params))
    return points


def _rederived(data: dict[str, Any], base_file: Path, grid: GridSpec) -> dict[str, Any]:
    """The resolved base without the defaults derived from other keys that its file does not
    write and the grid does not set (``[protocol] failed_writes_cleaning``, ``[[jobs]]
    clean_operator``): each point derives them again from its own jobs and release."""
    raw = tomllib.loads(base_file.read_text(encoding="utf-8"))
    gridded = {*grid.set, *grid.vary}
    protocol = raw.get("protocol", {})
    if (
        "failed_writes_cleaning" not in protocol
        and "protocol.failed_writes_cleaning" not in gridded
    ):
        data["protocol"].pop("failed_writes_cleaning", None)
    raw_jobs = raw.get("jobs", [])
    for index, job in enumerate(data["jobs"]):
        written = raw_jobs[index] if index < len(raw_jobs) else {}
        keys = (f"jobs[{index}].clean_operator", "jobs[*].clean_operator")
        if "clean_operator" not in written and not gridded & set(keys):
            job.pop("clean_operator", None)
    return data


RELEASE_KEY = "protocol.release"
"""A grid that sets or varies this key gives its points that release's preset."""


def _release_free_protocol(
    protocol: dict[str, Any], base_file: Path, grid: GridSpec
) -> dict[str, Any]:
    """The base's ``[protocol]`` for a grid over ``protocol.release``: only the switches its
    file writes or the grid sets, so every other switch takes each point's release preset
    (the resolved base holds every switch, which would override any release)."""
    written = tomllib.loads(base_file.read_text(encoding="utf-8")).get("protocol", {})
    prefix = "protocol."
    gridded = {key[len(prefix) :] for key in (*grid.set, *grid.vary) if key.startswith(prefix)}
    return {k: v for k, v in protocol.items() if k in written or k in gridded}


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


def leaf_name(dotted: str) -> str:
    return re.sub(r"\[.*?\]", "", dotted.rsplit(".", 1)[-1])


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def name_safe(value: Any) -> bool:
    if isinstance(value, bool | int | float):
        return True
    return isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9_.+-]+", value) is not None


def _deepcopy(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deepcopy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deepcopy(v) for v in value]
    return value


__all__ = ["RELEASE_KEY", "GridSpec", "expand_grid", "leaf_name", "name_safe", "set_key"]
