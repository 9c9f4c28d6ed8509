"""Verdicts: what a checker says about a history, in the shape ``result.json`` carries.

A violation names the offending history events (their ``index``) and says in one sentence why, so
a reader can jump from the report straight to the events that broke the rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Violation:
    why: str
    events: tuple[int, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {"why": self.why, "events": list(self.events)}


@dataclass(frozen=True)
class Verdict:
    name: str
    violations: tuple[Violation, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.violations

    def to_json(self) -> dict[str, object]:
        return {"ok": self.ok, "violations": [v.to_json() for v in self.violations]}
