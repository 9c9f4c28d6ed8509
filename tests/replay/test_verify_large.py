"""``testbed verify`` at scale: the catalog's ``large_table`` (millions of records, MOR
with logs and compactions, lost ACKs) verifies on Spark, agrees with hudi-rs and the ledger, and
a damaged copy (a deleted log file, a record duplicated into another file group, a stale version)
is named precisely, key for key.

``slow``: the simulation alone writes about 430 MB; with the verifies and hudi-rs's read it takes
minutes and a few GB. ``pytest -m slow tests/replay/test_verify_large.py``. The table is
simulated without the in-process checkers (``testbed run`` adds them; ``testbed suite large``
runs that).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from invariants.ledger import build_ledger
from models.format.log_blocks import DataBlock
from models.format.log_reader import read_log_blocks
from models.history import read_history
from models.storage import LocalStorage
from models.view.fsview import FileSlice, latest_file_slices
from models.view.reader import merge_file_slice
from models.view.table import HudiTable
from replay.verify import Target
from replay.verify import verify as verify_table
from scenarios import catalog_dir, load_scenario
from sim.world import World
from tests.hudi_oracle import oracle_read

pytestmark = pytest.mark.slow
pytest.importorskip("pyspark")
pytest.importorskip("hudi")

VERSION = ["key", "offset", "job"]
"""A record's identity: its key and where the source emitted it (records are a pure function of
(seed, job, offset))."""


@pytest.fixture(scope="module")
def large_run(tmp_path_factory) -> Path:
    """The ``large_table`` catalog scenario written to local disk, with its history."""
    folder = tmp_path_factory.mktemp("large") / "run"
    scenario = load_scenario(catalog_dir() / "large_table.toml")
    (folder / "table").mkdir(parents=True)
    outcome = World(scenario, table_root=folder / "table").run()
    (folder / "history.jsonl").write_bytes(outcome.history.jsonl_bytes())
    return folder


def verify(spark, run: Path, **options) -> dict:
    target = Target(run / "table", run / "history.jsonl")
    return verify_table(spark, target, run.parent / f"{run.name}-work", **options)


def slices(table_root: Path) -> tuple[HudiTable, object, list[FileSlice]]:
    table = HudiTable(LocalStorage(table_root))
    timeline, groups = table.file_groups()
    return table, timeline, latest_file_slices(groups)


def test_the_large_table_verifies_and_agrees_with_hudi_rs_and_the_ledger(spark, large_run):
    report = verify(spark, large_run)
    assert report["ok"], report
    _, _, latest = slices(large_run / "table")
    assert report["file_groups"] == len(latest) == 32
    assert report["rows"]["table"] == report["rows"]["model"] >= 2_000_000
    assert any(s.base_file for s in latest) and any(s.log_files for s in latest)
    # hudi-rs reads the same live versions the ledger's model holds (and no key twice)
    model = build_ledger(read_history(large_run / "history.jsonl")).model().select(VERSION)
    theirs = oracle_read(large_run / "table").select(VERSION)
    theirs = theirs.cast(model.schema).take(pc.sort_indices(theirs, [("key", "ascending")]))
    assert theirs.num_rows == report["rows"]["table"]
    assert theirs.equals(model)


def _live_from_base(root: Path, file_slice: FileSlice) -> pa.Table:
    """The base file's rows whose version is the slice's live one (no log of the slice holds a
    newer version of the key), with every column of the base file."""
    table, timeline, _ = slices(root)
    base = pq.read_table(root / file_slice.partition / file_slice.base_file.name)
    live = merge_file_slice(table, timeline, file_slice).select(VERSION)
    return base.join(live, VERSION, join_type="inner")


def _live_from_last_log(root: Path, file_slice: FileSlice) -> set[str]:
    """The keys whose live version in the slice comes from its last log file."""
    table, timeline, _ = slices(root)
    path = root / file_slice.partition / file_slice.log_files[-1].name
    blocks = read_log_blocks(path.read_bytes())
    records = [b.records.select(VERSION) for b in blocks if isinstance(b, DataBlock)]
    if not records:
        return set()
    live = merge_file_slice(table, timeline, file_slice).select(VERSION)
    joined = live.join(pa.concat_tables(records), VERSION, join_type="inner")
    return set(joined.column("key").to_pylist())


def test_a_damaged_copy_is_named_key_for_key(spark, large_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(large_run, run)
    root = run / "table"
    _, _, latest = slices(root)
    with_base = [s for s in latest if s.base_file is not None]
    logged, from_log = next(
        (s, keys) for s in with_base if s.log_files and (keys := _live_from_last_log(root, s))
    )
    dup_from, dup_into, stale_in = [s for s in with_base if s is not logged][:3]

    # 1. a deleted log file: the keys whose live version it holds come back lost or stale
    (root / logged.partition / logged.log_files[-1].name).unlink()

    # 2. a record of one file group copied into another file group's base file
    donor = _live_from_base(root, dup_from)
    duplicated = min(donor.column("key").to_pylist())
    row = donor.filter(pc.equal(donor.column("key"), duplicated))
    into = root / dup_into.partition / dup_into.base_file.name
    base = pq.read_table(into)
    pq.write_table(pa.concat_tables([base, row.select(base.column_names).cast(base.schema)]), into)

    # 3. a stale version: a key's live row in a base file replaced by its previous version
    ledger = build_ledger(read_history(run / "history.jsonl"))
    (job,) = ledger.jobs
    emitted = job.source.batch(0, job.covered).select(["key", "ts", "offset", "value"])
    candidates = _live_from_base(root, stale_in)
    earlier = emitted.join(
        candidates.select(["key", "offset"]), "key", join_type="inner", right_suffix="_live"
    )
    earlier = earlier.filter(pc.less(earlier.column("offset"), earlier.column("offset_live")))
    assert earlier.num_rows, "no key of this file group has an earlier version"
    order = [("key", "ascending"), ("offset", "descending")]
    previous = earlier.take(pc.sort_indices(earlier, order)).slice(0, 1).to_pylist()[0]
    stale = previous["key"]
    path = root / stale_in.partition / stale_in.base_file.name
    base = pq.read_table(path)
    victim = pc.equal(base.column("key"), stale)
    for name in ("ts", "offset", "value"):
        old = pa.scalar(previous[name], base.schema.field(name).type)
        column = pc.if_else(victim, old, base.column(name))
        base = base.set_column(base.schema.get_field_index(name), name, column)
    pq.write_table(base, path)

    expected_wrong_or_lost = from_log | {stale}
    report = verify(spark, run, examples=len(expected_wrong_or_lost) + 1)
    assert not report["ok"]
    assert report["duplicated"] == {"count": 1, "examples": [duplicated]}
    assert report["extra"] == {"count": 0, "examples": []}
    lost, wrong = report["lost"], report["wrong_version"]
    assert lost["count"] + wrong["count"] == len(expected_wrong_or_lost)
    assert set(lost["examples"]) | set(wrong["examples"]) == expected_wrong_or_lost
    assert stale in wrong["examples"] and stale not in from_log
    assert report["rows"]["table"] == report["rows"]["model"] - lost["count"] + 1
