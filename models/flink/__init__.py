"""The Flink write pipeline as pure state machines: write-metadata events, the write task and the
write coordinator in its three instant-generation modes (Hudi's ``hudi-flink`` ``sink`` package:
``StreamWriteFunction``, ``WriteMetadataEvent``, ``StreamWriteOperatorCoordinator``,
``EventBuffers``; docs/protocol.md section 6)."""
