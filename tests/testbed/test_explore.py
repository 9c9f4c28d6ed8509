"""``testbed explore`` (testbed/explore.py + testbed/cli.py): schedules drawn from the random
rates, a deterministic search, shrinking to the faults that matter, a counterexample file that
``testbed run`` replays to the same violation, and the exit codes.

The search itself is tested with a fake ``run`` (a rule over the schedule instead of a
simulation), so it is fast and its answer is known; whole searches over catalog variants use
short runs (``max_duration_s``).
"""

from __future__ import annotations

import gc
import json
import shlex
import weakref
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from click.testing import CliRunner
from hypothesis import given, settings

from invariants.checks import CHECKERS, check_all
from models.view.table import HudiTable
from scenarios import catalog, catalog_dir
from scenarios.schema import load_scenario, parse_scenario
from sim.world import World
from testbed.cli import main
from testbed.explore import (
    Outcome,
    explore,
)
from testbed.explore_draw import (
    RANDOM_RATES,
    Candidate,
    candidate_scenario,
    candidates,
    fault_plan,
)
from testbed.explore_report import (
    report_lines,
    write_result,
)
from tests.testbed.test_explore_elsewhere import explore_cli, random_rates_only

TWO_JOBS_FAULTY = """\
[scenario]
name = "faulty"
duration_s = 40
seed = 3

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2

[[jobs]]
name = "backfill"
writers = 3
checkpoint_interval_s = 4

[faults]
ack_loss = 0.3
ack_delay_ms = 1500
ack_duplicate = 0.1
checkpoint_failure = 0.2
writer_crash_per_hour = 60
coordinator_crash_per_hour = 30
storage_write_failure = 0.001
clock_jump_per_hour = 90
clock_jump_ms = 400
"""


SMALL = """\
[scenario]
name = "small"
duration_s = 20
seed = 3

[[jobs]]
name = "ingest"
writers = 2
checkpoint_interval_s = 2

[faults]
ack_loss = 0.3
checkpoint_failure = 0.2
storage_write_failure = 0.001
"""


def faulty():
    return parse_scenario(TWO_JOBS_FAULTY)


def small():
    """For searches over a fake simulation: few fault kinds, so candidates are cheap."""
    return parse_scenario(SMALL)


def catalog_scenario(name: str):
    return load_scenario(catalog_dir() / f"{name}.toml")


# --- what is drawn ------------------------------------------------------------------------------


def test_no_random_faults_no_plan():
    assert fault_plan(parse_scenario('[scenario]\nname = "s"\n')) == []


def test_plan_follows_the_rates():
    plans = {(p.kind, p.targets): p for p in fault_plan(faulty())}
    kinds = {kind for kind, _ in plans}
    assert kinds == {
        "lose_ack",
        "delay_ack",
        "duplicate_ack",
        "fail_checkpoint",
        "crash",
        "clock_jump",
        "storage_failure",
    }
    # per job: twice the expected count (rate x checkpoints in 40 s), capped at 16
    assert plans[("lose_ack", ("ingest",))].max_entries == 12  # 0.3 x 20
    assert plans[("fail_checkpoint", ("backfill",))].max_entries == 4  # 0.2 x 10
    assert plans[("delay_ack", ("ingest",))].max_entries == 16  # every notification
    assert plans[("delay_ack", ("ingest",))].bound == 1500
    assert plans[("clock_jump", ("ingest/coordinator", "ingest/compactor", "backfill/coordinator"))]
    writers = plans[
        (
            "crash",
            (
                "ingest/task-0",
                "ingest/task-1",
                "backfill/task-0",
                "backfill/task-1",
                "backfill/task-2",
            ),
        )
    ]
    assert writers.max_entries == 2  # 60/h over 40 s: 0.67 expected, twice that rounded up
    coordinators = plans[("crash", ("ingest/coordinator", "backfill/coordinator"))]
    assert coordinators.max_entries == 1


