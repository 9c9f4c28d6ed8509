"""A violation as a picture: the happens-before chain that leads to it, with the sentence that
explains it.

A checker names the events that broke a rule (``result.json``: ``why`` and ``events``). Whether
those events were *ordered* by the protocol (a chain of messages, a lock hand-off, program order)
or merely concurrent is what decides between "the protocol promised an order and broke it" and
"only the clocks ordered them". So the drawing shows the named events on their processes' lanes,
the shortest happens-before chain between consecutive ones (from :mod:`invariants.happens_before`,
the same graph the checkers use), a dashed red link where no chain exists, and the last few causes
of the first named event, so a reader sees how the run got there.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from pathlib import Path

import networkx as nx
from matplotlib.lines import Line2D

from invariants.happens_before import PROGRAM_ORDER, HappensBefore
from models.history import Event
from reports.figures import COLORS, Figure, new_figure, save, styled, wrap
from reports.run_data import RunData

MAX_NAMED = 4
"""Most named events of one violation drawn (checkers name two or three)."""
CONTEXT_HOPS = 3
"""Causes drawn before the first named event (closest first)."""
MAX_CHAIN = 14
"""Longer chains keep their endpoints and every hop between processes; runs of program order
within one process collapse into one hop."""


def violations_of(run: RunData) -> list[tuple[str, list[dict]]]:
    """(invariant, its violations) for every violated invariant, by name."""
    out = []
    for name, verdict in sorted(run.result.get("invariants", {}).items()):
        violations = verdict.get("violations") or []
        if not verdict.get("ok", True) and violations:
            out.append((name, violations))
    return out


def chain_graph(
    hb: HappensBefore, named: Sequence[int]
) -> tuple[nx.DiGraph, list[tuple[int, int]]]:
    """The subgraph to draw: chains between consecutive named events, the first one's causes;
    plus the pairs no chain orders (drawn as dashed links)."""
    graph = hb.graph
    drawn = nx.DiGraph()
    drawn.add_nodes_from(n for n in named if n in graph)
    concurrent = []
    for a, b in pairwise(named):
        chain = hb.chain(a, b)
        if chain is None:
            concurrent.append((a, b))
            continue
        for src, dst, kind in _compress(graph, chain):
            drawn.add_edge(src, dst, kind=kind)
    if named and named[0] in graph:
        node = named[0]
        for _ in range(CONTEXT_HOPS):
            causes = sorted(graph.predecessors(node))
            if not causes:
                break
            cause = causes[-1]
            drawn.add_edge(cause, node, kind=graph.edges[cause, node]["kind"])
            node = cause
    return drawn, concurrent


def _compress(graph: nx.DiGraph, chain: list[int]) -> list[tuple[int, int, str]]:
    """Hops of ``chain``; if long, runs of program order within one process become one hop."""
    hops = [(a, b, graph.edges[a, b]["kind"]) for a, b in pairwise(chain)]
    if len(chain) <= MAX_CHAIN:
        return hops
    out: list[tuple[int, int, str]] = []
    for src, dst, kind in hops:
        if out and kind == PROGRAM_ORDER and out[-1][2].startswith(PROGRAM_ORDER):
            out[-1] = (out[-1][0], dst, f"{PROGRAM_ORDER} (several steps)")
        else:
            out.append((src, dst, kind))
    return out


def _label(event: Event) -> str:
    return f"#{event.index}\n{event.f} {event.type}\n{event.time / 1000:.3f} s"


def plot_violation(
    run: RunData, invariant: str, violations: list[dict], out_dir: Path, hb: HappensBefore
) -> Figure | None:
    """The first violation of ``invariant`` (with events) drawn with its chain; None if none
    names events the history has."""
    events = run.events
    first = next((v for v in violations if v.get("events")), None)
    if first is None:
        return None
    named = sorted({int(i) for i in first["events"] if 0 <= int(i) < len(events)})[:MAX_NAMED]
    if not named:
        return None
    drawn, concurrent = chain_graph(hb, named)
    nodes = sorted(drawn.nodes)
    processes = sorted({events[n].process for n in nodes}, key=lambda p: (p.split("/")[0], p))
    lane = {p: i for i, p in enumerate(reversed(processes))}
    pos = {n: (rank, lane[events[n].process]) for rank, n in enumerate(nodes)}
    why = str(first.get("why", ""))
    with styled():
        fig = new_figure(11, 2.6 + 0.75 * len(processes))
        ax = fig.add_subplot()
        ax.grid(False)
        for spine in ax.spines.values():
            spine.set_visible(False)
        for p, y in lane.items():
            ax.axhline(y, color="#e5e5e5", lw=6, zorder=0)
            ax.text(-0.6, y, p, ha="right", va="center", fontsize=8)
        colors = [COLORS["violation"] if n in named else "#dbe9f6" for n in nodes]
        nx.draw_networkx_nodes(
            drawn,
            pos,
            ax=ax,
            nodelist=nodes,
            node_color=colors,
            node_size=420,
            edgecolors="#555555",
        )
        nx.draw_networkx_edges(
            drawn,
            pos,
            ax=ax,
            arrows=True,
            arrowstyle="-|>",
            arrowsize=12,
            node_size=420,
            edge_color="#555555",
            connectionstyle="arc3,rad=0.08",
        )
        nx.draw_networkx_edge_labels(
            drawn,
            pos,
            ax=ax,
            edge_labels={(a, b): d["kind"] for a, b, d in drawn.edges(data=True)},
            font_size=6.5,
            rotate=False,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
        )
        for n in nodes:
            x, y = pos[n]
            ax.text(x, y - 0.28, _label(events[n]), ha="center", va="top", fontsize=6.5)
        for a, b in concurrent:
            (xa, ya), (xb, yb) = pos[a], pos[b]
            ax.plot([xa, xb], [ya, yb], ls="--", color=COLORS["violation"], lw=1.2)
            ax.text(
                (xa + xb) / 2,
                (ya + yb) / 2 + 0.12,
                "no happens-before chain",
                ha="center",
                fontsize=7,
                color=COLORS["violation"],
            )
        ax.set_xlim(-0.7 - 0.09 * max(len(p) for p in processes), max(len(nodes) - 0.5, 1))
        ax.set_ylim(-0.9, len(processes) - 0.4)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{run.name}: {invariant} violated", color=COLORS["violation"])
        ax.set_xlabel(wrap(why, 150), fontsize=8, loc="left")
        fig.legend(
            handles=[
                Line2D(
                    [],
                    [],
                    marker="o",
                    ls="",
                    mfc=COLORS["violation"],
                    mec="#555555",
                    label="event the checker names",
                ),
                Line2D(
                    [],
                    [],
                    marker="o",
                    ls="",
                    mfc="#dbe9f6",
                    mec="#555555",
                    label="cause (happens-before)",
                ),
            ],
            loc="outside upper right",
            ncols=2,
        )
    more = len(violations) - 1
    caption = why + (
        f" ({more} more violation{'s' if more != 1 else ''} of {invariant} in this run.)"
        if more
        else ""
    )
    return save(fig, out_dir, f"hb_{invariant}", f"{invariant}: happens-before chain", caption)


def plot_violations(run: RunData, out_dir: Path) -> list[Figure]:
    """One figure per violated invariant (none for a clean run)."""
    found = violations_of(run)
    if not found:
        return []
    hb = HappensBefore(run.events)
    figures = []
    for invariant, violations in found:
        figure = plot_violation(run, invariant, violations, out_dir, hb)
        if figure is not None:
            figures.append(figure)
    return figures


__all__ = ["chain_graph", "plot_violation", "plot_violations", "violations_of"]
