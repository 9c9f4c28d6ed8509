"""``testbed run`` (testbed/cli.py + testbed/run.py): the run folder, the printed replay command,
exit codes 0 / 1 / 2, and nothing half-written left behind."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from invariants.checks import CHECKERS
from models.history import history_digest, read_history
from scenarios.schema import load_scenario, parse_scenario
from testbed import run as run_module
from testbed.cli import main

SCENARIO = """\
[scenario]
name = "cli_run"
duration_s = 10
seed = 3

[[jobs]]
writers = 2
checkpoint_interval_s = 2
records_per_s = 200
key_space = 500
"""


def write(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["run", *args, "--quiet"])


def run_ok(source: Path, out: Path, *extra: str) -> Result:
    result = invoke(str(source), "--out", str(out), *extra)
    assert result.exit_code == 0, result.output
    return result


def result_json(out: Path) -> dict:
    return json.loads((out / "result.json").read_text())


def replay_line(result: Result) -> str:
    (line,) = [x for x in result.stdout.splitlines() if x.startswith("replay: ")]
    return line.removeprefix("replay: ")


def test_run_writes_a_complete_run_folder(tmp_path):
    source = write(tmp_path, SCENARIO)
    out = tmp_path / "runs" / "one"
    result = run_ok(source, out)

    assert sorted(p.name for p in out.iterdir()) == [
        ".testbed-output.json",
        "history.jsonl",
        "result.json",
        "scenario.toml",
    ]
    assert sorted(p.name for p in out.parent.iterdir()) == ["one"]  # no one.partial
    resolved = parse_scenario((out / "scenario.toml").read_text())
    assert resolved == load_scenario(source)

    data = result_json(out)
    assert {"scenario", "seed", "digest", "ok", "invariants", "metrics"} <= set(data)
    assert (data["scenario"], data["seed"], data["ok"]) == ("cli_run", 3, True)
    history = (out / "history.jsonl").read_bytes()
    assert data["digest"] == "sha256:" + hashlib.sha256(history).hexdigest()
    assert data["digest"] == history_digest(read_history(out / "history.jsonl"))
    assert set(data["invariants"]) == set(CHECKERS)
    for verdict in data["invariants"].values():
        assert verdict == {"ok": True, "violations": []}
    assert data["metrics"]["jobs"]["job0"]["commits"] > 0
    assert data["metrics"]["events"] == len(history.splitlines())
    committed = {
        p
        for e in read_history(out / "history.jsonl")
        if e.f == "commit" and e.type == "ok"
        for p in e.value.get("files") or []
    }
    assert committed and committed <= set(data["data_files"])
    for path, size in data["data_files"].items():
        assert size["bytes"] > 0
        assert (size["records"] is None) == (not path.endswith(".parquet"))
    assert data["index"] is None  # the bucket index keeps no key state

    assert f"digest {data['digest']}" in result.stdout
    assert "testbed run " in replay_line(result)
    assert f"{source} --seed 3" in replay_line(result)


def test_the_replay_command_reproduces_the_run(tmp_path):
    source = write(tmp_path, SCENARIO)
    first = run_ok(source, tmp_path / "first")
    argv = shlex.split(replay_line(first))
    assert argv[:2] == ["testbed", "run"]
    out = argv.index("--out")
    argv[out + 1] = str(tmp_path / "again")
    again = CliRunner().invoke(main, [*argv[1:], "--quiet"])
    assert again.exit_code == 0, again.output
    assert result_json(tmp_path / "again")["digest"] == result_json(tmp_path / "first")["digest"]
    assert (tmp_path / "again" / "history.jsonl").read_bytes() == (
        tmp_path / "first" / "history.jsonl"
    ).read_bytes()


def test_seed_overrides_the_file(tmp_path):
    source = write(tmp_path, SCENARIO)
    run_ok(source, tmp_path / "seed3")
    result = run_ok(source, tmp_path / "seed9", "--seed", "9")
    data = result_json(tmp_path / "seed9")
    assert data["seed"] == 9
    assert parse_scenario((tmp_path / "seed9" / "scenario.toml").read_text()).scenario.seed == 9
    assert "--seed 9" in replay_line(result)
    assert data["digest"] != result_json(tmp_path / "seed3")["digest"]


def test_storage_local_writes_the_table_into_the_run_folder(tmp_path):
    source = write(tmp_path, SCENARIO)
    out = tmp_path / "local"
    result = run_ok(source, out, "--storage", "local")
    assert (out / "table" / ".hoodie" / "hoodie.properties").is_file()
    assert any((out / "table" / ".hoodie" / "timeline").iterdir())
    assert sorted(p.name for p in (out / "table").iterdir() if p.name.startswith("part=")) == [
        "part=p0",
        "part=p1",
    ]
    assert "--storage local" in replay_line(result)
    resolved = parse_scenario((out / "scenario.toml").read_text())
    assert resolved.table.storage == "local"
    assert not (tmp_path / "local.partial").exists()


def test_an_existing_run_folder_is_replaced(tmp_path):
    source = write(tmp_path, SCENARIO)
    out = tmp_path / "out"
    run_ok(source, out)
    (out / "stale.txt").write_text("from an earlier run")
    run_ok(source, out)
    assert not (out / "stale.txt").exists()
    assert (out / "result.json").is_file()


def test_unexpected_verdicts_exit_1_and_still_write_the_folder(tmp_path):
    source = write(tmp_path, SCENARIO + '\n[expect]\nviolations = ["no_data_loss"]\n')
    out = tmp_path / "out"
    result = invoke(str(source), "--out", str(out))
    assert result.exit_code == 1, result.output
    assert "NOT as expected" in result.stdout
    assert "no_data_loss: ok (unexpected)" in result.stdout
    data = result_json(out)
    assert data["ok"] is False
    assert data["expected_violations"] == ["no_data_loss"]
    assert not (tmp_path / "out.partial").exists()


def test_a_caught_known_bad_variant_exits_0(tmp_path):
    text = """\
