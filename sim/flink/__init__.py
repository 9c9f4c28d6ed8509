"""The roles of a simulated Flink job with a Hudi sink, each its own simpy process.

``source`` (the upstream reader and its bucket routing), ``write_function`` (one write task:
Hudi's ``StreamWriteFunction``), ``operator_coordinator`` (Hudi's
``StreamWriteOperatorCoordinator``), ``checkpoint_coordinator`` (Flink's ``CheckpointCoordinator``)
and ``compactor`` (Hudi's Flink compaction operators). Each receives only what it needs: its
settings, its write client (``write_clients``), its mailboxes and gateways, the fault hooks it may
fire and the job-control interface of its execution attempt (``runtime``). ``sim.job`` wires them
into one execution attempt and restarts them on failover; no role sees the world or the job.
"""
