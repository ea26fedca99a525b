"""The load phase: producers held ready, observers, the replicator's start, samplers and consumers, the release.

Its stop ends every client it started (producers, consumers, observers, lag samplers) before the
replication phase stops the replicator: what reads or writes the clusters stops first.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from mirrordrill.harness.drill import failover
from mirrordrill.harness.drill.context import ConsumerSlot, DrillContext, ProducerSlot, new_app_consumer, now_ms
from mirrordrill.harness.drill.load_clock import ProducingSince, load_clock
from mirrordrill.harness.drill.phase_state import Log, Outcome, RunStatus, stop_parts
from mirrordrill.harness.drill.plan import DrillPlan
from mirrordrill.harness.drill.replicator_watch import ReplicatorWatch
from mirrordrill.harness.drill.run_folder import LOAD_DIR
from mirrordrill.loadgen.app_consumer import StartPosition
from mirrordrill.loadgen.lag_sampler import LagSampler
from mirrordrill.loadgen.observer import Observer

if TYPE_CHECKING:  # the phases module imports this one's helpers
    from mirrordrill.harness.drill.phases import ReplicationPhase
    from mirrordrill.loadgen.app_consumer import AppConsumer


def _exact(names: set[str]) -> str:
    """A regex matching exactly these topic names."""
    return "^(" + "|".join(re.escape(t) for t in sorted(names)) + ")$"


class LoadPhase:
    """Starts the load around the replicator's start (docs/drill-files.md §2), and stops every client."""

    def __init__(self, replication: ReplicationPhase, plan: DrillPlan, progress: Progress,
                 log: Callable[[str], None]):
        self.replication, self.plan, self.progress, self.log = replication, plan, progress, log
        self.watch = ReplicatorWatch(log)

    def start(self) -> None:
        ctx = self.replication.context()
        # started before the replicator: its start-up can take minutes on a busy machine
        self.progress.start(ctx)
        # held, and ready before the replicator starts: the load begins 0.1 s after the replicator
        # is, without the 2-3 s Locust's start takes, and that start (a second of CPU per load
        # process) no longer shares the cores with the replicator's, which is what a drill times
        start_signal = self._launch_producers(ctx)
        observe_first = bool(self.plan.scenario.load.backlog)  # the only records that can move before readiness
        if observe_first:
            self._start_observers(ctx)
        ctx.replicator.start()
        self.watch.start(ctx)
        if not observe_first:
            self._start_observers(ctx)
        self._start_clients(ctx, start_signal)

    def _launch_producers(self, ctx: DrillContext) -> Path:
        """Start every producer's load process; return once each one waits (held) for the returned file."""
        start_signal = ctx.out_dir / LOAD_DIR / "start"
        start_signal.unlink(missing_ok=True)  # an output folder used before: hold this run's load too
        s = self.plan.scenario
        for p in s.load.producers:
            slot = ProducerSlot(p, p.cluster)
            ctx.producers.append(slot)
            failover.start_producer(ctx, slot, slot.cluster, s.duration, wait=False, start_signal=start_signal)
        for slot in ctx.producers:  # all started at once: their start-ups overlap one another's
            assert slot.runner is not None  # start_producer set it
            slot.runner.wait_held()
        return start_signal

    def _start_observers(self, ctx: DrillContext) -> None:
        """Start reading each target; before the replicator starts when a backlog waits: a record's latency is its first sighting.

        Started only once the replicator was ready, they would date every record copied before
        then (a backlog, copied while a real-time query warms up) at their own start, and read a
        capacity sweep's first records at the observer's pace, not the replicator's. They discover
        the remote topics as they appear. Without a backlog nothing of the load moves before the
        release, and observers reading through the replicator's start would only cost it CPU."""
        for target, remotes in sorted(self.plan.topics_by_target().items()):
            cluster = ctx.env.cluster(target)
            ctx.observers.append(Observer(target, cluster.bootstrap, _exact(remotes), ctx.histories,
                                          writer_tag=f"observer-{target}",
                                          security=cluster.security_config()).start())

    def _start_clients(self, ctx: DrillContext, start_signal: Path) -> None:
        """Start the lag samplers and consumers, then release the held producers."""
        for name, topics in sorted(self.plan.watched_topics().items()):
            cluster = ctx.env.cluster(name)
            sampler = LagSampler(name, cluster.bootstrap, _exact(topics), ctx.histories,
                                 writer_tag=f"sampler-{name}", security=cluster.security_config())
            sampler.start()
            ctx.lag_samplers.append(sampler)
        for c in self.plan.scenario.load.consumers:
            consumer = new_app_consumer(c, ctx.histories)
            consumer.start(c.cluster, ctx.bootstrap_for(c.cluster), list(c.topics), StartPosition.committed("earliest"),
                           security=ctx.security_for(c.cluster))
            ctx.consumers.append(ConsumerSlot(c, consumer, c.cluster))
        released = time.monotonic()
        start_signal.touch()
        self._start_clock(ctx, released)

    def _start_clock(self, ctx: DrillContext, released: float) -> None:
        """The timeline counts from when the load produces, not from its release."""
        duration = self.plan.scenario.duration
        producing = wait_producing(ctx.producers)
        clock = load_clock(producing, duration, ProducingSince(time.monotonic(), now_ms()))
        ctx.start_load_clock(clock.zero, clock.zero_ms, clock.until_s)
        started = ", ".join(f"{slot.definition.name or 'producer'} +{clock.offset_s(p.monotonic):.1f}s"
                            for slot, p in zip(ctx.producers, producing, strict=True))
        self.log(f"load running for {duration:g}s; the timeline counts from now, {clock.zero - released:.1f}s "
                 f"after the load was released{f' (producing: {started})' if started else ''}; "
                 f"histories in {ctx.histories}")

    def stop(self, outcome: Outcome) -> None:
        self.progress.stop()
        self.watch.stop()
        ctx = self.replication.ctx
        if ctx is not None:
            stop_parts([("clients", lambda: self._stop_clients(ctx, drain=outcome.clean))], outcome, self.log)

    def _stop_clients(self, ctx: DrillContext, drain: bool) -> None:
        stop_producers(ctx)
        self._stop_retired(ctx)
        for slot in ctx.consumers:
            try:
                slot.consumer.close()
            except Exception as e:
                self.log(f"stopping consumer {slot.definition.group}: {e}")
        for o in ctx.observers:
            o.stop(drain=drain, timeout_s=60)
        for sampler in ctx.lag_samplers:
            sampler.stop()


    def _stop_retired(self, ctx: DrillContext) -> None:
        """The instances that died with their cluster, side by side, each given a second to finish.

        Each was told to stop when its cluster was lost (``failover._move_one``) and has had the rest
        of the load to do it; one still running is inside its close's commit to the dead group
        coordinator, which does not return, and its history was written before that. Waiting for it
        longer only delays the drill: one after the other, five groups' instances once ran out 25 s
        of timeouts at the end of a drill."""
        retired = [(slot.definition.group, old) for slot in ctx.consumers for old in slot.retired]

        def stop(group: str, old: AppConsumer) -> None:
            try:
                old.stop(commit=False, timeout_s=RETIRED_STOP_S)
            except Exception as e:
                self.log(f"stopping consumer {group} on its lost cluster: {e}")

        if retired:
            with ThreadPoolExecutor(len(retired), thread_name_prefix="stop-retired") as pool:
                list(pool.map(lambda pair: stop(*pair), retired))


