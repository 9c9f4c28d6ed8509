"""Tests for models/timeline/instant_time.py: the 17-digit format everything else compares as strings."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from models.timeline import instant_time
from models.timeline.instant_time import (
    INIT_INSTANT_TIME,
    MAX_INSTANT_TIME,
    InstantTimeError,
    compare,
    format_epoch_ms,
    is_valid,
    normalize,
    parse_epoch_ms,
)

# 9999-12-31T23:59:59.999Z: the last millisecond a 4-digit year can express.
LAST_EPOCH_MS = instant_time.MAX_EPOCH_MS
epoch_ms = st.integers(min_value=0, max_value=LAST_EPOCH_MS)


@given(epoch_ms)
@example(0)
@example(LAST_EPOCH_MS)
@example(951_782_400_000)  # 2000-02-29, a leap day
def test_format_parse_round_trip(ms: int) -> None:
    time = format_epoch_ms(ms)
    assert len(time) == 17 and time.isdigit(), f"{ms} formatted as {time!r}, not 17 digits"
    assert parse_epoch_ms(time) == ms, f"{time} parsed back as {parse_epoch_ms(time)}, not {ms}"


def test_known_instant() -> None:
    # 2024-01-02T03:04:05.678Z
    assert format_epoch_ms(1_704_164_645_678) == "20240102030405678"
    assert parse_epoch_ms("20240102030405678") == 1_704_164_645_678


@given(epoch_ms, epoch_ms)
@example(999, 1_000)  # milliseconds roll over into seconds
def test_string_order_is_time_order(a: int, b: int) -> None:
    ta, tb = format_epoch_ms(a), format_epoch_ms(b)
    assert (ta < tb) == (a < b) and (ta == tb) == (a == b), (
        f"string order of {ta}, {tb} differs from time order of {a}, {b}"
    )
    assert compare(ta, tb) == (a > b) - (a < b)


def test_legacy_14_digit_times_are_padded_with_999() -> None:
    assert normalize("20240102030405") == "20240102030405999"
    assert parse_epoch_ms("20240102030405") == 1_704_164_645_999
    assert is_valid("20240102030405")


@given(st.integers(min_value=0, max_value=LAST_EPOCH_MS // 1000))
def test_legacy_time_sorts_after_every_millisecond_of_its_second(seconds: int) -> None:
    legacy = format_epoch_ms(seconds * 1000)[:14]
    for ms in (0, 1, 998):
        millis_time = format_epoch_ms(seconds * 1000 + ms)
        assert compare(legacy, millis_time) == 1, f"{legacy} should sort after {millis_time}"
    assert compare(legacy, format_epoch_ms(seconds * 1000 + 999)) == 0


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "2024",
        "202401020304056",  # 15 digits
        "202401020304056789",  # 18 digits
        "2024010203040567x",
        "-2024010203040567",
        " 20240102030405678",
        "2024010203040567\n",  # `$` in a regex would let a trailing newline through
        "١٢٣٤٥٦٧٨٩٠١٢٣٤٥٦٧",  # non-ASCII digits are not instant times
    ],
)
def test_invalid_strings_are_rejected(bad: str) -> None:
    assert not is_valid(bad), f"{bad!r} accepted as an instant time"
    with pytest.raises(InstantTimeError):
        normalize(bad)
    with pytest.raises(InstantTimeError):
        parse_epoch_ms(bad)


@pytest.mark.parametrize(
    "bad",
    [
        "20241301000000000",  # month 13
        "20240230000000000",  # Feb 30
        "20230229000000000",  # not a leap year
        "20240101240000000",  # hour 24
        "20240101006000000",  # minute 60
        INIT_INSTANT_TIME,
        MAX_INSTANT_TIME,
    ],
)
def test_non_calendar_times_do_not_parse(bad: str) -> None:
    assert is_valid(bad), "well-formed digits are a valid instant time string"
    with pytest.raises(InstantTimeError):
        parse_epoch_ms(bad)


def test_sentinels_sort_around_every_real_time() -> None:
    assert (
        INIT_INSTANT_TIME < format_epoch_ms(0) < format_epoch_ms(LAST_EPOCH_MS) < MAX_INSTANT_TIME
    )


@pytest.mark.parametrize("ms", [-1, LAST_EPOCH_MS + 1])
def test_unformattable_epochs_raise(ms: int) -> None:
    with pytest.raises(InstantTimeError):
        format_epoch_ms(ms)


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=20))
@example("2024010203040567\n")
def test_parse_never_accepts_a_non_canonical_string(text: str) -> None:
    """Whatever parses must be exactly the canonical form of the time it denotes."""
    try:
        ms = parse_epoch_ms(text)
    except InstantTimeError:
        return
    assert format_epoch_ms(ms) == instant_time.normalize(text), f"{text!r} parsed to {ms}"
