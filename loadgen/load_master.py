"""A distributed load's master: the load process of a spec with ``workers`` or ``remote_workers``.

Locust's own ``MasterRunner`` spreads the spec's users over its workers (``loadgen.load_worker``:
``workers`` of them started here, ``remote_workers`` started by a team with ``mirrordrill
load-worker``); it produces nothing itself. Each worker gets its share of the rate, an instance of
its own (``<instance>w<index>``: producer ids stay unique across workers) and the cluster's security
settings over Locust's channel, never on a command line. Its ledger comes back over the same
channel and is written into this process's output folder under the worker's own file names, so
the checker reads every worker's ledger as it reads any load process's. Lifecycle, signals, stats
file and exit codes are those of ``load_process.HeadlessLoad``.
"""

from __future__ import annotations

from locust import runners as locust_runners
from locust.env import Environment
from locust.rpc.protocol import Message
from locust.runners import MasterRunner

import logging
import os
import secrets
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent

from mirrordrill.loadgen import load_channel as channel
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, UNCERTAIN_SENDS, history_path
from mirrordrill.loadgen.producer_user import KafkaProducerUser, check_producer_settings, ensure_topics
from mirrordrill.loadgen.spec import LatencySummary, LoadSpec, LoadStats, TopicStats, WorkerStats
from mirrordrill.loadgen.stoppable import ABANDON_REASON, StoppableRun
from mirrordrill.primitives.ports import PortAllocator
from mirrordrill.primitives.process import ManagedProcess, child_environment

log = logging.getLogger("loadgen.load_master")

# Locust's master counts a worker missing after 3 heartbeats (1 s apart) it did not get, and stops the
# whole test when the last one is: a worker producing flat out on a shared core is late that much
# (bench load, 2 workers beside the broker on 2 cores). A worker that is really gone is found by the
# end-of-run wait below, and a worker whose master is gone stops itself (load_worker.MASTER_SILENCE_S).
locust_runners.HEARTBEAT_LIVENESS = 30
READY_TIMEOUT_S = 60.0  # a joined worker checks its settings and answers within this
# beyond the flush timeout, for a worker to send the rest of its ledger; within the 20 s more than the
# flush timeout that LoadRunner gives a stopping load process before SIGKILL
DONE_GRACE_S = 15.0


@dataclass
class _Worker:
    """One joined worker, as the master tracks it."""

    index: int
    client_id: str
    instance: str
    receiver: channel.LedgerReceiver
    host: str = "?"
    ready: bool = False
    done: bool = False
    error: str | None = None
    stats: LoadStats | None = None

    def summary(self) -> WorkerStats:
        s = self.stats
        return WorkerStats(index=self.index, worker_id=self.client_id, host=self.host, instance=self.instance,
                           done=self.done, sent=s.sent if s else 0, acked=s.acked if s else 0,
                           failed=s.failed if s else 0, pending_at_shutdown=s.pending_at_shutdown if s else 0,
                           ledger_bytes=self.receiver.received[ACKED_SENDS.name], error=self.error)


@dataclass
class _Clock:
    started_mono: float | None = None
    started_ts_ms: int | None = None
    stopping_mono: float | None = None
    stopped_ts_ms: int | None = None
    workers: list[_Worker] = field(default_factory=list)


def _connect_host(bind: str) -> str:
    """Where this machine's own workers reach a master bound to ``bind``."""
    return "127.0.0.1" if bind in ("*", "0.0.0.0", "") else bind


