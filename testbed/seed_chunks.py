"""Seeds run chunk by chunk into a folder of parquet parts, for ``testbed sweep`` and ``swarm``.

Each chunk of seeds is one job of the runner (a Spark job or this process); its rows are written
as ``<kind>.parquet/part-NNNNN.parquet`` the moment it finishes, and ``summary.json`` is rewritten
(atomically) after each chunk, so Ctrl-C or a lost cluster keeps every finished chunk. Ctrl-C
keeps what finished: the finished chunks, and the finished seeds of the chunk in progress when
the runner names them (:class:`ChunkInterrupted`); the summary and report are then written from
those with ``"interrupted": true``.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from testbed.atomic import staging_path, write_text_atomic
from testbed.interrupt import remove_files, sigint_held
from testbed.outputs import write_marker

CHUNK_SEEDS = 256
"""Seeds per Spark job (and per parquet part): large enough to keep executors busy, small enough
that an interrupted sweep loses little."""

Runner = Callable[[list[Any], Callable[[int, int], None] | None], list[dict[str, Any]]]
"""Runs one chunk of seeds and returns their rows in order (Spark or this process)."""


class ChunkInterrupted(KeyboardInterrupt):
    """Ctrl-C inside a chunk, raised by a runner that knows which of its seeds finished:
    ``rows`` are theirs, in order (a Spark job's results arrive all at once, so it has none)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        super().__init__()
        self.rows = rows


def chunks(first: int, last: int, size: int) -> Iterator[range]:
    for start in range(first, last + 1, size):
        yield range(start, min(start + size, last + 1))


@dataclass(frozen=True)
class SeedPlan:
    """What :func:`run_seed_chunks` runs and writes: the folder (of ``kind``, with its rows in
    ``<kind>.parquet/``), the seeds, each chunk's tasks, the summary of finished rows and the
    report written from them."""

    out: Path
    kind: str
    seeds: tuple[int, int]
    tasks: Callable[[range], list[Any]]
    summary_of: Callable[[pa.Table, bool], dict[str, Any]]
    report: Callable[[list[pa.Table], dict[str, Any]], None]
    schema: pa.Schema


def run_seed_chunks(
    plan: SeedPlan,
    runner: Runner,
    *,
    chunk_seeds: int = CHUNK_SEEDS,
    on_progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``plan``'s seeds chunk by chunk into ``plan.out`` (replaced), writing each chunk's
    rows as one parquet part and ``summary.json`` after it; return the final summary (Ctrl-C:
    the finished seeds' summary, ``"interrupted": true``)."""
    out = plan.out
    first, last = plan.seeds
    if out.exists():
        shutil.rmtree(out)
    parts = out / f"{plan.kind}.parquet"
    parts.mkdir(parents=True)
    write_marker(out, plan.kind)
    total = last - first + 1
    done_rows: list[pa.Table] = []  # the finished chunks, as written

    def summary_of(interrupted: bool) -> dict[str, Any]:
        rows = pa.concat_tables(done_rows) if done_rows else plan.schema.empty_table()
        return plan.summary_of(rows, interrupted)

    def keep(index: int, rows: list[dict[str, Any]]) -> None:
        with sigint_held():  # a part on disk is always counted in done_rows, and back
            chunk = pa.Table.from_pylist(rows, schema=plan.schema)
            _write_part(chunk, parts / f"part-{index:05d}.parquet")
            done_rows.append(chunk)

    write_summary(out, summary_of(False))
    interrupted = False
    try:
        for index, seed_range in enumerate(chunks(first, last, chunk_seeds)):
            tasks = plan.tasks(seed_range)
            finished = sum(t.num_rows for t in done_rows)

            def chunk_progress(done: int, of: int, base: int = finished, size: int = len(tasks)):
                if on_progress is not None:
                    on_progress(base + math.floor(size * done / max(of, 1)), total)

            try:
                rows = runner(tasks, chunk_progress)
            except ChunkInterrupted as stop:
                if stop.rows:
                    keep(index, stop.rows)
                raise
            keep(index, rows)
            write_summary(out, summary_of(False))
    except KeyboardInterrupt:
        interrupted = True
    return conclude(out, done_rows, summary_of, plan.report, interrupted=interrupted)


def conclude(
    out: Path,
    done_rows: list[pa.Table],
    summary_of: Callable[[bool], dict[str, Any]],
    report: Callable[[list[pa.Table], dict[str, Any]], None],
    *,
    interrupted: bool,
) -> dict[str, Any]:
    """Write the final ``summary.json`` (``summary_of(interrupted)``) and the report from the
    finished rows; return the summary. Ctrl-C while they are written stops the report: the
    summary is written again with SIGINT held, saying ``"interrupted": true``, and no report is
    left behind (neither half of one nor one that says the sweep was not interrupted)."""
    summary = summary_of(interrupted)
    try:
        write_summary(out, summary)
        report(done_rows, summary)
    except KeyboardInterrupt:
        summary = summary_of(True)
        with sigint_held():
            write_summary(out, summary)
            report = out / "report.html"
            remove_files([report, staging_path(report)])
    return summary


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    write_text_atomic(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _write_part(chunk: pa.Table, path: Path) -> None:
    """One parquet part, written under a staging name and renamed: a reader of
    ``sweep.parquet/`` never sees half a part."""
    staging = staging_path(path)
    try:
        pq.write_table(chunk, staging)
        staging.replace(path)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def read_seed_rows(out: Path, kind: str, schema: pa.Schema) -> pa.Table:
    """The rows of a sweep (or swarm) folder, every finished part in order."""
    parts = sorted((out / f"{kind}.parquet").glob("part-*.parquet"))
    if not parts:
        return schema.empty_table()
    return pa.concat_tables(pq.read_table(p, schema=schema) for p in parts)
