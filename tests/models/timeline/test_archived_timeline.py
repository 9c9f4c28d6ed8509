"""Reading the LSM timeline back: the version file, the manifests and the data files."""

from __future__ import annotations

from models.timeline.archived_timeline import ArchivedTimeline
from models.timeline.archiver import archive_instants
from tests.models.timeline.test_archiver import HISTORY, commits, synthetic, t


def test_reader_falls_back_to_the_manifests_without_a_version_file():
    table = synthetic()
    commits(table, 10, 20, 30, 40)
    archived = archive_instants(table, max_active=2, min_active=1)
    table.storage.delete(f"{HISTORY}/_version_")
    reader = ArchivedTimeline(table.storage, table.config)
    assert reader.latest_version() == 1
    assert reader.instants() == tuple(archived)
    assert reader.completion_time(t(20)) == t(21)
    assert reader.completion_time(t(40)) is None


def test_a_table_without_history_has_an_empty_archive():
    table = synthetic()
    reader = ArchivedTimeline(table.storage, table.config)
    assert reader.latest_version() == -1
    assert reader.is_empty()
    assert reader.instants() == ()
