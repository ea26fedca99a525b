"""Failover: move producers and application consumers from a primary cluster to its DR cluster.

Planned: stop producers on the primary, let replication drain to zero lag, stop consumers
(committing), translate their position with each group's strategy, start them on the DR side,
then producers there. Unplanned: the primary dies first (killed, or cut off by a hard
partition) while load runs; then the same moves, with only what the DR side can know.
"""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import NewTopic

from mirrordrill.harness.drill.context import ConsumerSlot, DrillContext, FailoverRecord, ProducerSlot, new_app_consumer, now_ms
from mirrordrill.harness.drill.run_folder import LOAD_DIR
from mirrordrill.harness.drill.runbook import run_failover_runbook
from mirrordrill.harness.drill.schema_timeline import Failover
from mirrordrill.loadgen.app_consumer import StartPosition
from mirrordrill.loadgen.runner import LoadRunner
from mirrordrill.loadgen.spec import LoadSpec


# --- lag ---------------------------------------------------------------------------------
def current_lag(ctx: DrillContext, flow: str | None = None) -> int | None:
    """Records not yet replicated (source end minus target end), summed over flows; None if unknown."""
    lags = lag_by_flow(ctx)
    if lags is None:
        return None
    chosen = [v for f, v in lags.items() if flow is None or f == flow]
    known = [v for v in chosen if v is not None]
    if not chosen or len(known) < len(chosen):
        return None
    return sum(known)


def lag_by_flow(ctx: DrillContext) -> dict[str, int | None] | None:
    """Per flow ("A->B"), records not yet replicated (None where unknown), from one metrics sample."""
    try:
        m = ctx.replicator.metrics()
    except Exception:
        return None
    if m is None:
        return None
    out: dict[str, int | None] = {}
    for p in m.partitions:
        known = out.get(p.flow, 0)
        out[p.flow] = None if known is None or p.lag_records is None else known + p.lag_records
    return out


def wait_drained(ctx: DrillContext, flow: str | None, timeout_s: float) -> int | None:
    """Wait until the lag is zero (or the timeout); returns the last lag seen."""
    deadline = time.monotonic() + timeout_s
    lag = None
    while time.monotonic() < deadline and not ctx.stop_requested.is_set():
        lag = current_lag(ctx, flow)
        if lag == 0:
            return 0
        time.sleep(1.0)
    return lag


# --- producers ---------------------------------------------------------------------------
def start_producer(ctx: DrillContext, slot: ProducerSlot, cluster: str, duration_s: float | None,
                   wait: bool = True, start_signal: Path | None = None) -> None:
    """Start (a new instance of) a producer definition against ``cluster``; with ``wait``, return
    once it produces (else call ``slot.runner.wait_running()``). With ``start_signal`` it produces
    only once that file exists."""
    runner = _producer_runner(ctx, slot, cluster, ctx.bootstrap_for(cluster), duration_s, start_signal)
    runner.start(wait=wait)
    slot.runner, slot.cluster = runner, cluster
    slot.runs.append(runner)


def _producer_runner(ctx: DrillContext, slot: ProducerSlot, cluster: str, bootstrap: str,
                     duration_s: float | None, start_signal: Path | None, connect_ahead: bool = True) -> LoadRunner:
    d = slot.definition
    topics = d.topics if isinstance(d.topics, dict) else list(d.topics)
    spec = LoadSpec(cluster=cluster, bootstrap_servers=bootstrap, topics=topics,
                    rate=d.rate, duration_s=duration_s, users=d.users, record_size=d.record_size, keys=d.keys,
                    payload=d.payload.resolved(ctx.drill_dir),
                    producer=dict(d.settings), producer_id_prefix=f"{d.name or 'load'}-{cluster}",
                    output_dir=ctx.histories, client_properties_file=ctx.env.cluster(cluster).security_file(),
                    start_signal=start_signal, connect_ahead=connect_ahead, **_distribution(ctx, slot))
    if spec.remote_workers:
        ctx.log(f"producer {d.name or 'producer'} on {cluster}: its load master waits "
                f"{spec.worker_join_timeout_s:g}s for {spec.remote_workers} remote worker(s): "
                f"mirrordrill load-worker --master {_reachable(spec.master_bind)}:{spec.master_port}")
    return LoadRunner(spec, ctx.out_dir / LOAD_DIR, name=f"load-{d.name or 'producer'}-{cluster}",
                      supervisor=ctx.env.supervisor)


