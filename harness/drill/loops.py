"""Replication loops a replicator cannot break: records copied round a cycle of flows forever.

MirrorMaker 2 breaks a cycle by name: with the ``default`` policy a remote topic's name holds
its source alias (``dr.orders``), and MM2 never sends a topic back to a cluster its name came
from (``MirrorSourceConnector.isCycle``). The ``identity`` policy removes that prefix, so MM2
has nothing left to tell a copy from an original: on a cycle of flows whose topics overlap,
each copy is copied again, under the same name, forever. The bundled replicator (pyspark)
stamps each record's path in a header (``replicator/policy.py``, ``PROVENANCE_HEADER``) and
drops what comes back. A team's own command replicator gets ``{remote_prefix}`` empty and
may or may not have such a mark: the drill warns.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise

from mirrordrill.harness.drill.schema import FlowDef, Scenario
from mirrordrill.harness.drill.topic_names import flow_selects
from mirrordrill.harness.drill.topology import origin_topics

Report = Callable[[tuple, str], None]

PROVENANCE_SETTING = "mirrordrill.provenance.header"  # the bundled replicator's flow key (mm2_keys.py)


def loop_problems(s: Scenario, replicator: str, error: Report, warn: Report) -> None:
    """A flow that would carry a topic back to a cluster it came from, under the same name."""
    if s.replication.policy != "identity":
        return
    for i, flow, topic, path in identity_loops(s):
        cycle = "->".join((*path, flow.target))
        if replicator == "pyspark":
            _unmarked_hops(s, (*path, flow.target), topic, error)
        elif replicator == "mirrormaker1":
            continue  # an error of its own (MirrorMaker1Replicator.file_problems)
        elif replicator == "mirrormaker2":
            error(("replication", "flows", i),
                  f"with the identity policy MirrorMaker 2 copies topic {topic!r} round {cycle} under the same "
                  "name forever: without the source-alias prefix nothing tells it the records came from "
                  f"{flow.target}; use policy: default (MM2 never sends {flow.target}{s.replication.separator}{topic} "
                  f"back to {flow.target}), leave {topic!r} "
                  f"out of this flow (topics_exclude), or run the bundled replicator (pyspark), which marks each "
                  "record's path in a header")
        else:
            warn(("replication", "flows", i),
                 f"with the identity policy your replicator gets no source-alias prefix ({{remote_prefix}} is "
                 f"''), so topic {topic!r} goes round {cycle} forever unless it marks records itself; use policy: "
                 f"default, or leave {topic!r} out of this flow (topics_exclude)")


def _unmarked_hops(s: Scenario, cycle: tuple[str, ...], topic: str, error: Report) -> None:
    """The bundled replicator breaks the loop only if every hop of it stamps the provenance header."""
    hops = set(pairwise(cycle))
    for i, f in enumerate(s.replication.flows):
        if (f.source, f.target) in hops and str(f.settings.get(PROVENANCE_SETTING, True)).lower() == "false":
            error(("replication", "flows", i, "settings", PROVENANCE_SETTING),
                  f"with the identity policy topic {topic!r} goes round {'->'.join(cycle)}, and only the provenance "
                  "header stops it coming back under the same name; remove "
                  f"{PROVENANCE_SETTING}: false, or use policy: default")


def identity_loops(s: Scenario) -> list[tuple[int, FlowDef, str, tuple[str, ...]]]:
    """(flow index, flow, topic, clusters passed) for each flow that closes a cycle for a known topic."""
    out, seen = [], set()
    for origin, topics in origin_topics(s).items():
        # identity: the name is the same everywhere
        frontier: list[tuple[str, tuple[str, ...]]] = [(t, (origin,)) for t in sorted(topics)]
        while frontier:
            topic, path = frontier.pop()
            for i, f in enumerate(s.replication.flows):
                if f.source != path[-1] or not flow_selects(f, topic):
                    continue
                if f.target in path:
                    if i not in seen:  # one line per flow, naming one topic that loops
                        seen.add(i)
                        out.append((i, f, topic, path))
                    continue
                frontier.append((topic, path + (f.target,)))
    return out
