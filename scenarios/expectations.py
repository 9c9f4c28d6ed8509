"""What a suite run must show: an :class:`Expectation` (``exact``, ``any-of`` or ``unchecked``),
and for a grid point the first matching ``[[grids.<name>.expect]]`` region's.

A derived scenario's verdict cannot always be known in advance: TrueTime with a bound above the
clocks' real skew must order every instant, but below it the ordering *may* break, depending on
how the seed drew the clock offsets. So each grid point gets its expectation from the first
matching region, in one of four modes (:data:`EXPECT_MODES`):

- ``none``: no invariant may be violated (the real protocol, or a region where a rule holds);
- ``exact``: exactly ``violations`` (default: the base scenario's) are violated, as in ``[expect]``;
- ``any-of``: the run may violate any of ``violations`` and nothing else (possibly none);
- ``unchecked``: the verdicts are recorded but never fail the suite (only an error does).

A region's ``when`` is a comparison over the point's resolved keys
(``time.max_expected_skew_ms > 2 * time.clock_skew_ms``), evaluated by a small whitelist
evaluator (numbers, keys, ``+ - * /``, comparisons, ``and or not``), never by ``eval``.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scenarios.schema import INVARIANTS, ScenarioError

EXPECT_MODES = ("none", "exact", "any-of", "unchecked")
"""How a grid region states its expectation (see the module docstring)."""


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
class GridRegion:
    """One ``[[grids.<name>.expect]]`` entry: where it applies and what it expects."""

    when: str
    expectation: Expectation


def region_expectation(
    grid: str, regions: Sequence[GridRegion], data: dict[str, Any], source: str
) -> Expectation:
    """The expectation of a grid point (``data``: its scenario as parsed TOML): that of the first
    of ``regions`` whose ``when`` holds (or is empty), else the base scenario's ``[expect]``."""
    for index, region in enumerate(regions):
        if not region.when:
            return region.expectation
        try:
            matched = evaluate_condition(region.when, data)
        except ValueError as error:
            raise ScenarioError(
                source, f"grids.{grid}.expect[{index}].when", str(error), CONDITION_HELP
            ) from None
        if matched:
            return region.expectation
    base = data.get("expect", {}).get("violations", [])
    return Expectation("exact", tuple(base), "no region matched: the base scenario's [expect]")


CONDITION_HELP = (
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


__all__ = [
    "CONDITION_HELP",
    "EXPECT_MODES",
    "Expectation",
    "GridRegion",
    "evaluate_condition",
    "region_expectation",
]