class DistributedLoad(StoppableRun):
    """One distributed run of a LoadSpec: join, hand out, hold, produce, stop, collect the ledgers."""

    def __init__(self, spec: LoadSpec, stats_path: Path | None = None, workdir: Path | None = None) -> None:
        super().__init__(log)
        self.spec = spec.model_copy(update={"instance": spec.instance or secrets.token_hex(4)})
        tag = self.spec.writer_tag(self.spec.instance or "")
        self.stats_path = stats_path or Path(self.spec.output_dir) / f"load-stats.{tag}.json"
        self.workdir = workdir or Path.cwd()
        self.env = Environment(user_classes=[KafkaProducerUser], stop_timeout=None, catch_exceptions=True)
        self.clock = _Clock()
        self.by_client: dict[str, _Worker] = {}
        self.greeted: list[str] = []  # the workers that said hello, in order: only they are sent a spec
        self.local: list[ManagedProcess] = []
        self.address: str | None = None
        self.abandoned = False

    # --- control -------------------------------------------------------------------------
    def abandon(self) -> None:
        self.abandoned = True
        self.request_stop(ABANDON_REASON)

    # --- messages from workers -----------------------------------------------------------
    def _on_hello(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        if msg.node_id not in self.greeted:
            self.greeted.append(msg.node_id)

    def _on_ready(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        w = self.by_client.get(msg.node_id)
        if w is not None:
            w.host, w.error, w.ready = msg.data["host"], msg.data["error"], msg.data["error"] is None

    def _on_rows(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        w = self.by_client.get(msg.node_id)
        if w is None or w.error is not None:
            return
        try:
            w.receiver.receive(msg.data["kind"], msg.data["offset"], msg.data["data"])
        except ValueError as e:
            w.error = f"ledger transfer: {e}"
            log.error("worker %d: %s", w.index, w.error)

    def _on_progress(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        w = self.by_client.get(msg.node_id)
        if w is not None and not w.done:
            w.stats = LoadStats.model_validate_json(msg.data["stats"])

    def _on_done(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        w = self.by_client.get(msg.node_id)
        if w is None:
            return
        w.stats = LoadStats.model_validate_json(msg.data["stats"])
        missing = w.receiver.complete(msg.data["sizes"])
        if missing is not None and w.error is None:
            w.error = f"ledger incomplete: {missing}"
        w.done = True

    # --- stats ---------------------------------------------------------------------------
    def stats(self, state: str, final: bool = False, error: str | None = None) -> LoadStats:
        """The workers' latest figures summed, Locust's aggregated ack latencies, and each worker."""
        c = self.clock
        ws = [w.stats for w in c.workers if w.stats is not None]
        end = c.stopping_mono if c.stopping_mono is not None else time.monotonic()
        elapsed = end - c.started_mono if c.started_mono is not None else 0.0
        topics: dict[str, TopicStats] = {}
        for s in ws:
            for name, t in s.topics.items():
                agg = topics.setdefault(name, TopicStats())
                agg.sent, agg.acked, agg.failed = agg.sent + t.sent, agg.acked + t.acked, agg.failed + t.failed
        total = self.env.stats.total
        latency = LatencySummary()
        if total.num_requests:
            latency = LatencySummary(avg=total.avg_response_time, max=total.max_response_time,
                                     p50=total.get_response_time_percentile(0.5),
                                     p90=total.get_response_time_percentile(0.9),
                                     p99=total.get_response_time_percentile(0.99))
        out = Path(self.spec.output_dir)
        return LoadStats(
            final=final, state=state, stop_reason=self.stop_reason, error=error, cluster=self.spec.cluster,
            instance=self.spec.instance or "", pid=os.getpid(), producer_ids=[p for s in ws for p in s.producer_ids],
            target_rate=self.spec.rate, users=self.spec.users, started_ts_ms=c.started_ts_ms,
            stopped_ts_ms=c.stopped_ts_ms, elapsed_s=round(max(0.0, elapsed), 3),
            sent=sum(s.sent for s in ws), acked=sum(s.acked for s in ws), failed=sum(s.failed for s in ws),
            rejected=sum(s.rejected for s in ws), pending_at_shutdown=sum(s.pending_at_shutdown for s in ws),
            acked_bytes=sum(s.acked_bytes for s in ws), achieved_rate=round(sum(s.achieved_rate for s in ws), 2),
            send_rate=round(sum(s.send_rate for s in ws), 2), ack_latency_ms=latency,
            locust_requests=total.num_requests, locust_failures=total.num_failures, topics=topics,
            ledger_path=str(out / f"{ACKED_SENDS.name}.{self.spec.writer_tag(self.spec.instance or '')}w*.csv"),
            uncertain_path=str(out / f"{UNCERTAIN_SENDS.name}.{self.spec.writer_tag(self.spec.instance or '')}w*.csv"),
            master_address=self.address, workers=[w.summary() for w in c.workers])

    def _write_stats(self, state: str, final: bool = False, error: str | None = None) -> None:
        tmp = self.stats_path.with_name(self.stats_path.name + ".tmp")
        tmp.write_text(self.stats(state, final, error).model_dump_json(indent=2))
        os.replace(tmp, self.stats_path)

    # --- the run -------------------------------------------------------------------------
    def run(self) -> int:
        """Run to the end; the process exit code (1: it could not run, or a worker's ledger is incomplete)."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(sig, self.request_stop, signal.Signals(sig).name)
        gevent.signal_handler(signal.SIGUSR1, self.abandon)
        Path(self.spec.output_dir).mkdir(parents=True, exist_ok=True)
        self._write_stats("starting")
        runner: MasterRunner | None = None
        try:
            check_producer_settings(self.spec)
            if self.spec.create_topics_partitions:
                ensure_topics(self.spec, self.spec.create_topics_partitions)
            with PortAllocator(host=_connect_host(self.spec.master_bind)) as ports:
                port = self.spec.master_port or ports.take()
                runner = self.env.create_master_runner(self.spec.master_bind, port)
            self.address = f"{self.spec.master_bind}:{port}"
            self._write_stats("starting")  # with the address: workers started elsewhere need it
            for kind, handler in ((channel.HELLO, self._on_hello), (channel.READY, self._on_ready), (channel.ROWS, self._on_rows),
                                  (channel.PROGRESS, self._on_progress), (channel.DONE, self._on_done)):
                runner.register_message(kind, handler)
            self._start_local_workers(_connect_host(self.spec.master_bind), port)
            problem = self._join(runner) or self._hand_out(runner) or self._hold()
            if problem is not None:
                if self._stop.is_set():  # told to stop before producing: not a failure
                    self._write_stats("stopped", final=True)
                    return 0
                log.error("%s", problem)
                self._write_stats("failed", final=True, error=problem)
                return 1
            return self._produce(runner)
        except Exception as e:  # noqa: BLE001 - reported in the stats file and the log
            log.exception("distributed load failed: %s", e)
            self._write_stats("failed", final=True, error=f"{type(e).__name__}: {e}")
            return 1
        finally:
            if runner is not None:
                runner.quit()
            for proc in self.local:
                proc.stop(timeout_s=10)

    def _start_local_workers(self, host: str, port: int) -> None:
        env = child_environment()
        for k in range(self.spec.workers):
            folder = self.workdir / f"worker-{self.spec.instance}-{k}"
            proc = ManagedProcess(
                name=f"load-worker-{k}", log_path=folder / "worker.log", cwd=folder, env=env,
                argv=[sys.executable, "-m", "mirrordrill.loadgen.load_worker", "--master", f"{host}:{port}", "--dir", str(folder),
                      "--once"], stop_timeout_s=self.spec.flush_timeout_s + 20.0)
            folder.mkdir(parents=True, exist_ok=True)
            proc.start()  # dies with this process (PDEATHSIG): no worker outlives its master
            self.local.append(proc)

    def _join(self, runner: MasterRunner) -> str | None:
        """Wait for every worker to join; a plain line naming the shortfall when they do not in time."""
        want = self.spec.worker_count
        log.info("master on %s: waiting for %d worker(s) (%d started here, %d remote: mirrordrill load-worker "
                 "--master HOST:%s)", self.address, want, self.spec.workers, self.spec.remote_workers,
                 self.address.rpartition(":")[2] if self.address else "?")
        deadline = time.monotonic() + self.spec.worker_join_timeout_s
        while len(self.joined(runner)) < want:
            if self._stop.wait(timeout=0.1):
                return "stopped while waiting for workers"
            dead = [p.name for p in self.local if not p.running]
            if dead:
                return f"local worker(s) {', '.join(dead)} exited before joining; see {self.local[0].log_path.parent.parent}"
            if time.monotonic() > deadline:
                return (f"only {len(self.joined(runner))} of {want} load worker(s) joined the master on {self.address} "
                        f"within {self.spec.worker_join_timeout_s:g}s; giving up")
        return None

    def joined(self, runner: MasterRunner) -> list[str]:
        """The workers Locust counts as ready that also said hello, in Locust's worker order."""
        ready = {c.id for c in runner.clients.ready}
        return sorted((n for n in self.greeted if n in ready), key=lambda n: runner.worker_indexes.get(n, 0))

    def _hand_out(self, runner: MasterRunner) -> str | None:
        """Each joined worker's spec: its share of the rate, its own instance, the security settings."""
        n = self.spec.worker_count
        security = self.spec.client_security() or None
        for k, node_id in enumerate(self.joined(runner)[:n]):
            instance = self.spec.worker_instance(k)
            tag = self.spec.writer_tag(instance)
            out = Path(self.spec.output_dir)
            w = _Worker(k, node_id, instance, channel.LedgerReceiver(
                {ACKED_SENDS.name: history_path(out, ACKED_SENDS, tag),
                 UNCERTAIN_SENDS.name: history_path(out, UNCERTAIN_SENDS, tag)}))
            self.by_client[node_id] = w
            self.clock.workers.append(w)
            share = self.spec.model_copy(update={
                "rate": self.spec.rate / n, "users": max(1, self.spec.users // n), "workers": 0, "remote_workers": 0,
                "start_signal": None, "create_topics_partitions": None, "client_properties_file": None})
            runner.send_message(channel.SPEC, {"spec": share.model_dump_json(), "instance": instance, "index": k,
                                               "security": security}, node_id)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all(w.ready or w.error for w in self.clock.workers):
            if self._stop.wait(timeout=0.05):
                return "stopped while workers got ready"
            if time.monotonic() > deadline:
                late = [str(w.index) for w in self.clock.workers if not (w.ready or w.error)]
                return f"load worker(s) {', '.join(late)} did not answer within {READY_TIMEOUT_S:g}s"
        failed = [f"worker {w.index} on {w.host}: {w.error}" for w in self.clock.workers if w.error]
        return "; ".join(failed) or None

    def _hold(self) -> str | None:
        """Wait for the spec's start signal, if any."""
        signal_file = self.spec.start_signal
        if signal_file is None:
            return None
        self._write_stats("held")
        log.info("master: %d worker(s) ready, waiting for %s to start producing", len(self.clock.workers), signal_file)
        while not signal_file.exists():
            if self._stop.wait(timeout=0.05):
                return "stopped while held"
        return None

    def _produce(self, runner: MasterRunner) -> int:
        c = self.clock
        c.started_mono, c.started_ts_ms = time.monotonic(), int(time.time() * 1000)
        runner.start(self.spec.users, spawn_rate=float(min(self.spec.users, 100)))
        log.info("master: %d user(s) over %d worker(s), %.1f records/s to %s on %s", self.spec.users,
                 len(c.workers), self.spec.rate, ",".join(self.spec.topics), self.spec.cluster)
        self._write_stats("running")
        if not self._stop.wait(timeout=self.spec.duration_s):
            self.request_stop(f"duration {self.spec.duration_s:g}s reached")
        c.stopping_mono, c.stopped_ts_ms = time.monotonic(), int(time.time() * 1000)
        self._write_stats("stopping")
        for w in c.workers:
            runner.send_message(channel.STOP, {"abandon": self.abandoned, "reason": self.stop_reason}, w.client_id)
        deadline = time.monotonic() + (0.0 if self.abandoned else self.spec.flush_timeout_s) + DONE_GRACE_S
        while not all(w.done or w.error for w in c.workers) and time.monotonic() < deadline:
            for w in c.workers:
                # gone for good (Locust drops a worker silent for a minute); a late heartbeat alone is a busy worker
                if not w.done and w.error is None and w.client_id not in runner.clients:
                    w.error = "left before it reported its end (its ledger may be incomplete)"
            gevent.sleep(0.1)
        for w in c.workers:
            if not (w.done or w.error):
                w.error = f"did not report its end within {deadline - c.stopping_mono:.0f}s"
        problems = [f"worker {w.index} on {w.host}: {w.error}" for w in c.workers if w.error]
        self._write_stats("stopped" if not problems else "failed", final=True, error="; ".join(problems) or None)
        s = self.stats("stopped")
        log.info("stopped (%s): %d worker(s), sent %d, acked %d, failed %d; %.1f records/s acked%s", self.stop_reason,
                 len(c.workers), s.sent, s.acked, s.failed, s.achieved_rate,
                 "; " + "; ".join(problems) if problems else "")
        return 1 if problems else 0
