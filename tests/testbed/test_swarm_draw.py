"""``testbed swarm``'s draws: valid scenarios inside the documented bounds, the same for the same
seed, and every feature both on and off across seeds (swarm testing)."""

from __future__ import annotations

from collections import defaultdict

from scenarios.schema import resolved_toml
from testbed.swarm import swarm_scenario
from testbed.swarm_draw import (
    CHECKPOINT_INTERVAL_HALF_S,
    DURATION_S,
    JOBS_AT_MOST,
    swarm_parameters,
)

SEEDS = range(300)


def test_a_seed_always_draws_the_same_scenario():
    assert resolved_toml(swarm_scenario(7)) == resolved_toml(swarm_scenario(7))
    assert resolved_toml(swarm_scenario(7)) != resolved_toml(swarm_scenario(8))


def test_every_draw_is_a_valid_scenario_on_hudis_real_rules():
    for seed in SEEDS:
        scenario = swarm_scenario(seed)
        assert scenario.scenario.seed == seed and scenario.scenario.name == f"swarm_{seed}"
        assert scenario.protocol.release == "latest" and not scenario.expect.violations
        assert DURATION_S[0] <= scenario.scenario.duration_s <= DURATION_S[1]


def test_draws_stay_inside_the_supported_configurations():
    for seed in SEEDS:
        scenario = swarm_scenario(seed)
        jobs, time = scenario.jobs, scenario.time
        assert 1 <= len(jobs) <= JOBS_AT_MOST
        assert time.generator == "truetime"
        assert 4 * time.clock_skew_ms <= time.max_expected_skew_ms
        assert 8 * scenario.faults.clock_jump_ms <= time.max_expected_skew_ms or not (
            scenario.faults.clock_jump_per_hour
        )
        if scenario.table.type == "COPY_ON_WRITE":
            assert len(jobs) == 1
            if jobs[0].operation == "upsert":
                assert jobs[0].instant_generation == "blocking"
        if len(jobs) > 1:
            assert scenario.table.type == "MERGE_ON_READ"
            assert {job.concurrency for job in jobs} == {"nbcc"}
            assert len({job.operation for job in jobs}) == 1
        for job in jobs:
            assert job.instant_generation in ("async", "blocking")
            low, high = CHECKPOINT_INTERVAL_HALF_S
            assert low / 2 <= job.checkpoint_interval_s <= high / 2
        tolerance_ms = scenario.sim.heartbeat_interval_ms * scenario.sim.heartbeat_tolerable_misses
        assert tolerance_ms >= 20_000
        for entry in scenario.faults.schedule:
            if entry.kind == "pause":
                assert 2 * entry.option("duration_ms") <= tolerance_ms
            if entry.kind == "rescale":
                (job,) = [j for j in jobs if j.name == entry.target]
                assert entry.option("writers") >= job.writers
        assert all(job.checkpoint_timeout_s >= 30 for job in jobs)
        for job in jobs:  # Flink's state index: a lone upsert job, never a TTL nor the finding
            if job.index == "flink_state":
                assert len(jobs) == 1 and job.operation == "upsert"
                assert job.index_global and not job.index_state_ttl_days
                mor = scenario.table.type == "MERGE_ON_READ"
                assert not (mor and job.index_bootstrap and job.partition_period_s)
            else:
                assert not job.partition_period_s
            if job.early_conflict_detection:  # a lone OCC log writer, failing over in full
                assert len(jobs) == 1 and job.concurrency == "occ" and job.failover == "full"
                assert scenario.table.type == "MERGE_ON_READ"
                assert scenario.table.markers == "direct"
                tolerance_s = 2 * scenario.sim.heartbeat_interval_ms / 1000
                assert scenario.sim.drain_timeout_s >= 120 + tolerance_s


def test_every_feature_is_switched_both_ways_across_seeds():
    seen: dict[str, set[str]] = defaultdict(set)
    for seed in SEEDS:
        for name, value in swarm_parameters(swarm_scenario(seed)).items():
            seen[name].add(value)
    job0 = {name: values for name, values in seen.items() if not name.startswith("job")}
    assert all(len(values) >= 2 for values in job0.values()), job0
    assert {"1", "2", "3"} <= seen["jobs"]
    for name in ("job0.instant_generation", "job0.operation", "job0.concurrency", "job0.index"):
        assert len(seen[name]) == 2, name
    for name in (
        "job0.index_bootstrap",
        "job0.small_files",
        "job0.partition_moves",
        "job0.early_conflict_detection",
    ):
        assert seen[name] == {"on", "off"}, name