[scenario]
name = "hudi_9570"
duration_s = 30
seed = 2

[[jobs]]
writers = 2
checkpoint_interval_s = 2
records_per_s = 400
key_space = 2000

[faults]
ack_loss = 0.5
coordinator_crash_per_hour = 360

[protocol]
persist_write_meta = false

[expect]
violations = ["exactly_once", "no_data_loss"]
"""
    source = write(tmp_path, text)
    out = tmp_path / "out"
    result = invoke(str(source), "--out", str(out))
    assert result.exit_code == 0, result.output
    data = result_json(out)
    assert data["ok"] is True
    assert data["invariants"]["no_data_loss"]["ok"] is False
    (first, *_) = data["invariants"]["no_data_loss"]["violations"]
    assert "data loss" in first["why"] and first["events"]
    assert data["unchecked_expectations"] == []


@pytest.mark.parametrize(
    ("text", "key", "detail"),
    [
        (
            SCENARIO.replace("writers = 2", "writerz = 2"),
            "jobs[0].writerz",
            'unknown key "writerz"',
        ),
        (
            SCENARIO + 'instant_generation = "sync"\n',
            "jobs[0].instant_generation",
            "allowed: async, blocking, minibatch",
        ),
        (SCENARIO.replace("seed = 3", "seed = -3"), "scenario.seed", "out of range"),
        (SCENARIO + "[nemesis]\nchaos = 1\n", "nemesis", "unknown table [nemesis]"),
        (SCENARIO + 'name = "team/ingest"\n', "jobs[0].name", "without '/'"),
    ],
)
def test_a_bad_scenario_exits_2_with_one_error_line(tmp_path, text, key, detail):
    source = write(tmp_path, text)
    out = tmp_path / "out"
    result = invoke(str(source), "--out", str(out))
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {source}: {key}: ")
    assert detail in line
    assert result.stdout == ""
    assert not out.exists() and not (tmp_path / "out.partial").exists()


def test_a_missing_scenario_file_exits_2(tmp_path):
    missing = tmp_path / "nope.toml"
    result = invoke(str(missing), "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [f"error: {missing}: no such file"]
    assert not (tmp_path / "out").exists()


def test_a_bad_seed_flag_is_blamed_on_the_flag(tmp_path):
    source = write(tmp_path, SCENARIO)
    result = invoke(str(source), "--seed", "-1", "--out", str(tmp_path / "out"))
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: Invalid value for '--seed': -1 is not in the range 0<=x<=")


def test_a_crash_during_the_run_leaves_nothing_behind(tmp_path, monkeypatch):
    class Boom(RuntimeError):
        pass

    def explode(self, progress=None):
        (tmp_path / "out.partial" / "half-written").write_text("x")
        raise Boom("simulator crashed")

    monkeypatch.setattr(run_module.World, "run", explode)
    source = write(tmp_path, SCENARIO)
    scenario = load_scenario(source)
    with pytest.raises(Boom):
        run_module.run_scenario(scenario, source, tmp_path / "out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["scenario.toml"]


def test_a_state_index_run_reports_its_index_state_at_each_checkpoint(tmp_path):
    text = SCENARIO.replace("key_space = 500", 'key_space = 500\nindex = "flink_state"')
    out = tmp_path / "state"
    run_ok(write(tmp_path, text), out)
    (job,) = result_json(out)["index"].items()
    completed = [
        e.value["checkpoint"]
        for e in read_history(out / "history.jsonl")
        if e.process == "job0/checkpoint" and e.f == "checkpoint" and e.type == "ok"
    ]
    points = job[1]["state_keys"]
    assert job[0] == "job0" and [c for c, _ in points] == completed
    keys = [k for _, k in points]
    assert keys == sorted(keys) and 0 < keys[-1] <= 500
