"""The protocol itself: Hudi 1.x timeline, TrueTime, on-disk formats, file slicing, merging.

Pure Python + pyarrow. Never imports simpy, pyspark or matplotlib, never reads the wall clock and
never draws random numbers: time, locks and storage come in through the ports in
:mod:`models.ports`. See ``docs/protocol.md`` sections 1-5.
"""
