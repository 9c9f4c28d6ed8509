"""Data file names (models/view/filenames.py): every data file Hudi wrote in the fixtures parses and
formats back to the same name; write tokens, log order, and names that are not data files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.timeline.instant import parse_instant_file_name
from models.timeline.instant_time import format_epoch_ms
from models.view.filenames import (
    BaseFileName,
    FileNameError,
    LogFileName,
    WriteToken,
    check_file_id,
    is_base_file_name,
    is_log_file_name,
    parse_base_file_name,
    parse_log_file_name,
)
from tests.conftest import FIXTURE_NAMES

T = "20250713010535797"
FID = "2746610d-ad02-4adb-a038-5cbb99cbd455-0"


def data_files(table: Path) -> list[str]:
    """Names of every file outside ``.hoodie`` folders."""
    names = []
    for _root, dirs, files in os.walk(table):
        dirs[:] = [d for d in dirs if d != ".hoodie"]
        names += files
    return sorted(names)


# ---------------------------------------------------------------------------------------------
# every data file of every fixture

# (base files, log files, .hoodie_partition_metadata files) per fixture
EXPECTED_COUNTS = {
    "quickstart_trips_table_mor_avro_v6_trips_8i1u": (3, 1, 3),
    "quickstart_trips_table_mor_avro_v8_trips_8i3u1d": (6, 5, 3),
    "sample_table_cow_v6_nonpartitioned": (2, 0, 1),
    "sample_table_cow_v8_empty": (0, 0, 0),
    "sample_table_cow_v8_nonpartitioned": (2, 0, 1),
    "sample_table_cow_v8_simplekeygen_nonhivestyle": (4, 0, 3),
    "sample_table_mor_avro_v9_nonpartitioned_rollback": (2, 0, 1),
    "sample_table_mor_avro_v9_txns_simple_nometa": (14, 5, 3),
    "sample_table_mor_parquet_v6_nonpartitioned": (2, 1, 1),
}


def test_every_fixture_is_listed():
    assert sorted(EXPECTED_COUNTS) == FIXTURE_NAMES


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_data_file_names_round_trip(fixture_tables, name):
    bases, logs, others = [], [], []
    for file_name in data_files(fixture_tables[name]):
        if is_base_file_name(file_name):
            parsed = parse_base_file_name(file_name)
            assert str(parsed) == file_name
            assert not is_log_file_name(file_name)
            bases.append(parsed)
        elif is_log_file_name(file_name):
            parsed = parse_log_file_name(file_name)
            assert str(parsed) == file_name
            logs.append(parsed)
        else:
            others.append(file_name)
    assert (len(bases), len(logs), len(others)) == EXPECTED_COUNTS[name]
    assert set(others) <= {".hoodie_partition_metadata"}
    for parsed in [*bases, *logs]:
        assert check_file_id(parsed.file_id) == parsed.file_id
        assert len(parsed.instant_time) == 17
        assert parsed.write_token is not None
    assert {b.extension for b in bases} <= {"parquet"}
    assert {(lf.extension, lf.version, lf.cdc) for lf in logs} <= {("log", 1, False)}


@pytest.mark.parametrize(
    "name",
    [n for n in FIXTURE_NAMES if "_v8_" in n or "_v9_" in n],
)
def test_v8_v9_data_file_instants_are_on_the_timeline(fixture_tables, name):
    table = fixture_tables[name]
    requested = {
        parse_instant_file_name(p.name).requested_time
        for p in (table / ".hoodie" / "timeline").iterdir()
        if p.is_file()
    }
    for file_name in data_files(table):
        if is_base_file_name(file_name):
            assert parse_base_file_name(file_name).instant_time in requested
        elif is_log_file_name(file_name):
            # table version 8+: the deltacommit that wrote the log is in its name
            assert parse_log_file_name(file_name).instant_time in requested


def test_parse_a_fixture_base_file():
    assert parse_base_file_name(f"{FID}_0-54-79_{T}.parquet") == BaseFileName(
        FID, WriteToken(0, 54, 79), T, "parquet"
    )


def test_parse_a_fixture_log_file():
    name = ".6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_20251220210127080.log.1_0-1072-3078"
    assert parse_log_file_name(name) == LogFileName(
        "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0",
        "20251220210127080",
        1,
        WriteToken(0, 1072, 3078),
        "log",
        False,
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (f".{FID}_{T}.log.2", LogFileName(FID, T, 2, None)),  # no write token
        (f".{FID}_{T}.log.12_1-2-3.cdc", LogFileName(FID, T, 12, WriteToken(1, 2, 3), cdc=True)),
        (
            f".{FID}_{T}.archive.3_0-0-0",
            LogFileName(FID, T, 3, WriteToken(0, 0, 0), extension="archive"),
        ),
        (
            f".{FID}_20250713010535.log.1_0-1-2",
            LogFileName(FID, T[:14] + "999", 1, WriteToken(0, 1, 2)),
        ),
    ],
)
def test_parse_log_forms(name, expected):
    parsed = parse_log_file_name(name)
    assert parsed == expected
    if len(expected.instant_time) == len(name.split("_")[1].split(".")[0]):
        assert str(parsed) == name


@pytest.mark.parametrize("ext", ["parquet", "orc", "hfile"])
def test_base_extensions(ext):
    name = f"{FID}_1-2-3_{T}.{ext}"
    assert parse_base_file_name(name).extension == ext
    assert str(parse_base_file_name(name)) == name


def test_legacy_base_instant_is_normalized():
    assert parse_base_file_name(f"{FID}_1-2-3_20250713010535.parquet").instant_time == (
        "20250713010535999"
    )


# ---------------------------------------------------------------------------------------------
# generated names round trip

file_ids = st.from_regex(r"[0-9a-f]{1,8}(-[0-9a-f]{1,8}){0,4}-[0-9]{1,2}", fullmatch=True)
tokens = st.builds(
    WriteToken,
    st.integers(0, 10_000),
    st.integers(0, 10_000),
    st.integers(0, 100_000),
)
instants = st.integers(0, 4_102_444_800_000).map(format_epoch_ms)


@settings(max_examples=100)
@given(file_ids, tokens, instants, st.sampled_from(["parquet", "orc", "hfile"]))
def test_base_file_name_round_trip(file_id, token, instant, ext):
    name = BaseFileName(file_id, token, instant, ext)
    assert parse_base_file_name(str(name)) == name
    assert is_base_file_name(str(name))
    assert not is_log_file_name(str(name))


@settings(max_examples=100)
@given(
    file_ids,
    instants,
    st.integers(1, 10_000),
    st.none() | tokens,
    st.sampled_from(["log", "archive"]),
    st.booleans(),
)
def test_log_file_name_round_trip(file_id, instant, version, token, ext, cdc):
    if token is None:
        cdc = False  # the ".cdc" suffix only follows a write token
    name = LogFileName(file_id, instant, version, token, ext, cdc)
    assert parse_log_file_name(str(name)) == name
    assert is_log_file_name(str(name))
    assert not is_base_file_name(str(name))


# ---------------------------------------------------------------------------------------------
# write tokens


def test_write_token_parse_and_str():
    assert WriteToken.parse("0-1072-3078") == WriteToken(0, 1072, 3078)
    assert str(WriteToken(0, 1072, 3078)) == "0-1072-3078"
    assert WriteToken.parse("007-0-1") == WriteToken(7, 0, 1)


@pytest.mark.parametrize(
    "text",
    ["", "1", "1-2", "1-2-3-4", "a-1-2", "1--2", "-1-2-3", "1-2-", " 1-2-3", "1-2-3 ", "1_2_3"],
)
def test_write_token_parse_errors(text):
    with pytest.raises(FileNameError, match="write token"):
        WriteToken.parse(text)


def test_write_tokens_order_numerically_by_fields():
    assert sorted([WriteToken(1, 0, 0), WriteToken(0, 2, 1), WriteToken(0, 2, 0)]) == [
        WriteToken(0, 2, 0),
        WriteToken(0, 2, 1),
        WriteToken(1, 0, 0),
    ]


# ---------------------------------------------------------------------------------------------
# LogFileName.sort_key


def log(instant: str, version: int, token: str | None) -> LogFileName:
    return LogFileName(FID, instant, version, WriteToken.parse(token) if token else None)


def test_sort_key_orders_by_instant_then_version_then_token():
    t1, t2 = "20240101000000001", "20240101000000002"
    logs = [
        log(t2, 1, "0-1-1"),
        log(t1, 2, "0-1-1"),
        log(t1, 1, "1-0-0"),
        log(t1, 1, "0-5-9"),
        log(t1, 1, None),
        log(t1, 10, "0-0-0"),
    ]
    assert sorted(logs, key=LogFileName.sort_key) == [
        log(t1, 1, None),  # no token sorts first (Hudi: nullsFirst)
        log(t1, 1, "0-5-9"),
        log(t1, 1, "1-0-0"),
        log(t1, 2, "0-1-1"),
        log(t1, 10, "0-0-0"),  # versions compare as numbers
        log(t2, 1, "0-1-1"),
    ]


def test_sort_key_compares_write_tokens_like_hudi():
    t1 = "20240101000000001"
    assert sorted([log(t1, 1, "0-1-9"), log(t1, 1, "0-1-10")], key=LogFileName.sort_key) == [
        log(t1, 1, "0-1-10"),
        log(t1, 1, "0-1-9"),
    ]


# ---------------------------------------------------------------------------------------------
# names that are not data files

NOT_BASE = [
    "",
    ".hoodie_partition_metadata",
    ".hoodie_partition_metadata.parquet",
    f"{FID}_{T}.parquet",  # no write token
    f"{FID}_1-2-3_{T}.parquet.crc",
    f"{FID}_1-2-3_{T}.csv",
    f"{FID}_1-2_{T}.parquet",
    f"{FID}_1-2-3-4_{T}.parquet",
    f"{FID}_1-2-3_{T}",
    f"_1-2-3_{T}.parquet",  # empty file id
    f"a_b_1-2-3_{T}.parquet",  # '_' inside the file id
    f"p/{FID}_1-2-3_{T}.parquet",
    f".{FID}_{T}.log.1_0-1-2",
    f"{FID}_1-2-3_{T}.marker.CREATE",
]

NOT_LOG = [
    "",
    ".hoodie_partition_metadata",
    f"{FID}_1-2-3_{T}.parquet",
    f"{FID}_{T}.log.1_0-1-2",  # no leading dot
    f".{FID}_{T}.log",  # no version
    f".{FID}_{T}.log.x",
    f".{FID}_{T}.txt.1",
    f".{FID}.log.1_0-1-2",  # no instant
    f".{FID}_{T}.log.1_0-1",  # incomplete token
    f".{FID}_{T}.log.1_0-1-2.marker.APPEND",
]


@pytest.mark.parametrize("name", NOT_BASE)
def test_not_base_file_names(name):
    assert not is_base_file_name(name)
    with pytest.raises(FileNameError):
        parse_base_file_name(name)


@pytest.mark.parametrize("name", NOT_LOG)
def test_not_log_file_names(name):
    assert not is_log_file_name(name)
    with pytest.raises(FileNameError):
        parse_log_file_name(name)


@pytest.mark.parametrize(
    "name", [f".{FID}_.log.1_0-1-2", f".{FID}_2025.log.1", f".{FID}_abc.log.1"]
)
def test_log_names_with_bad_instants_raise_file_name_error(name):
    with pytest.raises(FileNameError):
        parse_log_file_name(name)


@pytest.mark.parametrize("name", [f"{FID}_1-2-3_2025.parquet", f"{FID}_1-2-3_{T}0.parquet"])
def test_base_names_with_bad_instants_raise_file_name_error(name):
    with pytest.raises(FileNameError):
        parse_base_file_name(name)


@pytest.mark.parametrize(
    "name", [f"{FID}_1-2-3_2025.parquet", f".{FID}_.log.1_0-1-2", f".{FID}_2025.log.1"]
)
def test_is_data_file_name_agrees_with_the_parsers(name):
    assert not (is_base_file_name(name) or is_log_file_name(name))


@pytest.mark.parametrize(
    "name",
    [
        f"{FID}_0-1-2_{T}.parquet\n",
        f".{FID}_{T}.log.1_0-1-2\n",
        f"{FID}_\u0661-2-3_{T}.parquet",
    ],
)
def test_names_with_newlines_or_non_ascii_digits_are_rejected(name):
    assert not (is_base_file_name(name) or is_log_file_name(name))


@pytest.mark.parametrize("file_id", ["", "a_b", "a/b"])
def test_check_file_id_rejects(file_id):
    with pytest.raises(FileNameError, match="file id"):
        check_file_id(file_id)


def test_file_name_error_is_a_value_error():
    assert issubclass(FileNameError, ValueError)
