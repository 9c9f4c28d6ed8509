"""Writing outputs so that a crash or Ctrl-C never leaves something that looks complete.

Every output the testbed writes (run folders, explore results, summaries, parquet files) is first
written under ``<name>.partial`` next to its target and renamed over it at the end: a rename is
atomic, so a reader sees the old output or the whole new one, never half of it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from testbed.outputs import write_marker

STAGING_SUFFIX = ".partial"


def staging_path(target: Path) -> Path:
    """Where ``target`` is written before it is renamed into place."""
    return target.with_name(target.name + STAGING_SUFFIX)


@contextmanager
def staged_folder(target: Path, kind: str = "run") -> Iterator[Path]:
    """A staging folder to fill, holding only the output marker of ``kind``
    (:mod:`testbed.outputs`); renamed over ``target`` (replacing it) when the block ends
    normally, deleted when it raises (Ctrl-C included). Whether ``target`` may be replaced is
    the caller's question (:func:`testbed.outputs.claimed`)."""
    target = target.resolve()
    staging = staging_path(target)
    if staging.exists():
        shutil.rmtree(staging)
    staging.mkdir(parents=True)
    try:
        write_marker(staging, kind)
        yield staging
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """``path.write_text(text)``, all or nothing."""
    staging = staging_path(path)
    staging.write_text(text)
    os.replace(staging, path)
