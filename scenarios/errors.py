"""One-line errors for scenario files: :class:`ScenarioError` (what the user sees) and
:class:`RuleViolation` (what a validator raises to blame one key), and how values are shown."""

from __future__ import annotations

import math


class ScenarioError(Exception):
    """A scenario that cannot be used, explained in one line for the person who wrote it.

    ``source`` is the file (or ``<string>``), ``key`` the dotted path of the offending key
    (``jobs[1].instant_generation``; empty for file-level problems such as TOML syntax),
    ``message`` the problem and ``allowed`` the allowed values or range. ``line`` and ``column``
    are set for TOML syntax errors. The CLI prints ``str(error)`` and exits with code 2.
    """

    def __init__(
        self,
        source: str,
        key: str,
        message: str,
        allowed: str = "",
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        # every argument goes to Exception.args so the error pickles (Spark ships exceptions)
        super().__init__(source, key, message, allowed, line, column)
        self.source = source
        self.key = key
        self.message = message
        self.allowed = allowed
        self.line = line
        self.column = column

    def __str__(self) -> str:
        parts = [self.source]
        if self.key:
            parts.append(self.key)
        elif self.line is not None:
            parts.append(f"line {self.line}, column {self.column}")
        text = ": ".join([*parts, self.message])
        if self.allowed:
            text += f" (allowed: {self.allowed})"
        return " ".join(text.split())  # one line, whatever the message holds


class RuleViolation(ValueError):
    """A rule across keys (or a custom check) broken; carries the key to blame and what is allowed.

    Raised inside validators, where pydantic wraps it; the converter unwraps it so the one-line
    error names the key the user has to change instead of the whole scenario.
    """

    def __init__(self, message: str, *, key: str | None = None, allowed: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.message = message
        self.allowed = allowed


def number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def show(value: object) -> str:
    """A value as the user wrote it in TOML (strings quoted, tables and arrays named)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return str(value)
