"""hoodie.properties (models/format/properties.py): Java properties text, the table checksum, and the
TableConfig accessors with Hudi's defaults."""

from __future__ import annotations

import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.format.properties import (
    CHECKSUM,
    COMMIT_TIME_ORDERING,
    COPY_ON_WRITE,
    DATABASE_NAME,
    EVENT_TIME_ORDERING,
    MERGE_MODE,
    MERGE_ON_READ,
    ORDERING_FIELDS,
    PARTITION_FIELDS,
    POPULATE_META_FIELDS,
    PRECOMBINE_FIELD,
    RECORD_KEY_FIELDS,
    TABLE_NAME,
    TABLE_TYPE,
    TABLE_VERSION,
    TIMELINE_LAYOUT_VERSION,
    TIMELINE_PATH,
    PropertiesError,
    TableConfig,
    format_properties,
    parse_properties,
    table_checksum,
)
from tests.conftest import FIXTURE_NAMES, FIXTURES_DIR

# ---------------------------------------------------------------------------------------------
# parse_properties on Java-escaped text

JAVA_TEXT = r"""#Properties saved on 2025-07-13T01:05:35.624677Z
! a bang comment
   # an indented comment

plain=value
spaced = value with inner spaces
colon:value
colon_spaced : v
whitespace_separated value here
tab_separated	tabbed
key\:with\=escapes=va\:lue\=more\\back
unicode=caf\u00e9 \u20ac
escaped\ space\ key=x
leading=\ two
control=a\tb\nc
continued=first \
    second \
	third
comment_in_continuation=a\
# not a comment
even_backslashes=ends with one\\
after_even=next line is separate
empty=
bare_key
  indented=yes
value_with_separators=a=b:c d
"""


def test_parse_java_escaped_text():
    assert parse_properties(JAVA_TEXT) == {
        "plain": "value",
        "spaced": "value with inner spaces",
        "colon": "value",
        "colon_spaced": "v",
        "whitespace_separated": "value here",
        "tab_separated": "tabbed",
        "key:with=escapes": "va:lue=more\\back",
        "unicode": "café €",
        "escaped space key": "x",
        "leading": " two",
        "control": "a\tb\nc",
        "continued": "first second third",
        "comment_in_continuation": "a# not a comment",
        "even_backslashes": "ends with one\\",
        "after_even": "next line is separate",
        "empty": "",
        "bare_key": "",
        "indented": "yes",
        "value_with_separators": "a=b:c d",
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("k=v", {"k": "v"}),
        ("k:v", {"k": "v"}),
        ("k v", {"k": "v"}),
        ("k = v", {"k": "v"}),
        ("k : v", {"k": "v"}),
        ("k = : v", {"k": ": v"}),  # only the first separator is consumed
        ("k==v", {"k": "=v"}),
        ("k=v  ", {"k": "v  "}),  # trailing whitespace is part of the value
        ("k=v\r\nj=w\r\n", {"k": "v", "j": "w"}),
        ("k=v\rj=w", {"k": "v", "j": "w"}),
        ("k=1\nk=2", {"k": "2"}),  # the last one wins, as in java.util.Properties
        ("k=open\\", {"k": "open"}),  # a continuation at end of input ends the value
        ("k=a\\\n\nj=b", {"k": "a", "j": "b"}),  # an empty line ends a continuation
        ("", {}),
        ("# only a comment\n\n", {}),
    ],
)
def test_parse_forms(text, expected):
    assert parse_properties(text) == expected


def test_escaped_separators_in_an_avro_schema_value():
    text = (
        'hoodie.table.create.schema={"type"\\:"record","name"\\:"r",'
        '"fields"\\:[{"name"\\:"ts","type"\\:["long","null"]}]}\n'
    )
    schema = json.loads(parse_properties(text)["hoodie.table.create.schema"])
    assert schema == {
        "type": "record",
        "name": "r",
        "fields": [{"name": "ts", "type": ["long", "null"]}],
    }


# ---------------------------------------------------------------------------------------------
# format_properties -> parse_properties

# Printable text in the Basic Multilingual Plane (surrogate code points excluded: they are not
# text). Characters beyond U+FFFF (surrogate pairs in Java) have their own tests below.
bmp_text = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)), max_size=20)