@settings(max_examples=30, deadline=None)
@given(candidates(faulty(), fault_plan(faulty())))
def test_every_candidate_is_a_valid_scenario_without_random_faults(candidate: Candidate):
    scenario = candidate_scenario(faulty(), candidate)
    assert scenario.scenario.name == "faulty_counterexample"
    assert scenario.table.storage == "memory"
    assert all(getattr(scenario.faults, rate) == 0 for rate in RANDOM_RATES)
    assert 8 <= candidate.duration_s <= 40  # from two checkpoint intervals of the slower job
    intervals = {"ingest": 2, "backfill": 4}
    for entry in scenario.faults.schedule:
        assert 0 <= entry.at_s < candidate.duration_s
        if entry.checkpoint is not None:
            assert entry.at_s == 0
            assert 1 <= entry.checkpoint <= candidate.duration_s // intervals[entry.target]
        if entry.kind == "delay_ack":
            assert 1 <= entry.delay_ms <= 1500
        if entry.kind == "clock_jump":
            assert 0 < abs(entry.delta_ms) <= 400
    keys = [(e.kind, e.target, e.checkpoint) for e in scenario.faults.schedule if e.checkpoint]
    assert len(keys) == len(set(keys)), "one entry per kind and checkpoint"


def test_the_durations_and_seeds_can_be_pinned():
    scenario = faulty()
    plan = fault_plan(scenario)

    @settings(max_examples=20, deadline=None)
    @given(candidates(scenario, plan, seed_range=(7, 7), max_duration_s=0))
    def pinned(candidate: Candidate):
        assert (candidate.seed, candidate.duration_s) == (7, 40)

    pinned()


def test_hand_placed_entries_are_kept_before_the_drawn_ones():
    text = TWO_JOBS_FAULTY + (
        '[[faults.schedule]]\nat_s = 3\nkind = "crash"\ntarget = "ingest/task-1"\n'
    )
    base = parse_scenario(text)
    drawn = (
        tuple(
            sorted({"at_s": 0.0, "kind": "lose_ack", "target": "ingest", "checkpoint": 2}.items())
        ),
    )
    scenario = candidate_scenario(base, Candidate(5, 10.0, drawn))
    assert [(e.kind, e.target) for e in scenario.faults.schedule] == [
        ("crash", "ingest/task-1"),
        ("lose_ack", "ingest"),
    ]
    # a run shortened below a hand-placed entry leaves it out (it could not fire) instead of
    # failing validation: explore ended in a traceback on such a scenario
    shorter = candidate_scenario(base, Candidate(5, 3.0, drawn))
    assert [(e.kind, e.target) for e in shorter.faults.schedule] == [("lose_ack", "ingest")]


# --- the search, over a fake simulation --------------------------------------------------------


def rule_run(violated_when: Any):
    """A fake simulation: the run violates ``no_data_loss`` iff ``violated_when(schedule)``."""
    calls: list[Any] = []

    def run(scenario) -> Outcome:
        calls.append(scenario)
        bad = violated_when(scenario.faults.schedule)
        verdicts = {
            name: {"ok": not (bad and name == "no_data_loss"), "violations": []}
            for name in CHECKERS
        }
        if bad:
            verdicts["no_data_loss"]["violations"] = [{"why": "lost", "events": [1]}]
        return Outcome(frozenset({"no_data_loss"} if bad else ()), verdicts, "sha256:x")

    run.calls = calls  # type: ignore[attr-defined]
    return run


def late_lost_ack_then_failure(schedule) -> bool:
    """Needs two faults: the ACK of some checkpoint k >= 3 lost and checkpoint k + 1 failing."""
    lost = {e.checkpoint for e in schedule if e.kind == "lose_ack" and e.target == "ingest"}
    failed = {
        e.checkpoint for e in schedule if e.kind == "fail_checkpoint" and e.target == "ingest"
    }
    return any(k >= 3 and k + 1 in failed for k in lost)


def test_search_finds_and_shrinks_to_the_faults_that_matter():
    run = rule_run(late_lost_ack_then_failure)
    result = explore(small(), examples=200, shrink_runs=400, run=run)
    assert result.found is not None
    assert result.unexpected  # a real-protocol scenario violated: the user must look
    entries = [(e["kind"], e["target"], e["checkpoint"]) for e in result.found.entries()]
    assert entries == [("fail_checkpoint", "ingest", 4), ("lose_ack", "ingest", 3)]
    assert result.found.duration_s == 9  # the shortest run that triggers checkpoint 4 (at 8 s)
    assert result.found.seed == 0
    assert result.progress.runs == len(run.calls)
    assert result.scenario.expect.violations == ()  # real protocol: kept, so a replay fails
    assert [e.checkpoint for e in result.scenario.faults.schedule] == [4, 3]


