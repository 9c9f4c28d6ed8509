"""The bundled catalog: every file loads, is named after its file, and stays small enough to run
in seconds (the suite runs all of them before every protocol change), except the few tagged
``large``, which no default run simulates (they are only loaded here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios import catalog, catalog_dir, load_scenario, parse_scenario, resolved_toml
from scenarios.schema import FINDING_TAG, LARGE_TAG, ProtocolSpec

FILES = catalog()
SMALL = [path for path in FILES if LARGE_TAG not in load_scenario(path).scenario.tags]
LARGE = {"large_table"}

SECONDS_PER_DAY = 24 * 60 * 60

EXPECTED = {
    "async_baseline": (),
    "async_lost_acks": (),
    "duplicate_acks": (),
    "blocking_stalls": (),
    "blocking_stalls_heavy": (),
    "async_heavy": (),
    "minibatch_upsert": ("exactly_once",),
    "minibatch_insert": ("exactly_once", "no_data_loss"),
    "base_instant_slicing": ("no_data_loss", "slicing", "merge_convergence"),
    "local_clock_skew": ("instant_unique", "instant_monotonic", "commit_order"),
    "truetime_bound_too_small": ("instant_monotonic", "completion_after_request", "commit_order"),
    "nbcc_two_jobs": (),
    "cow_blocking": (),
    "cow_blocking_lost_acks": (),
    "paused_coordinator_region_failover": (),
    "global_failover_queued_events": (),
    "occ_insert_late_acks": (),
    "rescale_down_lost_events": ("exactly_once", "no_data_loss"),
    "commit_time_ordering": (),
    "cow_blocking_idle_writer": (),
    "cow_mini_batches": (),
    "paused_coordinator_heartbeat": (),
    "coordinator_failover": (),
    "storage_failures": (),
    "commit_latest_only": ("exactly_once", "no_data_loss"),
    "task_state_lost": ("exactly_once", "no_data_loss"),
    "partial_buffer_snapshot": ("exactly_once", "no_data_loss"),
    "release_1_1_partial_buffers": ("exactly_once", "no_data_loss", "failed_writes_rolled_back"),
    "paused_coordinator_rolled_back": (
        "exactly_once",
        "liveness",
        "no_data_loss",
        "no_orphan_files",
    ),
    "duplicate_bucket_file_id": ("liveness", "merge_convergence", "no_data_loss", "unique_key"),
    "marker_answer_before_write": ("no_orphan_files",),
    "early_conflict_zombie_as_live": ("liveness",),
    "append_never_cleans": ("failed_writes_rolled_back",),
    "marker_flush_failures": (),
    "marker_flush_swallowed": ("no_orphan_files",),
    "blocked_instant_requests": ("liveness",),
    "release_1_1_blocked_instant_requests": ("liveness",),
    "truetime_instant_ceiling": (),
    "release_1_1_duplicate_file_id": (
        "liveness",
        "merge_convergence",
        "no_data_loss",
        "no_orphan_files",
        "no_uncommitted_read",
    ),
    "timeline_overwrite": (
        "instant_unique",
        "instant_monotonic",
        "commit_order",
        "exactly_once",
        "no_data_loss",
    ),
    "uncommitted_log_anchor": ("no_data_loss", "slicing"),
    "archived_completion_miss": ("no_data_loss", "slicing"),
    "cow_async_upsert": ("no_data_loss", "merge_convergence"),
    "occ_contention": ("exactly_once", "liveness"),
    "partial_updates_two_streams": (),
    "partial_update_row_merge": ("no_data_loss", "merge_convergence"),
    "large_table": (),
    "reset_waits_for_notification": ("exactly_once", "liveness", "no_data_loss"),
    "rescale_deferred_recommit": (),
    "deferred_recommit_lost": ("exactly_once", "no_data_loss"),
    "rescale_restored_id": ("exactly_once", "no_data_loss"),
    "release_1_1_rescale": ("exactly_once", "liveness", "no_data_loss"),
    "release_1_1_write_errors": ("exactly_once", "liveness", "no_data_loss"),
    "release_1_1_rolled_back_insert": ("exactly_once", "liveness", "no_data_loss"),
    "object_store_faults": (),
    "write_errors": (),
    "timeline_server_markers": (),
    "restart_before_bootstrap": ("exactly_once", "no_data_loss"),
    "occ_recommit_baseline": ("exactly_once", "liveness", "no_data_loss"),
    "pending_compaction_reads": (),
    "late_last_notification": (),
    "heavy_late_ack": (),
    "flink_state_bootstrap": (),
    "flink_state_cow": (),
    "bucket_index_cow": (),
    "flink_state_lost": ("merge_convergence", "no_data_loss", "unique_key"),
    "flink_state_ttl": ("merge_convergence", "no_data_loss", "unique_key"),
    "flink_state_ttl_refreshed": (),
    "flink_state_ttl_not_refreshed": ("merge_convergence", "no_data_loss", "unique_key"),
    "global_index_moving_keys": (),
    "global_index_bootstrap_after_recommit": (),
    "global_index_bootstrap_late_notification": (),
    "global_index_bootstrap_jm_failover": (),
    "global_index_bootstrap_jm_late_commit": ("merge_convergence", "no_data_loss", "unique_key"),
    "global_index_bootstrap_deleted_copy": ("merge_convergence", "no_data_loss", "unique_key"),
    "global_index_moving_keys_cow": (),
    "early_conflict_own_instant": ("exactly_once", "liveness", "no_data_loss"),
    "early_conflict_late_acks": (),
    "early_conflict_server_latch": ("liveness",),
    "global_index_moving_keys_mini_batches": (),
    "non_global_index_moving_keys": ("merge_convergence", "no_data_loss", "unique_key"),
    "occ_contention_early_detection": ("exactly_once", "liveness", "no_data_loss"),
    "occ_cow_low": (
        "exactly_once",
        "liveness",
        "merge_convergence",
        "no_data_loss",
        "unique_key",
    ),
}


def test_catalog_is_sorted_and_complete() -> None:
    assert catalog_dir().is_dir()
    assert sorted(FILES) == FILES
    assert {path.stem for path in FILES} == set(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_catalog_file_loads_and_is_named_after_its_file(path: Path) -> None:
    scenario = load_scenario(path)
    assert scenario.scenario.name == path.stem
    assert scenario.scenario.description.strip()
    assert scenario.expect.violations == EXPECTED[path.stem]
    assert parse_scenario(resolved_toml(scenario)) == scenario


def test_only_the_large_scenarios_are_tagged_large() -> None:
    assert {path.stem for path in FILES} - {path.stem for path in SMALL} == LARGE
    for stem in LARGE:  # millions of records on local storage: what `testbed verify` is for
        scenario = load_scenario(catalog_dir() / f"{stem}.toml")
        emitted = sum(j.records_per_s for j in scenario.jobs) * scenario.scenario.duration_s
        assert emitted >= 2_000_000 and scenario.table.storage == "local", stem


@pytest.mark.parametrize("path", SMALL, ids=[path.stem for path in SMALL])
def test_catalog_file_is_small(path: Path) -> None:
    scenario = load_scenario(path)
    assert 60 <= scenario.scenario.duration_s <= 300
    for job in scenario.jobs:
        assert 2 <= job.writers <= 4
        assert 200 <= job.records_per_s <= 2000
        assert (
            1000 <= job.key_space <= 200_000
        )  # large enough that later updates do not mask a loss


def test_names_are_unique() -> None:
    names = [load_scenario(path).scenario.name for path in FILES]
    assert len(names) == len(set(names))


def test_known_bad_variants_are_the_ones_expected_to_fail() -> None:
    """A scenario that switches a protocol variant away from the real rule must expect a
    violation, and one on the real rules with nothing known-bad must expect none."""
    for path in FILES:
        scenario = load_scenario(path)
        real_rules = ProtocolSpec(failed_writes_cleaning=scenario.protocol.failed_writes_cleaning)
        # a job started without its state (index_state = "lost") whose index bootstrap reloads
        # the table's keys: Hudi's remedy, not a known-bad rule
        state_jobs = [job for job in scenario.jobs if job.index == "flink_state"]
        if state_jobs and all(job.index_bootstrap for job in state_jobs):
            real_rules = real_rules.model_copy(
                update={"index_state": scenario.protocol.index_state}
            )
        bad_protocol = (
            scenario.protocol != real_rules
            # an index state TTL below the mean time between a key's records expires entries
            # the job still uses (apache/hudi#4508)
            or any(
                0 < job.index_state_ttl_days * SECONDS_PER_DAY < job.key_space / job.records_per_s
                for job in scenario.jobs
            )
            or scenario.time.generator == "local_clock"
            # offsets are drawn per process, so two clocks can be 2 * clock_skew_ms apart
            or (
                scenario.time.generator == "truetime"
                and scenario.time.max_expected_skew_ms < 2 * scenario.time.clock_skew_ms
            )
            or any(
                job.instant_generation == "minibatch"  # at-least-once: inserts and upserts
                # Hudi 1.1 keeps COPY_ON_WRITE upserts blocking: async loses updates
                or (
                    scenario.table.type == "COPY_ON_WRITE"
                    and job.operation == "upsert"
                    and job.instant_generation == "async"
                )
                for job in scenario.jobs
            )
            # OCC between Flink jobs on the same file groups: a conflict fails a job over and
            # its recommit conflicts again for good (apache/hudi#19046)
            or sum(job.concurrency == "occ" for job in scenario.jobs) > 1
            # keys that change partition under an index that keeps the old copy (non-global)
            or any(
                job.partition_period_s and not (job.index == "flink_state" and job.index_global)
                for job in scenario.jobs
            )
            # a hazard the testbed found in Hudi's own rules
            or FINDING_TAG in scenario.scenario.tags
        )
        assert bool(scenario.expect.violations) == bad_protocol, path.stem
