"""Tests for invariants/no_orphan_files.py: a data file neither listed by a completed instant nor
written by a pending one is flagged, naming its instant and what became of it.

Hand-built tables (:class:`tests.invariants.test_committed.SimTable`, which writes direct markers
as the write handles do): committed files and a pending instant's files pass; a rollback that
finds every file through its markers leaves nothing; a rollback whose instant lost a marker
leaves that file behind; the commit's finalize deletes an unlisted file through its marker, and
one whose marker was lost is flagged.
"""

from __future__ import annotations

from invariants.no_orphan_files import check_no_orphan_files
from models.storage import join
from models.write.markers import marker_folder
from models.write.rollback import rollback
from tests.invariants.test_committed import SimTable, run


def _walk(storage, folder: str) -> list[str]:
    out = [s.path for s in storage.list_dir(folder)]
    for sub in storage.list_subdirs(folder):
        out += _walk(storage, join(folder, sub))
    return out


def _roll_back(t: SimTable, instant) -> None:
    run(rollback(t.table, t.writer, instant, t.writer.time_generator), t.clock)
    t.history.add("job0/coordinator", "ok", "rollback", {"instant": instant.requested_time})


def test_committed_and_pending_files_are_no_orphans():
    t = SimTable()
    t.write(t.records(0, 40))
    t.write(t.records(40, 50), commit=False)
    verdict = check_no_orphan_files(t.events, t.table)
    assert verdict.name == "no_orphan_files"
    assert verdict.ok, verdict.violations


def test_a_rollback_through_every_marker_leaves_nothing():
    t = SimTable()
    t.write(t.records(0, 40))
    failed = t.write(t.records(40, 50), commit=False)
    _roll_back(t, failed)
    assert check_no_orphan_files(t.events, t.table).ok


def test_a_file_whose_marker_was_lost_survives_its_rollback_and_is_flagged():
    t = SimTable()
    t.write(t.records(0, 40))
    failed = t.write(t.records(40, 50), commit=False)
    markers = _walk(t.storage, marker_folder(failed.requested_time))
    assert len(markers) == 2  # one per partition's log
    t.storage.delete(markers[0])
    _roll_back(t, failed)
    verdict = check_no_orphan_files(t.events, t.table)
    (violation,) = verdict.violations
    assert violation.why.startswith(
        f"1 data file(s) of instant {failed.requested_time} (rolled back) remain on storage"
    )
    rollback_event = t.events[-1].index
    assert rollback_event in violation.events


def test_the_finalize_deletes_an_unlisted_file_through_its_marker():
    t = SimTable()
    instant = t.start()
    listed = t.files(instant, t.records(0, 40))
    t.files(instant, t.records(40, 50), task=1)  # a retried task's leftover, not committed
    t.commit(instant, listed)
    assert check_no_orphan_files(t.events, t.table).ok


def test_an_unlisted_file_whose_marker_was_lost_outlives_the_commit_and_is_flagged():
    t = SimTable()
    instant = t.start()
    listed = t.files(instant, t.records(0, 40))
    before = set(_walk(t.storage, marker_folder(instant.requested_time)))
    t.files(instant, t.records(40, 50), task=1)
    for marker in set(_walk(t.storage, marker_folder(instant.requested_time))) - before:
        t.storage.delete(marker)
    t.commit(instant, listed)
    (violation,) = check_no_orphan_files(t.events, t.table).violations
    assert f"instant {instant.requested_time} (completed without listing them)" in violation.why