def test_search_is_deterministic_for_a_seed():
    def found(seed: int) -> tuple:
        run = rule_run(late_lost_ack_then_failure)
        result = explore(small(), examples=200, shrink_runs=0, seed=seed, run=run)
        return result.found, [s.faults.schedule for s in run.calls]

    assert found(1) == found(1)
    assert found(1) != found(2)


def test_identical_candidates_run_once():
    run = rule_run(lambda schedule: False)
    result = explore(small(), examples=100, run=run)
    seen = [(s.scenario.seed, s.scenario.duration_s, s.faults.schedule) for s in run.calls]
    assert len(seen) == len(set(seen)) == result.progress.runs
    assert result.found is None and not result.unexpected  # real protocol, nothing found


def test_shrinking_stops_at_its_budget():
    run = rule_run(lambda schedule: any(e.kind == "storage_failure" for e in schedule))
    result = explore(small(), examples=200, shrink_runs=3, run=run)
    assert result.found is not None
    assert result.progress.runs - result.progress.examples <= 3


def test_nothing_found_in_a_known_bad_scenario_is_unexpected():
    scenario = parse_scenario(SMALL + '[expect]\nviolations = ["no_data_loss"]\n')
    result = explore(scenario, examples=5, run=rule_run(lambda schedule: False))
    assert result.found is None and result.unexpected
    assert "NOT caught in 5 examples" in "\n".join(report_lines(result, None, Path("out")))


def test_an_expected_violation_without_a_checker_cannot_be_searched(monkeypatch):
    monkeypatch.delitem(CHECKERS, "liveness")
    scenario = parse_scenario(SMALL + '[expect]\nviolations = ["liveness"]\n')
    result = explore(scenario, examples=5, run=rule_run(lambda schedule: True))
    assert result.found is None and result.unexpected
    assert "has a checker" in result.note


def test_only_expected_invariants_count_for_a_known_bad_scenario():
    scenario = parse_scenario(SMALL + '[expect]\nviolations = ["liveness"]\n')
    result = explore(scenario, examples=20, run=rule_run(lambda schedule: True))
    assert result.found is None  # no_data_loss broke, but that is not what is searched for


def test_a_simulator_error_is_found_and_reported_as_a_testbed_bug():
    def run(scenario):
        if any(e.kind == "storage_failure" for e in scenario.faults.schedule):
            raise RuntimeError("boom")
        return rule_run(lambda schedule: False)(scenario)

    result = explore(small(), examples=200, shrink_runs=200, run=run)
    assert result.found is not None and result.unexpected
    assert "RuntimeError: boom" in result.outcome.error
    assert [e["kind"] for e in result.found.entries()] == ["storage_failure"]
    assert any("testbed bug" in line for line in report_lines(result, None, Path("o")))


def test_ctrl_c_keeps_the_smallest_failure_seen():
    inner = rule_run(late_lost_ack_then_failure)
    failures: list[Any] = []

    def run(scenario):
        outcome = inner(scenario)
        if outcome.violated:
            failures.append(scenario)
        if len(failures) == 3:
            raise KeyboardInterrupt
        return outcome

    result = explore(small(), examples=200, shrink_runs=400, run=run)
    assert result.interrupted and result.found is not None
    assert late_lost_ack_then_failure(result.scenario.faults.schedule)


def test_ctrl_c_before_any_failure_keeps_nothing():
    def run(scenario):
        raise KeyboardInterrupt

    result = explore(small(), examples=10, run=run)
    assert result.interrupted and result.found is None


# --- memory over a long search ---------------------------------------------------------------


def test_a_checked_run_is_freed_once_dropped():
    outcome = World(parse_scenario(SMALL.replace("duration_s = 20", "duration_s = 2"))).run()
    check_all(outcome.history.events, HudiTable(outcome.storage))
    storage = weakref.ref(outcome.storage)
    del outcome
    gc.collect()
    assert storage() is None


