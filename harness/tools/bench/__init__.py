"""Benchmarks: figures, not tests.

``mirrordrill bench drills|startup|load``, and ``python -m mirrordrill.harness.tools.bench.replication``.
"""