@settings(max_examples=100)
@given(
    extra=st.dictionaries(bmp_text.filter(bool), bmp_text, max_size=6),
    name=bmp_text.filter(bool),
)
def test_format_parse_round_trip(extra, name):
    props = {**extra, TABLE_NAME: name}
    text = format_properties(props)
    assert parse_properties(text) == {**props, CHECKSUM: str(table_checksum(props))}


def test_format_is_sorted_deterministic_and_adds_the_checksum():
    text = format_properties({TABLE_NAME: "t", "b": "x:y", "a": " lead"}, header="hdr")
    assert text == (
        f"#hdr\na=\\ lead\nb=x\\:y\nhoodie.table.checksum={zlib.crc32(b't')}\nhoodie.table.name=t\n"
    )


def test_format_replaces_a_stale_checksum():
    props = {TABLE_NAME: "t", DATABASE_NAME: "db", CHECKSUM: "123"}
    assert parse_properties(format_properties(props))[CHECKSUM] == str(zlib.crc32(b"db.t"))


def test_format_requires_a_table_name():
    with pytest.raises(PropertiesError, match=TABLE_NAME):
        format_properties({"a": "b"})


def test_round_trip_beyond_the_bmp():
    props = {TABLE_NAME: "t", "emoji": "\U0001f600"}
    assert parse_properties(format_properties(props))["emoji"] == "\U0001f600"


def test_parse_java_surrogate_pair():
    assert parse_properties("emoji=\\ud83d\\ude00") == {"emoji": "\U0001f600"}


# ---------------------------------------------------------------------------------------------
# table_checksum against the real fixtures

# Which fixtures match what: every one of the nine fixtures' hoodie.table.checksum equals
# table_checksum(props) = crc32("<hoodie.database.name>.<hoodie.table.name>"), all with database
# "default"; none equals crc32 of the bare table name. Where the checksum does *not* match crc32
# of the name seen on disk, it is because hoodie.table.name differs from the table's folder: the
# v9 rollback fixture (folder "v9_nonpartitioned_rollback", table "v9_nonpartitioned_rollback_mor")
# and, likewise, the v9 nometa fixture (folder "v9_txns_simple_nometa", table
# "v9_txns_mor_simple_nometa"). The two v6 nonpartitioned fixtures share one table name and so one
# checksum.
EXPECTED_CHECKSUMS = {
    "quickstart_trips_table_mor_avro_v6_trips_8i1u": ("v6_trips_8i1u", 3843273058),
    "quickstart_trips_table_mor_avro_v8_trips_8i3u1d": ("v8_trips_8i3u1d", 1197752875),
    "sample_table_cow_v6_nonpartitioned": ("v6_nonpartitioned", 1363530505),
    "sample_table_cow_v8_empty": ("v8_empty", 640695144),
    "sample_table_cow_v8_nonpartitioned": ("v8_nonpartitioned", 1908876706),
    "sample_table_cow_v8_simplekeygen_nonhivestyle": ("v8_simplekeygen_nonhivestyle", 1511679565),
    "sample_table_mor_avro_v9_nonpartitioned_rollback": (
        "v9_nonpartitioned_rollback_mor",
        169463277,
    ),
    "sample_table_mor_avro_v9_txns_simple_nometa": ("v9_txns_mor_simple_nometa", 3914184242),
    "sample_table_mor_parquet_v6_nonpartitioned": ("v6_nonpartitioned", 1363530505),
}


def read_fixture_properties(fixture_tables, name: str) -> dict[str, str]:
    path = fixture_tables[name] / ".hoodie" / "hoodie.properties"
    return parse_properties(path.read_text("utf-8"))


def test_every_fixture_is_listed():
    assert sorted(EXPECTED_CHECKSUMS) == FIXTURE_NAMES


