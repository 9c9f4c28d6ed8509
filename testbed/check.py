"""``testbed check RUN_DIR``: judge a recorded run again and compare with what it recorded.

A run folder is evidence: a history, the verdicts of the day, and with ``--storage local`` the
Hudi table itself. Checkers improve (new invariants, fixed false alarms) and code changes, so a
folder from last week must be re-checkable without trusting its ``result.json``:

- the history is read back and its digest compared with the recorded one;
- the table is the folder's ``table/`` when the run wrote one; a memory run kept no table, so it
  is rebuilt by re-running ``scenario.toml`` in memory, which is only valid if the re-run gives
  the very same history (same digest), and is said so in the report;
- every checker of :data:`invariants.checks.CHECKERS` runs over the recorded history and that
  table, and each verdict is compared with the one in ``result.json``;
- a local table is also read by the independent reader ``hudi`` (hudi-rs) when it is installed:
  its snapshot must hold exactly the rows ours does (every column, as read by the real rules);
  not for a table that declares column groups (multi-stream partial updates), which hudi-rs
  cannot merge: the report says so instead (:func:`oracle_skip_reason`).

Anything that differs is a *mismatch*, one sentence each; a folder that cannot be read at all is
bad input (:class:`CheckInputError`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from invariants.checks import check_all
from invariants.verdict import Verdict
from models.history import Event, history_digest, read_history
from models.storage import LocalStorage
from models.table_errors import CorruptTableError
from models.view.partial_update import declared_groups
from models.view.reader import read_snapshot
from models.view.table import HudiTable, NotAHudiTableError
from scenarios.schema import Scenario, ScenarioError, load_scenario
from sim.world import World
from testbed.run import verdicts_match

SORT_KEYS = [("_hoodie_partition_path", "ascending"), ("_hoodie_record_key", "ascending")]


class CheckInputError(Exception):
    """The folder is not a readable run folder; the message is one line for the user."""


@dataclass(frozen=True)
class CheckReport:
    folder: Path
    scenario: Scenario
    recorded: dict[str, Any]
    """``result.json`` as written by the run."""
    verdicts: dict[str, Verdict]
    """Today's verdicts (empty when the table could not be rebuilt)."""
    table: str
    """Where the table came from, in words."""
    oracle: str
    """What hudi-rs said, in words."""
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Differences that are not mismatches (a checker added since the run, and holding)."""

    @property
    def match(self) -> bool:
        return not self.mismatches

    @property
    def as_expected(self) -> bool:
        """Whether today's verdicts match the scenario's ``[expect] violations``."""
        return bool(self.verdicts) and verdicts_match(
            self.verdicts, self.scenario.expect.violations
        )


Progress = Callable[[str], None]
"""``progress(step)``: what ``check_run`` is doing now, for a status line."""


def check_run(folder: Path, progress: Progress | None = None) -> CheckReport:
    """Re-check the run folder ``folder`` (see the module docstring); ``progress`` hears each
    step (reading, rebuilding, each checker, the oracle)."""
    say = progress or (lambda step: None)
    say("reading the run folder")
    scenario, events, recorded = _read_folder(folder)
    mismatches: list[str] = []
    digest = history_digest(events)
    if recorded.get("digest") != digest:
        mismatches.append(
            f"history.jsonl has digest {digest}, result.json recorded {recorded.get('digest')}: "
            "the history is not the one that was checked"
        )
    table_root = folder / "table"
    table: HudiTable | None
    if table_root.is_dir():
        table = _open_recorded(table_root, mismatches)
        source = f"the recorded table {table_root}" + ("" if table else " (corrupt, not read)")
    elif scenario.table.storage == "local":
        raise CheckInputError(
            f'{folder}: scenario.toml says storage = "local" but there is no table/ folder'
        )
    else:
        say("re-running scenario.toml to rebuild its table in memory")
        table, source = _rebuild_table(scenario, digest, mismatches)
    verdicts = _check_table(events, table, table_root, mismatches, say)
    notes: list[str] = []
    if verdicts:
        _compare_verdicts(verdicts, recorded.get("invariants", {}), mismatches, notes)
    oracle = "hudi-rs: not applicable (no table on disk)"
    if verdicts and table is not None and table_root.is_dir():
        say("reading the table with hudi-rs")
        oracle = _oracle(table_root, table, mismatches)
    return CheckReport(folder, scenario, recorded, verdicts, source, oracle, mismatches, notes)


def _corrupt(table_root: Path, error: Exception) -> str:
    """The finding for a recorded table that cannot be read: it names the damaged file."""
    return f"the table is corrupt: {table_root}/{error}"


def _open_recorded(table_root: Path, mismatches: list[str]) -> HudiTable | None:
    """The run's ``table/``, or None with a finding if it has no readable ``hoodie.properties``."""
    try:
        return HudiTable(LocalStorage(table_root))
    except (NotAHudiTableError, CorruptTableError) as error:
        mismatches.append(_corrupt(table_root, error))
        return None


