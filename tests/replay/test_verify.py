"""``testbed verify``: a real run's table matches its ledger; injected damage is named exactly."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from invariants.ledger import build_ledger
from models.format.log_blocks import DataBlock
from models.format.log_reader import read_log_blocks
from models.format.records import RecordSource
from models.storage import LocalStorage
from models.view.fsview import latest_file_slices
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from replay.verify import (
    key_shards,
    model_schema,
    model_shard_count,
    resolve_target,
    shard_ledger,
)
from replay.verify import verify as verify_table
from scenarios import catalog_dir, load_scenario, scenario_from_dict
from scenarios.schema import parse_scenario
from sim.world import World
from testbed.cli import main
from testbed.run import run_scenario
from tests.hudi_oracle import oracle_read

pytest.importorskip("pyspark")

SCENARIO = """\
[scenario]
name = "verify_small"
description = "Two writers upserting a small key space with compaction: bases and logs."
duration_s = 30
seed = 3

[table]
type = "MERGE_ON_READ"
storage = "local"
partitions = 2
buckets_per_partition = 2

[[jobs]]
name = "ingest"
writers = 2
instant_generation = "async"
checkpoint_interval_s = 2
records_per_s = 300
key_space = 400
compaction_every_commits = 4

[expect]
violations = []
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("verify")
    source = folder / "s.toml"
    source.write_text(SCENARIO)
    result = run_scenario(parse_scenario(SCENARIO), source, folder / "run")
    assert result.ok, result.result["invariants"]
    return result.folder


