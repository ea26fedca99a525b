"""Failback: rebuild the old primary from the new one, check the two converge, optionally switch back.

After a failover the old primary may hold records the DR cluster never got, and its copy of
everything else is stale; simply reversing replication would leave it inconsistent. The clean
way (the seed chapter's "after the failover") is what this step does:

1. stop replication out of the old primary (its source is about to disappear);
2. wipe the old primary -- data and committed offsets -- and start it empty;
3. replicate the new primary back into it with a fresh replicator of the drill's kind;
4. wait until every topic that copy covers holds on the old primary exactly what the new
   primary holds (compared record by record, per partition);
5. with ``switch_back``: re-protect first -- a fresh replicator copies the old primary to the
   DR cluster again, as before the incident, and is live before any application writes there
   -- then move the applications back the planned way (stop producers, drain, translate group
   offsets through the copy back, restart) and retire the copy back. Started afterwards (as
   once here), the re-protect left the first 10-20 s of writes on the old primary unreplicated.

With ``restore_history`` (and a replicator that can), step 3 also copies the new primary's
copies of the old primary's topics (``<old>.<topic>``) back under their original names, in
order and once each, so the rebuilt primary holds its own history again -- at the same offsets,
since it starts empty and the copies were exact -- beside the post-incident records. Groups
switching back are translated through that copy too (past what they processed), and the
re-protect resumes each partition after the history instead of copying it to DR a second time.
The history is what ``<old>.<topic>`` held when the copy back started (``replicator.history``):
what the re-protect copies into it while the copy back still runs is not restored a second time.
"""

from __future__ import annotations

import re
import time
from collections import Counter

from mirrordrill.harness.drill import failover
from mirrordrill.harness.drill.checker.contract import WIPE_EVENT_KIND
from mirrordrill.harness.drill.context import DrillContext, now_ms
from mirrordrill.harness.drill.replicators.interface import ReplicatorAdapter
from mirrordrill.harness.drill.replicators.setup import FlowSpec
from mirrordrill.harness.drill.results import FailbackSummary
from mirrordrill.harness.drill.run_folder import FAILBACK_DIR
from mirrordrill.harness.drill.schema_timeline import Failback, Failover
from mirrordrill.harness.lab.spark.deployment import SparkDeploymentError
from mirrordrill.loadgen.observer import Observer
from mirrordrill.primitives.kafka.reading import read_topic
from mirrordrill.replicator.filters import TopicFilter, TopicSelector

CLUSTER_START_TIMEOUT_S = 180.0


RESTORE_HISTORY_SETTING = "mirrordrill.restore.history"  # the bundled replicator's flow key


def reversed_flows(ctx: DrillContext, new_primary: str, old_primary: str,
                   restore_history: bool = False) -> list[FlowSpec]:
    """The drill's flows old -> new, turned round (same topic selection, settings and placement)."""
    extra = {RESTORE_HISTORY_SETTING: "true"} if restore_history else {}
    return [FlowSpec(new_primary, old_primary, topics=f.topics, topics_exclude=f.topics_exclude,
                     placement=f.placement, settings={**f.settings, **extra})
            for f in ctx.replicator.setup.flows if f.source == old_primary and f.target == new_primary]


def run(ctx: DrillContext, step: Failback) -> str:
    new, old = step.source, step.target
    refusal = type(ctx.replicator).cannot_restore_history if step.restore_history else None
    restore = step.restore_history and refusal is None
    flows = reversed_flows(ctx, new, old, restore_history=restore)
    if not flows:
        raise RuntimeError(f"failback {new}->{old}: the running replicator has no flow {old}->{new} to reverse")
    if ctx.new_replicator is None:
        raise RuntimeError("failback needs the drill's replicator factory")
    original_flows = list(ctx.replicator.setup.flows)
    result = _copy_back(ctx, new, old, flows, step.timeout, refusal)
    outcome = (f"{old} rebuilt from {new}: " + ("converged" if result.converged else "NOT converged")
               + f" in {result.converge_s:.1f}s (missing {result.missing}, extra {result.extra})")
    if not step.switch_back:
        return outcome
    if not result.converged:
        raise RuntimeError(outcome + "; not switching back onto a cluster that does not hold what the other does")
    return outcome + _switch_back(ctx, new, old, step.timeout, original_flows, restore)


