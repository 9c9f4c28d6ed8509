"""``.hoodie/hoodie.properties``: the table's configuration (docs/protocol.md section 2).

The file is a ``java.util.Properties`` text file, so ``:`` and ``=`` in values (Avro schemas!) are
backslash-escaped. Hudi guards the file with ``hoodie.table.checksum``, the CRC32 of
``<database>.<table name>`` (confirmed against the fixtures; Hudi's ``HoodieTableConfig``), which we
compute the same way so that Hudi accepts tables we write.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from models.table_errors import HoodieException

TABLE_NAME = "hoodie.table.name"
TABLE_TYPE = "hoodie.table.type"
TABLE_VERSION = "hoodie.table.version"
TIMELINE_LAYOUT_VERSION = "hoodie.timeline.layout.version"
TIMELINE_PATH = "hoodie.timeline.path"
RECORD_KEY_FIELDS = "hoodie.table.recordkey.fields"
PARTITION_FIELDS = "hoodie.table.partition.fields"
PRECOMBINE_FIELD = "hoodie.table.precombine.field"
ORDERING_FIELDS = "hoodie.table.ordering.fields"
MERGE_MODE = "hoodie.record.merge.mode"
DATABASE_NAME = "hoodie.database.name"
CHECKSUM = "hoodie.table.checksum"
POPULATE_META_FIELDS = "hoodie.populate.meta.fields"

COPY_ON_WRITE = "COPY_ON_WRITE"
MERGE_ON_READ = "MERGE_ON_READ"
EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"


class PropertiesError(HoodieException, ValueError):
    """hoodie.properties is missing a key we need or has an impossible value."""


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java properties text (comments, ``key=value`` / ``key:value``, escapes, continuations)."""
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:  # odd backslashes: line continues
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical)
        props[_unescape(key)] = _unescape(value)
        logical = ""
    if logical:
        key, value = _split(logical)
        props[_unescape(key)] = _unescape(value)
    return props


def _split(line: str) -> tuple[str, str]:
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t":
            key = line[:i]
            rest = line[i:].lstrip(" \t")
            if rest[:1] in ("=", ":") and ch in " \t":
                rest = rest[1:].lstrip(" \t")
            elif ch in "=:":
                rest = line[i + 1 :].lstrip(" \t")
            return key, rest
        i += 1
    return line, ""


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 5 < len(text) + 0:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    # Java escapes characters beyond U+FFFF as surrogate pairs: join them back into one.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def _escape(text: str, is_key: bool) -> str:
    out = []
    for i, ch in enumerate(text):
        if ch in "\\=:#!":
            out.append("\\" + ch)
        elif ch == " " and (is_key or i == 0):
            out.append("\\ ")
        elif ch in "\t\n\r\f":
            out.append("\\" + {"\t": "t", "\n": "n", "\r": "r", "\f": "f"}[ch])
        elif ord(ch) > 0xFFFF:  # Java writes a UTF-16 surrogate pair
            high, low = divmod(ord(ch) - 0x10000, 0x400)
            out.append(f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}")
        elif ord(ch) > 0x7E or ord(ch) < 0x20:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return "".join(out)


def table_checksum(props: Mapping[str, str]) -> int:
    """Hudi's ``hoodie.table.checksum``: CRC32 of ``<database>.<table>`` (or just the table)."""
    name = props.get(TABLE_NAME)
    if not name:
        raise PropertiesError(f"{TABLE_NAME} is required to compute the checksum")
    database = props.get(DATABASE_NAME, "")
    return zlib.crc32((f"{database}.{name}" if database else name).encode())


def format_properties(props: Mapping[str, str], header: str = "Written by the Hudi testbed") -> str:
    """Properties text with sorted keys and a fresh checksum (deterministic: no timestamp line)."""
    full = dict(props)
    full[CHECKSUM] = str(table_checksum(full))
    lines = [f"#{header}"]
    lines += [f"{_escape(k, True)}={_escape(full[k], False)}" for k in sorted(full)]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class TableConfig:
    """The properties the protocol code reads, with Hudi's defaults; ``raw`` keeps them all."""

    raw: Mapping[str, str] = field(default_factory=dict)

    def _require(self, key: str) -> str:
        value = self.raw.get(key)
        if value is None or value == "":
            raise PropertiesError(f"hoodie.properties has no {key}")
        return value

    @property
    def name(self) -> str:
        return self._require(TABLE_NAME)

    @property
    def table_type(self) -> str:
        value = self.raw.get(TABLE_TYPE, COPY_ON_WRITE)
        if value not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise PropertiesError(
                f"{TABLE_TYPE}={value!r}; allowed: {COPY_ON_WRITE}, {MERGE_ON_READ}"
            )
        return value

    @property
    def is_mor(self) -> bool:
        return self.table_type == MERGE_ON_READ

    @property
    def version(self) -> int:
        value = self._require(TABLE_VERSION)
        if not value.isdigit():
            raise PropertiesError(f"{TABLE_VERSION}={value!r} is not a number")
        return int(value)

    @property
    def layout_version(self) -> int:
        value = self.raw.get(TIMELINE_LAYOUT_VERSION)
        if value is None:
            return 2 if self.version >= 8 else 1
        if value not in ("0", "1", "2"):
            raise PropertiesError(f"{TIMELINE_LAYOUT_VERSION}={value!r}; allowed: 1, 2")
        return max(1, int(value))

    @property
    def timeline_dir(self) -> str:
        """Folder of the active timeline, relative to the table."""
        if self.layout_version == 1:
            return ".hoodie"
        return ".hoodie/" + self.raw.get(TIMELINE_PATH, "timeline")

    @property
    def record_key_fields(self) -> tuple[str, ...]:
        return _fields(self.raw.get(RECORD_KEY_FIELDS, ""))

    @property
    def partition_fields(self) -> tuple[str, ...]:
        return _fields(self.raw.get(PARTITION_FIELDS, ""))

    @property
    def ordering_fields(self) -> tuple[str, ...]:
        return _fields(self.raw.get(ORDERING_FIELDS) or self.raw.get(PRECOMBINE_FIELD, ""))

    @property
    def merge_mode(self) -> str:
        """Hudi's default is event-time ordering when an ordering field exists, else commit time."""
        value = self.raw.get(MERGE_MODE)
        if value is None:
            return EVENT_TIME_ORDERING if self.ordering_fields else COMMIT_TIME_ORDERING
        if value not in (EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING):
            raise PropertiesError(
                f"{MERGE_MODE}={value!r}; supported: {EVENT_TIME_ORDERING}, {COMMIT_TIME_ORDERING}"
            )
        return value

    @property
    def populate_meta_fields(self) -> bool:
        return self.raw.get(POPULATE_META_FIELDS, "true").lower() != "false"


def _fields(value: str) -> tuple[str, ...]:
    return tuple(f.strip() for f in value.split(",") if f.strip())
