"""The LSM timeline's layout: file names, manifests, the record schema and its parquet files.

Hudi 1.x moves old completed instants off the active timeline into ``.hoodie/timeline/history/``
(``hoodie.timeline.history.path``), an LSM tree of parquet files (docs/protocol.md section 8).
This module holds what the reader and the writer share (``LSMTimeline``,
``HoodieLSMTimelineManifest``):

* data files ``<minInstant>_<maxInstant>_<layer>.parquet``, one row per archived action with the
  columns of ``HoodieLSMTimelineInstant.avsc``: ``instantTime``, ``completionTime``, ``action``
  (the completed action, e.g. ``commit`` for a compaction), ``metadata`` (the completed file's
  bytes), ``plan`` (compaction/clustering/clean plan bytes) and ``version`` (1);
* every change writes ``manifest_<k>`` (JSON ``{"files": [{"fileName", "fileLen"}]}``, the valid
  files of snapshot ``k``), then replaces ``_version_`` with ``k``. A reader reads ``_version_``,
  then that manifest, then the listed files; without ``_version_`` it falls back to the greatest
  ``manifest_<k>`` listed (``LSMTimeline.latestSnapshotVersion``).
"""

from __future__ import annotations

import functools
import io
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from models.format.properties import TableConfig
from models.storage import join
from models.table_errors import CorruptTableError, HoodieException
from models.timeline.instant import Instant, State

HISTORY_PATH_KEY = "hoodie.timeline.history.path"
DEFAULT_HISTORY_PATH = "history"
VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"


LSM_TIMELINE_INSTANT_VERSION = 1


LSM_FILE_PATTERN = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet\Z", re.ASCII)
MANIFEST_FILE_PATTERN = re.compile(r"^manifest_(\d+)\Z", re.ASCII)


LSM_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ]
)
"""Arrow form of ``HoodieLSMTimelineInstant`` (all fields nullable but ``version``)."""

_AVRO_SCHEMA = json.dumps(
    {
        "type": "record",
        "name": "HoodieLSMTimelineInstant",
        "namespace": "org.apache.hudi.avro.model",
        "fields": [
            *(
                {"name": name, "type": ["null", kind], "default": None}
                for name, kind in (
                    ("instantTime", "string"),
                    ("completionTime", "string"),
                    ("action", "string"),
                    ("metadata", "bytes"),
                    ("plan", "bytes"),
                )
            ),
            {"name": "version", "type": "int", "default": 1},
        ],
    },
    separators=(",", ":"),
)
"""Stored as ``parquet.avro.schema`` like Hudi's Avro parquet writer, for Avro readers."""


class ArchiveError(HoodieException, ValueError):
    """The archived timeline is unreadable, or archiving was asked for something it must not do."""


class ArchiveReadError(ArchiveError, CorruptTableError):
    """A file of the archived timeline (manifest, LSM data file) is missing or does not decode;
    the message names it. Readers of a table see it as any other damaged table file."""


def lsm_file_name(min_instant: str, max_instant: str, layer: int) -> str:
    """``<minInstant>_<maxInstant>_<layer>.parquet`` (``LSMTimelineWriter.newFileName``)."""
    return f"{min_instant}_{max_instant}_{layer}.parquet"


@dataclass(frozen=True, order=True)
class LSMFileName:
    """A parsed LSM data file name: its instant range and layer."""

    min_instant: str
    max_instant: str
    layer: int

    def __str__(self) -> str:
        return lsm_file_name(self.min_instant, self.max_instant, self.layer)


def parse_lsm_file_name(name: str) -> LSMFileName:
    match = LSM_FILE_PATTERN.match(name)
    if not match:
        raise ArchiveError(f"not an LSM timeline file name: {name!r}")
    return LSMFileName(match.group(1), match.group(2), int(match.group(3)))


@dataclass(frozen=True)
class LSMFileEntry:
    """One valid data file of a snapshot (``HoodieLSMTimelineManifest.LSMFileEntry``)."""

    file_name: str
    file_len: int