def test_every_fixture_has_its_provenance_in_the_readme():
    readme = (FIXTURES_DIR / "README.md").read_text()
    for name in FIXTURE_NAMES:
        assert f"| `{name}` |" in readme, name
    assert "Apache License, Version 2.0" in readme


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_table_checksum_matches_the_fixture(fixture_tables, name):
    props = read_fixture_properties(fixture_tables, name)
    table_name, checksum = EXPECTED_CHECKSUMS[name]
    assert props[TABLE_NAME] == table_name
    assert props[DATABASE_NAME] == "default"
    assert props[CHECKSUM] == str(checksum)
    assert table_checksum(props) == checksum
    assert zlib.crc32(f"default.{table_name}".encode()) == checksum
    assert zlib.crc32(table_name.encode()) != checksum


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("sample_table_mor_avro_v9_nonpartitioned_rollback", "v9_nonpartitioned_rollback"),
        ("sample_table_mor_avro_v9_txns_simple_nometa", "v9_txns_simple_nometa"),
    ],
)
def test_v9_checksums_are_not_of_their_folder_names(fixture_tables, name, folder):
    props = read_fixture_properties(fixture_tables, name)
    assert fixture_tables[name].name == folder
    assert props[TABLE_NAME] != folder
    assert zlib.crc32(f"default.{folder}".encode()) != int(props[CHECKSUM])
    assert table_checksum(props) == int(props[CHECKSUM])


@pytest.mark.parametrize(
    "name",
    sorted(
        set(FIXTURE_NAMES)
        - {
            "sample_table_mor_avro_v9_nonpartitioned_rollback",
            "sample_table_mor_avro_v9_txns_simple_nometa",
        }
    ),
)
def test_other_fixtures_are_named_like_their_folder(fixture_tables, name):
    props = read_fixture_properties(fixture_tables, name)
    assert props[TABLE_NAME] == fixture_tables[name].name


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_create_schema_unescapes_to_json(fixture_tables, name):
    props = read_fixture_properties(fixture_tables, name)
    schema = json.loads(props["hoodie.table.create.schema"])
    assert schema["type"] == "record"
    assert schema["name"] == props[TABLE_NAME] + "_record"


def test_fixture_round_trips_through_format(fixture_tables):
    props = read_fixture_properties(
        fixture_tables, "quickstart_trips_table_mor_avro_v8_trips_8i3u1d"
    )
    assert parse_properties(format_properties(props)) == props


def test_checksum_without_database_is_of_the_bare_name():
    assert table_checksum({TABLE_NAME: "trips"}) == zlib.crc32(b"trips")
    assert table_checksum({TABLE_NAME: "trips", DATABASE_NAME: ""}) == zlib.crc32(b"trips")
    assert table_checksum({TABLE_NAME: "trips", DATABASE_NAME: "db"}) == zlib.crc32(b"db.trips")


def test_checksum_requires_a_name():
    with pytest.raises(PropertiesError):
        table_checksum({})
    with pytest.raises(PropertiesError):
        table_checksum({TABLE_NAME: ""})


# ---------------------------------------------------------------------------------------------
# TableConfig


def config(**extra: str) -> TableConfig:
    return TableConfig({TABLE_NAME: "t", TABLE_VERSION: "8", **extra})


@pytest.mark.parametrize(
    ("version", "layout", "expected"),
    [
        ("6", None, 1),
        ("5", None, 1),
        ("8", None, 2),
        ("9", None, 2),
        ("6", "1", 1),
        ("8", "2", 2),
        ("8", "1", 1),  # explicit wins over inference
        ("6", "0", 1),  # layout 0 reads like 1
    ],
)
def test_layout_version(version, layout, expected):
    raw = {TABLE_NAME: "t", TABLE_VERSION: version}
    if layout is not None:
        raw[TIMELINE_LAYOUT_VERSION] = layout
    assert TableConfig(raw).layout_version == expected


@pytest.mark.parametrize("layout", ["3", "x", "", "-1"])
def test_bad_layout_version(layout):
    with pytest.raises(PropertiesError, match=TIMELINE_LAYOUT_VERSION):
        config(**{TIMELINE_LAYOUT_VERSION: layout}).layout_version  # noqa: B018


def test_layout_inference_needs_a_version():
    with pytest.raises(PropertiesError, match=TABLE_VERSION):
        TableConfig({TABLE_NAME: "t"}).layout_version  # noqa: B018


@pytest.mark.parametrize("version", ["eight", "", "8.0"])
def test_bad_version(version):
    with pytest.raises(PropertiesError, match=TABLE_VERSION):
        TableConfig({TABLE_VERSION: version}).version  # noqa: B018


