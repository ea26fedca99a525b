"""Benchmarks: figures, not tests (``python -m harness.bench.replication``)."""
