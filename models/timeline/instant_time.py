"""Instant times: 17-digit ``yyyyMMddHHmmssSSS`` strings (docs/protocol.md section 1).

Lexicographic order equals time order, which is why Hudi stores them as strings and why the rest of
this package compares them as strings. Legacy 14-digit (second precision) times are padded with
``999`` exactly as Hudi's ``HoodieInstantTimeGenerator.fixInstantTimeCompatibility`` does, so a
legacy time sorts after every millisecond time of the same second.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from models.table_errors import HoodieException

INSTANT_TIME_LENGTH = 17
LEGACY_INSTANT_TIME_LENGTH = 14
LEGACY_PADDING = "999"
_FORMAT = "%Y%m%d%H%M%S"
# ASCII digits only, whole string: `\d` also matches non-ASCII digits and `$` a trailing newline.
_DIGITS = re.compile(r"[0-9]+")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# 9999-12-31T23:59:59.999Z: the last moment a 17-digit time (4-digit year) can express.
MAX_EPOCH_MS = 253_402_300_799_999

# Hudi's sentinel times (HoodieTimeline.INIT_INSTANT_TS and friends): valid times that sort before
# or after every real one.
INIT_INSTANT_TIME = "00000000000000000"
MAX_INSTANT_TIME = "99999999999999999"


class InstantTimeError(HoodieException, ValueError):
    """A string that is not an instant time."""


def normalize(time: str) -> str:
    """Return the 17-digit form of ``time`` (pads legacy 14-digit times with ``999``)."""
    if not isinstance(time, str) or not _DIGITS.fullmatch(time):
        raise InstantTimeError(f"instant time must be digits, got {time!r}")
    if len(time) == INSTANT_TIME_LENGTH:
        return time
    if len(time) == LEGACY_INSTANT_TIME_LENGTH:
        return time + LEGACY_PADDING
    raise InstantTimeError(
        f"instant time must have {INSTANT_TIME_LENGTH} (or legacy {LEGACY_INSTANT_TIME_LENGTH}) "
        f"digits, got {time!r}"
    )


def format_epoch_ms(epoch_ms: int) -> str:
    """Format milliseconds since the Unix epoch (UTC) as a 17-digit instant time."""
    if epoch_ms < 0:
        raise InstantTimeError(f"instant times start at the epoch, got {epoch_ms} ms")
    if epoch_ms > MAX_EPOCH_MS:
        raise InstantTimeError(f"instant times end with the year 9999, got {epoch_ms} ms")
    moment = _EPOCH + timedelta(milliseconds=epoch_ms)
    return moment.strftime(_FORMAT) + f"{epoch_ms % 1000:03d}"


def parse_epoch_ms(time: str) -> int:
    """Parse an instant time (17 or legacy 14 digits) into milliseconds since the epoch (UTC)."""
    full = normalize(time)
    if full in (INIT_INSTANT_TIME, MAX_INSTANT_TIME):
        raise InstantTimeError(f"{full} is a sentinel, not a point in time")
    try:
        moment = datetime.strptime(full[:14], _FORMAT).replace(tzinfo=UTC)
    except ValueError as err:
        raise InstantTimeError(f"not a calendar time: {time!r}") from err
    return int((moment - _EPOCH).total_seconds()) * 1000 + int(full[14:])


def is_valid(time: str) -> bool:
    """True if ``time`` is a 17- or 14-digit instant time."""
    try:
        normalize(time)
    except InstantTimeError:
        return False
    return True


def compare(a: str, b: str) -> int:
    """Three-way comparison of two instant times (-1, 0, 1), legacy times normalized first."""
    na, nb = normalize(a), normalize(b)
    return (na > nb) - (na < nb)
