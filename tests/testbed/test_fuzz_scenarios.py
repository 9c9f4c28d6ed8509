"""Fuzzing ``testbed run`` with scenario files a user could write (hypothesis): valid scenarios
mutated (wrong types, out-of-range values, unknown keys, deleted keys, duplicated tables),
truncated TOML and random bytes. Every case ends in exit 0 or 1 with a verdict, or in exit 2
with exactly one ``error:`` line: never a traceback, and nothing written outside ``--out``."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import tomli_w
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from testbed.cli import main

BASE: dict[str, Any] = {
    "scenario": {"name": "fuzzed", "duration_s": 3, "seed": 1},
    "table": {"partitions": 1, "buckets_per_partition": 2},
    "jobs": [
        {"writers": 1, "checkpoint_interval_s": 1, "records_per_s": 40, "key_space": 50},
    ],
    "faults": {"ack_loss": 0.2},
    "sim": {"max_wall_s": 2},
}
"""A small valid scenario (a run takes well under a second); mutations start from it. Every
mutant keeps ``max_wall_s = 2``: a valid mutant that would run long (a longer duration, more
writers) stops as a runaway, which is one of the outcomes this file accepts."""

ODD_VALUES = st.one_of(
    st.sampled_from(
        [
            -1,
            0,
            2**63,
            -(2**63) - 1,
            1e300,
            -1e-300,
            math.inf,
            -math.inf,
            math.nan,
            "",
            "../../x",
            "5",
            True,
            [],
            [1, 2],
            {},
            {"a": 1},
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
)
"""Values of every TOML type and the edges of every range."""


def key_paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key (and array element) in ``data``, as a path."""
    paths: list[tuple[Any, ...]] = []
    items = data.items() if isinstance(data, dict) else enumerate(data)
    for key, value in items:
        paths.append((*prefix, key))
        if isinstance(value, dict | list):
            paths += key_paths(value, (*prefix, key))
    return paths


def parent_of(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A scenario file: BASE with a few mutations, as TOML bytes (or raw bytes)."""
    data: dict[str, Any] = tomllib.loads(tomli_w.dumps(BASE))  # a deep copy
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = [p for p in key_paths(data) if p[-1] != "max_wall_s"]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = parent_of(data, path)
        action = draw(st.sampled_from(["replace", "delete", "unknown", "table"]))
        if action == "replace":
            parent[path[-1]] = draw(ODD_VALUES)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "unknown" and isinstance(parent, dict):
            parent[draw(st.sampled_from(["colour", "Writers", "seed ", "x.y"]))] = 1
        elif action == "table":
            data[draw(st.sampled_from(["faults", "nope", "jobs", "expect"]))] = draw(ODD_VALUES)
    if isinstance(data.get("sim"), dict):
        data["sim"]["max_wall_s"] = BASE["sim"]["max_wall_s"]
    try:
        text = tomli_w.dumps(data).encode()
    except (TypeError, ValueError):  # not representable in TOML (a nan key, ...): raw text
        text = repr(data).encode()
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # now and then, a truncated file
        return text[: draw(st.integers(min_value=0, max_value=len(text)))]
    return text


def run_file(tmp_path: Path, content: bytes) -> tuple[int, str, str]:
    source = tmp_path / "s.toml"
    source.write_bytes(content)
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["run", str(source), "--out", str(out), "-q"])
    assert isinstance(result.exception, SystemExit | None), result.exception
    return result.exit_code, result.stdout, result.stderr


def check_outcome(tmp_path: Path, content: bytes) -> None:
    code, stdout, stderr = run_file(tmp_path, content)
    if code == 2:
        lines = stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), stderr
        assert "Traceback" not in stderr
        if "stopped after [sim] max_wall_s" in stderr:  # a runaway keeps its partial folder
            assert (tmp_path / "out" / "partial.json").is_file()
    else:
        assert code in (0, 1), (code, stderr)
        assert "run folder:" in stdout
        assert (tmp_path / "out" / "result.json").is_file()
    assert {p.name for p in tmp_path.iterdir()} <= {"out", "s.toml"}


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(content=mutated())
@example(content=tomli_w.dumps(BASE).encode())  # the valid base: a verdict
@example(content=b"\x00\xff\xfe random bytes \x80")
@example(content=b'[scenario]\nname = "a"\n[scenario]\nname = "b"\n')  # a table twice
@example(content=b"[scenario]\nname = 'x'\nduration_s = 1e12\n")
@example(content=b"[scenario]\nname = 'x'\nseed = 9223372036854775808\n")
@example(content=b"[scenario]\nname = '../../etc/evil'\n")
@example(content=b"[scenario]\nname = 'x'\n[sim]\ncolour = 1\n")  # names max_wall_s, not a runaway
@example(content=b"[scenario]\nname = 'x'\nduration_s = 86400\n[[jobs]]\nrecords_per_s = 10000\n")
def test_any_scenario_file_ends_in_a_verdict_or_one_error_line(tmp_path_factory, content):
    check_outcome(tmp_path_factory.mktemp("fuzz"), content)