def _reachable(bind: str) -> str:
    """What a worker on another machine connects to for a master bound to ``bind``."""
    return socket.getfqdn() if bind in ("0.0.0.0", "*", "") else bind


def _distribution(ctx: DrillContext, slot: ProducerSlot) -> dict[str, Any]:
    """The LoadSpec fields of the drill's distributed load (none when it has no workers)."""
    load = ctx.scenario.load
    if not load.workers + load.remote_workers:
        return {}
    index = next(i for i, p in enumerate(load.producers) if p is slot.definition)
    port = 0 if load.master_port is None else load.master_port + index
    return {"workers": load.workers, "remote_workers": load.remote_workers, "master_bind": load.master_bind,
            "master_port": port, "worker_join_timeout_s": load.worker_join_timeout_s}


def stop_producers_on(ctx: DrillContext, cluster: str) -> list[ProducerSlot]:
    moved = []
    for slot in ctx.producers:
        if slot.cluster == cluster and slot.runner is not None and slot.runner.running:
            slot.runner.stop(timeout_s=30)
            moved.append(slot)
    return moved


def ensure_topics(ctx: DrillContext, cluster: str, topics: list[str]) -> None:
    """Create the topics ``cluster`` lacks (as the scenario declares them, else 3 partitions)."""
    declared = {t.name: t for t in ctx.scenario.topics}
    existing = ctx.env.cluster(cluster).admin().list_topics(timeout=15).topics
    missing = [NewTopic(t, declared[t].partitions if t in declared else 3, 1) for t in topics if t not in existing]
    if missing:
        ctx.env.cluster(cluster).create_topics(missing)


# --- consumers ---------------------------------------------------------------------------
def dr_topics_for(ctx: DrillContext, slot: ConsumerSlot, primary: str, dr: str) -> tuple[dict[str, str], list[str]]:
    """Topics the group reads on the DR side: remote copies (remote -> original) and same-named local topics."""
    policy = ctx.replicator.setup.replication_policy(primary)
    remote = {policy.format_remote_topic(primary, t): t for t in slot.definition.topics}
    local = [t for t in slot.definition.topics if t not in remote]
    return remote, local


def start_position(ctx: DrillContext, slot: ConsumerSlot, primary: str, dr: str, failure_ms: int) -> StartPosition:
    """Where the group starts on the DR cluster, by its strategy."""
    strategy = slot.definition.failover_strategy
    if strategy == "translated":
        # an unplanned failover has declared the primary lost: no time spent asking it
        offsets = ctx.replicator.translate_offsets(slot.definition.group, primary, dr,
                                                   source_lost=primary in ctx.abandoned)
        # a partition with no translation starts at the beginning: reprocess, never skip
        return StartPosition.at_offsets(offsets, fallback="earliest") if offsets else StartPosition.earliest()
    if strategy == "checkpoint":
        # the newest checkpoints' downstream offsets as the replicator wrote them, trusted as
        # RemoteClusterUtils.translateOffsets users trust them: a wrong one skips or replays
        offsets = ctx.replicator.checkpoint_offsets(slot.definition.group, primary, dr)
        return StartPosition.at_offsets(offsets, fallback="earliest") if offsets else StartPosition.earliest()
    if strategy == "timestamp":
        return StartPosition.at_timestamp(failure_ms - int(slot.definition.timestamp_margin_s * 1000))
    return StartPosition.earliest() if strategy == "earliest" else StartPosition.latest()


