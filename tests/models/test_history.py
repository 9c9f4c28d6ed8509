"""Tests for models/history.py: the canonical encoding, strict parsing and the digest.

The history is the contract between the simulator and the checkers, so these tests pin its bytes:
a round trip JSON -> Event -> JSON must be byte-identical, and anything whose encoding is not
reproducible (sets, NaN, objects) must be refused when it is recorded, not discovered later.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.history import (
    EVENT_TYPES,
    Event,
    check_value,
    event_from_json,
    event_to_json,
    history_digest,
    history_jsonl,
    normalize_value,
    parse_history,
    read_history,
    write_history,
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
events = st.builds(
    Event,
    index=st.integers(min_value=0, max_value=10**6),
    time=st.integers(min_value=0, max_value=10**12),
    process=st.text(min_size=1, max_size=10),
    type=st.sampled_from(EVENT_TYPES),
    f=st.text(min_size=1, max_size=10),
    value=json_values,
)


def ev(index: int, value=None, *, time: int = 0, type: str = "ok") -> Event:
    return Event(index=index, time=time, process="writer-1", type=type, f="commit", value=value)


# ---------------------------------------------------------------------------------------------
# canonical encoding


def test_event_to_json_is_one_canonical_line():
    event = Event(7, 1500, "writer-1", "invoke", "commit", {"z": [1, 2.5], "a": "é\n"})
    assert event_to_json(event) == (
        '{"f":"commit","index":7,"process":"writer-1","time":1500,"type":"invoke",'
        '"value":{"a":"\\u00e9\\n","z":[1,2.5]}}'
    )


def test_key_insertion_order_does_not_change_the_bytes():
    one = ev(0, {"a": 1, "b": {"y": 2, "x": 3}})
    two = ev(0, {"b": {"x": 3, "y": 2}, "a": 1})
    assert event_to_json(one) == event_to_json(two)


@given(events)
def test_round_trip_event_json_event_json_is_byte_identical(event):
    line = event_to_json(event)
    back = event_from_json(line)
    assert back == event
    assert event_to_json(back) == line
    assert line.isascii() and "\n" not in line


@given(st.lists(events, max_size=5))
def test_digest_is_sha256_of_the_newline_terminated_lines(evs):
    data = "".join(event_to_json(e) + "\n" for e in evs).encode()
    assert history_jsonl(evs) == data
    assert history_digest(evs) == "sha256:" + hashlib.sha256(data).hexdigest()


def test_digest_of_empty_history():
    assert history_digest([]) == "sha256:" + hashlib.sha256(b"").hexdigest()


def test_digest_changes_with_any_field():
    base = ev(0, {"k": 1})
    variants = [
        ev(0, {"k": 2}),
        ev(0, {"k": 1}, time=1),
        ev(0, {"k": 1}, type="fail"),
        Event(0, 0, "writer-2", "ok", "commit", {"k": 1}),
        Event(0, 0, "writer-1", "ok", "rollback", {"k": 1}),
        ev(0, {"k": 1.0}),  # 1 and 1.0 are different JSON numbers here
    ]
    digests = {history_digest([e]) for e in [base, *variants]}
    assert len(digests) == len(variants) + 1


# ---------------------------------------------------------------------------------------------
# check_value


@pytest.mark.parametrize(
    "value",
    [None, True, 0, -(10**30), 1.5, "", "x", [], (), {}, [1, (2, [3])], {"a": {"b": [None]}}],
)
def test_plain_json_is_accepted(value):
    check_value(value)


class Color(enum.IntEnum):
    RED = 1


class Name(str):
    pass


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ({1, 2}, "set"),
        (frozenset(), "frozenset"),
        ({"files": [1, {3}]}, "value['files'][1]"),
        (math.nan, "nan"),
        (math.inf, "inf"),
        ([-math.inf], "value[0]"),
        ({1: "a"}, "dict key 1"),
        (b"bytes", "bytes"),
        (object(), "object"),
        (Color.RED, "Color"),
        (Name("x"), "Name"),
        ({"k": Name("v")}, "value['k']"),
    ],
)
def test_anything_else_is_refused_with_where_it_is(value, fragment):
    with pytest.raises(TypeError) as raised:
        check_value(value)
    assert fragment in str(raised.value)


def test_a_set_gets_a_hint_to_sort_it():
    with pytest.raises(TypeError, match="sort it into a list"):
        check_value({"b", "a"})


def test_cycles_are_refused_not_a_recursion_error():
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(TypeError, match="cycle"):
        check_value(cyclic)


def test_normalize_value_turns_tuples_into_lists_and_copies():
    original = {"a": (1, (2, 3)), "b": [{"c": ()}]}
    copy = normalize_value(original)
    assert copy == {"a": [1, [2, 3]], "b": [{"c": []}]}
    original["b"][0]["c"] = "changed"
    assert copy["b"][0]["c"] == []


# ---------------------------------------------------------------------------------------------
# Event validation


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"index": -1}, ValueError),
        ({"index": True}, TypeError),
        ({"index": 1.0}, TypeError),
        ({"time": 1.5}, TypeError),
        ({"process": ""}, TypeError),
        ({"process": 3}, TypeError),
        ({"f": ""}, TypeError),
        ({"type": "error"}, ValueError),
        ({"value": {1, 2}}, TypeError),
    ],
)
def test_malformed_events_fail_where_they_are_made(kwargs, error):
    fields = {"index": 0, "time": 0, "process": "p", "type": "ok", "f": "f", "value": None}
    with pytest.raises(error):
        Event(**{**fields, **kwargs})


# ---------------------------------------------------------------------------------------------
# parsing


GOOD = '{"f":"commit","index":0,"process":"w","time":5,"type":"ok","value":null}'


@pytest.mark.parametrize(
    ("line", "fragment"),
    [
        ("not json", "not valid JSON"),
        ("[1]", "JSON object"),
        ('{"f":"c","index":0,"process":"w","time":5,"type":"ok"}', "missing: ['value']"),
        (GOOD[:-1] + ',"extra":1}', "unknown: ['extra']"),
        (GOOD[:-1] + ',"f":"again"}', "duplicate key 'f'"),
        (GOOD.replace("null", "NaN"), "NaN is not valid JSON"),
        (GOOD.replace("null", "1e400"), "inf"),
        (GOOD.replace('"ok"', '"done"'), "type"),
        (GOOD.replace("5", '"5"'), "time"),
    ],
)
def test_event_from_json_is_strict(line, fragment):
    with pytest.raises((ValueError, TypeError)) as raised:
        event_from_json(line)
    assert fragment in str(raised.value)


def test_event_from_json_accepts_non_canonical_spacing():
    spaced = json.dumps(json.loads(GOOD), indent=None)
    assert event_from_json(spaced) == event_from_json(GOOD)


def test_parse_history_skips_blank_lines_and_numbers_errors_from_one():
    lines = [GOOD + "\n", "\n", GOOD.replace('"index":0', '"index":1') + "\r\n", "  \n"]
    assert [e.index for e in parse_history(lines)] == [0, 1]
    with pytest.raises(ValueError, match=r"h.jsonl, line 3: not valid JSON"):
        parse_history([GOOD, "", "{oops"], "h.jsonl")


def test_parse_history_checks_indexes_are_positions():
    second = GOOD.replace('"index":0', '"index":5')
    with pytest.raises(ValueError, match=r"line 2: event index 5, expected 1"):
        parse_history([GOOD, second])
    assert [e.index for e in parse_history([GOOD, second], check_index=False)] == [0, 5]


# ---------------------------------------------------------------------------------------------
# files


def test_write_then_read_round_trips_and_the_file_is_the_digested_bytes(tmp_path):
    evs = [ev(0, {"files": ["a", "b"]}, type="invoke"), ev(1, None, time=3), ev(2, [1.25], time=9)]
    path = tmp_path / "history.jsonl"
    write_history(path, evs)
    assert read_history(path) == evs
    data = path.read_bytes()
    assert data == history_jsonl(evs)
    assert history_digest(evs) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert [p.name for p in tmp_path.iterdir()] == ["history.jsonl"]  # no temp file left


def test_write_history_replaces_an_existing_file(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_text("old\n")
    write_history(path, [ev(0)])
    assert read_history(path) == [ev(0)]


def test_read_history_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(GOOD + "\n" + GOOD.replace('"w"', "7").replace('"index":0', '"index":1') + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2: event process"):
        read_history(path)


def test_read_history_of_an_empty_file_is_empty(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    assert read_history(path) == []
