"""Damaged tables: every command ends in a right answer or one ``error:`` line, never a traceback.

A small real table (a MERGE_ON_READ run with compactions and an archived timeline, written by
``testbed run --storage local``) is damaged one file at a time: truncated, emptied, overwritten
with random bytes, bytes flipped, deleted, or its content swapped with another file's. Then
``inspect``, ``inspect --json``, ``read`` and ``check`` run in this process. What each may answer
depends on what the damage is (see :func:`expected`):

* a file the snapshot reader does not read (the requested/inflight files of completed instants,
  the files of older file slices, the partition metadata) changes nothing: the same rows;
* a truncated or emptied log file is read as Hudi's log reader reads it: the torn block is a
  corrupt block and skipped, so the rows are those of the table with that log cut back to its
  last whole block;
* truncating, emptying or overwriting any other file the reader needs is an error (exit 2);
* flipped bytes inside a payload, a deleted file or swapped contents can be undetectable by any
  Hudi reader (no checksums in Avro instant files, log blocks or parquet pages without CRCs; a
  deleted completed instant is what a write in flight looks like; the listing is the truth for
  data files): those only have to end without a traceback.

``check`` re-judges the run: exit 0 or 1, never a traceback, and a damage ``read`` reports as an
error is a finding of ``check`` (exit 1, "the table is corrupt").
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.format.log_reader import read_log_frames
from testbed.cli import main

SCENARIO = """\
[scenario]
name = "fuzz_small"
description = "A small MOR table with compactions and an archived timeline."
duration_s = 14
seed = 3

[table]
type = "MERGE_ON_READ"
partitions = 1
buckets_per_partition = 2

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 1
records_per_s = 50
key_space = 40
compaction_every_commits = 3

[sim]
archive_max_active = 4
archive_min_active = 2

[expect]
violations = []
"""

KINDS = ("truncate", "empty", "random", "flip", "delete", "swap")


@dataclass(frozen=True)
class Pristine:
    """The undamaged run folder and what the commands answer on it."""

    folder: Path
    files: tuple[str, ...]
    """Every file of table/, relative to it, sorted."""
    rows: pa.Table
    inspect: dict
    read_files: frozenset[str]
    """Files the snapshot reader reads: properties, completed instants, latest slices, archive."""


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Iterator[Pristine]:
    root = tmp_path_factory.mktemp("fuzz-tables")
    source = root / "small.toml"
    source.write_text(SCENARIO)
    folder = root / "run"
    ran = CliRunner().invoke(
        main, ["run", str(source), "--storage", "local", "--out", str(folder), "-q"]
    )
    assert ran.exit_code == 0, ran.output
    table = folder / "table"
    files = tuple(sorted(str(p.relative_to(table)) for p in table.rglob("*") if p.is_file()))
    report = json.loads(_invoke("inspect", str(table), "--json").stdout)
    rows = _read_rows(table, root / "rows.parquet")
    assert rows is not None and rows.num_rows > 0
    yield Pristine(folder, files, rows, report, _read_files(files, report))


def _read_files(files: tuple[str, ...], report: dict) -> frozenset[str]:
    latest = set()
    for s in report["file_slices"]:
        names = [s["base_file"], *s["log_files"]] if s["base_file"] else s["log_files"]
        latest.update(f"{s['partition']}/{n}" if s["partition"] else n for n in names)
    needed = {".hoodie/hoodie.properties"}
    for name in files:
        timeline_file = name.startswith(".hoodie/timeline/") and "/history/" not in name
        completed = timeline_file and not name.endswith((".requested", ".inflight"))
        if completed or "/history/" in name or name in latest:
            needed.add(name)
    return frozenset(needed)


def _invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _read_rows(table: Path, out: Path) -> pa.Table | None:
    result = _invoke("read", str(table), "--out", str(out))
    assert_clean(result)
    return pq.read_table(out) if result.exit_code == 0 else None


def assert_clean(result: Result, *, codes: tuple[int, ...] = (0, 2)) -> None:
    """No traceback: the command ended by exiting, with one ``error:`` line if it failed."""
    assert isinstance(result.exception, SystemExit) or result.exception is None, (
        f"traceback: {result.exception!r}\n{result.output}"
    )
    assert result.exit_code in codes, result.output
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


# --- damage ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    kind: str
    file: str
    where: float = 0.5
    """Truncation point or first flipped byte, as a fraction of the file's length."""
    payload: bytes = b"\x00"
    """Random bytes, or the XOR masks of the flipped bytes."""
    other: str = ""
    """The file swapped with (``swap``)."""


