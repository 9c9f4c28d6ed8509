"""Keeping one version per record key in a write task's flush (Hudi's ``write.precombine``:
``StreamWriteFunction#deduplicateRecordsIfNeeded`` -> ``FlinkWriteHelper#deduplicateRecords``,
by the table's merge mode)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.format.properties import COMMIT_TIME_ORDERING
from models.format.records import ORDERING_FIELD, RECORD_KEY_FIELD


def precombine(rows: pa.Table, merge_mode: str) -> pa.Table:
    """Keep one version per record key: the greatest ordering value (event-time ordering) or the
    latest in the batch (commit-time ordering). Column-wise: one sort of the key (and ordering)
    columns, a neighbour compare, and a single take of the winners in their original order."""
    n = rows.num_rows
    if n < 2:
        return rows
    position = pa.array(np.arange(n, dtype=np.int64))
    if merge_mode == COMMIT_TIME_ORDERING:
        keyed = pa.table({"key": rows.column(RECORD_KEY_FIELD), "pos": position})
        ordering = [("key", "ascending"), ("pos", "descending")]
    else:
        keyed = pa.table(
            {
                "key": rows.column(RECORD_KEY_FIELD),
                "ord": rows.column(ORDERING_FIELD),
                "pos": position,
            }
        )
        ordering = [("key", "ascending"), ("ord", "descending"), ("pos", "descending")]
    order = pc.sort_indices(keyed, ordering)
    keys = keyed.column("key").take(order)
    first = np.ones(n, bool)  # the first row of each key in sort order is its winner
    first[1:] = pc.not_equal(keys.slice(1), keys.slice(0, n - 1)).to_numpy()
    winners = np.sort(order.to_numpy()[first])  # back in arrival order
    return rows.take(pa.array(winners))
