"""Benchmarks: figures, not tests (``python -m harness.bench.replication``, ``python -m harness.bench.load``)."""
