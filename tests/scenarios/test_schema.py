"""The scenario format's contract: defaults, one-line errors naming file + key + allowed values,
the rules across jobs, CLI overrides, and resolved TOML that reads back to an equal scenario."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, get_args

import pytest
import tomli_w
from hypothesis import example, given
from hypothesis import strategies as st

from faults import fault_kind
from scenarios import (
    INVARIANTS,
    PROTOCOL_VARIANTS,
    JobSpec,
    ProtocolSpec,
    Scenario,
    ScenarioError,
    ScenarioInfo,
    load_scenario,
    parse_scenario,
    resolved_toml,
    scenario_from_dict,
)
from scenarios.releases import RELEASES
from scenarios.schema import FAULT_KINDS, ScheduledFault, fault_targets

MINIMAL = '[scenario]\nname = "s"\n'
DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"

# the public contract, written out by hand (not derived from the schema) so a changed default
# is a failing test, not a silent change to users' scenarios
DEFAULTS: dict[str, Any] = {
    "scenario.description": "",
    "scenario.duration_s": 60,
    "scenario.seed": 0,
    "scenario.tags": (),
    "table.type": "MERGE_ON_READ",
    "table.storage": "memory",
    "table.storage_profile": "local",
    "table.markers": "direct",
    "table.marker_batch_interval_ms": 50,
    "table.marker_batch_threads": 20,
    "table.partitions": 2,
    "table.buckets_per_partition": 4,
    "table.merge_mode": "EVENT_TIME_ORDERING",
    "time.generator": "truetime",
    "time.max_expected_skew_ms": 200,
    "time.clock_skew_ms": 50,
    "time.clock_drift_ppm": 0,
    "time.lock_latency_ms": 5,
    "jobs.name": "job0",
    "jobs.writers": 4,
    "jobs.instant_generation": "async",
    "jobs.checkpoint_interval_s": 5,
    "jobs.checkpoint_timeout_s": 60,
    "jobs.commit_ack_timeout_s": 300,
    "jobs.records_per_s": 1000,
    "jobs.write_batch_size_mb": 256,
    "jobs.write_task_max_size_mb": 1024,
    "jobs.write_merge_max_memory_mb": 100,
    "jobs.write_memory_segment_page_size_bytes": 32768,
    "jobs.record_payload_bytes": 0,
    "jobs.allow_empty_commit": True,
    "jobs.write_ignore_failed": False,
    "jobs.buffer_records": 0,
    "jobs.operation": "upsert",
    "jobs.key_space": 10000,
    "jobs.table_services": True,
    "jobs.clean_operator": True,
    "jobs.compaction_every_commits": 5,
    "jobs.concurrency": "nbcc",
    "jobs.early_conflict_detection": False,
    "jobs.async_conflict_detector_period_ms": 30000,
    "jobs.index": "bucket",
    "jobs.index_bootstrap": False,
    "jobs.index_state_ttl_days": 0.0,
    "jobs.index_global": True,
    "jobs.partition_period_s": 0.0,
    "jobs.parquet_max_file_size_mb": 120.0,
    "jobs.failover": "region",
    "jobs.columns": (),
    "jobs.ordering_field": "",
    "faults.ack_loss": 0,
    "faults.ack_delay_ms": 0,
    "faults.checkpoint_failure": 0,
    "faults.writer_crash_per_hour": 0,
    "faults.coordinator_crash_per_hour": 0,
    "faults.storage_write_failure": 0,
    "faults.ack_duplicate": 0,
    "faults.clock_jump_per_hour": 0,
    "faults.clock_jump_ms": 1000,
    "faults.rescale_per_hour": 0,
    "faults.rescale_max_writers": 8,
    "faults.pause_per_hour": 0,
    "faults.writer_pause_per_hour": 0,
    "faults.pause_max_ms": 2000,
    "faults.write_error_per_hour": 0,
    "faults.restore_crash_per_hour": 0,
    "faults.taskmanager_pause_per_hour": 0,
    "faults.schedule": (),
    "protocol.release": "latest",
    "protocol.file_slicing": "completion_time",
    "protocol.slice_anchor": "earliest_completed",
    "protocol.archived_completion_lookup": True,
    "protocol.persist_write_meta": True,
    "protocol.put_if_absent": True,
    "protocol.commit_scope": "all_below",
    "protocol.snapshot_partial_buffers": False,
    "protocol.reset_recommit": "immediate",
    "protocol.restored_checkpoint_id": "always",
    "protocol.restored_events_resend": "attempt_0",
    "protocol.recommit_baseline": "job",
    "protocol.checkpoint_deferred_recommits": True,
    "protocol.pending_file_ids": "adopted",
    "protocol.index_state": "restored",
    "protocol.index_state_refresh": "every_record",
    "protocol.index_bootstrap_deletes": "loaded",
    "protocol.index_bootstrap_reads": "at_deploy",
    "protocol.instant_request": "polled",
    "protocol.record_write_failure": "throw",
    "protocol.partial_update_merge": "column_group",
    "protocol.marker_write_failure": "fail",
    "protocol.marker_answer": "after_write",
    "protocol.early_conflict_heartbeats": "expired_skipped",
    "protocol.append_clean": "write_config",
    "protocol.failed_writes_cleaning": "LAZY",  # "auto" resolved for one async job
    "expect.violations": (),
    "sim.drain_timeout_s": 120,
    "sim.restart_delay_ms": 1000,
    "sim.network_delay_ms": 2,
    "sim.rpc_ask_timeout_ms": 10000,
    "sim.storage_latency_ms": 5,
    "sim.heartbeat_interval_ms": 60000,
    "sim.heartbeat_tolerable_misses": 2,
    "sim.archive_max_active": 30,
    "sim.archive_min_active": 20,
    "sim.max_wall_s": 3600.0,
}


def value_at(scenario: Scenario, dotted: str) -> Any:
    table, key = dotted.split(".")
    section = scenario.jobs[0] if table == "jobs" else getattr(scenario, table)
    return getattr(section, key)


def error_of(text: str, **overrides: Any) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, "f.toml", **overrides)
    return caught.value


def assert_one_line(error: ScenarioError, key: str, allowed: str) -> None:
    """The contract of every error: ``<file>: <key>: <problem> (allowed: <...>)``, one line."""
    text = str(error)
    assert "\n" not in text
    assert error.source == "f.toml"
    assert error.key == key
    assert allowed in error.allowed
    assert text.startswith(f"f.toml: {key}: ")
    assert text.endswith(f"(allowed: {error.allowed})")


# ---------------------------------------------------------------------------------------------
# defaults


@pytest.mark.parametrize("dotted", sorted(DEFAULTS))
def test_default(dotted: str) -> None:
    assert value_at(parse_scenario(MINIMAL), dotted) == DEFAULTS[dotted]


def test_every_key_has_a_documented_default() -> None:
    schema_keys = {
        f"{table}.{key}"
        for table, field in Scenario.model_fields.items()
        for key in getattr(
            field.annotation, "model_fields", JobSpec.model_fields if table == "jobs" else {}
        )
    }
    assert schema_keys - {"scenario.name"} == set(DEFAULTS)


def test_docs_name_every_key() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    for dotted in [*DEFAULTS, "scenario.name"]:
        table, key = dotted.split(".")
        assert f"`{key}`" in docs, dotted
        assert f"[{table}]" in docs, table


def test_default_job_names_and_table_services_go_by_position() -> None:
    scenario = parse_scenario(MINIMAL + "[[jobs]]\n[[jobs]]\n[[jobs]]\n")
    assert [job.name for job in scenario.jobs] == ["job0", "job1", "job2"]
    assert [job.table_services for job in scenario.jobs] == [True, False, False]
    assert scenario.protocol.failed_writes_cleaning == "LAZY"


def test_table_services_set_on_a_later_job_moves_them_there() -> None:
    scenario = parse_scenario(MINIMAL + "[[jobs]]\n[[jobs]]\ntable_services = true\n")
    assert [job.table_services for job in scenario.jobs] == [False, True]


def test_no_job_may_run_table_services() -> None:
    scenario = parse_scenario(MINIMAL + "[[jobs]]\ntable_services = false\n[[jobs]]\n")
    assert [job.table_services for job in scenario.jobs] == [False, False]


def test_clean_operator_needs_table_services() -> None:
    error = error_of(f"{MINIMAL}[[jobs]]\ntable_services = false\nclean_operator = true\n")
    assert_one_line(error, "jobs[0].clean_operator", "table_services = true")


def test_numbers_accept_integers_and_store_floats() -> None:
    scenario = parse_scenario('[scenario]\nname = "s"\nduration_s = 90\n')
    assert scenario.scenario.duration_s == 90.0
    assert isinstance(scenario.scenario.duration_s, float)


def test_scenarios_built_in_python_get_the_same_defaults() -> None:
    scenario = Scenario(scenario=ScenarioInfo(name="s"), jobs=(JobSpec(), JobSpec(writers=2)))
    assert [job.name for job in scenario.jobs] == ["job0", "job1"]
    assert [job.table_services for job in scenario.jobs] == [True, False]
    assert scenario.protocol.failed_writes_cleaning == "LAZY"
    assert scenario == parse_scenario(MINIMAL + "[[jobs]]\n[[jobs]]\nwriters = 2\n")


def test_scenario_is_frozen_and_hashable() -> None:
    scenario = parse_scenario(MINIMAL)
    with pytest.raises(ValueError, match="frozen"):
        scenario.scenario.seed = 3  # type: ignore[misc]
    assert hash(scenario) == hash(parse_scenario(MINIMAL))


def test_protocol_variants_default_to_the_real_rule() -> None:
    assert PROTOCOL_VARIANTS == {
        "file_slicing": ("completion_time", "base_instant"),
        "slice_anchor": ("earliest_completed", "earliest_log"),
        "archived_completion_lookup": (True, False),
        "persist_write_meta": (True, False),
        "put_if_absent": (True, False),
        "commit_scope": ("all_below", "latest_only"),
        "snapshot_partial_buffers": (False, True),
        "reset_recommit": ("immediate", "next_notification"),
        "restored_checkpoint_id": ("always", "attempt_gt_0"),
        "restored_events_resend": ("attempt_0", "every_attempt"),
        "recommit_baseline": ("job", "coordinator"),
        "checkpoint_deferred_recommits": (True, False),
        "pending_file_ids": ("adopted", "ignored"),
        "index_state": ("restored", "lost"),
        "index_state_refresh": ("every_record", "location_change"),
        "index_bootstrap_deletes": ("loaded", "skipped"),
        "index_bootstrap_reads": ("at_deploy", "after_recommit"),
        "instant_request": ("polled", "blocked"),
        "record_write_failure": ("throw", "mark"),
        "partial_update_merge": ("column_group", "row"),
        "marker_write_failure": ("fail", "swallow"),
        "marker_answer": ("after_write", "before_write"),
        "early_conflict_heartbeats": ("expired_skipped", "expired_as_live"),
        "append_clean": ("write_config", "flink_conf"),
        "failed_writes_cleaning": ("auto", "EAGER", "LAZY"),
    }
    for name, choices in PROTOCOL_VARIANTS.items():
        assert getattr(ProtocolSpec(), name) == choices[0]


# ---------------------------------------------------------------------------------------------
# one-line errors

BAD_VALUES = [
    # (table, TOML line, key, part of allowed)
    ("scenario", 'name = ""', "scenario.name", "letters, digits"),
    ("scenario", 'name = "../../etc/evil"', "scenario.name", "letters, digits"),
    ("scenario", 'name = ".hidden"', "scenario.name", "letters, digits"),
    ("scenario", "name = 3", "scenario.name", "a string"),
    ("scenario", "duration_s = 1e12", "scenario.duration_s", "number > 0 and <= 86400"),
    (
        "scenario",
        "seed = 9223372036854775808",
        "scenario.seed",
        "integer in [0, 9223372036854775807]",
    ),
    ("scenario", "duration_s = 0", "scenario.duration_s", "number > 0 and <= "),
    ("scenario", "duration_s = -5.5", "scenario.duration_s", "number > 0 and <= "),
    ("scenario", "duration_s = nan", "scenario.duration_s", "number > 0 and <= "),
    ("scenario", "duration_s = inf", "scenario.duration_s", "number > 0 and <= "),
    ("scenario", 'duration_s = "60"', "scenario.duration_s", "number > 0 and <= "),
    ("scenario", "seed = -1", "scenario.seed", "integer in [0, "),
    ("scenario", "seed = 1.5", "scenario.seed", "integer in [0, "),
    ("scenario", "seed = true", "scenario.seed", "integer in [0, "),
    ("table", 'type = "MOR"', "table.type", "MERGE_ON_READ, COPY_ON_WRITE"),
    ("table", 'storage = "s3"', "table.storage", "memory, local"),
    ("table", "partitions = 0", "table.partitions", "integer in [1, "),
    ("table", "buckets_per_partition = 0", "table.buckets_per_partition", "integer in [1, "),
    ("table", 'merge_mode = "x"', "table.merge_mode", "EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING"),
    ("time", 'generator = "ntp"', "time.generator", "truetime, local_clock, time_service"),
    ("time", "max_expected_skew_ms = -1", "time.max_expected_skew_ms", "integer in [0, "),
    ("time", "clock_skew_ms = 0.5", "time.clock_skew_ms", "integer in [0, "),
    ("time", "clock_drift_ppm = -1", "time.clock_drift_ppm", "number in [0, "),
    ("time", "lock_latency_ms = -1", "time.lock_latency_ms", "integer in [0, "),
    ("faults", "ack_loss = 1.5", "faults.ack_loss", "number in [0, 1]"),
    ("faults", 'ack_loss = "0.5"', "faults.ack_loss", "number in [0, 1]"),
    ("faults", "ack_delay_ms = -1", "faults.ack_delay_ms", "integer in [0, "),
    ("faults", "checkpoint_failure = -0.1", "faults.checkpoint_failure", "number in [0, 1]"),
    ("faults", "writer_crash_per_hour = -1", "faults.writer_crash_per_hour", "number in [0, "),
    (
        "faults",
        "coordinator_crash_per_hour = nan",
        "faults.coordinator_crash_per_hour",
        "number in [0, ",
    ),
    ("faults", "storage_write_failure = 2", "faults.storage_write_failure", "number in [0, 1]"),
    ("faults", "ack_duplicate = 1.1", "faults.ack_duplicate", "number in [0, 1]"),
    ("faults", "clock_jump_per_hour = -1", "faults.clock_jump_per_hour", "number in [0, "),
    ("faults", "clock_jump_ms = 1.5", "faults.clock_jump_ms", "integer in [0, "),
    ("faults", "rescale_per_hour = -1", "faults.rescale_per_hour", "number in [0, "),
    ("faults", "rescale_max_writers = 0", "faults.rescale_max_writers", "integer in [1, 256]"),
    ("faults", "pause_per_hour = -1", "faults.pause_per_hour", "number in [0, "),
    ("faults", "pause_max_ms = 0", "faults.pause_max_ms", "integer in [1, "),
    ("faults", "schedule = 3", "faults.schedule", "one or more [[faults.schedule]] tables"),
    ("protocol", 'file_slicing = "x"', "protocol.file_slicing", "completion_time, base_instant"),
    ("protocol", 'slice_anchor = "x"', "protocol.slice_anchor", "earliest_completed, earliest_log"),
    (
        "protocol",
        'archived_completion_lookup = "x"',
        "protocol.archived_completion_lookup",
        "true, false",
    ),
    ("protocol", "persist_write_meta = 1", "protocol.persist_write_meta", "true, false"),
    ("protocol", 'put_if_absent = "no"', "protocol.put_if_absent", "true, false"),
    ("protocol", 'commit_scope = "all"', "protocol.commit_scope", "all_below, latest_only"),
    (
        "protocol",
        "snapshot_partial_buffers = 0",
        "protocol.snapshot_partial_buffers",
        "true, false",
    ),
    ("protocol", 'failed_writes_cleaning = "lazy"', "protocol.failed_writes_cleaning", "LAZY"),
    ("expect", 'violations = ["nope"]', "expect.violations[0]", ", ".join(INVARIANTS)),
    ("expect", "violations = [1]", "expect.violations[0]", "exactly_once"),
    ("expect", 'violations = "liveness"', "expect.violations", "an array of"),
    ("expect", 'violations = ["liveness", "liveness"]', "expect.violations[1]", "at most once"),
    ("sim", "drain_timeout_s = 0", "sim.drain_timeout_s", "number > 0 and <= "),
    ("sim", "restart_delay_ms = -1", "sim.restart_delay_ms", "integer in [0, "),
    ("sim", "network_delay_ms = -1", "sim.network_delay_ms", "integer in [0, "),
    ("sim", "rpc_ask_timeout_ms = 0", "sim.rpc_ask_timeout_ms", "integer in [1, "),
    ("sim", "storage_latency_ms = -1", "sim.storage_latency_ms", "integer in [0, "),
    ("sim", "heartbeat_interval_ms = 0", "sim.heartbeat_interval_ms", "integer in [1, "),
    ("sim", "heartbeat_tolerable_misses = 0", "sim.heartbeat_tolerable_misses", "integer in [1, "),
    ("sim", "archive_min_active = 30", "sim.archive_min_active", "< archive_max_active (30)"),
    ("sim", "archive_max_active = 10", "sim.archive_min_active", "< archive_max_active (10)"),
]


@pytest.mark.parametrize(("table", "line", "key", "allowed"), BAD_VALUES)
def test_bad_value(table: str, line: str, key: str, allowed: str) -> None:
    if table == "scenario":
        body = f"[scenario]\n{line}\n" if line.startswith("name") else f"{MINIMAL}{line}\n"
    else:
        body = f"{MINIMAL}[{table}]\n{line}\n"
    assert_one_line(error_of(body), key, allowed)


JOB_BAD_VALUES = [
    ('name = ""', "name", "non-empty name"),
    ("writers = 0", "writers", "integer in [1, "),
    ('instant_generation = "sync"', "instant_generation", "async, blocking, minibatch"),
    ("checkpoint_interval_s = 0", "checkpoint_interval_s", "number in [0.01, 3600]"),
    ("checkpoint_timeout_s = -1", "checkpoint_timeout_s", "number in [0.01, 86400]"),
    ("records_per_s = 0", "records_per_s", "number > 0 and <= "),
    ("buffer_records = -1", "buffer_records", "integer in [0, "),
    ("write_batch_size_mb = 0", "write_batch_size_mb", "number > 0 and <= "),
    ("write_task_max_size_mb = 200", "write_task_max_size_mb", "a number >= 200.094"),
    ("write_memory_segment_page_size_bytes = 8", "write_memory_segment_page_size_bytes", "[16, "),
    ("record_payload_bytes = -1", "record_payload_bytes", "integer in [0, "),
    ('operation = "delete"', "operation", "upsert, insert"),
    ("key_space = 0", "key_space", "integer in [1, "),
    ('table_services = "yes"', "table_services", "true, false"),
    ("compaction_every_commits = 0", "compaction_every_commits", "integer in [1, "),
    ('concurrency = "lock"', "concurrency", "nbcc, occ"),
]


@pytest.mark.parametrize(("line", "key", "allowed"), JOB_BAD_VALUES)
def test_bad_job_value_names_the_job_by_position(line: str, key: str, allowed: str) -> None:
    body = f'{MINIMAL}[[jobs]]\nconcurrency = "occ"\n[[jobs]]\n{line}\n'
    if key == "concurrency":
        body = f"{MINIMAL}[[jobs]]\n[[jobs]]\n{line}\n"
    assert_one_line(error_of(body), f"jobs[1].{key}", allowed)


def test_enum_error_reads_well() -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\n[[jobs]]\ninstant_generation = "sync"\n')
    assert str(error) == (
        'f.toml: jobs[1].instant_generation: unknown value "sync" '
        "(allowed: async, blocking, minibatch)"
    )


@pytest.mark.parametrize(
    ("table", "header"),
    [
        ("scenario", "[scenario]"),
        ("table", "[table]"),
        ("time", "[time]"),
        ("jobs[0]", "[[jobs]]"),
        ("faults", "[faults]"),
        ("protocol", "[protocol]"),
        ("expect", "[expect]"),
        ("sim", "[sim]"),
    ],
)
def test_unknown_key_lists_the_tables_keys(table: str, header: str) -> None:
    body = (
        f'{header}\nname = "s"\ncolour = 1\n'
        if table == "scenario"
        else f"{MINIMAL}{header}\ncolour = 1\n"
    )
    error = error_of(body)
    model = JobSpec if table == "jobs[0]" else Scenario.model_fields[table].annotation
    assert_one_line(error, f"{table}.colour", ", ".join(model.model_fields))
    assert 'unknown key "colour"' in str(error)


@pytest.mark.parametrize(
    ("option", "value"), [("index_bootstrap", "true"), ("index_state_ttl_days", "1.5")]
)
def test_state_index_options_need_the_flink_state_index(option: str, value: str) -> None:
    error = error_of(f"{MINIMAL}[[jobs]]\n[[jobs]]\n{option} = {value}\n")
    assert_one_line(error, f"jobs[1].{option}", 'index = "flink_state"')
    body = f'{MINIMAL}[[jobs]]\nindex = "flink_state"\n{option} = {value}\n'
    assert getattr(parse_scenario(body).jobs[0], option)


def test_only_whole_record_upserts_move_keys_between_partitions() -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\noperation = "insert"\npartition_period_s = 10\n')
    assert_one_line(error, "jobs[0].partition_period_s", 'operation = "upsert"')
    moving = parse_scenario(f"{MINIMAL}[[jobs]]\npartition_period_s = 10\n").jobs[0]
    assert (moving.partition_period_s, moving.index_global) == (10, True)


def test_early_conflict_detection_needs_occ() -> None:
    error = error_of(f"{MINIMAL}[[jobs]]\nearly_conflict_detection = true\n")
    assert_one_line(error, "jobs[0].early_conflict_detection", 'concurrency = "occ"')
    occ = '[[jobs]]\nconcurrency = "occ"\nearly_conflict_detection = true\n'
    for markers in ("direct", "timeline_server"):  # each with its strategy
        body = f'{MINIMAL}[table]\nmarkers = "{markers}"\n{occ}'
        assert parse_scenario(body).jobs[0].early_conflict_detection


def test_misspelt_key_is_an_error_not_a_default() -> None:
    error = error_of(f"{MINIMAL}[faults]\nack_los = 0.3\n")
    assert error.key == "faults.ack_los"
    assert "ack_loss" in error.allowed


def test_unknown_table() -> None:
    error = error_of(f"{MINIMAL}[fault]\nack_loss = 0.3\n")
    assert_one_line(error, "fault", "scenario, table, time, jobs, faults, protocol, expect, sim")
    assert "unknown table [fault]" in str(error)


@pytest.mark.parametrize(
    ("body", "key", "problem"),
    [
        ("[table]\n", "scenario", "required table is missing"),
        ("[scenario]\n", "scenario.name", "required key is missing"),
        ("scenario = 5\n", "scenario", "expected a table, got 5"),
        ('[[scenario]]\nname = "s"\n', "scenario", "expected a table, got an array"),
        (f"{MINIMAL}[jobs]\nwriters = 2\n", "jobs", "expected an array of tables [[jobs]]"),
        (f"jobs = []\n{MINIMAL}", "jobs", "no [[jobs]] table"),
    ],
)
def test_structure_errors(body: str, key: str, problem: str) -> None:
    error = error_of(body)
    assert_one_line(error, key, "")
    assert problem in str(error)
    assert error.allowed


def test_bad_toml_syntax_names_line_and_column() -> None:
    error = error_of(f"{MINIMAL}[table]\npartitions = = 2\n")
    assert (error.line, error.column) == (4, 14)
    assert str(error).startswith("f.toml: line 4, column 14: invalid TOML: ")
    assert "\n" not in str(error)


def test_bad_toml_at_end_of_document() -> None:
    error = error_of(f"{MINIMAL}[table]\npartitions =")
    assert str(error).startswith("f.toml: invalid TOML: ")


def test_error_pickles() -> None:
    error = error_of(f"{MINIMAL}[faults]\nack_loss = 2\n")
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.key, copy.allowed) == (str(error), error.key, error.allowed)


# ---------------------------------------------------------------------------------------------
# rules across jobs


def test_job_names_must_be_unique() -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\nname = "a"\n[[jobs]]\nname = "a"\n')
    assert_one_line(error, "jobs[1].name", "a name no other job has")
    assert "jobs[0].name" in str(error)


@pytest.mark.parametrize(
    ("name", "problem"),
    [("a/b", "has a '/'"), ("", "is empty"), ("nemesis", "is reserved"), ("world", "is reserved")],
)
def test_job_names_that_would_break_process_names_are_refused(name: str, problem: str) -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\nname = "{name}"\n')
    assert_one_line(error, "jobs[0].name", "without '/', not nemesis or world")
    assert problem in str(error)


def test_explicit_name_may_clash_with_a_positional_default() -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\nname = "job1"\n[[jobs]]\n')
    assert error.key == "jobs[1].name"


def test_nbcc_with_several_jobs_needs_merge_on_read() -> None:
    error = error_of(
        f'{MINIMAL}[table]\ntype = "COPY_ON_WRITE"\n[[jobs]]\nconcurrency = "occ"\n[[jobs]]\n'
    )
    assert_one_line(error, "table.type", "MERGE_ON_READ")
    assert "jobs[1] uses nbcc" in str(error)


def test_occ_with_several_jobs_may_use_copy_on_write() -> None:
    scenario = parse_scenario(
        f'{MINIMAL}[table]\ntype = "COPY_ON_WRITE"\n'
        '[[jobs]]\nconcurrency = "occ"\n[[jobs]]\nconcurrency = "occ"\n'
    )
    assert len(scenario.jobs) == 2


def test_one_nbcc_job_may_use_copy_on_write() -> None:
    scenario = parse_scenario(f'{MINIMAL}[table]\ntype = "COPY_ON_WRITE"\n')
    assert scenario.jobs[0].concurrency == "nbcc"


def test_table_services_in_several_jobs_is_an_error() -> None:
    error = error_of(
        f"{MINIMAL}[[jobs]]\n[[jobs]]\ntable_services = true\n[[jobs]]\ntable_services = true\n"
    )
    assert_one_line(error, "jobs[2].table_services", "at most one job")
    assert "jobs[1] already runs table services" in str(error)


def test_eager_cleaning_with_several_jobs_is_an_error() -> None:
    error = error_of(f'{MINIMAL}[[jobs]]\n[[jobs]]\n[protocol]\nfailed_writes_cleaning = "EAGER"\n')
    assert_one_line(error, "protocol.failed_writes_cleaning", "LAZY")


@pytest.mark.parametrize(
    ("jobs", "setting", "resolved"),
    [(1, "auto", "LAZY"), (2, "auto", "LAZY"), (1, "LAZY", "LAZY"), (1, "EAGER", "EAGER")],
)
def test_failed_writes_cleaning_resolution(jobs: int, setting: str, resolved: str) -> None:
    body = MINIMAL + "[[jobs]]\n" * jobs + f'[protocol]\nfailed_writes_cleaning = "{setting}"\n'
    assert parse_scenario(body).protocol.failed_writes_cleaning == resolved


# ---------------------------------------------------------------------------------------------
# loading and overrides


def test_load_scenario_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text(f"{MINIMAL}[table]\npartitions = 0\n", encoding="utf-8")
    with pytest.raises(ScenarioError) as caught:
        load_scenario(path)
    assert str(caught.value).startswith(f"{path}: table.partitions: ")
    path.write_text(MINIMAL, encoding="utf-8")
    assert load_scenario(str(path)) == parse_scenario(MINIMAL)


def test_missing_and_binary_files(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read the file") as caught:
        load_scenario(tmp_path / "missing.toml")
    assert "\n" not in str(caught.value)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe[scenario]")
    with pytest.raises(ScenarioError, match="not UTF-8"):
        load_scenario(binary)


def test_overrides_replace_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('[scenario]\nname = "s"\nseed = 4\n[table]\nstorage = "memory"\n')
    scenario = load_scenario(path, seed=9, storage="local")
    assert (scenario.scenario.seed, scenario.table.storage) == (9, "local")
    assert load_scenario(path).scenario.seed == 4


def test_overrides_apply_without_the_tables() -> None:
    scenario = parse_scenario(MINIMAL, seed=0, storage="local")
    assert scenario.table.storage == "local"


@pytest.mark.parametrize(
    ("overrides", "key", "allowed", "flag"),
    [
        ({"seed": -1}, "scenario.seed", "integer in [0, ", "--seed"),
        ({"seed": True}, "scenario.seed", "integer in [0, ", "--seed"),
        ({"storage": "s3"}, "table.storage", "memory, local", "--storage"),
    ],
)
def test_bad_overrides_are_validated_the_same_way(
    overrides: dict[str, Any], key: str, allowed: str, flag: str
) -> None:
    error = error_of(MINIMAL, **overrides)
    assert_one_line(error, key, allowed)
    assert f"given by {flag}" in str(error)


# ---------------------------------------------------------------------------------------------
# resolved TOML


def test_resolved_toml_fills_every_default() -> None:
    text = resolved_toml(parse_scenario(MINIMAL, seed=7))
    for dotted in DEFAULTS:
        assert re.search(rf"^{dotted.split('.')[1]} = ", text, re.MULTILINE), dotted
    assert "seed = 7" in text
    assert "[[jobs]]" in text
    assert '"auto"' not in text


def test_resolved_toml_is_deterministic_and_reads_back() -> None:
    scenario = parse_scenario(MINIMAL + "[[jobs]]\n[[jobs]]\n")
    text = resolved_toml(scenario)
    assert parse_scenario(text) == scenario
    assert resolved_toml(parse_scenario(text)) == text


# ---------------------------------------------------------------------------------------------
# [[faults.schedule]]

TWO_JOBS = (
    '[scenario]\nname = "s"\nduration_s = 30\n'
    '[[jobs]]\nname = "ingest"\nwriters = 2\n[[jobs]]\nname = "backfill"\nwriters = 3\n'
)


def schedule_entry(**keys: Any) -> str:
    return "[[faults.schedule]]\n" + "".join(f"{k} = {v}\n" for k, v in keys.items())


def test_schedule_entries_parse_in_order_with_their_options() -> None:
    text = TWO_JOBS + schedule_entry(at_s=12, kind='"crash"', target='"backfill/task-2"')
    text += schedule_entry(at_s=3.5, kind='"lose_ack"', target='"ingest"', checkpoint=3)
    text += schedule_entry(
        at_s=4, kind='"clock_jump"', target='"ingest/coordinator"', delta_ms=-500
    )
    schedule = parse_scenario(text).faults.schedule
    assert [(e.at_s, e.kind, e.target) for e in schedule] == [
        (12.0, "crash", "backfill/task-2"),
        (3.5, "lose_ack", "ingest"),
        (4.0, "clock_jump", "ingest/coordinator"),
    ]
    assert (schedule[1].checkpoint, schedule[1].delay_ms, schedule[2].delta_ms) == (3, None, -500)


def test_resolved_schedule_leaves_unset_options_out_and_reads_back() -> None:
    text = TWO_JOBS + schedule_entry(at_s=1, kind='"delay_ack"', target='"ingest"', delay_ms=700)
    text += schedule_entry(at_s=2, kind='"storage_failure"', target='"backfill"')
    scenario = parse_scenario(text)
    resolved = resolved_toml(scenario)
    assert "checkpoint =" not in resolved and "delta_ms" not in resolved
    assert "delay_ms = 700" in resolved
    assert parse_scenario(resolved) == scenario


@pytest.mark.parametrize(
    ("entry", "key", "problem", "allowed"),
    [
        (
            {"at_s": 1, "kind": '"crash"', "target": '"ingest/task-2"'},
            "faults.schedule[0].target",
            'unknown target "ingest/task-2" for kind "crash"',
            "ingest/coordinator, ingest/task-0 to ingest/task-1, backfill/coordinator, "
            "backfill/task-0 to backfill/task-2",
        ),
        (
            {"at_s": 1, "kind": '"lose_ack"', "target": '"nightly"'},
            "faults.schedule[0].target",
            'unknown target "nightly"',
            "ingest, backfill",
        ),
        (
            {"at_s": 1, "kind": '"clock_jump"', "target": '"ingest/task-0"', "delta_ms": 5},
            "faults.schedule[0].target",
            "unknown target",
            "ingest/coordinator, ingest/compactor, backfill/coordinator",
        ),
        (
            {"at_s": 30, "kind": '"crash"', "target": '"ingest/coordinator"'},
            "faults.schedule[0].at_s",
            "30 is not before duration_s (30)",
            "a number >= 0 and < 30",
        ),
        (
            {"at_s": -1, "kind": '"crash"', "target": '"ingest/coordinator"'},
            "faults.schedule[0].at_s",
            "-1 is out of range",
            "number in [0, ",
        ),
        (
            {"at_s": 1, "kind": '"reboot"', "target": '"ingest"'},
            "faults.schedule[0].kind",
            'unknown value "reboot"',
            "lose_ack, delay_ack, duplicate_ack, fail_checkpoint, crash, clock_jump, "
            "storage_failure",
        ),
        (
            {"at_s": 1, "kind": '"delay_ack"', "target": '"ingest"'},
            "faults.schedule[0].delay_ms",
            'kind "delay_ack" needs delay_ms',
            "an integer in [1, ",
        ),
        (
            {"at_s": 1, "kind": '"clock_jump"', "target": '"ingest/coordinator"', "delta_ms": 0},
            "faults.schedule[0].delta_ms",
            "needs delta_ms other than 0",
            "a non-zero integer",
        ),
        (
            {"at_s": 1, "kind": '"crash"', "target": '"ingest/task-0"', "checkpoint": 2},
            "faults.schedule[0].checkpoint",
            'kind "crash" takes no checkpoint',
            "at_s, kind, target",
        ),
        (
            {"at_s": 1, "kind": '"lose_ack"', "target": '"ingest"', "checkpoint": 0},
            "faults.schedule[0].checkpoint",
            "0 is out of range",
            "an integer in [1, ",
        ),
        (
            {"at_s": 1, "kind": '"lose_ack"', "target": '"ingest"', "checkpont": 2},
            "faults.schedule[0].checkpont",
            'unknown key "checkpont"',
            "at_s, kind, target, checkpoint",
        ),
        (
            {"at_s": 1, "kind": '"lose_ack"'},
            "faults.schedule[0].target",
            "required key is missing",
            "a non-empty string",
        ),
    ],
)
def test_bad_schedule_entry(entry: dict[str, Any], key: str, problem: str, allowed: str) -> None:
    error = error_of(TWO_JOBS + schedule_entry(**entry))
    assert_one_line(error, key, allowed)
    assert problem in error.message


def test_bad_schedule_entry_is_named_by_its_position() -> None:
    text = TWO_JOBS + schedule_entry(at_s=1, kind='"crash"', target='"ingest/coordinator"')
    text += schedule_entry(at_s=2, kind='"crash"', target='"ingest"')
    assert error_of(text).key == "faults.schedule[1].target"


def test_fault_targets_by_kind() -> None:
    scenario = parse_scenario(TWO_JOBS)
    assert fault_targets(scenario, "fail_checkpoint") == ("ingest", "backfill")
    assert fault_targets(scenario, "crash") == (
        "ingest/coordinator",
        "ingest/task-0",
        "ingest/task-1",
        "backfill/coordinator",
        "backfill/task-0",
        "backfill/task-1",
        "backfill/task-2",
    )
    # only the table-services job of a MERGE_ON_READ table has a compactor taking times
    assert fault_targets(scenario, "clock_jump") == (
        "ingest/coordinator",
        "ingest/compactor",
        "backfill/coordinator",
    )
    assert "ingest/compactor" in fault_targets(scenario, "storage_failure")
    assert "backfill" in fault_targets(scenario, "storage_failure")
    cow = parse_scenario(MINIMAL + '[table]\ntype = "COPY_ON_WRITE"\n')
    assert fault_targets(cow, "clock_jump") == ("job0/coordinator",)
    assert set(FAULT_KINDS) == set(get_args(ScheduledFault.model_fields["kind"].annotation))


def test_docs_name_every_fault_kind() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    for kind in FAULT_KINDS:
        assert f"`{kind}`" in docs, kind


# scenario names name run folders: letters, digits, _ - first, then also . + =
names = st.from_regex(r"[A-Za-z0-9_-][A-Za-z0-9_.+=-]{0,11}", fullmatch=True)
# job names become process names ("job/writer-0"), so they never hold a '/'
job_name_parts = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="/"),
    min_size=1,
    max_size=12,
)
# inside every key's documented range (docs/scenarios.md), the records per run included
positive = st.floats(min_value=0.01, max_value=1000, allow_nan=False, allow_infinity=False)
non_negative = st.floats(min_value=0, max_value=3600, allow_nan=False, allow_infinity=False)
probability = st.floats(min_value=0, max_value=1)
small_int = st.integers(min_value=1, max_value=256)
any_int = st.integers(min_value=0, max_value=60_000)


def some_of(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A table where every key may be left out (so its default is used)."""
    return st.fixed_dictionaries({}, optional=fields)


