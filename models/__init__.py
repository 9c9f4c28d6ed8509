"""The protocol itself, as Hudi's modules divide it: ``format`` (bytes on storage), ``timeline``
(instant times and the timelines), ``view`` (file slices and reading), ``write`` (writing, rollback,
heartbeats), ``txn`` (concurrency control) and ``flink`` (the Flink write pipeline), each layer
importing only the ones below it; ``ports``, ``storage``, ``history`` and ``table_errors`` under all.

Pure Python + pyarrow. Never imports simpy, pyspark or matplotlib, never reads the wall clock and
never draws random numbers: time, locks and storage come in through the ports in
:mod:`models.ports`. docs/protocol.md describes every rule, section by section.
"""
