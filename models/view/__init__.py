"""Reading a table: data file names, the file-system view (file groups and completion-time file
slices), the table as a whole (timeline plus view) and the snapshot reader with its merge rules
(Hudi's ``hudi-common`` ``common/table/view`` ``AbstractTableFileSystemView``, ``common/fs``
``FSUtils``, and the file-group readers; docs/protocol.md sections 3, 4 and 5)."""
