"""``python -m bench`` / ``testbed bench``: run the rows, print one table, write results.json.

    python -m bench [--quick] [--only ROW[,ROW]] [--repeats N] [--out FILE]

Rows: simulation, search, reader, spark, scaling (in that order). The table goes
to stdout, progress lines to stderr. A row that fails is reported in the table and in
results.json (``errors``) and the others still run; the exit code is then 1 (2 for bad options).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
import traceback
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.measure import Log, Measurement, load_average, machine_info, peak_rss_mb
from bench.report import results_json, scaling_lines, table_lines
from bench.sizes import FULL, QUICK, Sizes

DEFAULT_OUT = Path(__file__).resolve().parent / "results.json"


class BenchUsageError(ValueError):
    """Bad options: an unknown row, a repeat count below 1."""


def row_names() -> list[str]:
    from bench.rows import ROWS

    return list(ROWS)


def parse_only(value: str | None) -> list[str]:
    """``--only a,b``: the rows to run, in the table's order; all of them without the option."""
    names = row_names()
    if value is None:
        return names
    wanted = [part.strip() for part in value.split(",") if part.strip()]
    unknown = [w for w in wanted if w not in names]
    if unknown or not wanted:
        raise BenchUsageError(
            f"--only {value!r}: unknown row {', '.join(unknown) or '(none given)'} "
            f"(allowed: {', '.join(names)})"
        )
    return [n for n in names if n in wanted]


def stderr_log() -> Log:
    started = time.perf_counter()

    def log(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", file=sys.stderr, flush=True)

    return log


def run_bench(
    *,
    quick: bool = False,
    only: str | None = None,
    repeats: int | None = None,
    out: Path | None = None,
    sizes: Sizes | None = None,
    log: Log | None = None,
) -> dict[str, Any]:
    """Run the chosen rows, print the table to stdout, write ``out``; return the results.

    ``sizes`` overrides the presets (tests pass :data:`bench.sizes.TINY`)."""
    from bench.rows import ROWS

    chosen = parse_only(only)
    if repeats is not None and repeats < 1:
        raise BenchUsageError(f"--repeats {repeats}: must be at least 1")
    sizes = sizes or (QUICK if quick else FULL)
    if repeats is not None:
        sizes = replace(sizes, repeats=repeats)
    log = log or stderr_log()
    target = out or DEFAULT_OUT
    header: dict[str, Any] = {
        # a measurement's date, taken from the system clock (never part of a simulation)
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine_info(),
        "sizes": asdict(sizes),
        "rows_run": chosen,
        "load_average": {"start": load_average()},
    }
    log(f"bench ({sizes.name}, {sizes.repeats} repeats): {', '.join(chosen)}")
    started = time.perf_counter()
    measurements: list[Measurement] = []
    errors: dict[str, str] = {}
    for name in chosen:
        row_started = time.perf_counter()
        try:
            measurements.extend(ROWS[name](sizes, log))
        except Exception as error:  # one broken row must not lose the others' numbers
            traceback.print_exc(file=sys.stderr)
            errors[name] = traceback.format_exception_only(error)[-1].strip()
        log(f"{name}: done in {time.perf_counter() - row_started:.1f} s")
    header["elapsed_s"] = round(time.perf_counter() - started, 1)
    header["load_average"]["end"] = load_average()
    header["peak_rss_mb"] = peak_rss_mb()
    results = results_json(measurements, errors, header)
    from testbed.atomic import write_text_atomic

    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, json.dumps(results, indent=2, sort_keys=True) + "\n")
    machine = header["machine"]
    print(
        f"bench {sizes.name}, {header['date']}, {machine['cores']} cores, "
        f"{machine['memory_gb']} GB, Python {machine['python']}, {machine['platform']}; "
        f"load {header['load_average']['start']} -> {header['load_average']['end']}; "
        f"{header['elapsed_s']} s"
    )
    print()
    for line in table_lines(measurements, errors):
        print(line)
    scaling = scaling_lines(measurements)
    if scaling:
        print()
        for line in scaling:
            print(line)
    print()
    print(f"results: {target}")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmarks: each row a ratio against a reference measured in the same run.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="Fewer repeats, smaller sizes (a smoke check)."
    )
    parser.add_argument(
        "--only",
        metavar="ROW[,ROW]",
        help=f"Run only these rows ({', '.join(row_names())}).",
    )
    parser.add_argument("--repeats", type=int, help="Repeats per measurement.")
    parser.add_argument(
        "--out", type=Path, help=f"Where to write the results (default: {DEFAULT_OUT})."
    )
    args = parser.parse_args(argv)
    try:
        results = run_bench(quick=args.quick, only=args.only, repeats=args.repeats, out=args.out)
    except BenchUsageError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 1 if results["errors"] else 0
