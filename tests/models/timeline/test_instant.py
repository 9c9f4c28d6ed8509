"""Instants and their timeline file names (models/timeline/instant.py, docs/protocol.md section 2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.timeline.instant import (
    ACTIONS,
    COMPLETED_ACTION,
    Instant,
    InstantFileNameError,
    ParsedInstantFile,
    State,
    completion_from_mtime,
    is_instant_file_name,
    parse_instant_file_name,
)
from models.timeline.instant_time import format_epoch_ms

T = "20240102030405006"
C = "20240102030407008"


def parsed(requested: str, action: str, state: State, completion: str | None = None):
    return ParsedInstantFile(requested, action, state, completion)


# ---------------------------------------------------------------------------------------------
# parsing every form


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        # layout 2 (table versions 8, 9)
        (f"{T}.deltacommit.requested", parsed(T, "deltacommit", State.REQUESTED)),
        (f"{T}.deltacommit.inflight", parsed(T, "deltacommit", State.INFLIGHT)),
        (f"{T}_{C}.deltacommit", parsed(T, "deltacommit", State.COMPLETED, C)),
        (f"{T}.commit.requested", parsed(T, "commit", State.REQUESTED)),
        (f"{T}.inflight", parsed(T, "commit", State.INFLIGHT)),  # commit's inflight
        (f"{T}_{C}.commit", parsed(T, "commit", State.COMPLETED, C)),
        (f"{T}.compaction.requested", parsed(T, "compaction", State.REQUESTED)),
        (f"{T}.compaction.inflight", parsed(T, "compaction", State.INFLIGHT)),
        (f"{T}.logcompaction.inflight", parsed(T, "logcompaction", State.INFLIGHT)),
        (f"{T}.clustering.requested", parsed(T, "clustering", State.REQUESTED)),
        (f"{T}_{C}.replacecommit", parsed(T, "replacecommit", State.COMPLETED, C)),
        (f"{T}.rollback.inflight", parsed(T, "rollback", State.INFLIGHT)),
        (f"{T}_{C}.clean", parsed(T, "clean", State.COMPLETED, C)),
        (f"{T}_{C}.indexing", parsed(T, "indexing", State.COMPLETED, C)),
        (f"{T}.savepoint.requested", parsed(T, "savepoint", State.REQUESTED)),
        (f"{T}_{C}.restore", parsed(T, "restore", State.COMPLETED, C)),
        # layout 1 (table version 6): completed files carry no completion time
        (f"{T}.commit", parsed(T, "commit", State.COMPLETED)),
        (f"{T}.deltacommit", parsed(T, "deltacommit", State.COMPLETED)),
        (f"{T}.clean", parsed(T, "clean", State.COMPLETED)),
        # names from the fixture tables
        (
            "20251220210129235_20251220210129883.commit",
            parsed("20251220210129235", "commit", State.COMPLETED, "20251220210129883"),
        ),
        (
            "20240418173550988.inflight",
            parsed("20240418173550988", "commit", State.INFLIGHT),
        ),
    ],
)
def test_parse_every_form(name, expected):
    assert parse_instant_file_name(name) == expected
    assert is_instant_file_name(name)


def test_completed_compaction_is_read_as_commit():
    # Hudi writes a completed compaction as ".commit"; the name alone cannot say more
    assert parse_instant_file_name(f"{T}_{C}.commit").action == "commit"


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("20240102030405.commit.requested", parsed("20240102030405999", "commit", State.REQUESTED)),
        ("20240102030405.inflight", parsed("20240102030405999", "commit", State.INFLIGHT)),
        ("20240102030405.commit", parsed("20240102030405999", "commit", State.COMPLETED)),
        (
            "20240102030405_20240102030406.deltacommit",
            parsed("20240102030405999", "deltacommit", State.COMPLETED, "20240102030406999"),
        ),
        (
            f"20240102030405_{C}.deltacommit",
            parsed("20240102030405999", "deltacommit", State.COMPLETED, C),
        ),
    ],
)
def test_legacy_14_digit_times_are_normalized(name, expected):
    assert parse_instant_file_name(name) == expected


GARBAGE = [
    "",
    "hoodie.properties",
    ".aux",
    "history",
    T,
    f"{T}.",
    f".{T}.commit",
    f"{T}.unknownaction",
    f"{T}.Commit",
    f"{T}.commit.requestedx",
    f"{T}.commit.foo",
    f"{T}.commit.requested.crc",
    f"{T}.inflight.requested",  # "inflight" is not an action
    f"{T}.inflight.inflight",
    f"{T}_{C}.commit.requested",  # only completed files carry a completion time
    f"{T}_{C}.deltacommit.inflight",
    f"{T}_{C}.inflight",
    f"{T}_.commit",
    f"{T}_{C}_{C}.commit",
    "2024.commit",  # neither 17 nor 14 digits
    "202401020304050061.commit",
    f"{T}_2024.commit",
    "abc.commit",
    f"{T}.commit_1",
    f"{T}.commit.1",
    "\u0662\u0660\u0662\u0664" + T[4:] + ".commit",  # non-ASCII digits
    f"{T}.commit.requested\n",
]


@pytest.mark.parametrize("name", GARBAGE)
def test_garbage_names_raise(name):
    with pytest.raises(InstantFileNameError):
        parse_instant_file_name(name)
    assert not is_instant_file_name(name)


def test_trailing_newline_is_not_an_instant_file():
    with pytest.raises(InstantFileNameError):
        parse_instant_file_name(f"{T}.commit\n")


def test_instant_file_name_error_is_a_value_error():
    assert issubclass(InstantFileNameError, ValueError)


# ---------------------------------------------------------------------------------------------
# Instant.file_name and the round trip through the parser


@pytest.mark.parametrize(
    ("instant", "layout", "name"),
    [
        (Instant(T, State.REQUESTED, "commit"), 2, f"{T}.commit.requested"),
        (Instant(T, State.INFLIGHT, "commit"), 2, f"{T}.inflight"),
        (Instant(T, State.COMPLETED, "commit", C), 2, f"{T}_{C}.commit"),
        (Instant(T, State.COMPLETED, "commit", C), 1, f"{T}.commit"),
        (Instant(T, State.INFLIGHT, "deltacommit"), 1, f"{T}.deltacommit.inflight"),
        (Instant(T, State.INFLIGHT, "compaction"), 2, f"{T}.compaction.inflight"),
        (Instant(T, State.COMPLETED, "compaction", C), 2, f"{T}_{C}.commit"),
        (Instant(T, State.COMPLETED, "logcompaction", C), 2, f"{T}_{C}.deltacommit"),
        (Instant(T, State.COMPLETED, "clustering", C), 2, f"{T}_{C}.replacecommit"),
        (Instant(T, State.COMPLETED, "clustering", C), 1, f"{T}.replacecommit"),
    ],
)
def test_file_name(instant, layout, name):
    assert instant.file_name(layout) == name


def test_file_name_defaults_to_layout_2():
    assert Instant(T, State.COMPLETED, "clean", C).file_name() == f"{T}_{C}.clean"


ROUND_TRIP_CASES = [
    (action, state, layout) for action in ACTIONS for state in State for layout in (1, 2)
]


@pytest.mark.parametrize(("action", "state", "layout"), ROUND_TRIP_CASES)
def test_file_name_round_trips_through_the_parser(action, state, layout):
    completion = C if state is State.COMPLETED else None
    instant = Instant(T, state, action, completion)
    back = parse_instant_file_name(instant.file_name(layout))
    expected_action = COMPLETED_ACTION.get(action, action) if instant.is_completed else action
    expected_completion = completion if layout == 2 else None
    assert back == ParsedInstantFile(T, expected_action, state, expected_completion)


@settings(max_examples=100)
@given(
    action=st.sampled_from(ACTIONS),
    state=st.sampled_from(list(State)),
    requested_ms=st.integers(min_value=0, max_value=4_102_444_800_000),
    gap_ms=st.integers(min_value=1, max_value=10**9),
)
def test_file_name_round_trip_property(action, state, requested_ms, gap_ms):
    requested = format_epoch_ms(requested_ms)
    completion = format_epoch_ms(requested_ms + gap_ms) if state is State.COMPLETED else None
    instant = Instant(requested, state, action, completion)
    back = parse_instant_file_name(instant.file_name(2))
    assert (back.requested_time, back.state, back.completion_time) == (
        requested,
        state,
        completion,
    )
    if back.state is State.COMPLETED:
        assert back.action == COMPLETED_ACTION.get(action, action)
    else:
        assert back.action == action


# ---------------------------------------------------------------------------------------------
# Instant invariants and ordering


def test_completed_instant_requires_a_completion_time():
    with pytest.raises(ValueError, match="completion time"):
        Instant(T, State.COMPLETED, "commit")


@pytest.mark.parametrize("state", [State.REQUESTED, State.INFLIGHT])
def test_pending_instant_has_no_completion_time(state):
    with pytest.raises(ValueError, match="completion time"):
        Instant(T, state, "commit", C)


def test_unknown_action_is_rejected():
    with pytest.raises(InstantFileNameError, match="unknown action"):
        Instant(T, State.REQUESTED, "merge")


def test_instant_normalizes_legacy_times():
    instant = Instant("20240102030405", State.COMPLETED, "commit", "20240102030406")
    assert (instant.requested_time, instant.completion_time) == (
        "20240102030405999",
        "20240102030406999",
    )


def test_instant_rejects_malformed_times():
    with pytest.raises(ValueError):
        Instant("2024", State.REQUESTED, "commit")


def test_requested_and_is_completed():
    done = Instant(T, State.COMPLETED, "deltacommit", C)
    assert done.is_completed
    assert done.requested() == Instant(T, State.REQUESTED, "deltacommit")
    assert not done.requested().is_completed


def test_str():
    assert str(Instant(T, State.COMPLETED, "commit", C)) == f"[{T}->{C}__commit__COMPLETED]"
    assert str(Instant(T, State.INFLIGHT, "commit")) == f"[{T}__commit__INFLIGHT]"


def test_instants_order_by_requested_time():
    a = Instant("20240101000000003", State.COMPLETED, "commit", "20240101000000009")
    b = Instant("20240101000000001", State.INFLIGHT, "deltacommit")
    c = Instant("20240101000000002", State.REQUESTED, "clean")
    assert sorted([a, b, c]) == [b, c, a]
    assert b < c < a


def test_same_time_and_state_orders_by_action():
    a = Instant(T, State.INFLIGHT, "deltacommit")
    b = Instant(T, State.INFLIGHT, "clean")
    assert sorted([a, b]) == [b, a]


def test_same_time_orders_by_state():
    requested = Instant(T, State.REQUESTED, "commit")
    inflight = Instant(T, State.INFLIGHT, "commit")
    completed = Instant(T, State.COMPLETED, "commit", C)
    assert sorted([completed, requested, inflight]) == [requested, inflight, completed]


def test_states_are_numbered_in_transition_order():
    assert [s.value for s in (State.REQUESTED, State.INFLIGHT, State.COMPLETED)] == [0, 1, 2]


def test_completion_from_mtime_formats_utc_ms():
    assert completion_from_mtime(1_704_164_645_006) == "20240102030405006"
    assert completion_from_mtime(0) == "19700101000000000"
