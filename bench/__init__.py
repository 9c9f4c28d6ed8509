"""Benchmarks: ``python -m bench`` or ``testbed bench``; never part of the test run.

Every row is a ratio against a reference measured in the same run on the same machine (absolute
times on shared machines are noise), with min / median / max over repeats: simulation speed,
property search throughput, the reader and writer against hudi-rs and raw pyarrow, Spark sweeps
and verification, and how cost grows with writers, checkpoint frequency and key space. The
table goes to stdout, progress to stderr, every sample to ``bench/results.json``.
"""