def _check_table(
    events: list[Event],
    table: HudiTable | None,
    table_root: Path,
    mismatches: list[str],
    say: Progress,
) -> dict[str, Verdict]:
    """Every checker's verdict, or none with a finding when a file of the table is damaged."""
    if table is None:
        return {}
    try:
        return check_all(events, table, lambda name: say(f"checking {name}"))
    except CorruptTableError as error:
        mismatches.append(_corrupt(table_root, error))
        return {}


def _read_folder(folder: Path) -> tuple[Scenario, list[Event], dict[str, Any]]:
    if not folder.is_dir():
        raise CheckInputError(f"{folder}: no such directory")
    missing = [
        n for n in ("scenario.toml", "history.jsonl", "result.json") if not (folder / n).is_file()
    ]
    if missing:
        raise CheckInputError(f"{folder}: not a run folder (missing {', '.join(missing)})")
    try:
        scenario = load_scenario(folder / "scenario.toml")
    except ScenarioError as error:
        raise CheckInputError(str(error)) from None
    try:
        events = read_history(folder / "history.jsonl")
    except ValueError as error:  # the message names the file and the line
        raise CheckInputError(str(error)) from None
    try:
        recorded = json.loads((folder / "result.json").read_text())
    except (ValueError, UnicodeDecodeError) as error:
        raise CheckInputError(f"{folder / 'result.json'}: not JSON ({error})") from None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("invariants"), dict):
        raise CheckInputError(f'{folder / "result.json"}: no "invariants" object')
    return scenario, events, recorded


def _rebuild_table(
    scenario: Scenario, digest: str, mismatches: list[str]
) -> tuple[HudiTable | None, str]:
    """A memory run kept no table: re-run the scenario in memory, valid only if it replays."""
    again = World(scenario).run()
    if again.history.digest() != digest:
        mismatches.append(
            f"re-running scenario.toml gives another history ({again.history.digest()}), so "
            "the table of this memory run cannot be rebuilt (the code changed since the run); "
            "nothing was re-checked"
        )
        return None, "not rebuilt: the re-run did not replay the recorded history"
    return (
        HudiTable(again.storage),
        "rebuilt in memory by re-running scenario.toml (a memory run keeps no table; "
        "the re-run replayed the recorded history exactly)",
    )


def _compare_verdicts(
    verdicts: dict[str, Verdict],
    recorded: dict[str, Any],
    mismatches: list[str],
    notes: list[str],
) -> None:
    for name in sorted(set(verdicts) | set(recorded)):
        now = verdicts[name].to_json() if name in verdicts else None
        then = recorded.get(name)
        if now is None:
            mismatches.append(f"{name}: in result.json but no longer checked")
        elif then is None:
            state = "holds" if now["ok"] else "is VIOLATED"
            line = f"{name}: not in result.json (a checker added since the run); it {state}"
            (notes if now["ok"] else mismatches).append(line)
        elif now["ok"] != then.get("ok"):
            was, is_ = ("ok" if v else "VIOLATED" for v in (then.get("ok"), now["ok"]))
            mismatches.append(f"{name}: result.json says {was}, re-checked {is_}")
        elif now["violations"] != then.get("violations"):
            mismatches.append(
                f"{name}: violated as recorded, but the violations differ "
                f"({len(then.get('violations', []))} recorded, {len(now['violations'])} now)"
            )


def _oracle(table_root: Path, table: HudiTable, mismatches: list[str]) -> str:
    """Compare our snapshot with hudi-rs's; a mismatch sentence if they differ."""
    skip = oracle_skip_reason(table)
    if skip:
        return f"hudi-rs: merged snapshot not compared: {skip}"
    if importlib.util.find_spec("hudi") is None:
        return "hudi-rs: not installed (pip install hudi), independent read skipped"
    hudi = importlib.import_module("hudi")
    try:
        theirs_batches = (
            hudi.HudiTableBuilder.from_base_uri(str(table_root))
            .build()
            .read(hudi.HudiReadOptions())
        )
    except Exception as error:  # hudi-rs raises its own error types
        mismatches.append(f"hudi-rs cannot read the table: {error}")
        return "hudi-rs: could not read the table"
    try:
        ours = read_snapshot(table)
    except CorruptTableError as error:
        mismatches.append(_corrupt(table_root, error))
        return "hudi-rs: not compared (our read of the table failed)"
    theirs = pa.Table.from_batches(theirs_batches) if theirs_batches else None
    difference = snapshot_difference(ours, theirs)
    if difference:
        mismatches.append(f"hudi-rs reads another snapshot: {difference}")
        return "hudi-rs: snapshot DIFFERS"
    return f"hudi-rs: reads the same snapshot ({ours.num_rows} rows)"