def _copy_back(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec], timeout: float,
               refusal: str | None) -> FailbackSummary:
    """Stop replication out of ``old``, wipe it, copy ``new`` back into it and wait until both hold the same."""
    t = now_ms()
    ctx.replicator.stop()
    ctx.retired_replicators.append(ctx.replicator)
    ctx.record(f"stop replication out of {old}", "failback_part", t, now_ms(), "ok")

    t = now_ms()
    _wipe_and_start(ctx, old)
    ctx.wiped_at[old] = t
    # the checker reads this event: offsets of the wiped cluster's partitions restart at 0 here
    ctx.record(f"wipe {old}", WIPE_EVENT_KIND, t, now_ms(), "ok", "data and committed offsets deleted; started empty")

    t = now_ms()
    reverse = _new_replicator(ctx, flows, "copy-back")
    ctx.log(f"failback: copying {new} back into {old} (logs: {', '.join(map(str, reverse.log_paths().values()))})")
    reverse.start()
    ctx.replicator = reverse
    _observe_copy(ctx, new, old, flows)
    ctx.record(f"start replication {new}->{old}", "failback_part", t, now_ms(), "ok")

    if refusal:
        ctx.log(f"failback: the history {old} held before the incident is not restored: {refusal}")
    result = wait_converged(ctx, new, old, flows, timeout, started_ms=t)
    result.history_note = refusal
    ctx.failbacks.append(result)
    ctx.record(f"converge {new}->{old}", "failback_part", t, now_ms(), "ok" if result.converged else "timeout",
               f"{result.topics} topic(s): missing {result.missing}, extra {result.extra}")
    return result


def _switch_back(ctx: DrillContext, new: str, old: str, timeout: float, original_flows: list[FlowSpec],
                 restore: bool) -> str:
    """Re-protect ``old``, move the applications back onto it, retire the copy back; the outcome's rest."""
    # the topics the applications will write on the old primary: the re-protect selects them from its start
    failover.ensure_topics(ctx, old, sorted({t for slot in ctx.producers if slot.cluster == new
                                             for t in slot.definition.topics}))
    reprotect = _reprotect(ctx, old, new, original_flows, restore)
    back = Failover(do="planned_failover", source=new, target=old, drain_timeout=timeout)
    try:
        outcome = "; switch back: " + failover.planned(ctx, back, restart_finished=True)
    except BaseException:
        # the applications stay on the new primary, which the copy back still protects; a re-protect
        # of the old one, where nothing is written now, only holds Spark's slots and the log's attention
        if reprotect is not None:
            ctx.log(f"failback: the switch back failed; stopping the re-protect of {old}")
            _stop_quietly(ctx, reprotect)
        raise

    t = now_ms()
    ctx.replicator.stop()
    ctx.retired_replicators.append(ctx.replicator)
    if reprotect is None:  # no room for both: re-protect now, after the switch (its first writes wait)
        late = _reprotect(ctx, old, new, original_flows, restore, fallback=False)
        assert late is not None  # without a fallback, a start that fails raises
        reprotect = late
        outcome += f"; replication {old}->{new} restarted after the switch"
    else:
        outcome += f"; replication {old}->{new} was live before the switch"
    ctx.retired_replicators.remove(reprotect)
    ctx.replicator = reprotect
    ctx.record(f"stop replication {new}->{old}", "failback_part", t, now_ms(), "ok", "the copy back's work is done")
    return outcome


def _reprotect(ctx: DrillContext, old: str, new: str, original_flows: list[FlowSpec], restore: bool,
               fallback: bool = True) -> ReplicatorAdapter | None:
    """Start replication old -> new again, live before the applications switch back to ``old``.

    None (with ``fallback``) when a Spark cluster has no task slots for it beside the copy back:
    then it starts after the switch, once the copy back is stopped."""
    t = now_ms()
    reprotect = _new_replicator(ctx, original_flows, "re-protect")
    if not restore:
        # the wiped primary's offsets restarted at 0 while dr keeps the copies made before the incident
        # (restored history puts each record back at its old offset: then the copies on dr still line up)
        reprotect.count_target_from_now()
        reprotect.forget_source_positions(old)
    when = "before the switch back" if fallback else "after the switch back"
    ctx.log(f"failback: re-protecting {old} {when} (logs: {', '.join(map(str, reprotect.log_paths().values()))})")
    ctx.retired_replicators.append(reprotect)  # stopped on every exit path until it takes over
    try:
        reprotect.start()
    except SparkDeploymentError as e:
        if not fallback:
            raise
        ctx.retired_replicators.remove(reprotect)
        ctx.log(f"failback: no room to re-protect {old} beside the copy back ({e}); re-protecting after the switch")
        return None
    ctx.record(f"re-protect {old}->{new}", "failback_part", t, now_ms(), "ok",
               f"fresh replication as before the incident, live {when}")
    return reprotect


def _new_replicator(ctx: DrillContext, flows: list[FlowSpec], folder: str) -> ReplicatorAdapter:
    if ctx.new_replicator is None:  # run() checks before anything starts
        raise RuntimeError("failback needs the drill's replicator factory")
    return ctx.new_replicator(flows, ctx.out_dir / FAILBACK_DIR / folder)


def _stop_quietly(ctx: DrillContext, replicator: ReplicatorAdapter) -> None:
    """Stop a replicator while another error is on its way up: that error is the one to report."""
    try:
        replicator.stop()
    except Exception as e:
        ctx.log(f"failback: stopping the re-protect: {type(e).__name__}: {e} (the drill's end stops it again)")


