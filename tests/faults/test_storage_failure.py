"""The ``storage_failure`` kind's targets: with timeline-server markers the coordinator's
embedded timeline server, ``<job>/timeline_server``, whose next ``MARKERS<n>`` (or
``MARKERS.type``) write fails."""

from __future__ import annotations

import tomllib

import pytest
import tomli_w

from scenarios import catalog_dir
from scenarios.schema import ScenarioError, parse_scenario, scenario_from_dict
from sim.world import World


def _marker_run(markers: str) -> dict:
    data = tomllib.loads((catalog_dir() / "marker_flush_failures.toml").read_text())
    data["scenario"]["duration_s"] = 8
    data["table"]["markers"] = markers
    data["faults"]["schedule"] = data["faults"]["schedule"][:1]  # the storage failure alone
    return data


def test_the_timeline_server_is_a_target_only_with_timeline_server_markers():
    parse_scenario(tomli_w.dumps(_marker_run("timeline_server")))
    with pytest.raises(ScenarioError, match="timeline_server"):
        parse_scenario(tomli_w.dumps(_marker_run("direct")))


def test_a_failure_on_the_timeline_server_hits_its_next_marker_file_write():
    outcome = World(scenario_from_dict(_marker_run("timeline_server"))).run()
    (fault,) = [e for e in outcome.history.events if e.f == "storage_write_failure"]
    assert fault.value["process"] == "ingest/timeline_server"
    assert fault.value["path"].startswith(".hoodie/.temp/")
    assert fault.value["path"].rpartition("/")[2].startswith("MARKERS")
    assert fault.time >= 4500  # the first server write at or after at_s = 4.5
    (failover,) = [e for e in outcome.history.events if e.f == "failover"]
    assert "HoodieRemoteException" in failover.value["cause"]  # latest: the request fails
