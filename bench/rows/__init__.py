"""The bench's rows, one module each; every module has ``measure(sizes, log) -> [Measurement]``.

The order here is the order of the table.
"""

from __future__ import annotations

from collections.abc import Callable

from bench.measure import Log, Measurement
from bench.rows import reader, scaling, search, simulation, spark
from bench.sizes import Sizes

ROWS: dict[str, Callable[[Sizes, Log], list[Measurement]]] = {
    "simulation": simulation.measure,
    "search": search.measure,
    "reader": reader.measure,
    "spark": spark.measure,
    "scaling": scaling.measure,
}
