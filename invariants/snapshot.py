"""Invariant ``no_data_loss``: the final snapshot read of the table equals the ledger's
model of everything the completed checkpoints covered (PROTOCOL.md section 9, invariant 4 at the
end of the run).

The read goes through our own reader with the slicing rule the table was written with (a variant
such as ``base_instant`` names logs differently). The comparison is on the data columns, per
record key: missing keys (lost data), extra keys (uncommitted or duplicated data) and keys whose
winning version differs (a wrong merge) are reported separately, each with a few examples.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from invariants.ledger import build_ledger
from invariants.verdict import Verdict, Violation
from models.history import Event
from models.reader import read_snapshot
from models.records import RECORD_KEY_FIELD, SCHEMA
from models.table import HudiTable, ViewOptions

NAME = "no_data_loss"
EXAMPLES = 5


def check_snapshot(events: Sequence[Event], table: HudiTable) -> Verdict:
    ledger = build_ledger(events)
    protocol = ledger.setup.get("protocol", {})
    options = ViewOptions(
        rule=protocol.get("file_slicing"), anchor=protocol.get("slice_anchor", "earliest_completed")
    )
    model = ledger.model()
    snapshot = read_snapshot(table, options=options)
    data = _data_columns(snapshot)
    anchor = tuple(j.covered_event for j in ledger.jobs if j.covered_event is not None)
    violations = []
    model_keys = model.column(RECORD_KEY_FIELD).to_pylist()
    read_keys = data.column(RECORD_KEY_FIELD).to_pylist() if data.num_rows else []
    duplicates = _duplicates(read_keys)
    if duplicates:
        violations.append(
            Violation(
                f"{len(duplicates)} record keys appear more than once in the snapshot "
                f"(e.g. {', '.join(duplicates[:EXAMPLES])}): records were committed twice",
                anchor,
            )
        )
    model_set, read_set = set(model_keys), set(read_keys)
    missing = sorted(model_set - read_set)
    if missing:
        violations.append(
            Violation(
                f"{len(missing)} of {len(model_set)} records covered by completed checkpoints are "
                f"missing from the snapshot (e.g. {', '.join(missing[:EXAMPLES])}): data loss",
                anchor,
            )
        )
    extra = sorted(read_set - model_set)
    if extra:
        violations.append(
            Violation(
                f"{len(extra)} records in the snapshot were never covered by a completed "
                f"checkpoint (e.g. {', '.join(extra[:EXAMPLES])})",
                anchor,
            )
        )
    if not duplicates:
        wrong = _different_versions(model, data)
        if wrong:
            violations.append(
                Violation(
                    f"{len(wrong)} keys hold a different version than the merge rule picks "
                    f"(e.g. {', '.join(wrong[:EXAMPLES])})",
                    anchor,
                )
            )
    return Verdict(NAME, tuple(violations))


def _data_columns(snapshot: pa.Table) -> pa.Table:
    if snapshot.num_rows == 0:
        return SCHEMA.empty_table()
    return snapshot.select(SCHEMA.names).cast(SCHEMA)


def _duplicates(keys: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for key in keys:
        if key in seen:
            out.append(key)
        seen.add(key)
    return sorted(set(out))


def _different_versions(model: pa.Table, data: pa.Table) -> list[str]:
    joined = model.join(data, RECORD_KEY_FIELD, join_type="inner", right_suffix="_read")
    differs = pc.or_(
        pc.not_equal(joined.column("offset"), joined.column("offset_read")),
        pc.not_equal(joined.column("job"), joined.column("job_read")),
    )
    return sorted(joined.filter(differs).column(RECORD_KEY_FIELD).to_pylist())
