"""``[protocol] release``: each Hudi release's preset of the switches, explicit switches winning
over it, resolved TOML that reads back, files without ``release`` loading as before, one-line
errors, and the release recorded in ``result.json`` (docs/scenarios.md, "Releases as presets")."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from invariants.checks import check_all
from models.view.table import HudiTable
from scenarios import (
    PROTOCOL_VARIANTS,
    ProtocolSpec,
    Scenario,
    ScenarioError,
    ScenarioInfo,
    catalog,
    catalog_dir,
    load_scenario,
    parse_scenario,
    resolved_toml,
)
from scenarios.grids import GridSpec, expand_grid
from scenarios.releases import LATEST, PRESETS, RELEASES, preset_values
from scenarios.tables import RECORDED_WHEN_SET
from sim.world import World
from testbed.run import result_json

MINIMAL = '[scenario]\nname = "s"\n'
DOCS = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"

# the public contract, written out by hand (not derived from PRESETS) so a changed preset is a
# failing test, not a silent change to users' scenarios; failed_writes_cleaning as resolved for
# one async job
EXPECTED: dict[str, dict[str, str | bool]] = {
    "1.0": {
        "file_slicing": "completion_time",
        "slice_anchor": "earliest_log",
        "archived_completion_lookup": True,
        "persist_write_meta": True,
        "put_if_absent": True,
        "commit_scope": "all_below",
        "snapshot_partial_buffers": False,
        "reset_recommit": "immediate",
        "restored_checkpoint_id": "attempt_gt_0",
        "restored_events_resend": "every_attempt",
        "checkpoint_deferred_recommits": False,
        "recommit_baseline": "coordinator",
        "pending_file_ids": "ignored",
        "index_state": "restored",
        "instant_request": "polled",
        "record_write_failure": "mark",
        "partial_update_merge": "column_group",
        "marker_write_failure": "swallow",
        "append_clean": "flink_conf",
        "failed_writes_cleaning": "EAGER",
    },
    "1.1": {
        "file_slicing": "completion_time",
        "slice_anchor": "earliest_log",
        "archived_completion_lookup": True,
        "persist_write_meta": True,
        "put_if_absent": True,
        "commit_scope": "all_below",
        "snapshot_partial_buffers": True,
        "reset_recommit": "next_notification",
        "restored_checkpoint_id": "attempt_gt_0",
        "restored_events_resend": "attempt_0",
        "checkpoint_deferred_recommits": False,
        "recommit_baseline": "coordinator",
        "pending_file_ids": "ignored",
        "index_state": "restored",
        "instant_request": "blocked",
        "record_write_failure": "mark",
        "partial_update_merge": "column_group",
        "marker_write_failure": "swallow",
        "append_clean": "flink_conf",
        "failed_writes_cleaning": "LAZY",
    },
    "latest": {
        "file_slicing": "completion_time",
        "slice_anchor": "earliest_completed",
        "archived_completion_lookup": True,
        "persist_write_meta": True,
        "put_if_absent": True,
        "commit_scope": "all_below",
        "snapshot_partial_buffers": False,
        "reset_recommit": "immediate",
        "restored_checkpoint_id": "always",
        "restored_events_resend": "attempt_0",
        "checkpoint_deferred_recommits": True,
        "recommit_baseline": "job",
        "pending_file_ids": "adopted",
        "index_state": "restored",
        "instant_request": "polled",
        "record_write_failure": "throw",
        "partial_update_merge": "column_group",
        "failed_writes_cleaning": "LAZY",
    },
}


def with_protocol(lines: str, jobs: int = 1) -> Scenario:
    return parse_scenario(MINIMAL + "[[jobs]]\n" * jobs + f"[protocol]\n{lines}\n")


# ---------------------------------------------------------------------------------------------
# the presets


@pytest.mark.parametrize("release", RELEASES)
def test_each_release_sets_every_switch_to_its_preset(release: str) -> None:
    scenario = with_protocol(f'release = "{release}"')
    assert scenario.protocol.release == release
    assert scenario.protocol.switches() == EXPECTED[release]


def test_a_switch_recorded_when_set_is_in_the_setup_only_off_its_real_rule() -> None:
    """``marker_write_failure``, ``marker_answer``, ``index_state_refresh``,
    ``index_bootstrap_deletes``, ``index_bootstrap_reads``, ``early_conflict_heartbeats`` and
    ``append_clean`` appear in ``switches()`` (the history's ``setup`` event) only off their default: a real-rule
    run records none of them."""
    assert {
        "marker_write_failure",
        "marker_answer",
        "index_state_refresh",
        "index_bootstrap_deletes",
        "index_bootstrap_reads",
        "early_conflict_heartbeats",
        "append_clean",
    } == RECORDED_WHEN_SET
    latest = with_protocol('release = "latest"')
    assert (latest.protocol.marker_write_failure, latest.protocol.marker_answer) == (
        "fail",
        "after_write",
    )
    assert not RECORDED_WHEN_SET & set(latest.protocol.switches())
    bad = with_protocol(
        'marker_answer = "before_write"\nmarker_write_failure = "swallow"\n'
        'index_state_refresh = "location_change"\nindex_bootstrap_deletes = "skipped"\n'
        'index_bootstrap_reads = "after_recommit"\n'
        'early_conflict_heartbeats = "expired_as_live"\nappend_clean = "flink_conf"'
    )
    assert {k: bad.protocol.switches()[k] for k in RECORDED_WHEN_SET} == {
        "marker_write_failure": "swallow",
        "marker_answer": "before_write",
        "index_state_refresh": "location_change",
        "index_bootstrap_deletes": "skipped",
        "index_bootstrap_reads": "after_recommit",
        "early_conflict_heartbeats": "expired_as_live",
        "append_clean": "flink_conf",
    }


def test_releases_are_the_documented_ones_and_latest_is_the_default() -> None:
    assert RELEASES == ("1.0", "1.1", "latest")
    assert parse_scenario(MINIMAL).protocol.release == LATEST
    assert parse_scenario(MINIMAL) == with_protocol('release = "latest"')


def test_latest_is_every_switchs_default() -> None:
    """What keeps old files and every golden digest as they were."""
    defaults = {name: ProtocolSpec.model_fields[name].default for name in PROTOCOL_VARIANTS}
    assert preset_values(LATEST) == defaults


def test_every_switch_has_a_cited_value_for_every_release() -> None:
    assert set(PRESETS) == set(PROTOCOL_VARIANTS)
    for switch, by_release in PRESETS.items():
        assert tuple(by_release) == RELEASES, switch
        for release, preset in by_release.items():
            assert preset.value in PROTOCOL_VARIANTS[switch], (switch, release)
            assert preset.why.strip() and "\n" not in preset.why, (switch, release)
            cited = re.search(r"apache/hudi#\d+|HUDI-\d+|RFC-\d+|no Hudi release", preset.why)
            assert cited, (switch, release)


@pytest.mark.parametrize("switch", ["put_if_absent", "commit_scope", "partial_update_merge"])
def test_known_bad_values_no_release_ships_are_never_a_preset(switch: str) -> None:
    for release in RELEASES:
        assert preset_values(release)[switch] == PROTOCOL_VARIANTS[switch][0]


def test_the_presets_differ_where_a_release_carries_a_bug() -> None:
    """apache/hudi#19774 in 1.0 and 1.1, #19215 in 1.1 only, #19922 (restored checkpoint id, the
    deferred recommit left out of the checkpoint) in 1.0 and 1.1 as modelled, 1.0's re-send at
    every attempt, #19907 (pending file ids ignored) in 1.0 and 1.1, 1.1's commit guard blocking
    the instant-request thread (fixed by #19960), the swallowed MARKERS<n> write in 1.0 and 1.1
    (fixed by #19368), an append job's clean operator only for LAZY in its Flink options
    (HUDI-6540's rule, remedied in latest) (#14365 is kept at the real rule: the switch
    would overstate it)."""
    latest = preset_values(LATEST)
    changed = {
        release: {k for k, v in preset_values(release).items() if v != latest[k]}
        for release in RELEASES
    }
    assert changed == {
        "1.0": {
            "slice_anchor",
            "pending_file_ids",
            "restored_checkpoint_id",
            "restored_events_resend",
            "checkpoint_deferred_recommits",
            "recommit_baseline",
            "record_write_failure",
            "marker_write_failure",
            "append_clean",
        },
        "1.1": {
            "slice_anchor",
            "pending_file_ids",
            "instant_request",
            "snapshot_partial_buffers",
            "reset_recommit",
            "restored_checkpoint_id",
            "checkpoint_deferred_recommits",
            "recommit_baseline",
            "record_write_failure",
            "marker_write_failure",
            "append_clean",
        },
        "latest": set(),
    }


def test_docs_table_matches_the_presets() -> None:
    docs = DOCS.read_text(encoding="utf-8")
    section = docs[docs.index("#### Releases as presets") : docs.index("### `[expect]`")]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\| `(\w+)` \| (.+?) \| (.+?) \| (.+?) \| .+ \|$", line)
        if match:
            rows[match.group(1)] = [cell.strip("` ") for cell in match.groups()[1:]]
    assert set(rows) == set(PRESETS)
    for switch, cells in rows.items():
        assert cells == [_toml(PRESETS[switch][release].value) for release in RELEASES], switch


def _toml(value: str | bool) -> str:
    """A switch value as the docs write it (``true``, ``earliest_log``)."""
    return str(value).lower() if isinstance(value, bool) else value


# ---------------------------------------------------------------------------------------------
# explicit switches win


def test_an_explicit_switch_beats_the_preset() -> None:
    scenario = with_protocol('release = "1.1"\nsnapshot_partial_buffers = false')
    assert scenario.protocol.release == "1.1"
    assert scenario.protocol.switches() == {**EXPECTED["1.1"], "snapshot_partial_buffers": False}


def test_an_explicit_known_bad_switch_beats_latest_and_an_older_release() -> None:
    for release in RELEASES:
        scenario = with_protocol(f'release = "{release}"\ncommit_scope = "latest_only"')
        assert scenario.protocol.switches() == {**EXPECTED[release], "commit_scope": "latest_only"}


def test_an_explicit_switch_equal_to_the_preset_changes_nothing() -> None:
    assert with_protocol('release = "1.0"\nslice_anchor = "earliest_log"') == with_protocol(
        'release = "1.0"'
    )


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    ("jobs", "job_keys", "resolved"),
    [
        (1, "", {"1.0": "EAGER", "1.1": "LAZY", "latest": "LAZY"}),
        (1, 'instant_generation = "blocking"', {"1.0": "EAGER", "1.1": "EAGER", "latest": "EAGER"}),
        (1, 'concurrency = "occ"', {"1.0": "LAZY", "1.1": "LAZY", "latest": "LAZY"}),
        (2, "", {"1.0": "LAZY", "1.1": "LAZY", "latest": "LAZY"}),
    ],
)
def test_failed_writes_cleaning_auto_resolves_as_hudi_per_release(
    release: str, jobs: int, job_keys: str, resolved: dict[str, str]
) -> None:
    """EAGER by default; LAZY for multi-writer and OCC; from 1.1 LAZY for non-blocking instant
    generation (``FlinkWriteClients#getHoodieClientConfig``)."""
    text = MINIMAL + f"[[jobs]]\n{job_keys}\n" * jobs + f'[protocol]\nrelease = "{release}"\n'
    scenario = parse_scenario(text)
    assert scenario.protocol.failed_writes_cleaning == resolved[release]


def test_a_protocol_built_in_python_takes_its_release_too() -> None:
    spec = ProtocolSpec(release="1.1", slice_anchor="earliest_completed")
    assert spec.snapshot_partial_buffers is True
    assert spec.slice_anchor == "earliest_completed"
    scenario = Scenario(scenario=ScenarioInfo(name="s"), protocol=spec)
    assert scenario == with_protocol('release = "1.1"\nslice_anchor = "earliest_completed"')


# ---------------------------------------------------------------------------------------------
# the resolved scenario


@pytest.mark.parametrize(
    "lines",
    [
        'release = "1.0"',
        'release = "1.1"',
        'release = "1.1"\nsnapshot_partial_buffers = false\narchived_completion_lookup = true',
        'release = "latest"\nslice_anchor = "earliest_log"',
    ],
)
def test_resolved_toml_writes_the_release_and_every_switch_and_reads_back(lines: str) -> None:
    scenario = with_protocol(lines, jobs=2)
    text = resolved_toml(scenario)
    protocol = tomllib.loads(text)["protocol"]
    every = {name: getattr(scenario.protocol, name) for name in PROTOCOL_VARIANTS}
    assert protocol == {"release": scenario.protocol.release, **every}
    again = parse_scenario(text)
    assert again == scenario
    assert resolved_toml(again) == text


def _raw(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text(encoding="utf-8"))


WITHOUT_RELEASE = [p for p in catalog() if "release" not in _raw(p).get("protocol", {})]


@pytest.mark.parametrize("path", WITHOUT_RELEASE, ids=[p.stem for p in WITHOUT_RELEASE])
def test_files_without_a_release_load_as_before(path: Path) -> None:
    """Each switch not written takes its default, as before ``release`` existed."""
    written = _raw(path).get("protocol", {})
    scenario = load_scenario(path)
    assert scenario.protocol.release == LATEST
    for name, choices in PROTOCOL_VARIANTS.items():
        if name != "failed_writes_cleaning":
            assert getattr(scenario.protocol, name) == written.get(name, choices[0]), name


def test_a_grid_over_releases_gives_each_point_its_preset() -> None:
    """A grid point starts from the resolved base, which holds every switch: a grid over
    ``protocol.release`` keeps only the switches the base file writes or the grid sets."""
    grid = GridSpec(
        name="releases",
        description="",
        base="partial_buffer_snapshot",
        set={"protocol.commit_scope": "all_below"},
        vary={"protocol.release": RELEASES},
        regions=(),
    )
    points = expand_grid(grid, {p.stem: p for p in catalog()})
    assert [p.name for p in points] == [f"releases-release={r}" for r in RELEASES]
    for point, release in zip(points, RELEASES, strict=True):
        assert point.scenario.protocol.release == release
        written = {"snapshot_partial_buffers": True}  # by the base file, whatever the release
        assert point.scenario.protocol.switches() == {**EXPECTED[release], **written}


def test_a_grid_not_over_releases_keeps_the_resolved_switches() -> None:
    grid = GridSpec(
        name="writers",
        description="",
        base="release_1_1_partial_buffers",
        set={},
        vary={"jobs[*].writers": (2, 3)},
        regions=(),
    )
    for point in expand_grid(grid, {p.stem: p for p in catalog()}):
        assert point.scenario.protocol.switches() == EXPECTED["1.1"]


# ---------------------------------------------------------------------------------------------
# errors


def test_an_unknown_release_is_one_line_with_the_allowed_values() -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(f'{MINIMAL}[protocol]\nrelease = "0.14"\n', "f.toml")
    error = caught.value
    assert (error.key, error.allowed) == ("protocol.release", '"1.0", "1.1", "latest"')
    assert str(error) == (
        'f.toml: protocol.release: unknown release "0.14" (allowed: "1.0", "1.1", "latest")'
    )


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("1.1", "1.1 is a number; a release is a string"),
        ("1", "1 is a number; a release is a string"),
        ("true", "unknown release true"),
        ('["1.1"]', "unknown release an array"),
        ('"Latest"', 'unknown release "Latest"'),
    ],
)
def test_a_release_that_is_no_release_name_is_one_line(value: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(f"{MINIMAL}[[jobs]]\n[[jobs]]\n[protocol]\nrelease = {value}\n", "f.toml")
    text = str(caught.value)
    assert "\n" not in text
    assert text == f'f.toml: protocol.release: {problem} (allowed: "1.0", "1.1", "latest")'


# ---------------------------------------------------------------------------------------------
# the catalog twin and the run's record


def test_the_1_1_twin_is_partial_buffer_snapshot_with_the_release_for_the_switch() -> None:
    switch = _raw(catalog_dir() / "partial_buffer_snapshot.toml")
    twin = _raw(catalog_dir() / "release_1_1_partial_buffers.toml")
    assert switch["protocol"] == {"snapshot_partial_buffers": True}
    assert twin["protocol"] == {"release": "1.1"}
    for table in {*switch, *twin} - {"scenario", "protocol", "expect"}:
        assert twin.get(table) == switch.get(table), table
    # 1.1 also gives this append job no clean operator (append_clean): the dropped instant stays
    assert twin["expect"]["violations"] == [
        *switch["expect"]["violations"],
        "failed_writes_rolled_back",
    ]
    for key in ("duration_s", "seed"):
        assert twin["scenario"][key] == switch["scenario"][key]
    assert "apache/hudi#19215" in twin["scenario"]["description"]
    assert (
        load_scenario(catalog_dir() / "release_1_1_partial_buffers.toml").protocol.switches()
        == (EXPECTED["1.1"])
    )


@pytest.mark.parametrize("release", ["1.1", "latest"])
def test_result_json_names_the_release_and_the_history_only_the_switches(release: str) -> None:
    scenario = parse_scenario(
        f'[scenario]\nname = "s"\nduration_s = 2\n[[jobs]]\nwriters = 1\n'
        f'records_per_s = 20\ncheckpoint_interval_s = 1\n[protocol]\nrelease = "{release}"\n'
    )
    outcome = World(scenario).run()
    verdicts = check_all(outcome.history.events, HudiTable(outcome.storage))
    result = result_json(scenario, outcome, verdicts)
    assert result["release"] == release
    setup = next(e for e in outcome.history.events if e.f == "setup")
    assert setup.value["protocol"] == scenario.protocol.switches()