def move_consumers(ctx: DrillContext, primary: str, dr: str, failure_ms: int, commit: bool) -> list[str]:
    """Stop every consumer on ``primary`` and start it on ``dr`` with its strategy.

    Groups move in parallel, as independent applications would: one group waiting for a dead
    cluster must not add to another group's RTO. Every group is moved even if one fails.
    """
    slots = [slot for slot in ctx.consumers if slot.cluster == primary]
    if not slots:
        return []
    # Producers that fail over write these names on dr right after: the groups must be
    # subscribed to them already, or they never see a record produced after the failover.
    moving = _moving_topics(ctx, primary)
    ensure_topics(ctx, dr, sorted({t for slot in slots for t in dr_topics_for(ctx, slot, primary, dr)[1]
                                    if t in moving}))
    with ThreadPoolExecutor(max_workers=len(slots), thread_name_prefix="failover") as pool:
        futures = [pool.submit(_move_one, ctx, slot, primary, dr, failure_ms, commit) for slot in slots]
    notes, errors = [], []
    for slot, fut in zip(slots, futures, strict=True):
        try:
            notes.append(fut.result())
        except Exception as e:
            errors.append(f"{slot.definition.group}: {type(e).__name__}: {e}")
    if errors:
        raise RuntimeError("; ".join(errors + notes))
    return notes


def _move_one(ctx: DrillContext, slot: ConsumerSlot, primary: str, dr: str, failure_ms: int, commit: bool) -> str:
    group = slot.definition.group
    t = now_ms()
    if commit:
        slot.consumer.stop(commit=True)
        ctx.record(f"stop {group} on {primary}", "failover", t, now_ms(), "ok", "committed")
    else:
        # The primary is gone and its application instances with it: the group restarts on dr as
        # a new instance. The old one is told to stop, but closing against a dead cluster can
        # block for a long time, and the DR side must not wait for it.
        slot.consumer.stop(commit=False, timeout_s=1)
        slot.retired.append(slot.consumer)
        slot.consumer = new_app_consumer(slot.definition, ctx.histories)
        ctx.record(f"stop {group} on {primary}", "failover", t, now_ms(), "ok", "abandoned; new instance on " + dr)
    remote, local = dr_topics_for(ctx, slot, primary, dr)
    # Registered before it starts on dr: a group that fails to start there still has its cost measured.
    slot.failover = FailoverRecord(group=group, strategy=slot.definition.failover_strategy, primary=primary, dr=dr,
                                   failure_ts_ms=failure_ms, topic_map=remote, dr_topics=tuple(local),
                                   dr_since_ms=ctx.wiped_at.get(dr))
    ctx.failovers.append(slot.failover)
    if commit and slot.definition.failover_strategy in ("translated", "checkpoint"):
        t = now_ms()
        wait = ctx.replicator.await_checkpoints(group, primary, dr, timeout_s=CHECKPOINT_CATCH_UP_TIMEOUT_S)
        if wait is not None:  # translated anyway when the wait ran out: a stale checkpoint replays, never skips
            ctx.record(f"checkpoints of {group} on {dr}", "failover", t, now_ms(),
                       "ok" if wait.caught_up else "timeout", wait.detail)
    t = now_ms()
    position = start_position(ctx, slot, primary, dr, failure_ms)
    ctx.record(f"position {group} on {dr}", "failover", t, now_ms(), "ok",
               f"{slot.definition.failover_strategy}: {position.strategy}")
    existing = ctx.env.cluster(dr).admin().list_topics(timeout=15).topics
    topics = [t for t in remote if t in existing] + [t for t in local if t in existing]
    slot.consumer.start(dr, ctx.bootstrap_for(dr), topics or list(remote), position, security=ctx.security_for(dr))
    slot.cluster = dr
    return f"{group}: {slot.definition.failover_strategy} -> {dr}"


def _moving_topics(ctx: DrillContext, primary: str) -> set[str]:
    """Topics written by producers that fail over from ``primary``."""
    return {t for slot in ctx.producers if slot.cluster == primary for t in slot.definition.topics}


# How long a planned move waits for checkpoints that carry the group's commit (MM2 with drill
# intervals: finding the group and emitting take up to about 15 s) before it translates anyway.
CHECKPOINT_CATCH_UP_TIMEOUT_S = 30.0

