"""The headless load process: ``python -m mirrordrill.loadgen.load_process --spec spec.json``.

Runs Locust from Python (``Environment``, ``create_local_runner``) in this process only, so
gevent's monkey-patching never reaches the harness or Spark; a spec with ``workers`` or
``remote_workers`` makes it a Locust master instead (``loadgen.load_master``). Stops after ``duration_s`` or
on SIGTERM/SIGINT: producers get ``flush_timeout_s`` to collect their acks, what is still
pending is recorded as uncertain, and a final stats summary is written. On SIGUSR1 (its
cluster is lost: ``LoadRunner.abandon``) they get no time: every pending send is uncertain at
once. Exit code 0 for a clean stop, 1 when the load could not run.
"""

# Locust first (its own isort section in pyproject.toml): importing it makes gevent patch the
# process before anything else imports socket, ssl or threading.
from locust.env import Environment
from locust.log import setup_logging

import argparse
import logging
import os
import signal
import sys
import traceback
from pathlib import Path
from typing import Any

import gevent

from mirrordrill.loadgen.load_master import DistributedLoad
from mirrordrill.loadgen.producer_user import KafkaProducerUser, LoadSession, check_producer_settings, ensure_topics
from mirrordrill.loadgen.spec import LoadSpec
from mirrordrill.loadgen.stoppable import ABANDON_REASON, StoppableRun

log = logging.getLogger("loadgen.load_process")


class HeadlessLoad(StoppableRun):
    """One headless Locust run of a LoadSpec, stopped by its duration or a signal."""

    def __init__(self, spec: LoadSpec, stats_path: Path | None = None) -> None:
        super().__init__(log)
        self.spec = spec
        self.session = LoadSession(spec)
        self.stats_path = stats_path or self.session.stats_path
        # A fresh Events() (Environment's default): the `locust -f` listeners registered on
        # locust.events in producer_user do not apply here; this class drives the lifecycle.
        self.env = Environment(user_classes=[KafkaProducerUser], stop_timeout=None,
                               catch_exceptions=True)
        self.session.attach(self.env)

    def abandon(self) -> None:
        """Stop without waiting for acks: the cluster is gone, and retries must not find another one."""
        self.session.abandoned = True
        self.request_stop(ABANDON_REASON)

    def _write_stats(self, **kw: Any) -> None:
        self.session.write_stats(self.env, self.stats_path, **kw)

    def _progress(self) -> None:
        while not self._stop.is_set():
            self._stop.wait(self.spec.stats_interval_s)
            if self._stop.is_set():
                return
            self._write_stats(state="running")
            s = self.session.stats(self.env, state="running")
            log.info("sent %d acked %d failed %d in flight %d; %.0f records/s acked",
                     s.sent, s.acked, s.failed, s.sent - s.acked - s.failed,
                     s.achieved_rate)

    def _released(self) -> bool:
        """Wait for the spec's start signal (a file); False if told to stop before it came."""
        signal_file = self.spec.start_signal
        if signal_file is None:
            return True
        self._write_stats(state="held")
        log.info("load %s: ready, waiting for %s to start producing", self.session.instance, signal_file)
        while not signal_file.exists():
            if self._stop.wait(timeout=0.05):
                return False
        return True

    def run(self) -> int:
        """Run to the end; returns the process exit code."""
        for sig in (signal.SIGTERM, signal.SIGINT):
            gevent.signal_handler(sig, self.request_stop, signal.Signals(sig).name)
        gevent.signal_handler(signal.SIGUSR1, self.abandon)
        self._write_stats(state="starting")
        try:
            check_producer_settings(self.spec)
            if self.spec.create_topics_partitions:
                ensure_topics(self.spec, self.spec.create_topics_partitions)
            if self.spec.start_signal is not None and self.spec.connect_ahead:
                # connected while held: the first records do not wait for it
                self.session.connect_ahead(self.spec.users, self.env.events.request.fire)
            if not self._released():
                self.session.close()
                self._write_stats(state="stopped", final=True, stop_reason=self.stop_reason)
                return 0
            runner = self.env.create_local_runner()
            # Spawn every user at once (one batch; Locust warns above 100/s): the rate is
            # spread over users, so a ramp would under-produce while it lasts.
            runner.start(self.spec.users, spawn_rate=float(min(self.spec.users, 100)))
            log.info("load %s: %d user(s), %.1f records/s to %s on %s (%s); ledger %s",
                     self.session.instance, self.spec.users, self.spec.rate,
                     ",".join(self.spec.topics), self.spec.cluster,
                     self.spec.bootstrap_servers, self.session.ledger_path)
            self._write_stats(state="running")
            progress = gevent.spawn(self._progress)
            if not self._stop.wait(timeout=self.spec.duration_s):
                self.request_stop(f"duration {self.spec.duration_s:g}s reached")
            progress.kill()
            self.session.mark_stopping()
            self._write_stats(state="stopping", stop_reason=self.stop_reason)
            runner.quit()  # each user drains its producer in on_stop
            self.session.close()
        except Exception as e:  # noqa: BLE001 - reported in the stats file and the log
            log.error("load failed: %s\n%s", e, traceback.format_exc())
            try:
                self.session.close()
            finally:
                self._write_stats(state="failed", final=True, stop_reason=self.stop_reason,
                                  error=f"{type(e).__name__}: {e}")
            return 1
        self._write_stats(state="stopped", final=True, stop_reason=self.stop_reason)
        s = self.session.stats(self.env, state="stopped")
        log.info("stopped (%s): sent %d, acked %d, failed %d, rejected %d, pending at shutdown "
                 "%d; %.1f records/s acked; ack latency p50 %.0f ms p99 %.0f ms",
                 self.stop_reason, s.sent, s.acked, s.failed, s.rejected,
                 s.pending_at_shutdown, s.achieved_rate, s.ack_latency_ms.p50,
                 s.ack_latency_ms.p99)
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mirrordrill.loadgen.load_process",
                                     description="Run one headless Kafka load (Locust) from a spec.")
    parser.add_argument("--spec", required=True, help="LoadSpec as a JSON file")
    parser.add_argument("--stats", help="where to write the stats summary JSON "
                                        "(default: load-stats.<tag>.json in output_dir)")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    try:
        spec = LoadSpec.load(args.spec)
    except (OSError, ValueError) as e:
        print(f"load_process: invalid spec {args.spec}: {e}", file=sys.stderr)
        return 2
    stats = Path(args.stats) if args.stats else None
    if spec.worker_count:
        return DistributedLoad(spec, stats).run()
    return HeadlessLoad(spec, stats).run()


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Every history is closed and the stats are written: skip interpreter teardown, where
    # destroying a librdkafka handle whose broker sits behind a blackholed link can hang.
    os._exit(code)
