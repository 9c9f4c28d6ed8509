"""The bench's code on tiny sizes, so it does not rot: every row's measuring function runs end to
end and returns well-formed measurements. No timing is asserted (CI machines are noisy); what is
asserted is what must hold at any speed: shapes, samples per repeat, the comparisons the bench
makes on the side (our reader and hudi-rs read the same rows, verify's reference finds damage).
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from bench import cli, tables
from bench.measure import Measurement, Target, fit_exponent, machine_info
from bench.rows import ROWS, reader, scaling, search, simulation, spark
from bench.sizes import FULL, QUICK, TINY
from models.storage import LocalStorage
from models.view.reader import read_snapshot
from models.view.table import HudiTable

NO_SPARK = replace(TINY, spark_masters=())


def log(_message: str) -> None:
    """Progress lines are not under test."""


def check_shape(measurements: list[Measurement], row: str, repeats: int) -> None:
    assert measurements
    for m in measurements:
        assert m.row == row
        assert m.title and m.ours and m.reference and m.ratio_meaning
        assert len(m.ours_samples) == len(m.reference_samples) == len(m.ratio_samples) == repeats
        assert all(math.isfinite(v) for v in m.ratio_samples)
        data = m.to_json()
        json.dumps(data)  # results.json must be able to hold it
        assert set(data["ratio"]) == {"min", "median", "max"}
        assert data["reached"] in (True, False, None)
        assert (data["target"] is None) == (m.target is None)


# --- the shared pieces ------------------------------------------------------------------------


def test_measurement_spread_and_target() -> None:
    m = Measurement("r", "n", "t", "ours", "ref", "s", "ours / ref", target=Target("<=", 2, "x"))
    assert m.reached() is None  # no sample yet
    for ours, ref in ((3.0, 1.0), (1.0, 1.0), (2.0, 1.0)):
        m.add(ours, ref, ours / ref)
    assert m.ratio() == {"min": 1.0, "median": 2.0, "max": 3.0}
    assert m.reached() is True  # judged on the median
    m.add(9.0, 1.0, 9.0)
    m.add(9.0, 1.0, 9.0)
    assert m.reached() is False
    assert m.to_json()["samples"]["ratio"] == [3.0, 1.0, 2.0, 9.0, 9.0]
    with pytest.raises(ValueError):
        Target("==", 1, "no such bound")


def test_fit_exponent_recovers_a_power_law() -> None:
    xs = [1.0, 2.0, 4.0, 8.0]
    assert fit_exponent(xs, [3 * x**2 for x in xs]) == pytest.approx(2.0)
    assert fit_exponent(xs, [5.0] * 4) == pytest.approx(0.0)
    with pytest.raises(ValueError):
        fit_exponent([1.0], [1.0])
    with pytest.raises(ValueError):
        fit_exponent([2.0, 2.0], [1.0, 3.0])


def test_machine_info_names_the_machine() -> None:
    info = machine_info()
    assert info["cores"] >= 1 and info["python"]
    assert {"pyarrow", "simpy"} <= set(info["versions"])


def test_presets_grow_from_tiny_to_full() -> None:
    assert TINY.table_rows < QUICK.table_rows < FULL.table_rows == 1_000_000
    assert FULL.scaling_writers == (1, 2, 4, 8, 16)
    assert FULL.sim_duration_s is None  # the standard scenario's own hour
    assert "local[1]" in FULL.spark_masters and "local[2]" in FULL.spark_masters


# --- the table the reader row reads -----------------------------------------------------------


def test_bench_table_holds_every_key_once_with_the_latest_version(tmp_path: Path) -> None:
    built = tables.build_mor_table(tmp_path / "t", 3_000, update_rounds=2)
    assert built.rows == 3_000
    assert built.file_groups == tables.PARTITIONS * tables.BUCKETS_PER_PARTITION
    assert built.base_files == built.file_groups  # one compaction
    assert built.log_files == 3 * built.file_groups  # the first flush and two update rounds
    rows = read_snapshot(HudiTable(LocalStorage(built.root)))
    assert rows.num_rows == 3_000
    latest = dict(
        zip(rows.column("offset").to_pylist(), rows.column("ts").to_pylist(), strict=True)
    )
    for version, ids in ((1, tables.update_ids(3_000, 0)), (2, tables.update_ids(3_000, 1))):
        assert {latest[i] for i in ids.tolist()} == {
            version * 1_000_000_000 + i for i in ids.tolist()
        }


def test_update_rounds_pick_distinct_tenths() -> None:
    first, second = tables.update_ids(10_000, 0), tables.update_ids(10_000, 1)
    assert not set(first.tolist()) & set(second.tolist())
    assert 800 < len(first) < 1_200
    chunks = tables.file_group_chunks(tables.records(np.arange(1_000)))
    assert sum(chunk.num_rows for _, _, chunk in chunks) == 1_000


# --- every row on tiny sizes ------------------------------------------------------------------


def test_rows_are_listed_in_the_issue_order() -> None:
    assert list(ROWS) == ["simulation", "search", "reader", "spark", "scaling"]


def test_simulation_row() -> None:
    measurements = simulation.measure(TINY, log)
    check_shape(measurements, "simulation", TINY.repeats)
    speed, per_event = measurements
    assert speed.target is simulation.REAL_TIME_TARGET
    assert speed.reference_samples[0] >= TINY.sim_duration_s  # the drain comes on top
    assert per_event.details["events"] > 0


def test_search_row_runs_real_protocol_without_violations() -> None:
    measurements = search.measure(TINY, log)
    check_shape(measurements, "search", TINY.repeats)
    explore, checkers = measurements
    assert explore.details["explore_runs"] == [TINY.search_runs]
    assert explore.details["found"] == [False]
    assert checkers.details["violated"] == []


def test_reader_row_reads_the_same_rows_as_hudi_rs() -> None:
    measurements = reader.measure(TINY, log)
    check_shape(measurements, "reader", TINY.repeats)
    read, logs, bases = measurements
    assert [m.name for m in measurements] == ["read", "write_logs", "write_base_files"]
    assert read.target is reader.READ_TARGET and logs.target is bases.target is reader.WRITE_TARGET
    if reader.HUDI_AVAILABLE:
        assert read.details["same_rows"] is True
        assert read.details["rows_read"] == {"ours": TINY.table_rows, "hudi_rs": TINY.table_rows}


def test_scaling_row_fits_one_exponent_per_repeat() -> None:
    measurements = scaling.measure(TINY, log)
    check_shape(measurements, "scaling", TINY.repeats)
    assert [m.name for m in measurements] == ["writers", "checkpoint_frequency", "key_space"]
    for m in measurements:
        assert len(m.details["runtime_s"]) == len(m.details["values"])


def test_spark_row_without_a_session_sweeps_in_process(monkeypatch) -> None:
    import testbed.sweep

    # the sweep's plots are not what this row times (it times the runner), and cost seconds
    monkeypatch.setattr(testbed.sweep, "write_report", lambda *args: None, raising=False)
    (verify,) = spark.measure(NO_SPARK, log)
    assert verify.row == "spark" and verify.name == "verify"
    assert verify.ratio_samples == []  # verify needs a session
    assert verify.details["rows"] > 0


def test_verify_reference_counts_damage(tmp_path: Path) -> None:
    made = spark._simulated_table(TINY, tmp_path / "run", log)
    root, history = Path(made["root"]), Path(made["history"])
    clean = spark.pyarrow_verify(root, history)
    assert clean == {
        "rows": made["rows"],
        "lost": 0,
        "extra": 0,
        "duplicated": 0,
        "wrong_version": 0,
    }
    # a committed log file disappears: its keys are lost or fall back to an older version
    newest = max(root.rglob(".*.log.*"), key=lambda p: p.name.split("_")[1])
    newest.unlink()
    damaged = spark.pyarrow_verify(root, history)
    assert damaged["lost"] + damaged["wrong_version"] > 0
    assert damaged["extra"] == damaged["duplicated"] == 0


@pytest.mark.slow
def test_spark_row_on_local_sessions() -> None:
    measurements = spark.measure(replace(TINY, spark_masters=("local[1]", "local[2]")), log)
    check_shape(measurements, "spark", TINY.repeats)
    assert [m.name for m in measurements] == ["sweep_local1", "sweep_local2", "verify"]
    one, two, verify = measurements
    assert two.target is spark.SCALING_TARGET
    assert one.details["same_rows_as_no_spark"] and two.details["same_rows_as_no_spark"]
    assert verify.details["agree"] is True


# --- the command line -------------------------------------------------------------------------


def test_run_bench_prints_one_table_and_writes_results(tmp_path: Path, capsys) -> None:
    out = tmp_path / "results.json"
    results = cli.run_bench(only="simulation", out=out, sizes=TINY, log=log)
    printed = capsys.readouterr().out
    assert "| simulation.speed: " in printed and "| simulation.cost_per_event: " in printed
    stored = json.loads(out.read_text())
    assert stored == json.loads(json.dumps(results))
    assert stored["rows_run"] == ["simulation"] and stored["errors"] == {}
    assert {"cores", "memory_gb", "python", "platform"} <= set(stored["machine"])
    assert stored["date"] and stored["sizes"]["name"] == "tiny"
    speed = stored["measurements"][0]
    assert set(speed["samples"]) == {"ours", "reference", "ratio"}
    assert stored["targets"]["simulation.speed"]["target"] == ">= 1000x real time"


def test_a_failing_row_is_reported_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    def broken(_sizes, _log):
        raise RuntimeError("no Java here")

    monkeypatch.setitem(ROWS, "spark", broken)
    results = cli.run_bench(only="spark,simulation", out=tmp_path / "r.json", sizes=TINY, log=log)
    assert results["errors"] == {"spark": "RuntimeError: no Java here"}
    assert [m["row"] for m in results["measurements"]] == ["simulation", "simulation"]
    assert "| spark: FAILED (RuntimeError: no Java here)" in capsys.readouterr().out


def test_bad_options_are_usage_errors() -> None:
    with pytest.raises(cli.BenchUsageError, match="allowed: simulation, search"):
        cli.parse_only("simulation,nope")
    assert cli.parse_only("scaling,simulation") == ["simulation", "scaling"]
    assert cli.main(["--only", "nope"]) == 2
    assert cli.main(["--repeats", "0"]) == 2


def test_testbed_bench_runs_the_same_bench(tmp_path: Path, monkeypatch) -> None:
    from testbed.cli import main

    monkeypatch.setattr(cli, "QUICK", TINY)  # --quick at the tests' size
    out = tmp_path / "results.json"
    result = CliRunner().invoke(
        main, ["bench", "--quick", "--only", "simulation", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "simulation.speed" in result.output
    assert json.loads(out.read_text())["sizes"]["name"] == "tiny"
    bad = CliRunner().invoke(main, ["bench", "--only", "nope"])
    assert bad.exit_code == 2 and "unknown row nope" in bad.output
