"""The nemesis: what each timeline step does to the environment, the replicator and the clients."""

from __future__ import annotations

import time

from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic, ResourceType

from harness.network.wan import LinkConditions
from harness.scenario import failback, failover
from harness.scenario.context import DrillContext
from harness.scenario.model import (AddPartitions, Blackhole, BrokerStep, ClusterStep, CreateTopic, Failback, Failover, Heal,
                                    Partition, ReplicatorStep, ResetConnections, SetLink, SetTopicConfig, WaitDrain)


def describe(step) -> str:
    """A short human name for a step ('blackhole primary<->dr', 'kill_broker dr/1', ...)."""
    if step.name:
        return step.name
    if hasattr(step, "link"):
        return f"{step.do} {step.link[0]}<->{step.link[1]}" + (f" ({step.direction})" if step.direction else "")
    if isinstance(step, BrokerStep):
        return f"{step.do} {step.cluster}/{step.broker}"
    if isinstance(step, (Failover, Failback)):
        return f"{step.do} {step.source}->{step.target}"
    cluster = getattr(step, "cluster", None)
    topic = getattr(step, "topic", None)
    return " ".join(str(x) for x in (step.do, cluster, topic) if x)


def run_step(ctx: DrillContext, step) -> str:
    """Carry out one step; returns a one-line outcome. Exceptions propagate to the engine."""
    env = ctx.env
    if isinstance(step, SetLink):
        env.link(*step.link).set(LinkConditions(
            latency_ms=step.latency_ms, jitter_ms=step.jitter_ms, bandwidth_kb_s=step.bandwidth_kb_s,
            reset_after_ms=step.reset_after_ms, slice_bytes=step.slice_bytes, slice_delay_us=step.slice_delay_us),
            direction=step.direction)
        return "conditions set"
    if isinstance(step, Blackhole):
        env.link(*step.link).blackhole(step.direction)
        return "data held"
    if isinstance(step, Partition):
        env.link(*step.link).partition()
        return "proxies down"
    if isinstance(step, Heal):
        env.link(*step.link).heal()
        return "clean link"
    if isinstance(step, ResetConnections):
        env.link(*step.link).reset_connections()
        return "connections reset"
    if isinstance(step, BrokerStep):
        broker = env.cluster(step.cluster).broker(step.broker)
        action = step.do.removesuffix("_broker")
        getattr(broker, action)()
        return f"broker {action}"
    if isinstance(step, ClusterStep):
        cluster = env.cluster(step.cluster)
        action = step.do.removesuffix("_cluster")
        if action == "start":
            cluster.start()
            cluster.wait_ready(180)
        else:
            getattr(cluster, action)() if action != "restart" else cluster.restart(180)
        return f"cluster {action}"
    if isinstance(step, ReplicatorStep):
        r = ctx.replicator
        action = step.do.removesuffix("_replicator")
        if action == "restart":
            r.restart(hard=False)
        elif action == "start":
            r.start()
        else:
            getattr(r, action)()
        return f"replicator {action}"
    if isinstance(step, CreateTopic):
        env.cluster(step.cluster).create_topics([NewTopic(step.topic, step.partitions, 1,
                                                           config={k: str(v) for k, v in step.config.items()})])
        return "created"
    if isinstance(step, AddPartitions):
        admin = env.cluster(step.cluster).admin()
        admin.create_partitions([NewPartitions(step.topic, step.partitions)])[step.topic].result(timeout=30)
        return f"now {step.partitions} partitions"
    if isinstance(step, SetTopicConfig):
        admin = env.cluster(step.cluster).admin()
        res = ConfigResource(ResourceType.TOPIC, step.topic, incremental_configs=[
            ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET) for k, v in step.config.items()])
        admin.incremental_alter_configs([res])[res].result(timeout=30)
        return "configs set"
    if isinstance(step, WaitDrain):
        lag = failover.wait_drained(ctx, step.flow, step.timeout)
        return "drained" if lag == 0 else f"still {lag} records behind after {step.timeout:g}s"
    if isinstance(step, Failover):
        return failover.planned(ctx, step) if step.do == "planned_failover" else failover.unplanned(ctx, step)
    if isinstance(step, Failback):
        return failback.run(ctx, step)
    raise ValueError(f"step {step.do!r} has no implementation")


def wait_for_start(ctx: DrillContext, step) -> bool:
    """Block until the step's time or condition; False when the drill is being stopped."""
    if step.at is not None:
        while ctx.elapsed() < step.at:
            if ctx.stop_requested.wait(min(0.5, step.at - ctx.elapsed())):
                return False
    if step.when is not None:
        deadline = time.monotonic() + step.when.timeout
        while time.monotonic() < deadline:
            lag = failover.current_lag(ctx, step.when.flow)
            if lag is not None and lag <= step.when.lag_at_most:
                return True
            if ctx.stop_requested.wait(1.0):
                return False
        ctx.log(f"condition lag <= {step.when.lag_at_most} not met within {step.when.timeout:g}s; running the step anyway")
    return not ctx.stop_requested.is_set()
