"""The claim of sim/flink/__init__.py: no role, no job and no table service sees the world or the
nemesis, not even for type checking (import-linter's contract skips ``TYPE_CHECKING`` imports;
this reads every import statement), and the roles do not import each other."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[3]
ROLES = (
    "source",
    "write_function",
    "operator_coordinator",
    "checkpoint_coordinator",
    "compactor",
    "clean_function",
)


def sim_imports() -> nx.DiGraph:
    """Every ``sim`` module and the ``sim`` modules it names in any import statement."""
    graph = nx.DiGraph()
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in (ROOT / "sim").rglob("*.py")
    }
    for module, path in modules.items():
        graph.add_node(module)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            else:
                continue
            graph.add_edges_from((module, n) for n in names if n in modules and n != module)
    return graph


def test_no_role_job_or_table_service_reaches_the_world_or_the_nemesis():
    graph = sim_imports()
    sources = [
        m
        for m in graph
        if m.startswith(("sim.flink", "sim.job", "sim.state_index_roles", "sim.table_services"))
    ]
    assert len(sources) >= len(ROLES) + 3
    for module in sources:
        assert not {"sim.world", "sim.nemesis"} & nx.descendants(graph, module), module


def test_the_roles_import_none_of_each_other():
    graph = sim_imports()
    roles = {f"sim.flink.{role}" for role in ROLES}
    for role in roles:
        assert not (roles - {role}) & nx.descendants(graph, role), role
