"""Tests for models/txn/write_config.py: NBCC needs MERGE_ON_READ with the simple bucket index,
as Hudi's ``HoodieWriteConfig.Builder#validate`` says; a lone scenario job is a single writer."""

from __future__ import annotations

import pytest

from models.format.properties import COPY_ON_WRITE, MERGE_ON_READ
from models.txn.write_config import (
    NBCC_REQUIREMENT,
    NON_BLOCKING_CONCURRENCY_CONTROL,
    OPTIMISTIC_CONCURRENCY_CONTROL,
    SINGLE_WRITER,
    InvalidWriteConfigError,
    job_concurrency_mode,
    validate_write_config,
)
from tests.table_harness import TableHarness


@pytest.mark.parametrize("table_type", [COPY_ON_WRITE, MERGE_ON_READ])
def test_nbcc_needs_merge_on_read_and_the_bucket_index(tmp_path, table_type):
    config = TableHarness(tmp_path / "t", table_type).table.config
    validate_write_config(config, OPTIMISTIC_CONCURRENCY_CONTROL)
    validate_write_config(config, SINGLE_WRITER)
    if table_type == MERGE_ON_READ:
        validate_write_config(config, NON_BLOCKING_CONCURRENCY_CONTROL)
        with pytest.raises(InvalidWriteConfigError, match="simple bucket index"):
            validate_write_config(
                config, NON_BLOCKING_CONCURRENCY_CONTROL, simple_bucket_index=False
            )
    else:
        with pytest.raises(InvalidWriteConfigError) as err:
            validate_write_config(config, NON_BLOCKING_CONCURRENCY_CONTROL)
        assert str(err.value) == NBCC_REQUIREMENT


def test_an_unknown_mode_is_refused(tmp_path):
    config = TableHarness(tmp_path / "t").table.config
    with pytest.raises(InvalidWriteConfigError, match=r"hoodie\.write\.concurrency\.mode"):
        validate_write_config(config, "NBCC")


def test_job_concurrency_modes():
    assert job_concurrency_mode("nbcc", 1) == SINGLE_WRITER
    assert job_concurrency_mode("nbcc", 2) == NON_BLOCKING_CONCURRENCY_CONTROL
    assert job_concurrency_mode("occ", 1) == OPTIMISTIC_CONCURRENCY_CONTROL
    assert job_concurrency_mode("occ", 3) == OPTIMISTIC_CONCURRENCY_CONTROL