def damage(draw_file: st.SearchStrategy[str]) -> st.SearchStrategy[Damage]:
    return st.builds(
        Damage,
        kind=st.sampled_from(KINDS),
        file=draw_file,
        where=st.floats(0, 1),
        payload=st.binary(min_size=1, max_size=64),
        other=draw_file,
    )


def apply(table: Path, d: Damage) -> None:
    path = table / d.file
    data = path.read_bytes()
    at = min(int(d.where * len(data)), max(len(data) - 1, 0))
    if d.kind == "truncate":
        path.write_bytes(data[:at])
    elif d.kind == "empty":
        path.write_bytes(b"")
    elif d.kind == "random":
        path.write_bytes(d.payload)
    elif d.kind == "flip":
        flipped = bytearray(data)
        for i, mask in enumerate(d.payload or b"\x01"):
            if at + i < len(flipped):
                flipped[at + i] ^= mask or 1
        path.write_bytes(bytes(flipped))
    elif d.kind == "delete":
        path.unlink()
    elif d.kind == "swap":
        other = table / d.other
        path.write_bytes(other.read_bytes())
        other.write_bytes(data)


def log_cut(data: bytes, at: int) -> int:
    """Where Hudi's log reader stops reading a log truncated at ``at``: the end of the last
    whole block before it (the torn block is a corrupt block, skipped)."""
    end = 0
    for frame in read_log_frames(data):
        block_end = frame.offset + 6 + int.from_bytes(data[frame.offset + 6 : frame.offset + 14])
        block_end += 8
        if block_end <= at:
            end = block_end
    return end


# --- what may come out -------------------------------------------------------------------------


def expected(p: Pristine, d: Damage, scratch: Path) -> Callable[[Result, pa.Table | None], None]:
    """The judge of ``read``'s outcome for damage ``d`` (see the module docstring)."""
    touched = {d.file, d.other} if d.kind == "swap" else {d.file}
    if not touched & p.read_files:
        return _same(p.rows)
    is_log = ".log." in d.file
    if is_log and d.kind in ("truncate", "empty"):
        return _same(_rows_with_log_cut(p, d, scratch))
    if d.file == ".hoodie/hoodie.properties" or d.kind in ("flip", "delete", "swap"):
        return _anything
    return _same_or_error(p.rows)


def _rows_with_log_cut(p: Pristine, d: Damage, scratch: Path) -> pa.Table:
    table = scratch / "cut"
    shutil.copytree(p.folder / "table", table)
    path = table / d.file
    data = path.read_bytes()
    at = 0 if d.kind == "empty" else min(int(d.where * len(data)), max(len(data) - 1, 0))
    path.write_bytes(data[: log_cut(data, at)])
    rows = _read_rows(table, scratch / "cut.parquet")
    assert rows is not None, "a log cut back to whole blocks must read"
    return rows


def _same(rows: pa.Table) -> Callable[[Result, pa.Table | None], None]:
    def judge(result: Result, got: pa.Table | None) -> None:
        assert result.exit_code == 0, f"expected the undamaged answer: {result.output}"
        assert got is not None and got.equals(rows), "rows differ"

    return judge


