"""Every known-bad protocol variant against its real rule, run on its catalog scenario.

docs/design.md: a known-bad variant must be caught by the invariants and the real rule must never be
flagged. So each variant scenario of ``scenarios/catalog`` runs twice through the simulator and
every checker: as written (it must violate exactly what its ``[expect] violations`` lists) and with
the one switch set back to the real rule (it must violate nothing, or only what another variant
that the scenario keeps on is responsible for). Both runs use the scenario's own seed with a
shorter ``duration_s`` so the suite stays fast; each run is simulated once per session.

``occ_contention`` runs the real protocol into apache/hudi#19046's restart loop: the job whose
commit conflicts recommits the same instant after every failover and never gets it in.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest

from invariants.checks import check_all
from models.ports import FakeClock, FakeWorld, LocalLock, run
from models.storage import FileAlreadyExistsError
from models.timeline.active import ActiveTimeline, TimelineError
from models.timeline.truetime import make_time_generator
from models.view.table import HudiTable
from scenarios import catalog_dir
from scenarios.releases import LATEST, preset_values
from scenarios.schema import PROTOCOL_VARIANTS, scenario_from_dict
from sim.world import World


@dataclass(frozen=True)
class Variant:
    """A variant's catalog scenario and how to turn it back into the real protocol."""

    scenario: str
    """Catalog file stem."""
    real_rule: dict[str, Any]
    """Overrides that restore the real rule: ``{"protocol": {...}}``, ``{"jobs": {...}}`` (every
    job), in the shape of the TOML tables."""
    duration_s: float = 30
    """Shortened run for the test (the catalog runs longer)."""
    residual: tuple[str, ...] = ()
    """What the real-rule run may still violate because of another variant the scenario keeps
    (never the variant's own violations)."""
    marks: tuple[Any, ...] = field(default=())
    finding: bool = False
    """The scenario runs Hudi's own rule and is caught (a hazard the testbed found); the
    overrides are the fix, which must hold."""


VARIANTS = (
    Variant("commit_latest_only", {"protocol": {"commit_scope": "all_below"}}),
    Variant("task_state_lost", {"protocol": {"persist_write_meta": True}}),
    Variant("cow_async_upsert", {"jobs": {"instant_generation": "blocking"}}),
    Variant("uncommitted_log_anchor", {"protocol": {"slice_anchor": "earliest_completed"}}),
    Variant(
        "archived_completion_miss",
        {"protocol": {"archived_completion_lookup": True}},
        duration_s=40,
        marks=(pytest.mark.slow,),
    ),
    Variant(
        "partial_buffer_snapshot",
        {"protocol": {"snapshot_partial_buffers": False}},
        marks=(pytest.mark.slow,),
    ),
    Variant(
        "timeline_overwrite",
        {"protocol": {"put_if_absent": True}},
        # the scenario keeps [time] generator = "local_clock": colliding, backwards times and
        # completed files out of completion-time order stay; the lost write goes away
        residual=("instant_unique", "instant_monotonic", "commit_order"),
        marks=(pytest.mark.slow,),
    ),
    Variant(
        "base_instant_slicing",
        {"protocol": {"file_slicing": "completion_time"}},
        marks=(pytest.mark.slow,),
    ),
    Variant(
        "minibatch_insert",
        {"jobs": {"operation": "upsert"}},
        duration_s=180,  # duplicates need a failed checkpoint right after an early commit
        # mini-batch re-writes a failed checkpoint's batch: still not exactly-once for upserts,
        # but the snapshot is correct (minibatch_upsert)
        residual=("exactly_once",),
        marks=(pytest.mark.slow,),
    ),
)
VARIANTS += (
    Variant(
        "partial_update_row_merge",
        {"protocol": {"partial_update_merge": "column_group"}},
    ),
    Variant("reset_waits_for_notification", {"protocol": {"reset_recommit": "immediate"}}),
    Variant("deferred_recommit_lost", {"protocol": {"checkpoint_deferred_recommits": True}}),
    Variant("rescale_restored_id", {"protocol": {"restored_checkpoint_id": "always"}}),
    Variant("duplicate_bucket_file_id", {"protocol": {"pending_file_ids": "adopted"}}),
    Variant("flink_state_lost", {"protocol": {"index_state": "restored"}}),
    Variant("flink_state_ttl", {"jobs": {"index_state_ttl_days": 0}}),
    Variant(
        "flink_state_ttl_not_refreshed",
        {"protocol": {"index_state_refresh": "every_record"}},
        duration_s=40,  # the first entries expire at 25.9 s
    ),
    Variant("non_global_index_moving_keys", {"jobs": {"index_global": True}}),
    Variant("blocked_instant_requests", {"protocol": {"instant_request": "polled"}}),
    Variant("occ_recommit_baseline", {"protocol": {"recommit_baseline": "job"}}),
    Variant("release_1_1_write_errors", {"protocol": {"release": "latest"}}),
    Variant("release_1_1_rolled_back_insert", {"protocol": {"release": "latest"}}),
    Variant("marker_flush_swallowed", {"protocol": {"marker_write_failure": "fail"}}),
    Variant("marker_answer_before_write", {"protocol": {"marker_answer": "after_write"}}),
    Variant(
        "early_conflict_zombie_as_live",
        {"protocol": {"early_conflict_heartbeats": "expired_skipped"}},
    ),
    Variant("append_never_cleans", {"protocol": {"append_clean": "write_config"}}),
    Variant(
        "restart_before_bootstrap",
        {"protocol": {"restored_events_resend": "every_attempt"}},
        finding=True,
    ),
    Variant(
        "early_conflict_own_instant",
        {"jobs": {"early_conflict_detection": False}},
        finding=True,
    ),
    Variant(
        "early_conflict_server_latch",
        {"jobs": {"early_conflict_detection": False}},
        finding=True,
    ),
    Variant(
        "global_index_bootstrap_deleted_copy",
        {"protocol": {"index_bootstrap_deletes": "skipped"}},
        finding=True,
    ),
    Variant(
        "global_index_bootstrap_jm_late_commit",
        {"protocol": {"index_bootstrap_reads": "after_recommit"}},
        finding=True,
    ),
)
BY_NAME = {v.scenario: v for v in VARIANTS}