@st.composite
def scenario_dicts(draw: st.DrawFn) -> dict[str, Any]:
    """Valid scenarios as TOML data: any subset of keys set, rules across jobs respected."""
    job_count = draw(st.integers(min_value=1, max_value=3))
    job_names = draw(st.lists(job_name_parts, min_size=job_count, max_size=job_count, unique=True))
    services_job = draw(st.none() | st.integers(min_value=0, max_value=job_count - 1))
    jobs = []
    for index in range(job_count):
        job = draw(
            some_of(
                {
                    "writers": small_int,
                    "instant_generation": st.sampled_from(["async", "blocking", "minibatch"]),
                    "checkpoint_interval_s": positive,
                    "checkpoint_timeout_s": positive,
                    "records_per_s": positive,
                    "buffer_records": small_int,
                    "write_batch_size_mb": positive,
                    "record_payload_bytes": small_int,
                    "operation": st.sampled_from(["upsert", "insert"]),
                    "key_space": small_int,
                    "compaction_every_commits": small_int,
                    "concurrency": st.sampled_from(["nbcc", "occ"]),
                }
            )
        )
        if draw(st.booleans()):  # explicit name, never of the job<i> form
            job["name"] = "n-" + job_names[index]
        if services_job is not None and draw(st.booleans()):
            job["table_services"] = index == services_job
        jobs.append(job)
    data: dict[str, Any] = {
        "scenario": {
            "name": draw(names),
            **draw(
                some_of(
                    {"description": st.text(max_size=40), "duration_s": positive, "seed": any_int}
                )
            ),
        },
        "jobs": jobs,
    }
    optional_tables = {
        "table": some_of(
            {
                "storage": st.sampled_from(["memory", "local"]),
                "partitions": small_int,
                "buckets_per_partition": small_int,
                "merge_mode": st.sampled_from(["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]),
            }
        ),
        "time": some_of(
            {
                "generator": st.sampled_from(["truetime", "local_clock", "time_service"]),
                "max_expected_skew_ms": any_int,
                "clock_skew_ms": any_int,
                "clock_drift_ppm": non_negative,
                "lock_latency_ms": any_int,
            }
        ),
        "faults": some_of(
            {
                "ack_loss": probability,
                "ack_delay_ms": any_int,
                "checkpoint_failure": probability,
                "writer_crash_per_hour": non_negative,
                "coordinator_crash_per_hour": non_negative,
                "storage_write_failure": probability,
                "ack_duplicate": probability,
                "clock_jump_per_hour": non_negative,
                "clock_jump_ms": any_int,
                "rescale_per_hour": non_negative,
                "rescale_max_writers": st.integers(min_value=1, max_value=256),
                "pause_per_hour": non_negative,
                "writer_pause_per_hour": non_negative,
                "pause_max_ms": st.integers(min_value=1, max_value=60_000),
            }
        ),
        "protocol": some_of(
            {
                "release": st.sampled_from(RELEASES),
                **{
                    name: st.sampled_from(choices)
                    for name, choices in PROTOCOL_VARIANTS.items()
                    if name != "failed_writes_cleaning"
                },
                "failed_writes_cleaning": st.sampled_from(
                    ["auto", "EAGER", "LAZY"] if job_count == 1 else ["auto", "LAZY"]
                ),
            }
        ),
        "expect": some_of(
            {"violations": st.lists(st.sampled_from(INVARIANTS), unique=True).map(tuple)}
        ),
        "sim": some_of(
            {
                "drain_timeout_s": positive,
                "restart_delay_ms": any_int,
                "network_delay_ms": any_int,
                "storage_latency_ms": any_int,
                "heartbeat_interval_ms": small_int,
                "heartbeat_tolerable_misses": small_int,
                "archive_min_active": st.integers(min_value=1, max_value=100),
            }
        ),
    }
    for table, strategy in optional_tables.items():
        if draw(st.booleans()):
            data[table] = draw(strategy)
    if "archive_min_active" in data.get("sim", {}):
        data["sim"]["archive_max_active"] = data["sim"]["archive_min_active"] + draw(small_int)
    nbcc_jobs = any(job.get("concurrency", "nbcc") == "nbcc" for job in jobs)
    if job_count == 1 or not nbcc_jobs:
        table_type = draw(st.sampled_from(["MERGE_ON_READ", "COPY_ON_WRITE"]))
        data.setdefault("table", {})["type"] = table_type
    if "faults" in data and draw(st.booleans()):
        data["faults"]["schedule"] = draw(fault_schedules(data))
    return data


@st.composite
def fault_schedules(draw: st.DrawFn, data: dict[str, Any]) -> list[dict[str, Any]]:
    """A valid ``[[faults.schedule]]`` for scenario data: targets among its jobs' processes,
    times inside its duration."""
    duration_s = data["scenario"].get("duration_s", 60.0)
    jobs = [
        (job.get("name", f"job{index}"), job.get("writers", 4))
        for index, job in enumerate(data["jobs"])
    ]
    entries = []
    for _ in range(draw(st.integers(min_value=0, max_value=4))):
        name, writers = draw(st.sampled_from(jobs))
        kind = fault_kind(draw(st.sampled_from(FAULT_KINDS)))
        job = SimpleNamespace(name=name, writers=writers, table_services=False)
        table = SimpleNamespace(type="COPY_ON_WRITE", markers="direct")
        targets = kind.targets(SimpleNamespace(table=table), job)
        task = (
            f"{name}/task-{draw(st.integers(min_value=0, max_value=max(0, targets.writers - 1)))}"
        )
        choices = [*targets.before, *([task] if targets.writers else []), *targets.after]
        entry: dict[str, Any] = {
            "at_s": duration_s * draw(st.floats(min_value=0, max_value=0.99)),
            "kind": kind.name,
            "target": draw(st.sampled_from(choices)),
        }
        for option in kind.options:
            if option.required or draw(st.booleans()):
                magnitude = draw(st.integers(min_value=1, max_value=min(option.high, 10**6)))
                negative = option.low < 0 and draw(st.booleans())
                entry[option.name] = -magnitude if negative else magnitude
        entries.append(entry)
    return entries


@given(scenario_dicts())
@example(  # a job name with a newline: its write tasks are targets too
    {
        "scenario": {"name": "0"},
        "jobs": [{"name": "n-\n"}, {}],
        "faults": {"schedule": [{"at_s": 0.0, "kind": "restore_crash", "target": "n-\n/task-0"}]},
    }
)
def test_resolved_toml_round_trip(data: dict[str, Any]) -> None:
    text = tomli_w.dumps(data)
    scenario = parse_scenario(text)
    assert scenario == scenario_from_dict(data)
    resolved = resolved_toml(scenario)
    again = parse_scenario(resolved)
    assert again == scenario
    assert resolved_toml(again) == resolved
