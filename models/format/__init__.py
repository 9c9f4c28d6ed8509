"""The on-disk format: Avro schemas and their Arrow mapping, commit metadata and compaction plans,
log files and their blocks, parquet writer settings, ``hoodie.properties`` and the record model
(Hudi's ``hudi-common`` ``common/table/log``, ``common/model``, ``avro`` and ``common/table``
``HoodieTableConfig``). The bottom of the protocol: it reads and writes bytes and knows nothing of
timelines or writers (docs/protocol.md sections 2.5, 2.6, 3, 5)."""