# --- whole searches over catalog variants ------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind"), [("commit_latest_only", "lose_ack"), ("cow_async_upsert", "lose_ack")]
)
def test_explore_catches_a_catalog_variant_from_its_random_faults(name, kind, tmp_path):
    scenario = catalog_scenario(name)
    assert scenario.faults.schedule == ()  # random faults only
    result = explore(scenario, examples=20, shrink_runs=40, max_duration_s=8)
    assert result.found is not None and not result.unexpected
    assert set(result.outcome.violated) & set(scenario.expect.violations)
    assert [e["kind"] for e in result.found.entries()] == [kind]  # one lost ACK is enough
    path = write_result(result, tmp_path / "x", seed=0)  # replays the file before keeping it
    replay = CliRunner().invoke(main, ["run", str(path), "--quiet", "--out", str(tmp_path / "r")])
    assert replay.exit_code == 0, replay.output  # as expected: [expect] is what it violates
    recorded = json.loads((tmp_path / "r" / "result.json").read_text())
    assert recorded["digest"] == result.outcome.digest
    violated = {n for n, v in recorded["invariants"].items() if not v["ok"]}
    assert violated == set(result.outcome.violated)
    assert recorded["metrics"]["faults"] == {"drop": 1}


def test_cli_explore_real_protocol_finds_nothing_and_exits_0(tmp_path):
    out = tmp_path / "search"
    result = CliRunner().invoke(
        main,
        [
            "explore",
            str(catalog_dir() / "async_lost_acks.toml"),
            "--examples",
            "3",
            "--max-duration-s",
            "10",
            "--out",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "real protocol: searching for any violation" in result.output
    assert "no violation in 3 examples" in result.output
    summary = json.loads((out / "explore.json").read_text())
    assert (summary["found"], summary["unexpected"], summary["examples"]) == (False, False, 3)
    assert sorted(p.name for p in out.iterdir()) == [".testbed-output.json", "explore.json"]


def test_cli_explore_known_bad_prints_the_explanation_and_replay(tmp_path):
    out = tmp_path / "search"
    result = CliRunner().invoke(
        main,
        [
            "explore",
            str(catalog_dir() / "commit_latest_only.toml"),
            "--examples",
            "10",
            "--shrink-runs",
            "20",
            "--max-duration-s",
            "6",
            "--out",
            str(out),
            "-q",
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any(line.startswith("caught after ") for line in lines)
    assert any("lose_ack ingest checkpoint=" in line and "-> history #" in line for line in lines)
    assert any("(expected):" in line for line in lines)
    assert f"replay: testbed run {(out / 'counterexample.toml').resolve()}" in lines
    summary = json.loads((out / "explore.json").read_text())
    assert summary["found"] and summary["fired"][0]["f"] == "drop"


def test_printed_replay_commands_work_from_any_directory(tmp_path, monkeypatch):
    """``explore`` and ``run`` are given relative paths; the ``replay:`` lines they print name
    absolute ones, so they replay the same run from another directory (testbed/explore.py and
    testbed/run.py ``replay_command``)."""
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    (work / "cases").mkdir(parents=True)
    elsewhere.mkdir()
    text = (catalog_dir() / "commit_latest_only.toml").read_text()
    (work / "cases" / "v.toml").write_text(text.replace("duration_s = 60", "duration_s = 10"))
    monkeypatch.chdir(work)
    args = ["--examples", "10", "--shrink-runs", "20", "--max-duration-s", "6", "-q"]
    found = CliRunner().invoke(main, ["explore", "cases/v.toml", *args, "--out", "search"])
    assert found.exit_code == 0, found.output
    (explored,) = [line for line in found.output.splitlines() if line.startswith("replay: ")]
    argv = shlex.split(explored.removeprefix("replay: "))
    assert argv[:3] == ["testbed", "run", str(work / "search" / "counterexample.toml")]
    ran = CliRunner().invoke(main, ["run", "cases/v.toml", "--seed", "3", "--out", "r", "-q"])
    (printed,) = [line for line in ran.output.splitlines() if line.startswith("replay: ")]
    argv_run = shlex.split(printed.removeprefix("replay: "))
    assert str(work / "cases" / "v.toml") in argv_run and str(work / "r") in argv_run
    digest = json.loads((work / "r" / "result.json").read_text())["digest"]
    monkeypatch.chdir(elsewhere)
    again = CliRunner().invoke(main, [*argv[1:], "--out", "x", "-q"])
    assert again.exit_code == 0, again.output  # the counterexample replays as expected
    replayed = json.loads((elsewhere / "x" / "result.json").read_text())["digest"]
    assert replayed == json.loads((work / "search" / "explore.json").read_text())["digest"]
    CliRunner().invoke(main, [*argv_run[1:], "-q"])
    assert json.loads((work / "r" / "result.json").read_text())["digest"] == digest
    assert not (elsewhere / "r").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope.toml"], "nope.toml: no such file"),
        (["{catalog}/async_baseline.toml", "--seed-range", "5:2"], "--seed-range: '5:2'"),
        (["{catalog}/async_baseline.toml", "--seed-range", "x"], "allowed: LOW:HIGH"),
    ],
)
def test_cli_explore_bad_input_exits_2(args, message):
    args = [a.format(catalog=catalog_dir()) for a in args]
    result = CliRunner().invoke(main, ["explore", *args, "-q"])
    assert result.exit_code == 2
    assert message in result.output


def test_cli_explore_bad_scenario_is_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[scenario]\nname = "s"\n[faults]\nack_los = 1\n')
    result = CliRunner().invoke(main, ["explore", str(bad), "-q"])
    assert result.exit_code == 2
    assert result.output.count("\n") == 1 and "faults.ack_los: unknown key" in result.output


# --- every known-bad catalog variant, from its random faults ---------

KNOWN_BAD = [path.stem for path in catalog() if load_scenario(path).expect.violations]


def random_faults_only(name: str, folder: Path) -> Path:
    """The catalog scenario as a file with random faults only: a hand-placed schedule (some
    variants need one to show in a fixed run) is replaced by the random rate of each kind in it,
    which is what explore must work from."""
    data = catalog_scenario(name).model_dump(mode="json")
    data["faults"] = random_rates_only(data["faults"], ack_delay_ms=3000)
    path = folder / f"{name}.toml"
    path.write_text(tomli_w.dumps(data))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("name", KNOWN_BAD)
def test_explore_catches_every_known_bad_catalog_variant(name, tmp_path):
    """Through the command line, one process per variant (a search of hundreds of runs should
    not share a process with the others). Caught within a few hundred
    examples, a small shrunk schedule, and a counterexample file that replays to the same
    violation (``write_result`` replays it before keeping it; exit 0 says it did).

    Measured (examples to the first catch / shrunk entries / wall time on a loaded 2-core
    machine): archived_completion_miss 2/0/4 s, base_instant_slicing 1/0/2 s,
    commit_latest_only 3/1/13 s, cow_async_upsert 3/1/9 s, local_clock_skew 1/0/1 s,
    minibatch_insert 5/2/350 s, minibatch_upsert 5/2/414 s,
    partial_update_row_merge 1/0/11 s, task_state_lost 3/2/312 s, timeline_overwrite 1/0/7 s,
    truetime_bound_too_small 1/0/10 s, uncommitted_log_anchor 5/1/21 s; with random rescales
    (2026-11-26, examples / shrunk entries): deferred_recommit_lost 40/3, release_1_1_rescale
    7/1, rescale_restored_id 7/1; with the faults anchored to protocol steps in their catalog
    scenarios (2026-11-27): partial_buffer_snapshot 41/3, restart_before_bootstrap 16/3; the
    marker variants on the object-store profile (2026-11-27): marker_flush_swallowed 44/2,
    marker_answer_before_write 26/2.
    Variants with no
    fault in their counterexample show on every run (a wrong rule, not a fault, breaks them);
    the slow ones spend their time shrinking (60-150 runs of up to 60 simulated seconds)."""
    source = random_faults_only(name, tmp_path)
    out = tmp_path / "search"
    summary = explore_cli(source, out, examples=300, shrink_runs=150)  # caught (and replayed)
    assert summary["found"] and not summary["error"]
    expected = catalog_scenario(name).expect.violations
    assert set(summary["violated"]) & set(expected)
    assert len(summary["schedule"]) <= 4, summary["schedule"]
    counterexample = load_scenario(out / "counterexample.toml")
    assert all(getattr(counterexample.faults, rate) == 0 for rate in RANDOM_RATES)
    assert counterexample.expect.violations == tuple(summary["violated"])
    print(  # with -s: the numbers the docstring records
        f"{name}: caught after {summary['examples']} examples ({summary['runs']} runs), "
        f"{len(summary['schedule'])} entries, seed {summary['seed']}, {summary['duration_s']} s"
    )
