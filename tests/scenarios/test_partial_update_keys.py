"""The scenario keys of multi-stream partial updates (scenarios/schema.py): ``[[jobs]] columns``
and ``ordering_field``, ``[protocol] partial_update_merge``; defaults, round trip, and one-line
errors naming the key to change."""

from __future__ import annotations

import pytest

from scenarios.schema import PROTOCOL_VARIANTS, ScenarioError, parse_scenario, resolved_toml

BASE = """\
[scenario]
name = "wide"

[[jobs]]
name = "orders"
columns = ["amount", "qty"]

[[jobs]]
name = "payments"
columns = ["paid"]
"""


def test_defaults_and_round_trip():
    scenario = parse_scenario(BASE)
    orders, payments = scenario.jobs
    assert orders.columns == ("amount", "qty") and payments.columns == ("paid",)
    assert (orders.ordering_field, payments.ordering_field) == ("orders_ts", "payments_ts")
    assert scenario.protocol.partial_update_merge == "column_group"
    assert parse_scenario(resolved_toml(scenario)) == scenario


def test_whole_records_have_no_columns_and_no_own_ordering_field():
    job = parse_scenario('[scenario]\nname = "x"\n[[jobs]]\nname = "a"\n').jobs[0]
    assert (job.columns, job.ordering_field) == ((), "")


def test_the_switch_is_a_protocol_variant_with_the_real_rule_first():
    assert PROTOCOL_VARIANTS["partial_update_merge"] == ("column_group", "row")


@pytest.mark.parametrize(
    ("change", "key", "message"),
    [
        (('columns = ["paid"]', 'columns = ["qty"]'), "jobs[1].columns[0]", "already written by"),
        (('columns = ["paid"]', 'columns = ["ts"]'), "jobs[1].columns[0]", "bad column name"),
        (('columns = ["paid"]', 'columns = ["Paid"]'), "jobs[1].columns[0]", "bad column name"),
        (('columns = ["paid"]', "columns = []"), "jobs[1].columns", "every job must"),
        (
            ('columns = ["paid"]', 'columns = ["paid"]\nordering_field = "amount"'),
            "jobs[1].ordering_field",
            "already written by jobs[0]",
        ),
        (
            ('columns = ["paid"]', 'columns = ["paid"]\nordering_field = "orders_ts"'),
            "jobs[1].ordering_field",
            "as its ordering field",
        ),
        (
            ('columns = ["paid"]', 'columns = ["paid"]\noperation = "insert"'),
            "jobs[1].operation",
            "a column group updates keys",
        ),
        (
            ('name = "wide"', 'name = "wide"\n[table]\nmerge_mode = "COMMIT_TIME_ORDERING"'),
            "table.merge_mode",
            "each group is merged by its ordering value",
        ),
    ],
)
def test_bad_column_groups_are_one_line_errors(change, key, message):
    text = BASE.replace(*change)
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text, "wide.toml")
    assert error.value.key == key
    assert message in error.value.message
    assert "\n" not in str(error.value) and str(error.value).startswith(f"wide.toml: {key}: ")


def test_copy_on_write_is_refused_for_column_groups():
    text = BASE.replace('name = "wide"', 'name = "wide"\n[table]\ntype = "COPY_ON_WRITE"')
    text = text.replace('columns = ["paid"]', 'columns = ["paid"]\nconcurrency = "occ"')
    text = text.replace(
        'columns = ["amount", "qty"]', 'columns = ["amount", "qty"]\nconcurrency = "occ"'
    )
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text)
    assert error.value.key == "table.type" and error.value.allowed == "MERGE_ON_READ"


def test_an_ordering_field_without_columns_is_refused():
    text = '[scenario]\nname = "x"\n[[jobs]]\nordering_field = "x_ts"\n'
    with pytest.raises(ScenarioError) as error:
        parse_scenario(text)
    assert error.value.key == "jobs[0].ordering_field"
