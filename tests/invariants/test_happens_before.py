"""Tests for invariants/happens_before.py: the edges the history implies, the chains between
events, and that a real run's graph connects what the protocol orders."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import networkx as nx

from invariants.happens_before import (
    CHECKPOINT,
    COMPACTION_START,
    EVENT_MESSAGE,
    FAILOVER,
    INSTANT_RESPONSE,
    JOB_START,
    PROGRAM_ORDER,
    TABLE_LOCK,
    HappensBefore,
    build_graph,
    describe_chain,
    shortest_chain,
)
from models.history import Event
from tests.sim.test_world import ALL_FAULTS, JOB, cached_run, scenario_toml


def history(*rows: tuple[str, str, str, Any]) -> list[Event]:
    """Events from ``(process, type, f, value)`` rows; index = position, time = 10 ms apart."""
    return [Event(i, i * 10, p, t, f, v) for i, (p, t, f, v) in enumerate(rows)]


FLUSH = {"task": 0, "instant": "20260101000001000", "checkpoint": -1, "files": ["a"]}
FLUSH_2 = {**FLUSH, "files": ["b"]}

ONE_CHECKPOINT = history(
    ("j/coordinator", "info", "instant_time", {"time": "20260101000001000", "use": "requested", "locked": True}),  # 0
    ("j/coordinator", "ok", "start_instant", {"instant": "20260101000001000", "checkpoint": -1}),  # 1
    ("j/task-0", "ok", "wait_instant", {"instant": "20260101000001000", "checkpoint": -1}),  # 2
    ("j/task-0", "ok", "flush", FLUSH),  # 3
    ("j/task-0", "ok", "flush", FLUSH_2),  # 4
    ("j/coordinator", "info", "event", FLUSH),  # 5
    ("j/checkpoint", "invoke", "checkpoint", {"checkpoint": 1}),  # 6
    ("j/coordinator", "info", "snapshot", {"checkpoint": 1, "instants": []}),  # 7
    ("j/coordinator", "info", "event", FLUSH_2),  # 8
    ("j/task-0", "ok", "snapshot", {"checkpoint": 1, "instants": []}),  # 9
    ("j/checkpoint", "ok", "checkpoint", {"checkpoint": 1, "source_offset": 10}),  # 10
    ("j/coordinator", "info", "notify", {"checkpoint": 1}),  # 11
    ("j/coordinator", "info", "instant_time", {"time": "20260101000001300", "use": "completion", "locked": True}),  # 12
    ("j/coordinator", "ok", "commit", {"instant": "20260101000001000", "completion": "20260101000001300", "checkpoint": -1}),  # 13
    ("j/coordinator", "ok", "schedule_compaction", {"instant": "20260101000001500"}),  # 14
    ("j/compactor", "invoke", "compaction", {"instant": "20260101000001500"}),  # 15
    ("other/coordinator", "info", "instant_time", {"time": "20260101000001600", "use": "requested", "locked": True}),  # 16
    ("j/compactor", "fail", "error", {"error": "boom"}),  # 17
    ("j", "info", "failover", {"epoch": 1, "cause": "compactor: boom"}),  # 18
    ("nemesis", "info", "drop", {}),  # 19
    ("j", "info", "start", {"epoch": 2}),  # 20
    ("world", "info", "clock", {}),  # 21
    ("j/coordinator", "invoke", "restore", {"checkpoint": 1}),  # 22
    ("j/task-0", "info", "bootstrap", {}),  # 23
    ("j/coordinator", "ok", "restore", {}),  # 24
)  # fmt: skip


def kinds(graph: nx.DiGraph) -> dict[tuple[int, int], str]:
    return {(a, b): data["kind"] for a, b, data in graph.edges(data=True)}


def test_edges_of_every_kind():
    edges = kinds(build_graph(ONE_CHECKPOINT))
    assert edges[0, 1] == PROGRAM_ORDER
    assert edges[1, 2] == INSTANT_RESPONSE
    assert edges[3, 5] == EVENT_MESSAGE and edges[4, 8] == EVENT_MESSAGE  # FIFO by content
    assert (3, 8) not in edges and (4, 5) not in edges
    assert edges[6, 7] == CHECKPOINT  # trigger -> coordinator snapshot
    assert edges[7, 9] == CHECKPOINT  # coordinator snapshot -> task snapshot (barrier)
    assert edges[9, 10] == CHECKPOINT  # task ACK -> checkpoint complete
    assert edges[10, 11] == CHECKPOINT  # complete -> notify
    assert edges[14, 15] == COMPACTION_START
    assert edges[12, 16] == TABLE_LOCK  # locked times in a row, across jobs
    assert (0, 12) in edges  # the first lock hold hands off to the next one
    assert edges[17, 18] == FAILOVER
    assert edges[20, 22] == JOB_START and edges[20, 23] == JOB_START  # the restarted processes
    assert edges[18, 20] == PROGRAM_ORDER  # the job's own events


def test_world_and_nemesis_order_nothing_and_edges_only_point_forward():
    graph = build_graph(ONE_CHECKPOINT)
    assert graph.degree(19) == 0 and graph.degree(21) == 0
    assert all(a < b for a, b in graph.edges)
    assert set(graph.nodes) == set(range(len(ONE_CHECKPOINT)))


def test_shortest_chain_follows_messages_and_is_none_for_concurrent_events():
    graph = build_graph(ONE_CHECKPOINT)
    # the task's first flush reaches the commit through an event message and the coordinator
    assert shortest_chain(graph, 3, 13) == [3, 4, 8, 11, 12, 13]
    # nothing links the other job's lock hold back to the task's flush
    assert shortest_chain(graph, 16, 17) is None  # concurrent
    assert shortest_chain(graph, 13, 3) is None  # backwards in the history
    assert shortest_chain(graph, 5, 5) is None


def test_describe_chain_names_each_hop_and_collapses_program_order():
    graph = build_graph(ONE_CHECKPOINT)
    assert describe_chain(graph, [0, 1, 2]) == (
        "0 -program order of j/coordinator-> 1 -instant response-> 2"
    )
    assert describe_chain(graph, [5, 7, 8, 11]) == "5 -program order of j/coordinator-> 11"
    assert describe_chain(graph, [12, 16]) == "12 -table lock-> 16"
    assert describe_chain(graph, []) == ""


def test_happens_before_builds_lazily_and_explains_both_ways():
    hb = HappensBefore(ONE_CHECKPOINT)
    assert hb._graph is None
    assert hb.explain(16, 12) == "event 12 happens-before event 16 via 12 -table lock-> 16"
    assert hb.explain(16, 17) == (
        "events 16 and 17 are concurrent (no happens-before chain orders them)"
    )
    assert hb._graph is not None


# --- a real run ------------------------------------------------------------------------------

TWO_JOBS = scenario_toml(
    seed=5,
    duration_s=20,
    jobs=({**JOB, "compaction_every_commits": 2}, {**JOB, "checkpoint_interval_s": 3}),
    faults={**ALL_FAULTS, "coordinator_crash_per_hour": 0},
)


def test_a_truetime_run_orders_every_generated_time_through_the_lock():
    events = cached_run(TWO_JOBS).history.events
    hb = HappensBefore(events)
    times = [e.index for e in events if e.f == "instant_time"]
    assert len(times) > 20
    # consecutive lock holders are linked directly, so every time happens-before the next
    assert all(hb.graph.has_edge(a, b) for a, b in pairwise(times))
    assert hb.chain(times[0], times[-1]) is not None


def test_a_real_run_links_flushes_to_events_and_checkpoints_to_notifications():
    events = cached_run(TWO_JOBS).history.events
    graph = build_graph(events)
    edges = kinds(graph)
    by_kind: dict[str, int] = {}
    for kind in edges.values():
        by_kind[kind] = by_kind.get(kind, 0) + 1
    for kind in (EVENT_MESSAGE, INSTANT_RESPONSE, CHECKPOINT, TABLE_LOCK, COMPACTION_START):
        assert by_kind.get(kind, 0) > 0, (kind, by_kind)
    notified = [e for e in events if e.f == "notify"]
    assert notified
    for notify in notified:  # every notification was caused by a completed checkpoint
        sources = [
            a for a in graph.predecessors(notify.index) if edges[a, notify.index] == CHECKPOINT
        ]
        assert [events[a].f for a in sources] == ["checkpoint"]
    # a task's flush happens-before the commit that carries its files
    commit = next(e for e in events if e.f == "commit" and e.type == "ok" and e.value["files"])
    flush = next(
        e
        for e in events
        if e.f == "flush" and e.type == "ok" and e.value["instant"] == commit.value["instant"]
    )
    assert shortest_chain(graph, flush.index, commit.index) is not None