@pytest.fixture
def damaged(run_dir, tmp_path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    return copy


def verify(spark, path: Path) -> dict:
    work = path.parent / f"{path.name}-work"
    return verify_table(spark, resolve_target(path, None), work)


def slices(table_root: Path):
    _, groups = HudiTable(LocalStorage(table_root)).file_groups()
    return latest_file_slices(groups)


def test_cli_an_intact_run_matches_its_ledger_and_hudi_rs(run_dir, tmp_path):
    out = tmp_path / "verify.json"
    done = CliRunner().invoke(
        main, ["verify", str(run_dir), "--master", "local[1]", "--out", str(out)]
    )
    assert done.exit_code == 0, (done.output, done.exception)
    assert " ok (" in done.output
    report = json.loads(out.read_text())
    assert report["ok"] and report["engine"] == "spark local[1]"
    ours = read_snapshot(HudiTable(LocalStorage(run_dir / "table")))
    assert report["rows"]["table"] == report["rows"]["model"] == ours.num_rows
    assert report["file_groups"] == len(slices(run_dir / "table"))
    theirs = oracle_read(run_dir / "table")  # the independent reader agrees on every key
    assert sorted(theirs.column("key").to_pylist()) == sorted(ours.column("key").to_pylist())
    for kind in ("lost", "extra", "duplicated", "wrong_version"):
        assert report[kind] == {"count": 0, "examples": []}


def test_verify_reports_each_step_to_its_progress(spark, run_dir):
    steps: list[str] = []
    target = resolve_target(run_dir, None)
    report = verify_table(spark, target, run_dir.parent / "work", progress=steps.append)
    assert report["ok"]
    assert steps[:3] == [
        "reading the ledger from the history",
        "listing the table's file groups",
        f"reading {report['file_groups']} file groups and joining them with the ledger's model",
    ]
    assert steps[3:] == []  # nothing is damaged: no examples to collect


def test_a_table_path_without_ledger_checks_duplicates_only(spark, run_dir):
    report = verify(spark, run_dir / "table")
    assert report["ok"] and report["ledger"] is None and "lost" not in report


def test_a_deleted_log_file_is_reported_as_lost_or_stale_keys(spark, damaged):
    table = damaged / "table"
    snapshot = read_snapshot(HudiTable(LocalStorage(table)))
    file_slice = next(s for s in slices(table) if s.log_files)
    log = file_slice.log_files[-1]
    path = table / file_slice.partition / log.name
    records = pa.concat_tables(
        b.records for b in read_log_blocks(path.read_bytes()) if isinstance(b, DataBlock)
    )
    # the keys whose live version this log holds: they must come back lost or stale, no others
    won = snapshot.join(
        records.select(["key", "offset", "job"]), ["key", "offset", "job"], join_type="inner"
    )
    expected = set(won.column("key").to_pylist())
    assert expected
    path.unlink()
    report = verify(spark, damaged)
    assert not report["ok"]
    assert report["lost"]["count"] + report["wrong_version"]["count"] == len(expected)
    assert set(report["lost"]["examples"] + report["wrong_version"]["examples"]) <= expected
    assert report["extra"]["count"] == report["duplicated"]["count"] == 0


def test_a_copied_base_file_is_reported_as_duplicated_keys(spark, damaged):
    table = damaged / "table"
    file_slice = next(s for s in slices(table) if s.base_file is not None)
    base = table / file_slice.partition / file_slice.base_file.name
    keys = pq.read_table(base, columns=["key"]).column("key").to_pylist()
    new_id = "00000000-dead-beef-0000-000000000000-0"
    shutil.copy(base, base.with_name(base.name.replace(file_slice.file_id, new_id)))
    report = verify(spark, damaged)
    assert not report["ok"]
    assert report["duplicated"]["count"] == len(set(keys))
    assert report["duplicated"]["examples"] == sorted(set(keys))[:5]
    assert report["lost"]["count"] == report["extra"]["count"] == 0


def test_a_stale_version_in_a_base_file_is_reported_as_that_key(spark, damaged):
    table = damaged / "table"
    snapshot = read_snapshot(HudiTable(LocalStorage(table)))
    # a key whose live version is the one in its base file (no log after it holds the key)
    live = snapshot.select(["key", "offset", "job"])
    for file_slice in slices(table):
        if file_slice.base_file is None:
            continue
        base = table / file_slice.partition / file_slice.base_file.name
        rows = pq.read_table(base)
        from_base = rows.select(["key", "offset", "job"]).join(
            live, ["key", "offset", "job"], join_type="inner"
        )
        if from_base.num_rows:
            victim = sorted(from_base.column("key").to_pylist())[0]
            break
    else:
        pytest.fail("no live version comes from a base file in this run")
    value = rows.column("value")
    changed = pc.if_else(pc.equal(rows.column("key"), victim), pc.add(value, 1), value)
    pq.write_table(rows.set_column(rows.schema.get_field_index("value"), "value", changed), base)
    report = verify(spark, damaged)
    assert not report["ok"]
    assert report["wrong_version"] == {"count": 1, "examples": [victim]}
    assert report["lost"]["count"] == report["extra"]["count"] == report["duplicated"]["count"] == 0


# --- the model in key shards (no Spark) ------------------------------------------------------


def test_key_shards_are_a_fixed_function_of_the_key_number_and_spread_evenly():
    ids = np.arange(4000, dtype=np.int64)
    shards = key_shards(ids, 4)
    assert shards.min() >= 0 and shards.max() < 4
    assert (key_shards(ids[::-1], 4) == shards[::-1]).all()  # per key, not per position
    assert (np.bincount(shards, minlength=4) > 800).all()
    assert len(key_shards(np.zeros(0, np.int64), 4)) == 0


def test_each_shard_builds_only_its_own_records(monkeypatch):
    """Every covered record is generated once over all shards (not once per shard), and a
    shard's records are exactly those of its keys."""
    ledger = _ledger_of("nbcc_two_jobs")
    built: list[int] = []
    records_at = RecordSource.records_at

    def counting(self, offsets):
        built.append(len(offsets))
        return records_at(self, offsets)

    monkeypatch.setattr(RecordSource, "records_at", counting)
    for shard in range(3):
        sharded = shard_ledger(ledger, shard, 3)
        for job in sharded.jobs:
            rows = job.source.batch(0, job.covered)
            ids = job.source.key_ids(rows.column("offset").to_numpy())
            assert (key_shards(ids, 3) == shard).all()
    assert sum(built) == sum(job.covered for job in ledger.jobs)


def _ledger_of(stem: str, **table: object):
    """The ledger of a short in-memory run of a catalog scenario (10 s, table keys overridden)."""
    data = load_scenario(catalog_dir() / f"{stem}.toml").model_dump(mode="json")
    data["scenario"]["duration_s"] = 10
    data["table"].update(storage="memory", **table)
    outcome = World(scenario_from_dict(data, stem)).run()
    return build_ledger(outcome.history.events)


@pytest.mark.parametrize(
    ("stem", "table"),
    [
        ("async_baseline", {}),  # whole records, event-time ordering
        ("nbcc_two_jobs", {"merge_mode": "COMMIT_TIME_ORDERING"}),  # last commit across jobs
        ("minibatch_insert", {}),  # inserts: every record
        ("partial_updates_two_streams", {}),  # column groups
    ],
)
def test_the_shards_models_side_by_side_are_the_ledger_model(stem, table):
    ledger = _ledger_of(stem, **table)
    model = ledger.model()
    assert model.num_rows
    shards = [shard_ledger(ledger, shard, 3).model() for shard in range(3)]
    assert all(part.num_rows for part in shards)
    together = pa.concat_tables(shards)
    together = together.take(pc.sort_indices(together, [("key", "ascending")]))
    assert together.equals(model)
    assert model_schema(ledger) == pa.schema([f.with_nullable(True) for f in model.schema])


def test_a_model_task_per_core_more_when_a_shard_would_be_too_big():
    ledger = _ledger_of("async_baseline")
    covered = sum(job.covered for job in ledger.jobs)
    assert model_shard_count(ledger, 2) == 2
    big = dataclasses.replace(
        ledger, jobs=tuple(dataclasses.replace(j, covered=5_000_001) for j in ledger.jobs)
    )
    assert covered < 5_000_001 and model_shard_count(big, 2) == 3


def test_a_memory_run_or_a_plain_folder_is_refused_in_one_line(tmp_path):
    (tmp_path / "result.json").write_text("{}")
    done = CliRunner().invoke(main, ["verify", str(tmp_path)])
    assert done.exit_code == 2 and "--storage local" in done.output
    done = CliRunner().invoke(main, ["verify", str(tmp_path / "nothing")])
    assert done.exit_code == 2 and "error:" in done.output
