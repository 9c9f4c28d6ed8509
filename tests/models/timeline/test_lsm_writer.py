"""Writing the LSM timeline: data files, manifest and version file, layer compaction, cleaning."""

from __future__ import annotations

import io
import json

import pyarrow.parquet as pq

from models.format.properties import MERGE_ON_READ
from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.archiver import archive_instants
from models.timeline.lsm_timeline import LSM_SCHEMA, parse_lsm_file_name
from tests.models.timeline.test_archiver import HISTORY, add, commits, synthetic, t, times


def test_lsm_file_manifest_and_version_file():
    table = synthetic(MERGE_ON_READ)
    commits(table, 10, 20, action="deltacommit")
    add(table, 30, "compaction", done=35)
    commits(table, 40, 50, 60, action="deltacommit")
    archived = archive_instants(table, max_active=3, min_active=1)
    storage = table.storage
    name = f"{t(10)}_{t(20)}_0.parquet"
    assert times(archived) == [t(10), t(20)]
    assert storage.read(f"{HISTORY}/_version_") == b"1"
    manifest = json.loads(storage.read(f"{HISTORY}/manifest_1"))
    assert manifest == {
        "files": [{"fileName": name, "fileLen": len(storage.read(f"{HISTORY}/{name}"))}]
    }
    rows = pq.read_table(io.BytesIO(storage.read(f"{HISTORY}/{name}")))
    assert rows.schema.remove_metadata() == LSM_SCHEMA
    assert b"HoodieLSMTimelineInstant" in rows.schema.metadata[b"parquet.avro.schema"]
    assert rows.column("instantTime").to_pylist() == [t(10), t(20)]
    assert rows.column("completionTime").to_pylist() == [t(11), t(21)]
    assert rows.column("action").to_pylist() == ["deltacommit", "deltacommit"]
    # metadata holds the completed file's bytes (our synthetic files contain their own names)
    assert rows.column("metadata").to_pylist() == [
        f"{t(10)}_{t(11)}.deltacommit".encode(),
        f"{t(20)}_{t(21)}.deltacommit".encode(),
    ]
    assert rows.column("version").to_pylist() == [1, 1]


def test_l0_files_are_merged_into_l1_and_old_snapshots_cleaned():
    table = synthetic()
    archived_all = []
    for round_ in range(7):
        base = 100 * round_ + 10
        commits(table, base, base + 10, base + 20)
        archived_all += archive_instants(table, max_active=2, min_active=1, merge_factor=3)
    reader = ArchivedTimeline(table.storage, table.config)
    files = reader.manifest().file_names()
    layers = sorted(parse_lsm_file_name(f).layer for f in files)
    assert layers == [0, 1, 1], files
    assert reader.instants() == tuple(archived_all)
    # cleaning keeps the newest (3 + compacted layers) snapshots for concurrent readers, and
    # exactly the data files those snapshots list: the first merged L0 files are gone
    listed = {f.name for f in table.storage.list_dir(HISTORY)}
    kept = sorted(int(f.split("_")[1]) for f in listed if f.startswith("manifest_"))
    assert kept == list(range(kept[0], reader.latest_version() + 1))
    assert len(kept) <= 4
    referenced = {name for v in kept for name in reader.manifest(v).file_names()}
    assert {f for f in listed if f.endswith(".parquet")} == referenced
    assert f"{t(10)}_{t(20)}_0.parquet" not in listed
    assert f"{t(10)}_{t(220)}_1.parquet" in files
