"""Pydantic's validation errors and TOML syntax errors, rephrased as one :class:`ScenarioError`
line: the dotted key, the problem and what is allowed (derived from the key's type)."""

from __future__ import annotations

import re
import tomllib
from types import UnionType
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from scenarios.errors import RuleViolation, ScenarioError, number_text, show
from scenarios.fields import INVARIANTS, check_invariant

# ---------------------------------------------------------------------------------------------
# pydantic errors -> one line

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)\s*$")


def syntax_error(source: str, error: tomllib.TOMLDecodeError) -> ScenarioError:
    """TOML syntax error with line and column (Python 3.11 only has them in the message)."""
    text = str(error)
    match = _TOML_POSITION.search(text)
    if match is None:
        return ScenarioError(source, "", f"invalid TOML: {text}")
    return ScenarioError(
        source,
        "",
        f"invalid TOML: {text[: match.start()]}",
        line=int(match.group(1)),
        column=int(match.group(2)),
    )


def convert(source: str, error: ValidationError, root: type[BaseModel]) -> ScenarioError:
    """The first pydantic error, rephrased as key + problem + what is allowed."""
    first = error.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    kind = first["type"]
    value = first.get("input")
    cause = first.get("ctx", {}).get("error")
    if isinstance(cause, RuleViolation):
        key = cause.key or _dotted(loc)
        allowed = cause.allowed or _allowed(_resolve(root, loc))
        return ScenarioError(source, key, cause.message, allowed)
    if kind == "extra_forbidden":
        parent = _model_of(_resolve(root, loc[:-1]))
        keys = ", ".join(parent.model_fields) if parent is not None else ""
        if not loc[:-1]:
            return ScenarioError(source, _dotted(loc), f"unknown table [{loc[-1]}]", keys)
        return ScenarioError(source, _dotted(loc), f"unknown key {show(loc[-1])}", keys)
    target = _resolve(root, loc)
    allowed = _allowed(target)
    key = _dotted(loc)
    if kind == "missing":
        what = "table" if _model_of(target) is not None else "key"
        return ScenarioError(source, key, f"required {what} is missing", allowed)
    if kind == "literal_error":
        return ScenarioError(source, key, f"unknown value {show(value)}", allowed)
    if kind in {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}:
        return ScenarioError(source, key, f"{show(value)} is out of range", allowed)
    if kind == "finite_number":
        return ScenarioError(source, key, f"{show(value)} is not a finite number", allowed)
    if kind == "too_short" and loc == ("jobs",):
        return ScenarioError(source, key, "no [[jobs]] table", allowed)
    if kind == "string_too_short":
        return ScenarioError(source, key, "must not be empty", allowed)
    if kind in _TYPE_NOUNS:
        noun = "an array of tables [[jobs]]" if loc == ("jobs",) else _TYPE_NOUNS[kind]
        return ScenarioError(source, key, f"expected {noun}, got {show(value)}", allowed)
    return ScenarioError(source, key, first["msg"], allowed)


_TYPE_NOUNS = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "true or false",
    "string_type": "a string",
    "model_type": "a table",
    "model_attributes_type": "a table",
    "dict_type": "a table",
    "tuple_type": "an array",
}
"""Pydantic's type-error kinds -> the TOML kind of value that was expected."""


def _dotted(loc: tuple[int | str, ...]) -> str:
    """``('jobs', 1, 'writers')`` -> ``jobs[1].writers``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _resolve(root: type[BaseModel], loc: tuple[int | str, ...]) -> Any:
    """The schema node a location points at: a model class, or a field (its FieldInfo), or an
    array element's annotation; ``None`` when the location leaves the schema."""
    node: Any = root
    for part in loc:
        annotation = node.annotation if isinstance(node, FieldInfo) else node
        if isinstance(part, str) and _is_model(annotation) and part in annotation.model_fields:
            node = annotation.model_fields[part]
        elif isinstance(part, int) and get_origin(annotation) is tuple:
            node = get_args(annotation)[0]
        else:
            return None
    return node


def _is_model(node: Any) -> bool:
    return isinstance(node, type) and issubclass(node, BaseModel)


def _model_of(node: Any) -> type[BaseModel] | None:
    """The table (model class) a schema node stands for, if it is one."""
    annotation = node.annotation if isinstance(node, FieldInfo) else node
    return annotation if _is_model(annotation) else None


def _allowed(node: Any) -> str:
    """What a schema node accepts, phrased for a person writing TOML."""
    if node is None:
        return ""
    model = _model_of(node)
    if model is not None:
        return "a table with keys " + ", ".join(model.model_fields)
    if isinstance(node, FieldInfo):
        annotation, metadata = node.annotation, list(node.metadata)
    elif get_origin(node) is Annotated:
        annotation, *metadata = get_args(node)
    else:
        annotation, metadata = node, []
    if get_origin(annotation) is UnionType:  # an optional key: describe the value it takes
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if any(getattr(item, "func", None) is check_invariant for item in metadata):
        return ", ".join(INVARIANTS)
    if get_origin(annotation) is Literal:
        return ", ".join(str(choice) for choice in get_args(annotation))
    if get_origin(annotation) is tuple:
        element = get_args(annotation)[0]
        if _is_model(element):
            return f"one or more {getattr(element, 'toml_array', '[[jobs]]')} tables"
        return "an array of: " + _allowed(element)
    if annotation is bool:
        return "true, false"
    if annotation is str:
        return "a non-empty string" if _bound(metadata, "min_length") else "a string"
    noun = {int: "an integer", float: "a number"}.get(annotation, str(annotation))
    low, high, above = (_bound(metadata, name) for name in ("ge", "le", "gt"))
    if low is not None and high is not None:
        return f"{noun} in [{number_text(low)}, {number_text(high)}]"
    if above is not None and high is not None:
        return f"{noun} > {number_text(above)} and <= {number_text(high)}"
    if above is not None:
        return f"{noun} > {number_text(above)}"
    if low is not None:
        return f"{noun} >= {number_text(low)}"
    return noun


def _bound(metadata: list[Any], name: str) -> Any:
    """A constraint's value from field metadata (pydantic keeps ``Ge(ge=0)``-style objects)."""
    for item in metadata:
        value = getattr(item, name, None)
        if value is not None:
            return value
    return None
