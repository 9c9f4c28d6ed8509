"""Hudi's ``testBatchUpsertWithMiniBatchesGlobalIndex`` ported onto the Flink state index's
global mode (:class:`~models.flink.state_index.StateIndex` with ``global_index``) and the write
path (:func:`~models.flink.write_files.write_records`).

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/table/
ITTestHoodieDataSource.java`` (``read_file`` id ``54775897822``), for both table types: with
``index.global.enabled`` and ``write.batch.size`` = 0.001 MB (every record is its own
mini-batch), ``id1`` is inserted into ``par1`` (Danny, ts 1); a second statement upserts it into
``par2`` (Stephen, ts 2), ``par1`` (Julian, ts 3), ``par2`` (Fabian, ts 4) and ``par3`` (Sophia,
ts 5); the table then reads ``[+I[id1, Sophia, 18, 1970-01-01T00:00:05, par3]]``.

Here each statement is one instant, the assigner is one ``BucketAssignFunction`` subtask over an
empty write profile, and each record it emits (a moved key's delete first) is flushed alone into
the instant, as the mini-batches are (copy-on-write: the task's earlier file of the instant is
rolled over, ``bucketToHandles``). The record's name is kept in ``value`` as its age.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from models.flink.bucket_assigner import BucketAssigner
from models.flink.state_index import StateIndex
from models.flink.write_files import FileLayout, write_records
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.format.records import SCHEMA
from models.ports import run
from models.view.reader import read_snapshot
from tests.conformance.test_bucket_assigner import MAX_PARALLELISM, MockWriteProfile, uuids
from tests.models.flink.test_write_task import make_writer

DANNY = ("k1", "p1", 1, 23)
SECOND_STATEMENT = [
    ("k1", "p2", 2, 33),  # Stephen
    ("k1", "p1", 3, 53),  # Julian
    ("k1", "p2", 4, 31),  # Fabian
    ("k1", "p3", 5, 18),  # Sophia
]


def statement_rows(records: list[tuple[str, str, int, int]]) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"key": k, "part": p, "ts": ts, "offset": i, "job": 0, "value": age}
            for i, (k, p, ts, age) in enumerate(records)
        ],
        schema=SCHEMA,
    )


def execute_insert(writer, clock, index: StateIndex, layout: FileLayout, records) -> None:
    """One ``insert into`` statement: an instant, each emitted record flushed alone."""
    instant = run(writer.start_commit(), clock)
    located = index.assign(statement_rows(records))
    stats, versions, handles = [], {}, {}
    for row in range(located.num_rows):
        stats += write_records(
            writer,
            instant,
            located.slice(row, 1),
            task_id=0,
            layout=layout,
            log_versions=versions,
            handles=None if layout.is_mor else handles,
        )
    run(writer.commit(instant, stats), clock)


@pytest.mark.parametrize("table_type", [COPY_ON_WRITE, MERGE_ON_READ])
def test_batch_upsert_with_mini_batches_global_index(table_type):
    writer, clock = make_writer(table_type)
    layout = FileLayout(0, "upsert", table_type == MERGE_ON_READ, 1, index="flink_state")
    assigner = BucketAssigner(0, 1, MockWriteProfile(), uuids(), MAX_PARALLELISM)
    index = StateIndex(assigner, global_index=True)
    execute_insert(writer, clock, index, layout, [DANNY])
    execute_insert(writer, clock, index, layout, SECOND_STATEMENT)
    result = read_snapshot(writer.table).select(["key", "value", "ts", "part"]).to_pylist()
    assert result == [{"key": "k1", "value": 18, "ts": 5, "part": "p3"}]  # Sophia, par3
