"""File groups over time under the Flink state index and the bucket index, on the same workload
(catalog pair ``flink_state_cow`` / ``bucket_index_cow``): a design review's picture of what the
index choice does to the table's layout.

Under the bucket index every key hashes to one of a fixed number of buckets, so the file groups
are there from the first commits and never grow in number, only in size. Under the state index
the bucket assigners pack new keys into small files with room and open a new file group when
none has any (``write.parquet.max.file.size``), so the count keeps growing with the keys. Both
come from the run folders' histories alone: the data files each completed commit lists.
"""

from __future__ import annotations

import re
from pathlib import Path

from reports.figures import COLORS, Figure, new_figure, save, styled
from reports.run_data import RunData, load_run, value

BASE_FILE = re.compile(r"^([^_/.][^_/]*)_[^_/]+_\d+\.parquet$")
LOG_FILE = re.compile(r"^\.([^_/]+)_\d+\.log\.")


def file_group_of(path: str) -> tuple[str, str] | None:
    """(partition, file id) of a data file path, as Hudi names data files."""
    partition, _, name = path.rpartition("/")
    match = BASE_FILE.match(name) or LOG_FILE.match(name)
    return (partition, match.group(1)) if match else None


def file_group_counts(run: RunData) -> list[tuple[float, int]]:
    """(seconds, file groups written by completed commits so far), at every commit."""
    seen: set[tuple[str, str]] = set()
    points = []
    for event in run.events:
        if event.f != "commit" or event.type != "ok":
            continue
        for path in value(event).get("files") or []:
            group = file_group_of(str(path))
            if group is not None:
                seen.add(group)
        points.append((event.time / 1000, len(seen)))
    return points


def plot_state_vs_bucket(state: Path, bucket: Path, out_dir: Path) -> Figure:
    """File groups over time of the state-index run and the bucket-index run."""
    runs = {"flink_state": load_run(Path(state)), "bucket": load_run(Path(bucket))}
    counts = {name: file_group_counts(run) for name, run in runs.items()}
    figure = new_figure(7.5, 3.2)
    with styled():
        ax = figure.add_subplot(1, 1, 1)
        for name, points in counts.items():
            color = COLORS["flushing"] if name == "flink_state" else COLORS["commit"]
            if points:
                xs, ys = zip(*points, strict=True)
                ax.step(xs, ys, where="post", color=color, label=f"{name} ({ys[-1]} at the end)")
        ax.set_xlabel("simulated time (s)")
        ax.set_ylabel("file groups committed")
        ax.legend(loc="upper left")
    final = {name: (points[-1][1] if points else 0) for name, points in counts.items()}
    keys = {
        name: int(run.scenario.get("jobs", [{}])[0].get("key_space", 0))
        for name, run in runs.items()
    }
    caption = (
        f"The same copy-on-write workload ({keys['flink_state']:,} keys) under the Flink state "
        f"index ({runs['flink_state'].name}) and the bucket index ({runs['bucket'].name}). The "
        f"bucket index writes {final['bucket']} file groups from the start (partitions x "
        f"buckets) and never more; the state index ends with {final['flink_state']}: its bucket "
        "assigners pack new keys into small files with room and open a new file group when none "
        "has any, so the count grows with the keys (write.parquet.max.file.size sets the pace)."
    )
    return save(
        figure,
        out_dir,
        "state_vs_bucket",
        "File groups: Flink state index vs bucket index",
        caption,
    )


__all__ = ["file_group_counts", "file_group_of", "plot_state_vs_bucket"]