def oracle_skip_reason(table: HudiTable) -> str:
    """Why hudi-rs's snapshot cannot be compared with ours for ``table`` ("" if it can).

    A table that declares column groups (multi-stream partial updates, docs/protocol.md section 5.3) is merged per
    group (:mod:`models.view.partial_update`); hudi-rs implements no partial merging, so it would
    merge whole rows and disagree by design, which says nothing about either reader."""
    groups = declared_groups(table.config)
    if not groups:
        return ""
    fields = ", ".join(g.ordering_field for g in groups)
    return (
        f"the table declares {len(groups)} column groups (ordered by {fields}), merged per group "
        "(PartialUpdateAvroPayload, HUDI-4882), which hudi-rs does not implement"
    )


def snapshot_difference(ours: pa.Table, theirs: pa.Table | None) -> str:
    """One sentence on how two snapshots differ (by partition + record key, every column),
    or ``""`` if they hold the same rows."""
    if theirs is None or theirs.num_rows == 0:
        return "" if ours.num_rows == 0 else f"hudi-rs reads no rows, ours {ours.num_rows}"
    if set(ours.column_names) != set(theirs.column_names):
        only = sorted(set(ours.column_names) ^ set(theirs.column_names))
        return f"the columns differ ({', '.join(only)})"
    ours, theirs = ours.sort_by(SORT_KEYS), theirs.select(ours.column_names).sort_by(SORT_KEYS)
    mine, other = _keys(ours), _keys(theirs)
    if mine != other:
        only_ours = sorted(set(mine) - set(other))
        only_theirs = sorted(set(other) - set(mine))
        parts = [f"{ours.num_rows} rows in ours, {theirs.num_rows} in hudi-rs"]
        if only_ours:
            parts.append(f"{len(only_ours)} keys only in ours (e.g. {_show_keys(only_ours)})")
        if only_theirs:
            parts.append(
                f"{len(only_theirs)} keys only in hudi-rs (e.g. {_show_keys(only_theirs)})"
            )
        if not only_ours and not only_theirs:
            parts.append("a key appears a different number of times")
        return "; ".join(parts)
    differing = []
    for name in ours.column_names:
        left, right = ours.column(name), theirs.column(name).cast(ours.schema.field(name).type)
        if not left.equals(right):
            rows = [
                i
                for i, (a, b) in enumerate(zip(left.to_pylist(), right.to_pylist(), strict=True))
                if a != b
            ]
            differing.append((name, rows))
    if not differing:
        return ""
    name, rows = differing[0]
    keys = [mine[i] for i in rows]
    columns = ", ".join(n for n, _ in differing)
    return (
        f"values differ in {columns} for {len(rows)} keys (e.g. {_show_keys(keys)}, "
        f"{name} ours {ours.column(name)[rows[0]].as_py()!r} vs hudi-rs "
        f"{theirs.column(name)[rows[0]].as_py()!r})"
    )


def _keys(table: pa.Table) -> list[tuple[str, str]]:
    return list(
        zip(
            table.column("_hoodie_partition_path").to_pylist(),
            table.column("_hoodie_record_key").to_pylist(),
            strict=True,
        )
    )


def _show_keys(keys: list[tuple[str, str]], limit: int = 3) -> str:
    return ", ".join(f"{partition}/{key}" for partition, key in keys[:limit])


def report_lines(report: CheckReport) -> list[str]:
    """The report as ``testbed run`` prints a run, then the comparison."""
    recorded = report.recorded
    name, seed = report.scenario.scenario.name, report.scenario.scenario.seed
    lines = []
    if report.verdicts:
        verdict = "as expected" if report.as_expected else "NOT as expected"
        lines.append(f"{name} seed {seed}: {verdict} (re-checked)")
        expected = set(report.scenario.expect.violations)
        for invariant, v in report.verdicts.items():
            state = "ok" if v.ok else "VIOLATED"
            note = " (expected)" if (not v.ok) == (invariant in expected) else " (unexpected)"
            lines.append(f"  {invariant}: {state}{note}")
            lines += [f"    - {violation.why}" for violation in v.violations[:3]]
    else:
        lines.append(f"{name} seed {seed}: not re-checked")
    lines.append(f"  table: {report.table}")
    lines.append(f"  {report.oracle}")
    lines += [f"  note: {note}" for note in report.notes]
    if report.match:
        lines.append(f"matches result.json (digest {recorded.get('digest')})")
    else:
        lines.append("MISMATCH with result.json:")
        lines += [f"  - {mismatch}" for mismatch in report.mismatches]
    return lines


__all__ = [
    "CheckInputError",
    "CheckReport",
    "check_run",
    "oracle_skip_reason",
    "report_lines",
    "snapshot_difference",
]
