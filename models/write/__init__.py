"""Writing a table: the table writer (base and log files, markers, commits, compaction), rollback
of failed writes and writer heartbeats (Hudi's ``hudi-client-common`` write client,
``BaseRollbackActionExecutor``, ``HoodieHeartbeatClient``; docs/protocol.md section 3)."""
