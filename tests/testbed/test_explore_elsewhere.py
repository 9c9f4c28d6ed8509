"""``testbed explore`` finds the known-bad catalog scenarios (variants and findings) from random
fault rates alone, on a scenario other than its catalog one.

A variant's catalog scenario is tuned to make its bug show: the load, the layout, and often a
hand-placed fault schedule. Finding the bug there says little about what a search finds on a
user's scenario. So each variant is *moved* (:func:`elsewhere`): its protocol switches, time
settings, job modes and the configuration the bug lives in stay; the table layout, the write
tasks, the checkpoint interval, the source rate, the key space and the buffer change; the
schedule goes, each kind of fault it used becomes a random rate (:data:`RATES_OF_KIND`), and
every moved variant loses a fifth of its checkpoint notifications and delays the others by up to
a second, well under a checkpoint interval (:data:`BACKGROUND_RATES`). Explore must catch the
variant within 200 examples, but for the known misses of :data:`ELSEWHERE_MISSES`.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from scenarios import catalog, catalog_dir
from scenarios.schema import load_scenario, scenario_from_dict

EXAMPLES = 200

VARIANTS = [path.stem for path in catalog() if load_scenario(path).expect.violations]
"""Every known-bad catalog scenario: the variants, and the findings (Hudi's own rules, whose
hazard the search must reach as well)."""

RATES_OF_KIND: dict[str, dict[str, Any]] = {
    "lose_ack": {"ack_loss": 0.2},
    "duplicate_ack": {"ack_duplicate": 0.2},
    "fail_checkpoint": {"checkpoint_failure": 0.2},
    "clock_jump": {"clock_jump_per_hour": 120},
    "storage_failure": {"storage_write_failure": 0.01},
    "writer_crash": {"writer_crash_per_hour": 120},
    "coordinator_crash": {"coordinator_crash_per_hour": 120},
    "rescale": {"rescale_per_hour": 120},
    "pause": {"pause_per_hour": 120},
    "write_error": {"write_error_per_hour": 120},
    "restore_crash": {"restore_crash_per_hour": 120},
    "taskmanager_pause": {"taskmanager_pause_per_hour": 120},
}
"""The random rate standing in for each kind of hand-placed fault (ACK delays: see
:func:`random_rates_only`)."""

MODEST_ACK_DELAY_MS = 1000
"""ACK delays of a moved variant: at most this, under every moved checkpoint interval."""
MAX_KEY_SPACE = 200_000
BUFFER_DIVISOR = 3
BACKGROUND_RATES: dict[str, Any] = {"ack_loss": 0.2, "ack_delay_ms": MODEST_ACK_DELAY_MS}
"""Faults every moved variant gets: checkpoint notifications lost and late, as Flink's are."""


def _kind_of(entry: dict[str, Any]) -> str:
    if entry["kind"] == "crash":
        return "writer_crash" if "/task-" in entry["target"] else "coordinator_crash"
    return entry["kind"]


def _moved_job(job: dict[str, Any]) -> dict[str, Any]:
    """Another load for ``job``: one write task more (fewer from 4), checkpoints 1.5x apart, a
    quarter less data a second, twice the keys; a buffer flushes :data:`BUFFER_DIVISOR` times
    as often, relative to the records a write task receives between two barriers."""
    writers = job["writers"] + 1 if job["writers"] < 4 else job["writers"] - 1
    interval_s = round(job["checkpoint_interval_s"] * 1.5, 2)
    records_per_s = round(job["records_per_s"] * 0.75)
    moved = job | {
        "writers": writers,
        "checkpoint_interval_s": interval_s,
        "records_per_s": records_per_s,
        "key_space": min(MAX_KEY_SPACE, job["key_space"] * 2),
    }
    if job["buffer_records"]:
        before = job["records_per_s"] * job["checkpoint_interval_s"] / job["writers"]
        after = records_per_s * interval_s / writers
        share = job["buffer_records"] / before
        moved["buffer_records"] = max(1, math.floor(after * share / BUFFER_DIVISOR))
    return moved


def random_rates_only(faults: dict[str, Any], *, ack_delay_ms: int) -> dict[str, Any]:
    """``[faults]`` with its schedule replaced by the random rate of each kind in it
    (:data:`RATES_OF_KIND`; a rescale's writers and a pause's length bound the random ones', and
    ACK delays are at most ``ack_delay_ms``)."""
    faults = dict(faults)
    for entry in faults.pop("schedule"):
        rates = RATES_OF_KIND.get(_kind_of(entry), {"ack_delay_ms": ack_delay_ms})
        for rate, value in rates.items():
            faults[rate] = max(faults[rate], value)
        if entry["kind"] == "rescale":
            faults["rescale_max_writers"] = max(faults["rescale_max_writers"], entry["writers"])
        if entry["kind"] in ("pause", "taskmanager_pause"):
            faults["pause_max_ms"] = max(faults["pause_max_ms"], entry["duration_ms"])
    faults["ack_delay_ms"] = min(faults["ack_delay_ms"], ack_delay_ms)
    return faults


def elsewhere(name: str) -> dict[str, Any]:
    """The variant ``name`` on another scenario (see the module's docstring), as TOML tables."""
    data = load_scenario(catalog_dir() / f"{name}.toml").model_dump(mode="json")
    data["scenario"]["name"] = f"{name}_elsewhere"
    table = data["table"]
    table["partitions"] += 1
    buckets = table["buckets_per_partition"]
    table["buckets_per_partition"] = buckets + 1 if buckets < 4 else buckets - 1
    data["jobs"] = [_moved_job(job) for job in data["jobs"]]
    faults = random_rates_only(data["faults"], ack_delay_ms=MODEST_ACK_DELAY_MS)
    data["faults"] = faults | {rate: max(faults[rate], v) for rate, v in BACKGROUND_RATES.items()}
    return data


