"""Which just-in-time compilers a JVM the project starts uses: ``c1`` or ``tiered``.

``tiered`` is the JVM's own default: hot code is compiled by C1 at once and again by C2, whose
code is faster but costs far more CPU to make. ``c1`` stops at C1. A JVM that lives for minutes
on a 2-core machine shared with others spends much of its life feeding C2 (the replicator's
driver: ``replicator.driver_jvm``; the brokers a drill starts: ``harness.lab.brokers.broker``).
"""

from __future__ import annotations

JIT_MODES = ("c1", "tiered")


def jit_flags(mode: str) -> list[str]:
    """The JVM options of ``mode``: ``-XX:TieredStopAtLevel=1`` for ``c1``, none for ``tiered``."""
    if mode == "c1":
        return ["-XX:TieredStopAtLevel=1"]
    if mode == "tiered":
        return []
    raise ValueError(f"unknown JIT {mode!r}: use {' or '.join(JIT_MODES)}")
