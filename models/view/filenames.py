"""Data file names: base files and log files (docs/protocol.md section 3).

The instant time in a data file's name is how the file-system view ties files to the timeline, so
these parsers are strict: a name that does not parse is not a data file of the table.

* Base file: ``<fileId>_<writeToken>_<instantTime>.<ext>`` (Hudi's ``FSUtils.makeBaseFileName``);
  the instant is the requested time of the commit or compaction that wrote it.
* Log file: ``.<fileId>_<instantTime>.log.<version>_<writeToken>`` (``FSUtils.makeLogFileName``).
  From table version 8 the instant is the requested time of the deltacommit that wrote the file;
  in version 6 it is the base instant of the slice the writer targeted.
* Write token: ``<taskPartitionId>-<stageId>-<taskAttemptId>``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from models.table_errors import HoodieException
from models.timeline.instant_time import normalize

BASE_FILE_EXTENSIONS = ("parquet", "orc", "hfile")
# ASCII digits only, and \Z rather than $ (which also matches before a trailing newline).
_BASE = re.compile(r"^([^_/\n]+)_(\d+-\d+-\d+)_(\d+)\.(parquet|orc|hfile)\Z", re.ASCII)
_LOG = re.compile(
    r"^\.([^\n]+)_([^\n]*)\.(log|archive)\.(\d+)(_((\d+)-(\d+)-(\d+))(\.cdc)?)?\Z", re.ASCII
)
_FILE_ID = re.compile(r"^[^_/\n]+\Z")


class FileNameError(HoodieException, ValueError):
    """A name that is not a Hudi data file name."""


@dataclass(frozen=True, order=True)
class WriteToken:
    """Identifies the task attempt that wrote a file; orders logs of the same instant and version."""

    task_partition_id: int
    stage_id: int
    task_attempt_id: int

    def __str__(self) -> str:
        return f"{self.task_partition_id}-{self.stage_id}-{self.task_attempt_id}"

    @classmethod
    def parse(cls, text: str) -> WriteToken:
        parts = text.split("-")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise FileNameError(f"write token must be <task>-<stage>-<attempt>, got {text!r}")
        return cls(*(int(p) for p in parts))


@dataclass(frozen=True)
class BaseFileName:
    file_id: str
    write_token: WriteToken
    instant_time: str
    extension: str = "parquet"

    def __str__(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant_time}.{self.extension}"


@dataclass(frozen=True)
class LogFileName:
    file_id: str
    instant_time: str
    version: int
    write_token: WriteToken | None
    extension: str = "log"
    cdc: bool = False

    def __str__(self) -> str:
        token = f"_{self.write_token}" if self.write_token is not None else ""
        return f".{self.file_id}_{self.instant_time}.{self.extension}.{self.version}{token}" + (
            ".cdc" if self.cdc else ""
        )

    def sort_key(self) -> tuple[str, int, str]:
        """Hudi's ``HoodieLogFile.LogFileComparator`` order: instant in the name, then version,
        then write token compared as a *string* (so ``0-1-10`` sorts before ``0-1-9``)."""
        return (self.instant_time, self.version, str(self.write_token or ""))


def check_file_id(file_id: str) -> str:
    if not _FILE_ID.match(file_id):
        raise FileNameError(f"file id must be non-empty without '_' or '/', got {file_id!r}")
    return file_id


NAMES_CACHED = 65536
"""Parsed file names kept per process: a table's listing is parsed again at every view build."""


@functools.lru_cache(maxsize=NAMES_CACHED)
def parse_base_file_name(name: str) -> BaseFileName:
    match = _BASE.match(name)
    if not match:
        raise FileNameError(f"not a base file name: {name!r}")
    file_id, token, instant, ext = match.groups()
    try:
        instant = normalize(instant)
    except ValueError as err:
        raise FileNameError(f"{err} (in base file {name!r})") from err
    return BaseFileName(file_id, WriteToken.parse(token), instant, ext)


@functools.lru_cache(maxsize=NAMES_CACHED)
def parse_log_file_name(name: str) -> LogFileName:
    match = _LOG.match(name)
    if not match:
        raise FileNameError(f"not a log file name: {name!r}")
    file_id, instant, ext, version, _, token, *_rest, cdc = match.groups()
    try:
        instant = normalize(instant)
    except ValueError as err:
        raise FileNameError(f"{err} (in log file {name!r})") from err
    return LogFileName(
        file_id, instant, int(version), WriteToken.parse(token) if token else None, ext, bool(cdc)
    )


def is_base_file_name(name: str) -> bool:
    try:
        parse_base_file_name(name)
    except FileNameError:
        return False
    return True


def is_log_file_name(name: str) -> bool:
    try:
        parse_log_file_name(name)
    except FileNameError:
        return False
    return True
