"""The happens-before graph of a run: which history events causally precede which.

A violation such as "instant 0417 was generated after 0529" means little on its own: if the two
events were concurrent, nothing but the clocks ordered them, and a protocol without a lock cannot
do better; if one *happens-before* the other through a chain of messages or a lock hand-off, the
protocol promised an order and broke it. The graph lets explanations say which, and name the chain.

Nodes are history event indices. Edges (each with a ``kind``) are only what the history itself
shows, so a checker can trust them without knowing the simulator:

- ``program order``: consecutive events of one process (not ``world`` or ``nemesis``, which
  record on behalf of others and order nothing).
- ``event message``: a task's ``flush`` ok -> the coordinator's ``event`` info carrying the very
  same write metadata (matched first-in first-out per job and content: a task's channel is FIFO).
- ``instant response``: the coordinator's ``start_instant`` ok -> every ``wait_instant`` ok of
  the job's tasks that received that instant.
- ``checkpoint``: Flink's ``checkpoint`` invoke -> the coordinator's ``snapshot``; the coordinator
  ``snapshot`` -> each task's ``snapshot`` ok; each task ``snapshot`` ok -> ``checkpoint`` ok (all
  ACKs arrive before completion); ``checkpoint`` ok -> the coordinator's ``notify`` for that id.
- ``compaction start``: ``schedule_compaction`` ok -> the compactor's ``compaction`` invoke of it.
- ``failover``: a process's ``error`` fail -> the job's next ``failover``.
- ``job start``: a job's ``start`` (first run or restart) -> the first event after it of each of
  the job's processes (the processes of that epoch).
- ``table lock``: consecutive ``instant_time`` events taken under the table lock (TrueTime): the
  lock hands off from one holder to the next, and each waits out the skew before releasing.

Every edge points forward in the history (a cause is recorded before its effect), so a path from
``a`` to ``b`` only visits indices between them; :func:`shortest_chain` uses that to search a small
window instead of the whole run.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Sequence
from typing import Any

import networkx as nx

from models.history import NEMESIS, Event

PROGRAM_ORDER = "program order"
EVENT_MESSAGE = "event message"
INSTANT_RESPONSE = "instant response"
CHECKPOINT = "checkpoint"
COMPACTION_START = "compaction start"
FAILOVER = "failover"
JOB_START = "job start"
TABLE_LOCK = "table lock"

_UNORDERED_PROCESSES = frozenset({"world", NEMESIS})


def _value(event: Event) -> dict[str, Any]:
    return event.value if isinstance(event.value, dict) else {}


def _field(value: dict[str, Any], name: str) -> Any:
    """``value[name]`` as a dict key (a malformed list or dict is keyed by its JSON)."""
    item = value.get(name)
    return item if item is None or isinstance(item, str | int) else _canonical(item)


def _job(process: str) -> str:
    return process.split("/", 1)[0]


def _role(process: str) -> str:
    return process.split("/", 1)[1] if "/" in process else ""


def build_graph(events: Sequence[Event]) -> nx.DiGraph:
    """The happens-before graph of ``events`` (see the module docstring for its edges).

    Linear in the number of events (plus the edges, each found through a dict lookup).
    """
    graph = nx.DiGraph()
    graph.add_nodes_from((e.index, {"process": e.process, "f": e.f}) for e in events)

    def edge(src: int, dst: int, kind: str) -> None:
        if src < dst and not graph.has_edge(src, dst):
            graph.add_edge(src, dst, kind=kind)

    last_of: dict[str, int] = {}
    flushes: dict[tuple[str, str], deque[int]] = defaultdict(deque)
    started: dict[tuple[str, Any], int] = {}
    scheduled: dict[tuple[str, Any], int] = {}
    checkpoint_invoked: dict[tuple[str, Any], int] = {}
    checkpoint_ok: dict[tuple[str, Any], int] = {}
    coordinator_snapshot: dict[tuple[str, Any], int] = {}
    task_snapshots: dict[tuple[str, Any], list[int]] = defaultdict(list)
    errors: dict[str, list[int]] = defaultdict(list)  # job -> errors since its last failover
    restarted: dict[str, tuple[int, set[str]]] = {}  # job -> (start event, processes seen since)
    last_locked: int | None = None

    for event in events:
        process, index, value = event.process, event.index, _value(event)
        if process not in _UNORDERED_PROCESSES:
            previous = last_of.get(process)
            if previous is not None:
                edge(previous, index, PROGRAM_ORDER)
            last_of[process] = index
        job, role, kind = _job(process), _role(process), (event.f, event.type)

        restart = restarted.get(job)
        if restart is not None and role and process not in restart[1]:
            restart[1].add(process)
            edge(restart[0], index, JOB_START)

        if kind == ("flush", "ok"):
            flushes[job, _canonical(value)].append(index)
        elif kind == ("event", "info"):
            queue = flushes.get((job, _canonical(value)))
            if queue:
                edge(queue.popleft(), index, EVENT_MESSAGE)
        elif kind == ("start_instant", "ok"):
            started[job, _field(value, "instant")] = index
        elif kind == ("wait_instant", "ok"):
            source = started.get((job, _field(value, "instant")))
            if source is not None:
                edge(source, index, INSTANT_RESPONSE)
        elif kind == ("schedule_compaction", "ok"):
            scheduled[job, _field(value, "instant")] = index
        elif kind == ("compaction", "invoke"):
            source = scheduled.get((job, _field(value, "instant")))
            if source is not None:
                edge(source, index, COMPACTION_START)
        elif event.f == "checkpoint" and role == "checkpoint":
            key = (job, _field(value, "checkpoint"))
            if event.type == "invoke":
                checkpoint_invoked[key] = index
            elif event.type == "ok":
                checkpoint_ok[key] = index
                for ack in task_snapshots.pop(key, ()):
                    edge(ack, index, CHECKPOINT)
        elif kind == ("snapshot", "info"):  # the coordinator's snapshot
            key = (job, _field(value, "checkpoint"))
            coordinator_snapshot[key] = index
            if key in checkpoint_invoked:
                edge(checkpoint_invoked[key], index, CHECKPOINT)
        elif kind == ("snapshot", "ok"):  # a task's snapshot, then its ACK
            key = (job, _field(value, "checkpoint"))
            task_snapshots[key].append(index)
            if key in coordinator_snapshot:
                edge(coordinator_snapshot[key], index, CHECKPOINT)
        elif kind == ("notify", "info"):
            source = checkpoint_ok.get((job, _field(value, "checkpoint")))
            if source is not None:
                edge(source, index, CHECKPOINT)
        elif kind == ("error", "fail"):
            errors[job].append(index)
        elif event.f == "failover" and not role:
            for error in errors.pop(job, ()):
                edge(error, index, FAILOVER)
        elif event.f == "start" and not role:
            restarted[job] = (index, set())

        if event.f == "instant_time" and value.get("locked") is True:
            if last_locked is not None:
                edge(last_locked, index, TABLE_LOCK)
            last_locked = index
    return graph


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def shortest_chain(graph: nx.DiGraph, source: int, target: int) -> list[int] | None:
    """The shortest chain of events by which ``source`` happens-before ``target``, or None.

    Edges only go forward in the history, so only the events between the two can be on a chain;
    the search is confined to that window.
    """
    if source == target or source > target:
        return None
    if source not in graph or target not in graph:
        return None
    window = nx.subgraph_view(graph, filter_node=lambda n: source <= n <= target)
    try:
        return list(nx.bidirectional_shortest_path(window, source, target))
    except nx.NetworkXNoPath:
        return None


def describe_chain(graph: nx.DiGraph, chain: Sequence[int]) -> str:
    """``"259 -table lock-> 265"``: the chain with each hop's kind; runs of program-order hops
    within one process collapse into one hop (``-program order of ingest/coordinator->``)."""
    if not chain:
        return ""
    parts = [str(chain[0])]
    position = 1
    while position < len(chain):
        src, dst = chain[position - 1], chain[position]
        kind = graph.edges[src, dst]["kind"]
        if kind == PROGRAM_ORDER:
            process = graph.nodes[src]["process"]
            while (
                position + 1 < len(chain)
                and graph.edges[chain[position], chain[position + 1]]["kind"] == PROGRAM_ORDER
                and graph.nodes[chain[position + 1]]["process"] == process
            ):
                position += 1
            dst = chain[position]
            kind = f"program order of {process}"
        parts.append(f"-{kind}-> {dst}")
        position += 1
    return " ".join(parts)


class HappensBefore:
    """The graph of one history, built on first use (a run without violations never needs it)."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = events
        self._graph: nx.DiGraph | None = None

    @property
    def graph(self) -> nx.DiGraph:
        if self._graph is None:
            self._graph = build_graph(self.events)
        return self._graph

    def chain(self, source: int, target: int) -> list[int] | None:
        return shortest_chain(self.graph, source, target)

    def explain(self, first: int, second: int) -> str:
        """A clause saying how the earlier event relates to the later one causally.

        ``"event 259 happens-before event 265 via 259 -table lock-> 265"`` or
        ``"events 259 and 265 are concurrent (no happens-before chain orders them)"``.
        """
        a, b = min(first, second), max(first, second)
        chain = self.chain(a, b)
        if chain is None:
            return f"events {a} and {b} are concurrent (no happens-before chain orders them)"
        return f"event {a} happens-before event {b} via {describe_chain(self.graph, chain)}"


__all__ = [
    "CHECKPOINT",
    "COMPACTION_START",
    "EVENT_MESSAGE",
    "FAILOVER",
    "INSTANT_RESPONSE",
    "JOB_START",
    "PROGRAM_ORDER",
    "TABLE_LOCK",
    "HappensBefore",
    "build_graph",
    "describe_chain",
    "shortest_chain",
]
