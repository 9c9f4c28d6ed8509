"""File groups, their sizes and the index state over time under the Flink state index and the
bucket index, on the same workload (catalog pair ``flink_state_cow`` / ``bucket_index_cow``): a
design review's picture of what the index choice does to the table's layout and to the job.

Under the bucket index every key hashes to one of a fixed number of buckets, so the file groups
are there from the first commits and never grow in number, only in size, and the job keeps no
key state. Under the state index the bucket assigners pack new keys into small files with room
and open a new file group when none has any (``write.parquet.max.file.size``), so the count keeps
growing with the keys while each file group keeps the keys first written to it, and the keyed
state holds one entry per key, which a restore loads and an index bootstrap rebuilds from the
table.

How well small files are packed shows as the new keys written into file groups already committed
against those that opened new ones.

Everything comes from the run folders: the data files each completed commit lists (history),
each data file's records and bytes (``result.json`` ``data_files``), the keys in the index state
at each completed checkpoint (``result.json`` ``index``) and the index bootstraps (history).
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path
from typing import Any

from reports.figures import COLORS, Figure, new_figure, save, styled
from reports.run_data import RunData, load_run, value

BASE_FILE = re.compile(r"^([^_/.][^_/]*)_[^_/]+_\d+\.parquet$")
LOG_FILE = re.compile(r"^\.([^_/]+)_\d+\.log\.")


def file_group_of(path: str) -> tuple[str, str] | None:
    """(partition, file id) of a data file path, as Hudi names data files."""
    partition, _, name = path.rpartition("/")
    match = BASE_FILE.match(name) or LOG_FILE.match(name)
    return (partition, match.group(1)) if match else None


def _commits(run: RunData) -> list[tuple[float, list[str]]]:
    """(seconds, data files) of every completed commit, in history order."""
    return [
        (event.time / 1000, [str(p) for p in value(event).get("files") or []])
        for event in run.events
        if event.f == "commit" and event.type == "ok"
    ]


def file_group_counts(run: RunData) -> list[tuple[float, int]]:
    """(seconds, file groups written by completed commits so far), at every commit."""
    seen: set[tuple[str, str]] = set()
    points = []
    for seconds, files in _commits(run):
        seen.update(group for path in files if (group := file_group_of(path)) is not None)
        points.append((seconds, len(seen)))
    return points


def _base_file_records(run: RunData) -> list[tuple[float, list[tuple[tuple[str, str], int]]]]:
    """(seconds, [(file group, records)]) of every completed commit that wrote base files, in
    history order (``data_files`` records; log files have none)."""
    sizes = run.result.get("data_files") or {}
    commits = []
    for seconds, files in _commits(run):
        written = [
            (group, int(records))
            for path in files
            if (group := file_group_of(path)) is not None
            and (records := (sizes.get(path) or {}).get("records")) is not None
        ]
        if written:
            commits.append((seconds, written))
    return commits


def file_group_records(run: RunData) -> list[tuple[float, float, int]]:
    """(seconds, median, largest) records in a file group's latest base file, over the file
    groups committed so far, at every commit that wrote base files (``data_files`` records)."""
    latest: dict[tuple[str, str], int] = {}
    points = []
    for seconds, written in _base_file_records(run):
        latest.update(written)
        counts = list(latest.values())
        points.append((seconds, statistics.median(counts), max(counts)))
    return points


def insert_packing(run: RunData) -> list[tuple[float, int, int]]:
    """(seconds, new keys packed into file groups committed before, new keys that opened new
    file groups), summed up to every commit that wrote base files: how well small files are
    packed. A file group's new keys are its latest base file's growth in records (inserts; the
    catalog's copy-on-write loads delete nothing), all of a new file group's records."""
    latest: dict[tuple[str, str], int] = {}
    packed = opened = 0
    points = []
    for seconds, written in _base_file_records(run):
        for group, records in written:
            if group in latest:
                packed += max(0, records - latest[group])
            else:
                opened += records
            latest[group] = records
        points.append((seconds, packed, opened))
    return points


def index_state_keys(run: RunData) -> list[tuple[float, int]]:
    """(seconds, keys in the first job's index state) at each completed checkpoint (empty for a
    job without key state, such as the bucket index)."""
    index: dict[str, Any] = run.result.get("index") or {}
    if not index:
        return []
    job, state = next(iter(index.items()))
    completed = {
        value(e).get("checkpoint"): e.time / 1000
        for e in run.events
        if e.process == f"{job}/checkpoint" and e.f == "checkpoint" and e.type == "ok"
    }
    return [
        (completed[checkpoint], keys)
        for checkpoint, keys in state.get("state_keys", [])
        if checkpoint in completed
    ]


def index_bootstraps(run: RunData) -> list[tuple[int, int]]:
    """(keys loaded, milliseconds) of each index bootstrap that loaded keys."""
    return [
        (int(value(e)["keys"]), int(value(e)["duration_ms"]))
        for e in run.events
        if e.f == "index_bootstrap" and e.type == "ok" and value(e).get("keys")
    ]


def _color(name: str) -> str:
    return COLORS["flushing"] if name == "flink_state" else COLORS["commit"]


def _draw(figure: Figure, runs: dict[str, RunData]) -> None:
    """Four panels: file groups, records per file group, new keys packed into existing file
    groups vs opening new ones, keys in the index state."""
    count_ax, size_ax, pack_ax, state_ax = (figure.add_subplot(1, 4, i) for i in (1, 2, 3, 4))
    for name, run in runs.items():
        if points := file_group_counts(run):
            xs, ys = zip(*points, strict=True)
            count_ax.step(xs, ys, where="post", color=_color(name), label=name)
        if records := file_group_records(run):
            xs, medians, largest = zip(*records, strict=True)
            size_ax.step(xs, medians, where="post", color=_color(name), label=f"{name} median")
            size_ax.step(xs, largest, where="post", color=_color(name), linestyle=":")
        if packing := insert_packing(run):
            xs, packed, opened = zip(*packing, strict=True)
            pack_ax.step(xs, packed, where="post", color=_color(name), label=f"{name} packed")
            pack_ax.step(xs, opened, where="post", color=_color(name), linestyle="--")
        if keys := index_state_keys(run):
            xs, ys = zip(*keys, strict=True)
            state_ax.plot(xs, ys, marker=".", color=_color(name), label=name)
        else:
            state_ax.axhline(0, color=_color(name), label=f"{name} (no key state)")
    for ax, title in (
        (count_ax, "file groups committed"),
        (size_ax, "records per file group (dotted: largest)"),
        (pack_ax, "new keys into existing file groups (dashed: new ones)"),
        (state_ax, "keys in the index state"),
    ):
        ax.set_title(title)
        ax.set_xlabel("simulated time (s)")
        ax.legend(loc="upper left")


def _caption(runs: dict[str, RunData]) -> str:
    state, bucket = runs["flink_state"], runs["bucket"]
    final = {n: (p[-1][1] if (p := file_group_counts(r)) else 0) for n, r in runs.items()}
    median = {n: (p[-1][1] if (p := file_group_records(r)) else 0) for n, r in runs.items()}
    keys = index_state_keys(state)
    space = int(state.scenario.get("jobs", [{}])[0].get("key_space", 0))
    text = (
        f"The same copy-on-write workload ({space:,} keys) under the Flink state index "
        f"({state.name}) and the bucket index ({bucket.name}). The bucket index writes "
        f"{final['bucket']} file groups from the start (partitions x buckets) and never more; "
        f"each grows to a median of {median['bucket']:,.0f} records. The state index ends with "
        f"{final['flink_state']}: its bucket assigners pack new keys into small files with room "
        "and open a new file group when none has any, so the count grows with the keys while "
        "each file group keeps the keys first written to it and their updates (median "
        f"{median['flink_state']:,.0f} records; write.parquet.max.file.size sets the pace). "
    )
    if packing := insert_packing(state):
        _, packed, opened = packing[-1]
        share = packed / max(packed + opened, 1)
        text += (
            f"Of the {packed + opened:,} keys it wrote, {packed:,} ({share:.0%}) were packed into "
            f"file groups already committed and {opened:,} opened new ones"
        )
        if bucket_packing := insert_packing(bucket):
            _, packed, opened = bucket_packing[-1]
            text += (
                f"; the bucket index put all {packed:,} keys after the {opened:,} of its first "
                "commit into the file groups that commit opened. "
            )
        else:
            text += ". "
    if keys:
        text += (
            f"Its keyed state holds one entry per key it has seen: {keys[-1][1]:,} at the last "
            "completed checkpoint, which every restore loads; the bucket index keeps none. "
        )
    if boots := index_bootstraps(state):
        loaded, took_ms = max(boots)
        text += f"Its index bootstrap loaded up to {loaded:,} keys, in {took_ms} ms. "
    return text.strip()


def plot_state_vs_bucket(state: Path, bucket: Path, out_dir: Path) -> Figure:
    """File groups, records per file group, small-file packing and index state over time,
    state index vs bucket index."""
    runs = {"flink_state": load_run(Path(state)), "bucket": load_run(Path(bucket))}
    figure = new_figure(14.5, 3.4)
    with styled():
        _draw(figure, runs)
    return save(
        figure,
        out_dir,
        "state_vs_bucket",
        "File groups and index state: Flink state index vs bucket index",
        _caption(runs),
    )


def plot_bootstrap_cost(lost: Path, bootstrap: Path, out_dir: Path) -> Figure:
    """What the index bootstrap costs and buys: the keys each bootstrap loaded and the time it
    took, on the run whose assigners restart without their state (``index.bootstrap.enabled``),
    next to the same run without it (its ``unique_key`` verdict)."""
    runs = {"without": load_run(Path(lost)), "with": load_run(Path(bootstrap))}
    boots = index_bootstraps(runs["with"])
    figure = new_figure(7.5, 3.2)
    with styled():
        ax = figure.add_subplot(1, 1, 1)
        if boots:
            keys, took_ms = zip(*boots, strict=True)
            ax.plot(keys, took_ms, marker="o", color=COLORS["flushing"])
            for loaded, ms in boots:
                ax.annotate(f"{ms} ms", (loaded, ms), textcoords="offset points", xytext=(4, 4))
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
        ax.set_xlabel("keys loaded by the bootstrap")
        ax.set_ylabel("bootstrap time (ms)")
    verdicts = {
        name: (run.result.get("invariants", {}).get("unique_key") or {}).get("ok")
        for name, run in runs.items()
    }
    said = {True: "holds", False: "is violated", None: "was not checked"}
    caption = (
        f"{runs['with'].name}: at every start and restore the index bootstrap loads the keys of "
        "the table's latest committed file slices into the assigners' state, and no record "
        "passes until it is done (waitForBootstrapReady). "
        + (
            f"{len(boots)} bootstraps loaded up to {max(boots)[0]:,} keys and took up to "
            f"{max(ms for _, ms in boots)} ms, growing with the table. "
            if boots
            else "No bootstrap loaded keys. "
        )
        + f"unique_key {said[verdicts['with']]} with it; without it ({runs['without'].name}) "
        f"unique_key {said[verdicts['without']]}: keys the table holds are inserted again "
        "into other file groups."
    )
    return save(figure, out_dir, "index_bootstrap", "Index bootstrap: time vs keys", caption)


__all__ = [
    "file_group_counts",
    "file_group_of",
    "file_group_records",
    "index_bootstraps",
    "index_state_keys",
    "insert_packing",
    "plot_bootstrap_cost",
    "plot_state_vs_bucket",
]
