"""Multi-stream partial updates in the simulated world (sim/job.py): each job writes its column
group, the table declares the groups (or, for the variant ``row``, Hudi's whole-row payload), the
job's ``start`` events name its group for the ledger, and commits carry the whole table schema."""

from __future__ import annotations

import json
import tomllib
from functools import cache

from models.view.partial_update import (
    PAYLOAD_CLASS,
    WHOLE_ROW_PAYLOAD_CLASS,
    ColumnGroup,
    column_groups,
    declared_groups,
)
from models.view.table import HudiTable
from scenarios import catalog_dir
from scenarios.schema import scenario_from_dict
from sim.world import World

GROUPS = (ColumnGroup("orders_ts", ("amount", "qty")), ColumnGroup("payments_ts", ("paid",)))


@cache
def run(merge: str):
    data = tomllib.loads((catalog_dir() / "partial_updates_two_streams.toml").read_text())
    data["scenario"]["duration_s"] = 10
    data["protocol"] = {"partial_update_merge": merge}
    return World(scenario_from_dict(data, "wide")).run()


def test_the_table_declares_the_groups_with_the_partial_update_payload():
    table = HudiTable(run("column_group").storage)
    assert column_groups(table.config) == GROUPS
    assert table.config.raw["hoodie.table.legacy.payload.class"] == PAYLOAD_CLASS


def test_the_row_variant_declares_the_columns_with_the_default_payload():
    table = HudiTable(run("row").storage)
    assert declared_groups(table.config) == GROUPS and column_groups(table.config) == ()
    assert table.config.raw["hoodie.table.legacy.payload.class"] == WHOLE_ROW_PAYLOAD_CLASS


def test_each_job_names_its_group_and_writes_only_it():
    outcome = run("column_group")
    starts = {e.process: e.value["column_group"] for e in outcome.history.events if e.f == "start"}
    assert starts == {
        "orders": {"columns": ["amount", "qty"], "ordering_field": "orders_ts"},
        "payments": {"columns": ["paid"], "ordering_field": "payments_ts"},
    }
    table = HudiTable(outcome.storage)
    for instant in table.timeline().completed().with_actions("deltacommit"):
        schema = json.loads(table.commit_metadata(instant).schema)
        names = [f["name"] for f in schema["fields"]]
        assert names[-5:] == ["orders_ts", "amount", "qty", "payments_ts", "paid"]


def test_an_ordinary_run_has_no_column_group_in_its_history():
    data = tomllib.loads((catalog_dir() / "nbcc_two_jobs.toml").read_text())
    data["scenario"]["duration_s"] = 5
    outcome = World(scenario_from_dict(data, "plain")).run()
    assert not any("column_group" in e.value for e in outcome.history.events if e.f == "start")
