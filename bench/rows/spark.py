"""Row 4, Spark: ``testbed sweep`` seeds per second on ``local[1]``, ``local[2]`` and without
Spark, and ``testbed verify`` rows per second against a single-process pyarrow join.

* **sweep**: :func:`testbed.sweep.run_sweep` over the same seeds of the small scenario, with the
  in-process runner (``--no-spark``) and on Spark sessions started as ``testbed sweep --master``
  starts them (:mod:`replay.session`). Seeds per second count the time the engine spends running
  the seeds (the sweep's runner), not writing the parts, summary and report afterwards, which is
  the same work on every engine (``sweep_total_s`` has the whole call). Each session runs one
  warm-up seed per core first (Python workers start and import the project once per session);
  the session's own start is reported apart (``session_start_s``), since a long sweep pays it
  once; the first session starts the JVM, later ones in the same process reuse it. The rows must be the same on every engine (the digests are compared).
* **verify**: :func:`replay.verify.verify` on a table the simulator wrote to local disk with its
  history as the ledger, on the last (widest) session; the reference does the same comparison in
  one process with pyarrow: read the snapshot with our reader, build the ledger's model, join on
  the record key and count lost, extra, duplicated keys and wrong versions. Both must report the
  same counts.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from bench import workloads
from bench.measure import Log, Measurement, Target, timed
from bench.sizes import Sizes
from invariants.ledger import build_ledger
from models.format.records import RECORD_KEY_FIELD
from models.history import read_history
from models.storage import LocalStorage
from models.view.reader import read_snapshot
from models.view.table import HudiTable
from scenarios.schema import Scenario, resolved_toml
from sim.world import World
from testbed.sweep import SeedTask, SweepResult, read_rows, run_here, run_sweep

SCALING_TARGET = Target(">=", 1.6, "local[2] >= 1.6x local[1]")
WARMUP_SEEDS_PER_CORE = 1
SEED_BASE = 100
"""First seed swept (the warm-up runs seeds below it)."""


def measure(sizes: Sizes, log: Log) -> list[Measurement]:
    with tempfile.TemporaryDirectory(prefix="testbed-bench-spark-") as tmp:
        return _measure(sizes, log, Path(tmp))


def _measure(sizes: Sizes, log: Log, work: Path) -> list[Measurement]:
    scenario = workloads.with_duration(workloads.small(), sizes.search_duration_s)
    source = work / "scenario.toml"
    source.write_text(resolved_toml(scenario))
    seeds = (SEED_BASE, SEED_BASE + sizes.sweep_seeds - 1)
    what = (
        f"{sizes.sweep_seeds} seeds of {scenario.scenario.name}, {scenario.scenario.duration_s:g} s"
    )
    rates: dict[str, list[float]] = {}
    digests: dict[str, list[str]] = {}
    starts: dict[str, float] = {}
    totals: dict[str, list[float]] = {}

    def sweep(engine: str, runner: Any, repeat: int) -> None:
        out = work / f"sweep-{engine}-{repeat}"
        running = [0.0]

        def timed_runner(tasks: list[SeedTask], on_progress: Any) -> list[dict[str, Any]]:
            rows, timing = timed(lambda: runner(tasks, on_progress))
            running[0] += timing.wall_s
            return rows

        result, whole = timed(
            lambda: run_sweep(scenario, source, seeds, out, timed_runner, engine=engine)
        )
        _check_sweep(result)
        rates.setdefault(engine, []).append(sizes.sweep_seeds / running[0])
        totals.setdefault(engine, []).append(round(whole.wall_s, 3))
        digests[engine] = read_rows(out).column("digest").to_pylist()

    for repeat in range(sizes.repeats):
        log(f"spark: sweep {what} without Spark, repeat {repeat + 1}/{sizes.repeats}")
        sweep("none", run_here, repeat)

    verify_table = _simulated_table(sizes, work / "verify-run", log)
    verify = Measurement(
        row="spark",
        name="verify",
        title=f"testbed verify of a simulated table ({verify_table['rows']:,} live rows)",
        ours="Spark rows/s",
        reference="pyarrow join rows/s",
        unit="rows/s",
        ratio_meaning="Spark / single-process pyarrow rows per s",
        details=dict(verify_table),
    )
    for index, master in enumerate(sizes.spark_masters):
        last = index == len(sizes.spark_masters) - 1
        log(f"spark: starting a {master} session")
        _session(
            master,
            work / f"session-{index}",
            scenario,
            source,
            sizes,
            log,
            sweep=sweep,
            starts=starts,
            verify=(verify, verify_table) if last else None,
        )

    measurements = [verify]
    masters = list(sizes.spark_masters)
    if masters:
        first = masters[0]
        one = Measurement(
            row="spark",
            name=f"sweep_{_label(first)}",
            title=f"testbed sweep on {first} vs --no-spark ({what})",
            ours=f"{first} seeds/s",
            reference="no Spark seeds/s",
            unit="seeds/s",
            ratio_meaning=f"{first} / no Spark seeds per s (Spark's overhead on one core)",
        )
        _pair(one, rates[first], rates["none"])
        measurements.insert(0, one)
    for master in masters[1:]:
        wider = Measurement(
            row="spark",
            name=f"sweep_{_label(master)}",
            title=f"testbed sweep on {master} vs {masters[0]} ({what})",
            ours=f"{master} seeds/s",
            reference=f"{masters[0]} seeds/s",
            unit="seeds/s",
            ratio_meaning=f"{master} / {masters[0]} seeds per s",
            target=SCALING_TARGET if master == "local[2]" else None,
        )
        _pair(wider, rates[master], rates[masters[0]])
        measurements.insert(len(measurements) - 1, wider)
    reference = digests["none"]
    for m in measurements[:-1]:
        m.details["session_start_s"] = {k: round(v, 2) for k, v in starts.items()}
        m.details["sweep_total_s"] = totals
        m.details["same_rows_as_no_spark"] = all(d == reference for d in digests.values())
    return measurements


def _label(master: str) -> str:
    return master.replace("[", "").replace("]", "").replace("*", "all")


def _pair(measurement: Measurement, ours: list[float], reference: list[float]) -> None:
    for mine, theirs in zip(ours, reference, strict=True):
        measurement.add(mine, theirs, mine / theirs)


def _check_sweep(result: SweepResult) -> None:
    if not result.ok:
        raise RuntimeError(
            f"the bench sweep did not go as expected: {result.summary['failing'][:1]}"
        )


def _session(
    master: str,
    work: Path,
    scenario: Scenario,
    source: Path,
    sizes: Sizes,
    log: Log,
    *,
    sweep: Any,
    starts: dict[str, float],
    verify: tuple[Measurement, dict[str, Any]] | None,
) -> None:
    from replay.distribute import map_on_spark
    from replay.session import SparkOptions, spark_session
    from replay.verify import Target as VerifyTarget
    from replay.verify import verify as spark_verify
    from testbed.sweep import evaluate_seed

    started = time.perf_counter()
    with spark_session(SparkOptions(master=master), work) as spark:
        starts[master] = time.perf_counter() - started

        def on_spark(tasks, on_progress):
            return map_on_spark(spark, evaluate_seed, tasks, on_progress=on_progress)

        cores = spark.sparkContext.defaultParallelism
        warmup = max(1, cores * WARMUP_SEEDS_PER_CORE)
        log(f"spark: {master} warm-up")
        text = source.read_text()
        on_spark([SeedTask(text, str(source), seed) for seed in range(warmup)], None)
        for repeat in range(sizes.repeats):
            log(f"spark: sweep on {master}, repeat {repeat + 1}/{sizes.repeats}")
            sweep(master, on_spark, repeat)
        if verify is None:
            return
        measurement, table = verify
        measurement.details["master"] = master
        target = VerifyTarget(Path(table["root"]), Path(table["history"]))
        for repeat in range(sizes.repeats):
            log(f"spark: verify on {master} and with pyarrow, repeat {repeat + 1}")
            report, on = timed(lambda r=repeat: spark_verify(spark, target, work / f"verify-{r}"))
            counts, alone = timed(lambda: pyarrow_verify(target.table_root, target.history))
            rows = table["rows"]
            measurement.add(rows / on.wall_s, rows / alone.wall_s, alone.wall_s / on.wall_s)
            measurement.details["agree"] = _spark_counts(report) == counts
            measurement.details["counts"] = counts


def _simulated_table(sizes: Sizes, folder: Path, log: Log) -> dict[str, Any]:
    """A run of the small scenario with a bigger key space and load, on local disk, and its
    history: what ``testbed run --storage local`` leaves for ``testbed verify``."""
    scenario = workloads.vary(
        workloads.small(),
        {
            "scenario.duration_s": sizes.verify_duration_s,
            "table.storage": "local",
            "jobs.0.key_space": sizes.verify_key_space,
            "jobs.0.records_per_s": sizes.verify_records_per_s,
        },
    )
    log(
        f"spark: simulating {sizes.verify_duration_s:g} s at {sizes.verify_records_per_s} "
        f"records/s on local disk for verify"
    )
    root = folder / "table"
    root.mkdir(parents=True)
    outcome = World(scenario, table_root=root).run()
    history = folder / "history.jsonl"
    history.write_bytes(outcome.history.jsonl_bytes())
    rows = read_snapshot(HudiTable(LocalStorage(root))).num_rows
    return {"root": str(root), "history": str(history), "rows": rows}


def _spark_counts(report: dict[str, Any]) -> dict[str, int]:
    return {
        "rows": report["rows"]["table"],
        **{
            kind: report[kind]["count"] for kind in ("lost", "extra", "duplicated", "wrong_version")
        },
    }


def pyarrow_verify(root: Path, history: Path) -> dict[str, int]:
    """The reference for ``testbed verify``: the same comparison in one process, with pyarrow.

    Our reader reads the whole snapshot, the ledger gives the model, and one full outer join on
    the record key finds lost keys (model only), extra keys (table only) and wrong versions
    (both, some model column differs, a null equal only to a null); duplicated keys are counted
    before the join, which keeps the first live row of each key, as verify does."""
    key = RECORD_KEY_FIELD
    model = build_ledger(read_history(history)).model()
    live = read_snapshot(HudiTable(LocalStorage(root)))
    if live.num_rows == 0:
        live = model.schema.empty_table()
    live = pa.table(
        {name: live.column(name).cast(model.schema.field(name).type) for name in model.column_names}
    )
    copies = live.group_by(key).aggregate([(key, "count")])
    duplicated = pc.sum(pc.greater(copies.column(f"{key}_count"), 1)).as_py() or 0
    others = [name for name in model.column_names if name != key]
    first = live.group_by(key, use_threads=False).aggregate([(n, "first") for n in others])
    model = model.append_column("__in_model", pa.repeat(pa.scalar(True), model.num_rows))
    first = first.append_column("__in_table", pa.repeat(pa.scalar(True), first.num_rows))
    joined = model.join(first, keys=key, join_type="full outer")
    in_model = pc.is_valid(joined.column("__in_model"))
    in_table = pc.is_valid(joined.column("__in_table"))
    differs = pa.repeat(pa.scalar(False), joined.num_rows)
    for name in others:
        a, b = joined.column(name), joined.column(f"{name}_first")
        same = pc.or_(pc.fill_null(pc.equal(a, b), False), pc.and_(pc.is_null(a), pc.is_null(b)))
        differs = pc.or_(differs, pc.invert(same))

    def count(mask: Any) -> int:
        return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)

    return {
        "rows": live.num_rows,
        "lost": count(pc.and_(in_model, pc.invert(in_table))),
        "extra": count(pc.and_(pc.invert(in_model), in_table)),
        "duplicated": duplicated,
        "wrong_version": count(pc.and_(pc.and_(in_model, in_table), differs)),
    }