def explore_cli(source: Path, out: Path, *, examples: int, shrink_runs: int) -> dict[str, Any]:
    """``testbed explore`` on ``source`` in a process of its own (a search of hundreds of runs
    should not share one with other tests), runs of up to 60 s; its ``explore.json``. Exit 0:
    the variant was caught and its counterexample replays to the same violation."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed.cli",
            "explore",
            str(source),
            *("--examples", str(examples), "--shrink-runs", str(shrink_runs)),
            *("--max-duration-s", "60", "--out", str(out), "-q"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=3600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "explore.json").read_text())


@pytest.mark.parametrize("name", VARIANTS)
def test_a_moved_variant_keeps_its_rules_and_changes_its_load(name):
    variant = load_scenario(catalog_dir() / f"{name}.toml")
    moved = scenario_from_dict(elsewhere(name), f"<{name} elsewhere>")
    assert moved.protocol == variant.protocol and moved.time == variant.time
    assert moved.faults.schedule == ()
    for rate, value in BACKGROUND_RATES.items():
        assert getattr(moved.faults, rate) >= value
    assert (moved.table.partitions, moved.table.type) == (
        variant.table.partitions + 1,
        variant.table.type,
    )
    for before, after in zip(variant.jobs, moved.jobs, strict=True):
        modes = ("instant_generation", "operation", "concurrency", "failover")
        assert [getattr(after, m) for m in modes] == [getattr(before, m) for m in modes]
        assert after.writers != before.writers
        assert after.checkpoint_interval_s == pytest.approx(
            1.5 * before.checkpoint_interval_s, abs=0.01
        )
        assert after.records_per_s < before.records_per_s
    assert moved.faults.ack_delay_ms <= MODEST_ACK_DELAY_MS


ELSEWHERE_MISSES: dict[str, str] = {
    "marker_flush_swallowed": (
        "not caught in 200 examples on the moved load (2026-11-27; 44 on its catalog load): a "
        "storage failure on the timeline server must be followed by a job manager failover "
        "before the instant's checkpoint completes, and the search draws that pair too rarely"
    ),
    "global_index_bootstrap_jm_late_commit": (
        "not caught in 171 examples on the moved load (2026-11-28): a late notification must "
        "complete an instant after the bootstrap's saved one, then the next notification be "
        "lost and the job manager crash before a checkpoint completes; the search draws that "
        "sequence too rarely"
    ),
}
"""Variants the search does not reach on a moved load yet, and why (strict: a catch fails)."""


def _with_known_misses(names: list[str]) -> list[Any]:
    return [
        pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=ELSEWHERE_MISSES[n]))
        if n in ELSEWHERE_MISSES
        else n
        for n in names
    ]


@pytest.mark.slow
@pytest.mark.parametrize("name", _with_known_misses(VARIANTS))
def test_explore_catches_every_known_bad_variant_elsewhere(name, tmp_path):
    """Through the command line, one process per variant; a counterexample that replays to
    the same violation (exit 0).

    Measured (examples to the first catch, 2026-11-26): 1 to 3 for archived_completion_miss,
    base_instant_slicing, commit_latest_only, cow_async_upsert, local_clock_skew,
    occ_contention, partial_update_row_merge, release_1_1_blocked_instant_requests,
    reset_waits_for_notification, task_state_lost, timeline_overwrite and
    truetime_bound_too_small; uncommitted_log_anchor 16, release_1_1_rescale and
    rescale_restored_id 31, minibatch_insert and minibatch_upsert 37, occ_recommit_baseline 44,
    blocked_instant_requests 45, duplicate_bucket_file_id and release_1_1_duplicate_file_id 55,
    deferred_recommit_lost 165; the findings occ_cow_low 1, paused_coordinator_rolled_back 9,
    rescale_down_lost_events 53. About 35 min of wall time on 2 cores for the 28. Measured
    later (2026-11-27): flink_state_ttl 2, flink_state_lost 5, release_1_1_write_errors 7; with
    the faults anchored to protocol steps (``restore_crash``, ``taskmanager_pause``) in their
    catalog scenarios: restart_before_bootstrap 22, partial_buffer_snapshot and
    release_1_1_partial_buffers 96 (the same search: the switch is the release's); the marker
    variants on the object-store profile: marker_answer_before_write 8 (marker_flush_swallowed:
    :data:`ELSEWHERE_MISSES`); the index's later ones: flink_state_ttl_not_refreshed 2,
    non_global_index_moving_keys 2, the finding global_index_bootstrap_deleted_copy 22; then
    (2026-11-28) early_conflict_zombie_as_live 3."""
    source = tmp_path / f"{name}_elsewhere.toml"
    source.write_text(tomli_w.dumps(elsewhere(name)))
    summary = explore_cli(source, tmp_path / "search", examples=EXAMPLES, shrink_runs=60)
    assert summary["found"] and not summary["error"]
    assert summary["examples"] <= EXAMPLES
    expected = load_scenario(source).expect.violations
    assert set(summary["violated"]) & set(expected)
    print(f"{name}: caught after {summary['examples']} examples ({summary['runs']} runs)")