# Producers moved by a failover run at least this long on the DR side, even past the planned end
# of the load: a failover that ran late (a long drain) must still show the group working there.
MIN_LOAD_AFTER_FAILOVER_S = 10.0


def _remaining(ctx: DrillContext) -> float:
    """Load time left for producers moved now; extends the drill's load if too little is left."""
    ctx.load_until = max(ctx.load_until, ctx.elapsed() + MIN_LOAD_AFTER_FAILOVER_S)
    return ctx.load_until - ctx.elapsed()


def repoint_stable_address(ctx: DrillContext, primary: str, dr: str) -> None:
    """What an operator does to the DNS name: clients restarted from now on find ``dr``."""
    a = ctx.stable_address
    if a is None or a.points_to != primary:
        return
    t = now_ms()
    a.point_to(ctx.env.cluster(dr))
    ctx.record(f"re-point {a.bootstrap} to {dr}", "failover", t, now_ms(), "ok", f"was {primary}")


# --- the two failovers --------------------------------------------------------------------
def planned(ctx: DrillContext, step: Failover, restart_finished: bool = False) -> str:
    """``restart_finished``: also move producers whose load already ended (a switch back after a
    long failback must still show the applications working on the cluster they return to)."""
    flow = f"{step.source}->{step.target}"
    moving = [slot for slot in ctx.producers if slot.cluster == step.source
              and (restart_finished or (slot.runner is not None and slot.runner.running))]
    late = [slot for slot in moving if _distribution(ctx, slot).get("master_port")]
    standby = _launch_standby_producers(ctx, [slot for slot in moving if slot not in late], step.source, step.target)
    try:
        failure_ms = now_ms()
        producers = stop_producers_on(ctx, step.source)
        producers += [slot for slot in moving if slot not in producers]
        ctx.record(f"stop producers on {step.source}", "failover", failure_ms, now_ms(), "ok",
                   f"{len(producers)} stopped")
        t = now_ms()
        lag = wait_drained(ctx, flow, step.drain_timeout)
        ctx.record(f"drain {flow}", "failover", t, now_ms(), "ok" if lag == 0 else "timeout", f"lag {lag}")
        notes = _switch(ctx, step, failure_ms, late, commit=True)
        _release_standby_producers(ctx, standby, step.target)
    except BaseException:
        for runner in standby.runners:
            runner.stop(timeout_s=10)
        raise
    return f"drained to lag {lag}; {len(notes)} group(s) and {len(producers)} producer(s) moved to {step.target}"


@dataclass
class StandbyProducers:
    """Producers launched on a planned move's target before the move, held until its consumers moved."""
    slots: list[ProducerSlot]
    runners: list[LoadRunner]  # one per slot, in its order
    signal: Path
    duration_s: float


def _launch_standby_producers(ctx: DrillContext, moving: list[ProducerSlot], source: str,
                              target: str) -> StandbyProducers:
    """Start the load processes that replace ``moving`` on ``target``, connected and held.

    A planned move is prepared: the applications' instances on the target are deployed before
    the primary's stop. Started at the switch instead, a load process's own start (Python and
    Locust, 0.9-4.8 s on 2 cores with another drill beside it) counted in the move's RTO, which is
    there to show what the failover costs. Through a stable address they connect only once
    released: it resolves to the source until the switch re-points it, as DNS would. A distributed
    load with a fixed master port (``late`` in ``planned``) starts at the switch: its port is the
    old master's until that one stops."""
    signal = ctx.out_dir / LOAD_DIR / f"release-{target}-{now_ms()}"
    a = ctx.stable_address
    via_stable = a is not None and a.points_to == source  # the switch re-points it to ``target``
    bootstrap = a.bootstrap if a is not None and via_stable else ctx.env.cluster(target).bootstrap
    duration = _remaining(ctx)
    runners: list[LoadRunner] = []
    if moving:
        ensure_topics(ctx, target, sorted({t for slot in moving for t in slot.definition.topics}))
    t = now_ms()
    try:
        for slot in moving:
            runners.append(_producer_runner(ctx, slot, target, bootstrap, duration, signal,
                                            connect_ahead=not via_stable))
            runners[-1].start(wait=False)
        for runner in runners:  # started together: their start-ups overlap
            runner.wait_held()
    except BaseException:
        for runner in runners:
            runner.stop(timeout_s=10)
        raise
    if moving:
        ctx.record(f"launch producers on {target}", "failover", t, now_ms(), "ok",
                   f"{len(moving)} held until the switch")
    return StandbyProducers(moving, runners, signal, duration)