# How long the end of a drill waits for each instance that died with its cluster (above).
RETIRED_STOP_S = 1.0


def wait_producing(producers: list[ProducerSlot]) -> list[ProducingSince]:
    """When each producer began producing, watched side by side: waiting for them one after the
    other would date a producer that started while the engine waited for another too late."""
    def wait(slot: ProducerSlot) -> ProducingSince:
        assert slot.runner is not None  # a started producer's
        slot.runner.wait_running()  # polls the load's stats file; the process was started by this thread
        return ProducingSince(time.monotonic(), now_ms())
    if not producers:
        return []
    pool = ThreadPoolExecutor(max_workers=len(producers), thread_name_prefix="load-start")
    try:
        return list(pool.map(wait, producers))
    finally:
        # not waiting for the others on Ctrl-C or an error: stopping the drill stops their processes,
        # which ends their waits
        pool.shutdown(wait=False, cancel_futures=True)


def stop_producers(ctx: DrillContext) -> None:
    for slot in ctx.producers:
        if slot.runner is not None and slot.runner.running:
            slot.runner.stop(timeout_s=30)


def live_lag(ctx: DrillContext) -> int | None:
    """Lag summed over flows that can still deliver: not from a cluster that is down, paused or
    abandoned in an unplanned failover (waiting for those would only run out the timeout)."""
    def alive(cluster: str) -> bool:
        return cluster not in ctx.abandoned and any(b.running and not b.process.paused
                                                    for b in ctx.env.cluster(cluster).brokers)
    # the flows of the replicator running now: a failback replaces the drill's own
    live = [f"{f.source}->{f.target}" for f in ctx.replicator.setup.flows if alive(f.source)]
    if not live:
        return 0
    lags = failover.lag_by_flow(ctx)
    if lags is None:
        return None
    known = [lag for f in live if (lag := lags.get(f)) is not None]
    return sum(known) if len(known) == len(live) else None


class Progress:
    """One status line every few seconds, from the load phase's start until it stops."""

    def __init__(self, status: RunStatus, log: Log, interval_s: float, started: float):
        self.status, self.log, self.interval_s, self.started = status, log, interval_s, started
        self._stop = threading.Event()

    def start(self, ctx: DrillContext) -> None:
        threading.Thread(target=self._run, args=(ctx,), daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self, ctx: DrillContext) -> None:
        """A failing probe must never end the drill's progress."""
        while not self._stop.wait(self.interval_s):
            try:
                self.log(self._line(ctx, time.time() - self.started))
            except Exception as e:  # a probe against a dead cluster, a stats file being replaced
                self.log(f"[{ctx.elapsed():5.0f}s] {self.status.phase} (progress unavailable: {e})")

    def _line(self, ctx: DrillContext, since_start_s: float) -> str:
        if not ctx.load_started_at:
            return f"[    -] {self.status.phase} ({since_start_s:.0f}s since the drill started)"
        acked = 0
        for slot in ctx.producers:
            for r in slot.runs:
                st = r.stats()
                acked += st.acked if st is not None else 0
        groups = " ".join(f"{c.definition.group}@{c.cluster}={c.consumer.records}" for c in ctx.consumers)
        lag = live_lag(ctx)
        left = max(0.0, max(ctx.scenario.duration, ctx.load_until) - ctx.elapsed())
        step = f" / {self.status.step_name}" if self.status.step_name else ""
        return (f"[{ctx.elapsed():5.0f}s | {left:4.0f}s left] {self.status.phase}{step} | acked {acked} | "
                f"lag {lag if lag is not None else '?'}" + (f" | processed {groups}" if groups else ""))