@dataclass(frozen=True)
class LSMManifest:
    """The valid data files of one snapshot version, in the order they were added."""

    files: tuple[LSMFileEntry, ...] = ()

    def file_names(self) -> tuple[str, ...]:
        return tuple(f.file_name for f in self.files)

    def to_json(self) -> bytes:
        entries = [{"fileName": f.file_name, "fileLen": f.file_len} for f in self.files]
        return json.dumps({"files": entries}, indent=2).encode()

    @classmethod
    def from_json(cls, data: bytes, what: str) -> LSMManifest:
        if not data.strip():  # Hudi reads an empty manifest as an empty snapshot
            return cls()
        try:
            raw = json.loads(data)
            files = tuple(
                LSMFileEntry(str(f["fileName"]), int(f.get("fileLen", 0))) for f in raw["files"]
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ArchiveReadError(f"{what} is not an LSM timeline manifest: {err}") from None
        return cls(files)

    def without(self, names: Iterable[str]) -> LSMManifest:
        drop = set(names)
        return LSMManifest(tuple(f for f in self.files if f.file_name not in drop))

    def plus(self, entry: LSMFileEntry) -> LSMManifest:
        return LSMManifest((*self.files, entry))


def history_folder(config: TableConfig) -> str | None:
    """Folder of the LSM timeline; None for layout 1, whose ``.hoodie/archived`` log files (the
    0.x archive format) are not read here."""
    if config.layout_version != 2:
        return None
    return join(config.timeline_dir, config.raw.get(HISTORY_PATH_KEY, DEFAULT_HISTORY_PATH))


@dataclass(frozen=True)
class LSMTimelineInstant:
    """One archived action (a row of an LSM data file, ``HoodieLSMTimelineInstant``)."""

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None = None
    plan: bytes | None = None
    version: int = LSM_TIMELINE_INSTANT_VERSION

    def to_instant(self) -> Instant:
        """The completed instant; a missing completion time reads as the instant time, as
        ``CompletionTimeQueryViewV2.setCompletionTime`` does for meta-server instants."""
        return Instant(
            self.instant_time,
            State.COMPLETED,
            self.action,
            self.completion_time or self.instant_time,
        )


def lsm_file_bytes(rows: Sequence[LSMTimelineInstant]) -> bytes:
    """An LSM data file holding ``rows``, with the Avro schema in its metadata as Hudi writes it."""
    table = pa.Table.from_pydict(
        {
            "instantTime": [r.instant_time for r in rows],
            "completionTime": [r.completion_time for r in rows],
            "action": [r.action for r in rows],
            "metadata": [r.metadata for r in rows],
            "plan": [r.plan for r in rows],
            "version": [r.version for r in rows],
        },
        schema=LSM_SCHEMA.with_metadata({"parquet.avro.schema": _AVRO_SCHEMA}),
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


LSM_FILES_CACHED = 256
"""Parsed LSM data files kept per process (by content: a file rewritten under the same name
is parsed again)."""


def read_lsm_file(data: bytes, what: str) -> list[LSMTimelineInstant]:
    """The rows of an LSM data file; :class:`ArchiveReadError` naming ``what`` if unreadable."""
    rows = _parse_lsm_file(data)
    if isinstance(rows, str):
        raise ArchiveReadError(f"{what}{rows}")
    return list(rows)


@functools.lru_cache(maxsize=LSM_FILES_CACHED)
def _parse_lsm_file(data: bytes) -> tuple[LSMTimelineInstant, ...] | str:
    """The rows of the LSM data file ``data``, or why it cannot be read (the rest of an error
    sentence after the file's name)."""
    try:
        table = pq.read_table(io.BytesIO(data))
    except (pa.ArrowException, OSError) as err:
        return f" is not a readable parquet file: {err}"
    missing = {"instantTime", "action"} - set(table.column_names)
    if missing:
        return f" lacks the LSM timeline columns {sorted(missing)}"

    def column(name: str) -> list:
        return table.column(name).to_pylist() if name in table.column_names else [None] * len(table)

    out = []
    for t, c, a, m, p, v in zip(
        column("instantTime"),
        column("completionTime"),
        column("action"),
        column("metadata"),
        column("plan"),
        column("version"),
        strict=True,
    ):
        if t is None or a is None:
            return ": a row without instantTime or action"
        out.append(LSMTimelineInstant(t, c, a, m, p, v if v is not None else 1))
    return tuple(out)
