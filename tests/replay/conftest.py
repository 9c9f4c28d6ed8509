"""Shared fixtures of the Spark tests."""

from __future__ import annotations

import pytest

from replay.session import SparkOptions, spark_session


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    """One local session per test module: starting Spark costs more than most tests."""
    with spark_session(
        SparkOptions(master="local[2]"), tmp_path_factory.mktemp("spark")
    ) as session:
        yield session
