"""The timeline: instant times and TrueTime, instants and their file names, the active timeline on
storage and the archived LSM timeline (Hudi's ``hudi-common`` ``common/table/timeline``:
``TimeGenerator``, ``HoodieInstant``, ``HoodieActiveTimeline``, ``LSMTimeline``; docs/protocol.md
sections 1, 2 and 8)."""