def _same_or_error(rows: pa.Table) -> Callable[[Result, pa.Table | None], None]:
    def judge(result: Result, got: pa.Table | None) -> None:
        if result.exit_code == 0:
            assert got is not None and got.equals(rows), "a damaged file read as a wrong answer"

    return judge


def _anything(result: Result, got: pa.Table | None) -> None:
    """Undetectable damage: only the absence of a traceback (checked by the caller)."""


# --- the harness -----------------------------------------------------------------------------


def run_commands(p: Pristine, d: Damage) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-table-") as tmp:
        scratch = Path(tmp)
        folder = scratch / "run"
        shutil.copytree(p.folder, folder)
        table = folder / "table"
        apply(table, d)
        for args in (("inspect", str(table)), ("inspect", str(table), "--json")):
            assert_clean(_invoke(*args))
        out = scratch / "rows.parquet"
        read = _invoke("read", str(table), "--out", str(out))
        assert_clean(read)
        got = pq.read_table(out) if read.exit_code == 0 else None
        expected(p, d, scratch)(read, got)
        check = _invoke("check", str(folder))
        assert_clean(check, codes=(0, 1))
        if read.exit_code == 2:
            assert check.exit_code == 1 and "the table is corrupt" in check.output, check.output


@st.composite
def damages(draw, p_files: tuple[str, ...]) -> Damage:
    return draw(damage(st.sampled_from(p_files)))


@settings(max_examples=60)
@given(data=st.data())
@example(data=None)
def test_damaged_tables_never_crash_nor_lie(pristine: Pristine, data) -> None:
    if data is None:  # the regression examples below, by name
        for d in regressions(pristine):
            run_commands(pristine, d)
        return
    run_commands(pristine, data.draw(damages(pristine.files)))


def regressions(p: Pristine) -> list[Damage]:
    """Damage that once ended in a traceback or a wrong answer."""
    completed = [f for f in p.files if f.endswith(".deltacommit")]
    logs = [f for f in p.files if ".log." in f]
    return [
        # check crashed in CommittedTableError (not a CorruptTableError then)
        Damage("truncate", completed[-1], 0.5),
        Damage("truncate", logs[-1], 0.7),
        # a flipped byte in a parquet log block gave invalid UTF-8 strings, which a checker's
        # to_pylist() then failed on (UnicodeDecodeError)
        Damage("flip", next(f for f in logs if "_20260101000013440.log" in f), 0.3125, b"\x80"),
    ]


# --- named cases -------------------------------------------------------------------------------


def damaged_copy(p: Pristine, tmp_path: Path, d: Damage) -> Path:
    """A copy of the pristine run folder (under ``tmp_path / "run"``) with damage ``d`` done to
    its table."""
    folder = tmp_path / "run"
    shutil.copytree(p.folder, folder)
    apply(folder / "table", d)
    return folder


def _one_error_naming(result: Result, name: str) -> str:
    assert_clean(result)
    assert result.exit_code == 2, result.output
    assert name in result.stderr, result.stderr
    return result.stderr


def _latest_deltacommit(p: Pristine) -> str:
    return [f for f in p.files if f.endswith(".deltacommit")][-1]


@pytest.mark.parametrize("kind", ["empty", "truncate", "random"])
def test_a_damaged_deltacommit_is_an_error(pristine: Pristine, tmp_path: Path, kind: str) -> None:
    name = _latest_deltacommit(pristine)
    table = damaged_copy(pristine, tmp_path, Damage(kind, name, 0.4, b"not avro at all")) / "table"
    for args in (("inspect", str(table)), ("inspect", str(table), "--json"), ("read", str(table))):
        _one_error_naming(_invoke(*args), Path(name).name)


def test_a_base_file_of_random_bytes_is_an_error(pristine: Pristine, tmp_path: Path) -> None:
    (base,) = {f"{s['partition']}/{s['base_file']}" for s in pristine.inspect["file_slices"][:1]}
    table = (
        damaged_copy(pristine, tmp_path, Damage("random", base, payload=b"\x07" * 300)) / "table"
    )
    message = _one_error_naming(_invoke("read", str(table)), Path(base).name)
    assert "not a readable parquet file" in message


