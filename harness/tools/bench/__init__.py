"""Benchmarks: figures, not tests (``mirrordrill bench drills|startup|load``, ``python -m harness.tools.bench.replication``)."""