def _raw(stem: str) -> dict[str, Any]:
    return tomllib.loads((catalog_dir() / f"{stem}.toml").read_text())


@cache
def _violated(stem: str, real_rule: bool) -> tuple[frozenset[str], frozenset[str]]:
    """(invariants violated, invariants the catalog file expects) for one run, simulated once."""
    variant = BY_NAME[stem]
    data = _raw(stem)
    data["scenario"]["duration_s"] = variant.duration_s
    if real_rule:
        for table, overrides in variant.real_rule.items():
            if table == "jobs":
                data["jobs"] = [{**job, **overrides} for job in data["jobs"]]
            else:
                data[table] = {**data.get(table, {}), **overrides}
    scenario = scenario_from_dict(data, stem)
    outcome = World(scenario).run()
    verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    violated = frozenset(name for name, verdict in verdicts.items() if not verdict.ok)
    return violated, frozenset(scenario.expect.violations)


def _params() -> list[Any]:
    return [pytest.param(v.scenario, marks=v.marks, id=v.scenario) for v in VARIANTS]


@pytest.mark.parametrize("stem", _params())
def test_variant_violates_what_its_scenario_expects(stem: str) -> None:
    violated, expected = _violated(stem, real_rule=False)
    assert expected, f"{stem} switches a known-bad variant on but expects no violation"
    assert violated == expected


@pytest.mark.parametrize("stem", _params())
def test_real_rule_is_never_flagged(stem: str) -> None:
    violated, expected = _violated(stem, real_rule=True)
    residual = frozenset(BY_NAME[stem].residual)
    assert violated <= residual
    assert not violated & (expected - residual)  # the variant's own violations are gone


def test_every_protocol_switch_has_a_variant_scenario() -> None:
    """Each [protocol] switch (but the cleaning policy, a configuration) is off its real rule in
    some catalog scenario covered here, written as the switch or through a release's preset."""
    switched = set()
    for variant in VARIANTS:
        protocol = _raw(variant.scenario).get("protocol", {})
        if variant.finding:  # Hudi's rule is the default; the fix is the other value
            protocol = variant.real_rule.get("protocol", {})
        protocol = {**preset_values(protocol.get("release", LATEST)), **protocol}
        protocol.pop("release", None)
        switched |= {
            name for name, value in protocol.items() if value != PROTOCOL_VARIANTS[name][0]
        }
    assert switched >= set(PROTOCOL_VARIANTS) - {"failed_writes_cleaning"}


def test_put_if_absent_switch_reaches_the_timeline_the_writers_use() -> None:
    """``put_if_absent = false`` is per table: the world's timeline overwrites, a second create
    of the same instant goes through, and completing it twice leaves two completed files."""
    data = _raw("timeline_overwrite")
    world = World(scenario_from_dict(data, "timeline_overwrite"))
    timeline = world.table.active_timeline
    assert timeline.put_if_absent is False
    clock = FakeClock(FakeWorld(1_767_225_600_000))  # 2026-01-01T00:00:00Z
    generator = make_time_generator(
        "truetime", clock=clock, lock=LocalLock(), max_expected_clock_skew_ms=1
    )
    time = "20251231235959000"
    first = timeline.transition_to_inflight(timeline.create_requested(time, "deltacommit"))
    again = timeline.transition_to_inflight(timeline.create_requested(time, "deltacommit"))
    done = [run(timeline.complete(i, b"", generator), clock) for i in (first, again)]
    assert done[0].completion_time != done[1].completion_time
    names = [f.name for f in world.storage.list_dir(timeline.folder)]
    assert sum(name.startswith(f"{time}_") for name in names) == 2
    strict = ActiveTimeline(world.storage, world.table.config)
    with pytest.raises(FileAlreadyExistsError):
        strict.create_requested(time, "deltacommit")
    with pytest.raises(TimelineError, match="already completed"):
        run(strict.complete(first, b"", generator), clock)


@pytest.mark.slow
def test_occ_contention_livelocks_the_job_whose_commit_conflicts() -> None:
    data = _raw("occ_contention")
    data["scenario"]["duration_s"] = 30
    scenario = scenario_from_dict(data, "occ_contention")
    outcome = World(scenario).run()
    verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    violated = sorted(name for name, verdict in verdicts.items() if not verdict.ok)
    assert violated == ["exactly_once", "liveness"]
    aborted = [e for e in outcome.history.events if e.f == "abort"]
    recommitted = {e.value["instant"] for e in aborted[1:]}
    assert aborted and recommitted == {aborted[0].value["instant"]}  # the same instant, again