def test_name_is_required():
    assert config().name == "t"
    with pytest.raises(PropertiesError, match=TABLE_NAME):
        TableConfig({}).name  # noqa: B018


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({TABLE_VERSION: "8"}, ".hoodie/timeline"),
        ({TABLE_VERSION: "9", TIMELINE_PATH: "tl"}, ".hoodie/tl"),
        ({TABLE_VERSION: "6"}, ".hoodie"),
        ({TABLE_VERSION: "6", TIMELINE_PATH: "tl"}, ".hoodie"),  # layout 1 ignores the path
        ({TABLE_VERSION: "8", TIMELINE_LAYOUT_VERSION: "1"}, ".hoodie"),
    ],
)
def test_timeline_dir(raw, expected):
    assert TableConfig(raw).timeline_dir == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({}, COMMIT_TIME_ORDERING),  # no ordering field
        ({PRECOMBINE_FIELD: "ts"}, EVENT_TIME_ORDERING),
        ({ORDERING_FIELDS: "txn_ts"}, EVENT_TIME_ORDERING),
        ({PRECOMBINE_FIELD: " , "}, COMMIT_TIME_ORDERING),  # blank fields are no field
        ({MERGE_MODE: COMMIT_TIME_ORDERING, PRECOMBINE_FIELD: "ts"}, COMMIT_TIME_ORDERING),
        ({MERGE_MODE: EVENT_TIME_ORDERING}, EVENT_TIME_ORDERING),
    ],
)
def test_merge_mode(raw, expected):
    assert config(**raw).merge_mode == expected


@pytest.mark.parametrize("mode", ["CUSTOM", "event_time_ordering", ""])
def test_invalid_merge_mode(mode):
    with pytest.raises(PropertiesError, match=MERGE_MODE):
        config(**{MERGE_MODE: mode}).merge_mode  # noqa: B018


def test_table_type():
    assert config().table_type == COPY_ON_WRITE
    assert not config().is_mor
    assert config(**{TABLE_TYPE: MERGE_ON_READ}).is_mor
    with pytest.raises(PropertiesError, match=TABLE_TYPE):
        config(**{TABLE_TYPE: "mor"}).table_type  # noqa: B018


def test_field_lists():
    cfg = config(
        **{
            RECORD_KEY_FIELDS: "a, b ,,c",
            PARTITION_FIELDS: "region",
            PRECOMBINE_FIELD: "old",
            ORDERING_FIELDS: "new1,new2",
        }
    )
    assert cfg.record_key_fields == ("a", "b", "c")
    assert cfg.partition_fields == ("region",)
    assert cfg.ordering_fields == ("new1", "new2")  # the newer key wins
    assert config().record_key_fields == ()
    assert config().partition_fields == ()
    assert config(**{PRECOMBINE_FIELD: "ts"}).ordering_fields == ("ts",)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, True), ("true", True), ("false", False), ("FALSE", False)]
)
def test_populate_meta_fields(value, expected):
    raw = {} if value is None else {POPULATE_META_FIELDS: value}
    assert config(**raw).populate_meta_fields is expected


@pytest.mark.parametrize(
    ("name", "version", "layout", "mode", "ordering", "mor"),
    [
        ("quickstart_trips_table_mor_avro_v6_trips_8i1u", 6, 1, EVENT_TIME_ORDERING, ("ts",), True),
        (
            "quickstart_trips_table_mor_avro_v8_trips_8i3u1d",
            8,
            2,
            EVENT_TIME_ORDERING,
            ("ts",),
            True,
        ),
        ("sample_table_cow_v8_empty", 8, 2, COMMIT_TIME_ORDERING, (), False),
        (
            "sample_table_mor_avro_v9_txns_simple_nometa",
            9,
            2,
            EVENT_TIME_ORDERING,
            ("txn_ts",),
            True,
        ),
    ],
)
def test_fixture_table_configs(fixture_tables, name, version, layout, mode, ordering, mor):
    cfg = TableConfig(read_fixture_properties(fixture_tables, name))
    assert (cfg.version, cfg.layout_version, cfg.merge_mode, cfg.ordering_fields, cfg.is_mor) == (
        version,
        layout,
        mode,
        ordering,
        mor,
    )
    assert cfg.timeline_dir == (".hoodie" if layout == 1 else ".hoodie/timeline")
