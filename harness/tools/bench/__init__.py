"""Benchmarks: figures, not tests (``python -m harness.tools.bench.replication``, ``python -m harness.tools.bench.load``)."""
