"""The records a COPY_ON_WRITE merge writes: Hudi's ``HoodieMergeHandle`` over one base file.

The handle loads the incoming records into a map by record key (``keyToNewRecords.put``: a later
record of a key replaces an earlier one), then streams the old base file: every old record is
written once, as it was if the map has no record of its key, else as the merge of the two
(``combineAndGetUpdateValue``, the table's merge mode; a delete drops it). The map's records whose
key the old file did not hold are written after (``writeIncomingRecords``). So a base file that
holds a key several times (an insert without de-duplication) keeps it several times: Hudi's
``TestWriteCopyOnWrite#testInsertWithMiniBatches`` expects three rows of ``id1`` after a second
mini-batch of the same key. Hudi 1.1 ``HoodieWriteMergeHandle#init``/``write``/``close``; its
``FileGroupReaderBasedMergeHandle`` writes the same records for these inputs.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from models.format.properties import TableConfig
from models.table_errors import HoodieException
from models.view.reader import merge_versions


class MissingBaseFileError(HoodieException, RuntimeError):
    """A merge handle for a file group without a committed base file
    (``HoodieMergeHandle#getLatestBaseFile``'s ``NoSuchElementException``, apache/hudi#7470):
    the flush fails, and with it the write task."""


RECORD_KEY = "_hoodie_record_key"


def merge_handle_rows(
    old: pa.Table, new: pa.Table, config: TableConfig, deletes: pa.Table | None = None
) -> pa.Table:
    """The rows of the new base file: ``old`` (a base file's rows) merged with ``new`` (incoming
    rows), both with Hudi's meta columns, and ``deletes`` (incoming delete records: columns
    ``record_key``, ``partition_path``, ``ordering_value``), each competing with the old record
    of its key as the merger says (``HoodieMergeHandle#write``: a winning delete drops it)."""
    tombstones = [deletes] if deletes is not None and deletes.num_rows else []
    if old.num_rows == 0:
        return merge_versions([_last_per_key(new)], tombstones, config)
    incoming = _last_per_key(new)
    winners = merge_versions([old, incoming], tombstones, config)
    old_keys = old.column(RECORD_KEY).cast(pa.string())
    new_keys = incoming.column(RECORD_KEY).cast(pa.string())
    if tombstones:
        new_keys = pa.concat_arrays(
            [new_keys.combine_chunks(), deletes.column("record_key").combine_chunks()]
        )
    winner_keys = winners.column(RECORD_KEY).cast(pa.string())
    updated = pc.is_in(old_keys, value_set=new_keys).to_numpy(zero_copy_only=False)
    kept = old.filter(pa.array(~updated))
    # each updated old record is written once, as its key's merge (none if the merge deletes it)
    at = pc.index_in(old_keys.filter(pa.array(updated)), value_set=winner_keys)
    replaced = winners.take(pc.drop_null(at))
    fresh = winners.filter(pc.invert(pc.is_in(winner_keys, value_set=old_keys)))
    parts = [t for t in (kept, replaced, fresh) if t.num_rows] or [kept]
    return pa.concat_tables(parts, promote_options="permissive")


def removed_keys(old: pa.Table, merged: pa.Table) -> int:
    """How many keys of ``old`` the merge left out (the handle's ``recordsDeleted``, written as
    the write stat's ``numDeletes``)."""
    kept = merged.column(RECORD_KEY).cast(pa.string())
    gone = pc.invert(pc.is_in(old.column(RECORD_KEY).cast(pa.string()), value_set=kept))
    return len(pc.unique(old.column(RECORD_KEY).filter(gone)))


def _last_per_key(rows: pa.Table) -> pa.Table:
    """The last row of each record key, in first-appearance order (``keyToNewRecords.put``)."""
    keys = rows.column(RECORD_KEY).cast(pa.string()).to_numpy(zero_copy_only=False)
    reversed_keys = keys[::-1]
    _, first_in_reversed = np.unique(reversed_keys, return_index=True)
    last = np.sort(len(keys) - 1 - first_in_reversed)
    return rows.take(pa.array(last)) if len(last) != len(keys) else rows


__all__ = ["MissingBaseFileError", "merge_handle_rows", "removed_keys"]
