"""Precombine (models/flink/precombine.py) against a brute-force reference."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from models.flink.precombine import precombine
from models.format.properties import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING
from models.format.records import SCHEMA

# --- precombine ----------------------------------------------------------------------------------


def reference_precombine(rows: list[dict], merge_mode: str) -> list[dict]:
    """Brute force: per key, the greatest ts (ties: the later row) or simply the later row; the
    kept rows stay in their input order."""
    winner: dict[str, int] = {}
    for i, r in enumerate(rows):
        j = winner.get(r["key"])
        if j is None or merge_mode == COMMIT_TIME_ORDERING or r["ts"] >= rows[j]["ts"]:
            winner[r["key"]] = i
    return [rows[i] for i in sorted(winner.values())]


row_lists = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.sampled_from([f"k{i:08d}" for i in range(6)]),
            "ts": st.integers(0, 5),  # small: ties happen
            "value": st.integers(0, 1000),
        }
    ),
    max_size=40,
)


def as_table(rows: list[dict], chunks: int = 1) -> pa.Table:
    full = []
    for i, r in enumerate(rows):
        full.append(
            {
                "key": r["key"],
                "part": "p0",
                "ts": r["ts"],
                "offset": i,
                "job": 0,
                "value": r["value"],
            }
        )
    table = pa.Table.from_pylist(full, schema=SCHEMA)
    if chunks > 1 and table.num_rows > 1:
        half = table.num_rows // 2
        table = pa.concat_tables([table.slice(0, half), table.slice(half)])
    return table


@settings(max_examples=150)
@given(row_lists, st.sampled_from([EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING]), st.integers(1, 2))
def test_precombine_matches_reference(rows, merge_mode, chunks):
    table = as_table(rows, chunks)
    got = precombine(table, merge_mode)
    assert got.schema == SCHEMA
    expected = reference_precombine(table.to_pylist(), merge_mode)
    assert got.to_pylist() == expected


def test_precombine_event_time_vs_commit_time():
    table = as_table(
        [
            {"key": "k00000001", "ts": 5, "value": 1},
            {"key": "k00000002", "ts": 1, "value": 2},
            {"key": "k00000001", "ts": 3, "value": 3},  # older event arriving later
            {"key": "k00000002", "ts": 1, "value": 4},  # tie: the later one wins
        ]
    )
    ev = precombine(table, EVENT_TIME_ORDERING).to_pylist()
    assert [(r["key"], r["value"]) for r in ev] == [("k00000001", 1), ("k00000002", 4)]
    ct = precombine(table, COMMIT_TIME_ORDERING).to_pylist()
    assert [(r["key"], r["value"]) for r in ct] == [("k00000001", 3), ("k00000002", 4)]
