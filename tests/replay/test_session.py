"""Spark session management: conf parsing, what is shipped, and one real local session."""

from __future__ import annotations

import zipfile

import pytest

from replay.session import (
    DEFAULT_MASTER,
    SparkConfError,
    SparkOptions,
    package_zip,
    parse_conf,
    spark_session,
)


def test_conf_pairs_parse_and_keep_equals_signs_in_values():
    assert parse_conf(["spark.executor.memory=4g", "a.b= x=y"]) == (
        ("spark.executor.memory", "4g"),
        ("a.b", " x=y"),
    )


@pytest.mark.parametrize("bad", ["novalue", "=4g", " =x"])
def test_a_conf_without_key_or_equals_sign_is_refused(bad):
    with pytest.raises(SparkConfError, match="expected key=value"):
        parse_conf([bad])


def test_user_conf_overrides_the_defaults():
    options = SparkOptions(conf=(("spark.ui.enabled", "true"),))
    assert options.master == DEFAULT_MASTER and options.local
    assert options.settings()["spark.ui.enabled"] == "true"


def test_a_cluster_keeps_its_own_python_and_ui():
    settings = SparkOptions(master="spark://host:7077").settings()
    assert "spark.pyspark.python" not in settings
    assert "spark.ui.enabled" not in settings


def test_the_shipped_zip_holds_every_package_and_the_catalog_and_is_stable(tmp_path):
    first = package_zip(tmp_path / "a.zip")
    second = package_zip(tmp_path / "b.zip")
    assert first.read_bytes() == second.read_bytes()
    names = zipfile.ZipFile(first).namelist()
    assert names == sorted(names)
    for module in (
        "models/timeline/active.py",
        "sim/world.py",
        "invariants/checks.py",
        "replay/session.py",
    ):
        assert module in names
    assert any(n.startswith("scenarios/catalog/") and n.endswith(".toml") for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


def _imports_models(_: int) -> str:
    from models.timeline.instant_time import format_epoch_ms

    return format_epoch_ms(0)


def test_a_local_session_runs_tasks_that_import_the_project(tmp_path):
    pytest.importorskip("pyspark")
    with spark_session(SparkOptions(master="local[1]"), tmp_path) as spark:
        got = spark.sparkContext.parallelize([1, 2], 2).map(_imports_models).collect()
        assert spark.sparkContext.getConf().get("spark.ui.enabled") == "false"
    assert got == ["19700101000000000"] * 2
    assert (tmp_path / "testbed-packages.zip").exists()
