"""Concurrency control between writers: OCC conflict detection and NBCC (Hudi's
``hudi-client-common`` ``client/transaction``: ``TransactionUtils``,
``SimpleConcurrentFileWritesConflictResolutionStrategy``; docs/protocol.md section 7)."""