def _release_standby_producers(ctx: DrillContext, standby: StandbyProducers, target: str) -> None:
    if not standby.slots:
        return
    t = now_ms()
    standby.signal.touch()
    # the load's duration counts from the release: the drill's load lasts as long as theirs
    ctx.load_until = max(ctx.load_until, ctx.elapsed() + standby.duration_s)
    for slot, runner in zip(standby.slots, standby.runners, strict=True):
        slot.runner, slot.cluster = runner, target
        slot.runs.append(runner)
    for runner in standby.runners:
        runner.wait_running()
    ctx.record(f"start producers on {target}", "failover", t, now_ms(), "ok", f"{len(standby.slots)} released")


def unplanned(ctx: DrillContext, step: Failover) -> str:
    failure_ms = now_ms()
    if step.how == "kill":
        ctx.env.cluster(step.source).kill()
    else:
        for link in ctx.env.links.values():
            if step.source in (link.a, link.b):
                link.partition()
    ctx.abandoned.add(step.source)  # nothing more will come from it: no drain waits for it
    ctx.record(f"{step.source} lost ({step.how})", "failover", failure_ms, now_ms(), "ok")
    producers = [s for s in ctx.producers if s.cluster == step.source and s.runner is not None and s.runner.running]
    # The lost site's producers went down with it, in production. Stopped with SIGTERM they
    # drained for up to 15 s, retrying through the stable address, and once it pointed at DR
    # their retries landed there under a producer id of the lost cluster; DR's own producer,
    # given the same id by DR, was then refused as out of sequence (MM2's failback runs;
    # see docs/measurements/behind-the-code.md#harness-drill-failover-py).
    # Abandoned (no wait for acks: what is pending is uncertain) they are gone before the address
    # moves (tens of ms); in parallel, one thread each.
    t_stop = now_ms()
    if producers:
        with ThreadPoolExecutor(max_workers=len(producers), thread_name_prefix="failover-producers") as pool:
            list(pool.map(lambda slot: slot.runner.abandon(10), producers))
    ctx.record(f"stop producers on {step.source}", "failover", t_stop, now_ms(), "ok",
               f"{len(producers)} abandoned")
    notes = _switch(ctx, step, failure_ms, producers, commit=False)
    return f"{step.source} {'killed' if step.how == 'kill' else 'cut off'}; {len(notes)} group(s) moved to {step.target}"


def _switch(ctx: DrillContext, step: Failover, failure_ms: int, producers: list[ProducerSlot],
            commit: bool) -> list[str]:
    """Both failovers' switch once the source's producers are stopped: the runbook, the stable
    address, the consumer groups (``commit``: each commits as it stops, the planned way; else it is
    abandoned for a new instance), then the producers on the target. Returns the groups' notes."""
    run_failover_runbook(ctx, step)  # the team's DNS switch or config push: part of the RTO
    repoint_stable_address(ctx, step.source, step.target)
    t = now_ms()
    notes = move_consumers(ctx, step.source, step.target, failure_ms, commit=commit)
    ctx.record(f"move consumers to {step.target}", "failover", t, now_ms(), "ok", "; ".join(notes))
    _restart_producers(ctx, producers, step.target)
    return notes


def _restart_producers(ctx: DrillContext, producers: list[ProducerSlot], dr: str) -> None:
    if not producers:
        return
    t = now_ms()
    for slot in producers:
        topics = list(slot.definition.topics)
        ensure_topics(ctx, dr, topics)
        start_producer(ctx, slot, dr, _remaining(ctx))
    ctx.record(f"start producers on {dr}", "failover", t, now_ms(), "ok", f"{len(producers)} started")
