"""Hudi's ``testIndexStateBootstrap`` ported onto :mod:`models.flink.index_bootstrap`.

apache/hudi ``hudi-flink-datasource/hudi-flink/src/test/java/org/apache/hudi/sink/
TestWriteCopyOnWrite.java`` (``read_file`` id ``125761148``; ``TestWriteMergeOnRead`` inherits
it): one checkpoint of ``DATA_SET_INSERT`` is written and committed; a new pipeline with
``index.bootstrap.enabled`` consumes ``DATA_SET_UPDATE_INSERT`` and ``checkIndexLoaded`` asserts
that the bucket assigner's state holds all eleven keys (``id1``..``id8`` loaded from the table,
``id9``..``id11`` inserted). Here the pipeline's bootstrap is :func:`bootstrap_index` over the
committed table and its assigner a :class:`~models.flink.state_index.StateIndex` holding what it
loaded. Added to Hudi's assertion: a loaded key is an UPDATE of the file group it was loaded
from (``checkWrittenData(EXPECTED2)``: the rows are updated in place, not duplicated).
"""

from __future__ import annotations

import pytest

from models.flink.bucket_assigner import BucketAssigner
from models.flink.index_bootstrap import bootstrap_index
from models.flink.state_index import StateIndex
from models.flink.write_files import LOCATION_FILE_ID
from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.view.fsview import latest_file_slices
from tests.conformance.harness import (
    DATA_SET_INSERT,
    DATA_SET_UPDATE_INSERT,
    Conf,
    TableBase,
    TestHarness,
    model_key,
    partition_path,
    rows_table,
)
from tests.conformance.test_bucket_assigner import MAX_PARALLELISM, MockWriteProfile, uuids

LOADED_KEYS = [
    ("id1", "par1"),
    ("id2", "par1"),
    ("id3", "par2"),
    ("id4", "par2"),
    ("id5", "par3"),
    ("id6", "par3"),
    ("id7", "par4"),
    ("id8", "par4"),
    ("id9", "par3"),
    ("id10", "par4"),
    ("id11", "par4"),
]
"""``checkIndexLoaded``'s keys, as ``new HoodieKey(recordKey, partitionPath)``."""


@pytest.mark.parametrize("table_type", [COPY_ON_WRITE, MERGE_ON_READ])
def test_index_state_bootstrap(table_type):
    base = TableBase(table_type)
    (
        TestHarness.instance(base)
        .prepare_pipeline(Conf(table_type=table_type))
        .consume(DATA_SET_INSERT)
        .assert_empty_data_files()
        .checkpoint(1)
        .assert_next_event()
        .checkpoint_complete(1)
        .end()
    )
    timeline, groups = base.table.file_groups()
    loaded = bootstrap_index(base.table, timeline, latest_file_slices(groups), None)
    assert loaded.loaded_instant == base.last_complete_instant()
    index = StateIndex(
        BucketAssigner(0, 1, MockWriteProfile(), uuids(), MAX_PARALLELISM), dict(loaded.locations)
    )
    located = index.assign(rows_table(DATA_SET_UPDATE_INSERT))
    for uuid, partition in LOADED_KEYS:
        key = model_key(uuid)
        assert key in index.locations, f"{uuid} is not in the index state"
        assert index.locations[key][0] == partition_path(partition)
    for key, file_id in zip(
        located.column("key").to_pylist(), located.column(LOCATION_FILE_ID).to_pylist(), strict=True
    ):
        if key in loaded.locations:
            assert file_id == loaded.locations[key][1], f"{key} left its file group"