def test_a_corrupt_archive_manifest_is_an_error(pristine: Pristine, tmp_path: Path) -> None:
    manifest = [f for f in pristine.files if "/history/manifest_" in f][-1]
    table = (
        damaged_copy(pristine, tmp_path, Damage("random", manifest, payload=b"{not json")) / "table"
    )
    for args in (("inspect", str(table)), ("read", str(table))):
        message = _one_error_naming(_invoke(*args), Path(manifest).name)
        assert "not an LSM timeline manifest" in message


def test_a_corrupt_lsm_file_is_an_error(pristine: Pristine, tmp_path: Path) -> None:
    lsm = [f for f in pristine.files if "/history/" in f and f.endswith(".parquet")][-1]
    table = damaged_copy(pristine, tmp_path, Damage("truncate", lsm, 0.5)) / "table"
    _one_error_naming(_invoke("inspect", str(table)), Path(lsm).name)


def test_check_reports_a_damaged_table_as_a_finding(pristine: Pristine, tmp_path: Path) -> None:
    name = _latest_deltacommit(pristine)
    folder = damaged_copy(pristine, tmp_path, Damage("empty", name))
    result = _invoke("check", str(folder))
    assert_clean(result, codes=(1,))
    assert "the table is corrupt" in result.output and Path(name).name in result.output


@pytest.mark.parametrize("missing", ["history.jsonl", "result.json"])
def test_check_of_a_folder_without_its_records_is_bad_input(
    pristine: Pristine, tmp_path: Path, missing: str
) -> None:
    folder = damaged_copy(pristine, tmp_path, Damage("delete", f"../{missing}"))
    result = _invoke("check", str(folder))
    assert_clean(result, codes=(2,))
    assert missing in result.stderr


@pytest.mark.parametrize("name", ["history.jsonl", "result.json"])
def test_check_of_invalid_json_records_is_bad_input(
    pristine: Pristine, tmp_path: Path, name: str
) -> None:
    folder = damaged_copy(pristine, tmp_path, Damage("random", f"../{name}", payload=b"{oops\n"))
    assert_clean(_invoke("check", str(folder)), codes=(2,))


def test_a_missing_or_unreadable_properties_file_is_an_error(
    pristine: Pristine, tmp_path: Path
) -> None:
    props = ".hoodie/hoodie.properties"
    for kind, payload in (("delete", b""), ("random", b"\xff\xfe\x00")):
        folder = damaged_copy(pristine, tmp_path / kind, Damage(kind, props, payload=payload))
        for command in ("inspect", "read"):
            _one_error_naming(_invoke(command, str(folder / "table")), "hoodie.properties")


def test_a_torn_last_log_block_is_skipped_as_hudi_does(pristine: Pristine, tmp_path: Path) -> None:
    """HoodieLogFileReader makes a torn block a corrupt block, which the scanners skip."""
    log = [f for f in pristine.files if ".log." in f][-1]
    table = damaged_copy(pristine, tmp_path, Damage("truncate", log, 0.9)) / "table"
    from models.view.reader import decoded_log_blocks

    assert decoded_log_blocks((table / log).read_bytes()) == ()


def test_a_truncated_json_deltacommit_of_table_version_6_is_an_error(fixture_tables, tmp_path):
    """Table version 6 keeps commit metadata as JSON in ``.hoodie/``: decoded as JSON."""
    table = tmp_path / "v6"
    shutil.copytree(fixture_tables["quickstart_trips_table_mor_avro_v6_trips_8i1u"], table)
    instant = sorted((table / ".hoodie").glob("*.deltacommit"))[-1]
    instant.write_bytes(instant.read_bytes()[:100])
    for command in ("inspect", "read"):
        message = _one_error_naming(_invoke(command, str(table)), instant.name)
        assert "JSON" in message
