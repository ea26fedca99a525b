"""The drills MirrorMaker 1 cannot run, each refused with the reason before anything starts, and
the settings it ignores (warned about: one drill file serves every replicator).

``validate`` asks ``MirrorMaker1Replicator.file_problems``; every answer is (place in the drill
file, message), as the file's other checks give them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from mirrordrill.harness.drill.schema_timeline import AddPartitions, CreateTopic, Failback, Failover

if TYPE_CHECKING:
    from mirrordrill.harness.drill.schema import Scenario

NOT_TRANSLATING = ("translated", "checkpoint")


def ignored_settings(s: Scenario) -> Iterator[tuple[tuple, str]]:
    """A flow's settings MirrorMaker 1 has no use for (MM2's own keys, the bundled replicator's)."""
    for i, f in enumerate(s.replication.flows):
        for key in sorted(k for k in f.settings if not k.startswith(("consumer.", "producer."))):
            yield (("replication", "flows", i, "settings", key),
                   f"MirrorMaker 1 ignores {key!r}: a flow's settings reach it only as consumer.* and producer.* "
                   "client settings")


def drill_problems(s: Scenario) -> Iterator[tuple[tuple, str]]:
    r = s.replication
    if r.policy != "identity":
        yield (("replication", "policy"),
               "MirrorMaker 1 copies each topic under its own name (it has no remote-topic prefix): set "
               "policy: identity")
    sources = {f.source for f in r.flows}
    failing_over = {st.source for st in s.timeline if isinstance(st, Failover)}
    for i, c in enumerate(s.load.consumers):
        if c.failover_strategy in NOT_TRANSLATING and c.cluster in failing_over:
            yield (("load", "consumers", i, "failover_strategy"),
                   f"MirrorMaker 1 writes no checkpoints and translates no offsets, so a '{c.failover_strategy}' "
                   "failover cannot run; choose timestamp, earliest or latest")
    for i, step in enumerate(s.timeline):
        if isinstance(step, Failback):
            yield (("timeline", i),
                   "MirrorMaker 1 cannot fail back: copying the new primary back under the same names would loop, "
                   "and it cannot restore what the old primary held; end the drill at the failover")
        elif isinstance(step, (CreateTopic, AddPartitions)) and step.cluster in sources:
            yield (("timeline", i),
                   f"MirrorMaker 1 creates no topic and adds no partition on the target, so its copy of "
                   f"{step.topic!r} would not follow this {step.do}; declare the topic with its partitions in topics:")