def _wipe_and_start(ctx: DrillContext, cluster_name: str) -> None:
    # A primary lost to a hard partition is reachable again only once its links are healed.
    for link in ctx.env.links.values():
        if cluster_name in (link.a, link.b):
            link.heal()
    cluster = ctx.env.cluster(cluster_name)
    cluster.wipe()
    cluster.start()
    cluster.wait_ready(CLUSTER_START_TIMEOUT_S)
    ctx.abandoned.discard(cluster_name)  # alive again: what flows out of it can be drained


def _observe_copy(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec]) -> None:
    """Record what arrives on the rebuilt primary: a switch back's cost is measured against it."""
    prefix = re.escape(ctx.replicator.setup.remote_prefix(new))
    pattern = "^" + prefix + "(?:" + "|".join(f"(?:{t})" for f in flows for t in f.topics) + ")$"
    observer = Observer(old, ctx.env.cluster(old).bootstrap, pattern, ctx.histories, writer_tag=f"observer-{old}-copy-back",
                        security=ctx.security_for(old))
    ctx.observers.append(observer.start())


# --- convergence -------------------------------------------------------------------------
def compared_topics(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec]) -> dict[str, str]:
    """Topics the copy back covers: name on the new primary -> name on the old primary."""
    existing = ctx.env.cluster(new).admin().list_topics(timeout=15).topics
    out: dict[str, str] = {}
    for selector in _selectors(ctx, new, old, flows):
        out.update({t: selector.remote_topic(t) for t in existing if selector.should_replicate_topic(t)})
    return out


def restored_topics(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec], topics: dict[str, str]) -> set[str]:
    """Of the compared topics (new primary names), the copies of the old primary's history."""
    return {t for s in _selectors(ctx, new, old, flows) for t in topics if s.restored_topic(t) is not None}


def _selectors(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec]) -> list[TopicSelector]:
    return [TopicSelector(new, old, TopicFilter(tuple(f.topics), tuple(f.topics_exclude)),
                          ctx.replicator.setup.replication_policy(new),
                          heartbeats_replication_enabled=False,
                          restore_history=f.settings.get(RESTORE_HISTORY_SETTING) == "true") for f in flows]


def _read(bootstrap: str, topics: dict[str, str], side: int,
          security: dict[str, str] | None = None) -> dict[tuple[str, int], list[bytes]]:
    """Every record of the compared topics on one side (0: new primary names, 1: old primary names)."""
    out: dict[tuple[str, int], list[bytes]] = {}
    for pair in sorted(topics.items()):
        for m in read_topic(bootstrap, pair[side], security=security):
            partition = m.partition()
            if partition is not None:  # read_topic returns records, which always have one
                out.setdefault((pair[0], partition), []).append(bytes(m.value() or b""))
    return out


def _difference(a: dict, b: dict) -> int:
    """Records of ``a`` not in ``b``, per topic partition, counting repeats."""
    return sum(sum((Counter(a[k]) - Counter(b.get(k, ()))).values()) for k in a)


def wait_converged(ctx: DrillContext, new: str, old: str, flows: list[FlowSpec], timeout_s: float,
                   started_ms: int) -> FailbackSummary:
    """Wait until the old primary holds every record the new one held when the copy had drained.

    The new primary keeps taking writes, so the comparison is against a snapshot: read the new
    primary once the copy's lag reached zero, then re-read the old one until it holds all of
    that snapshot (missing), and finally check it holds nothing the new primary does not hold,
    read again after it (extra): a record written in between is neither missing nor extra.
    """
    deadline = time.monotonic() + timeout_s
    result = FailbackSummary(from_=new, to=old, name=f"{new}->{old}", converged=False, topics=0, records=0,
                             missing=None, extra=None, converge_s=None)
    new_bs, old_bs = ctx.env.cluster(new).bootstrap, ctx.env.cluster(old).bootstrap
    snapshot, topics = None, {}
    while not ctx.stop_requested.is_set():
        try:
            if snapshot is None and (failover.current_lag(ctx) == 0 or time.monotonic() > deadline - 15):
                topics = compared_topics(ctx, new, old, flows)
                snapshot = _read(new_bs, topics, 0, security=ctx.security_for(new)) if topics else None
                result.topics, result.records = len(topics), sum(map(len, (snapshot or {}).values()))
                if history := restored_topics(ctx, new, old, flows, topics):
                    result.history_records = sum(len(v) for (t, _), v in (snapshot or {}).items() if t in history)
            if snapshot is not None:
                copy = _read(old_bs, topics, 1, security=ctx.security_for(old))
                result.missing = _difference(snapshot, copy)
                result.converge_s = round((now_ms() - started_ms) / 1000, 1)
                if result.missing == 0:
                    result.extra = _difference(copy, _read(new_bs, topics, 0, security=ctx.security_for(new)))
                    result.converged = result.extra == 0
                    return result
        except Exception as e:  # a topic being created, a broker still electing leaders
            ctx.log(f"failback: comparing {new} and {old}: {type(e).__name__}: {e}")
        if time.monotonic() > deadline:
            return result
        time.sleep(2.0)
    return result
