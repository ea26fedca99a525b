"""A distributed load's worker: ``python -m mirrordrill.loadgen.load_worker --master HOST:PORT [--dir DIR]``.

Joins a master (``loadgen.load_master``) with Locust's ``WorkerRunner``, receives its spec over
Locust's channel, produces with the same users as a single load process, keeps its own ledger in
``DIR`` and sends it to the master as it grows. ``mirrordrill load-worker`` runs this module on
another machine; a master starts its local workers with it too (``--once``). Without ``--once`` it
serves one master run after another (a failover starts a new one on the same address) until
SIGTERM/SIGINT. It stops producing and exits when its master goes silent for ``MASTER_SILENCE_S``.
"""

# Locust first (its own isort section in pyproject.toml): importing it makes gevent patch the
# process before anything else imports socket, ssl or threading.
from locust.env import Environment
from locust.log import setup_logging
from locust.rpc.protocol import Message
from locust.runners import WorkerRunner

import argparse
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gevent
from gevent.event import Event

from mirrordrill.loadgen import load_channel as channel
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, UNCERTAIN_SENDS
from mirrordrill.loadgen.producer_user import KafkaProducerUser, LoadSession, check_producer_settings
from mirrordrill.loadgen.spec import LoadSpec
from mirrordrill.primitives.properties_syntax import format_property
from mirrordrill.primitives.secret_dir import SecretDir

log = logging.getLogger("loadgen.load_worker")

MASTER_SILENCE_S = 15.0  # no heartbeat from the master this long: it is gone, stop producing
QUIT_WAIT_S = 30.0  # after its end, how long a worker waits for the master's quit


class WorkerSession:
    """One master's run on this worker: its spec, its LoadSession and the ledger it ships."""

    def __init__(self, master: tuple[str, int], directory: Path, secrets: SecretDir) -> None:
        self.directory, self.secrets = directory, secrets
        self.env = Environment(user_classes=[KafkaProducerUser], stop_timeout=None, catch_exceptions=True)
        self.session: LoadSession | None = None
        self.shipper: channel.LedgerShipper | None = None
        self.finished = Event()
        self.runner: WorkerRunner = self.env.create_worker_runner(*master)
        self.runner.register_message(channel.SPEC, self._on_spec)
        # concurrent: draining takes up to the flush timeout, and heartbeats must go on meanwhile
        self.runner.register_message(channel.STOP, self._on_stop, concurrent=True)
        self._send(channel.HELLO, {})

    def _send(self, kind: str, data: dict[str, Any]) -> None:
        self.runner.send_message(kind, data)

    def _on_spec(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        data = msg.data
        try:
            spec = LoadSpec.model_validate_json(data["spec"])
            spec = spec.model_copy(update={"output_dir": self.directory, "instance": data["instance"],
                                           "client_properties_file": self._security_file(data.get("security"))})
            check_producer_settings(spec)
            session = LoadSession(spec).attach(environment)
        except Exception as e:  # noqa: BLE001 - told to the master, which fails the run with it
            log.error("worker: cannot run the master's spec: %s", e)
            self._send(channel.READY, {"host": socket.gethostname(), "error": f"{type(e).__name__}: {e}"})
            return
        self.session = session
        self.shipper = channel.LedgerShipper({ACKED_SENDS.name: session.ledger_path,
                                              UNCERTAIN_SENDS.name: session.uncertain_path}, self._send)
        gevent.spawn(self._ship_while_running, spec.stats_interval_s)
        log.info("worker %s: instance %s, %s records/s to %s on %s; ledger %s", data["index"], session.instance,
                 f"{spec.rate:g}", ",".join(spec.topics), spec.cluster, session.ledger_path)
        self._send(channel.READY, {"host": socket.gethostname(), "error": None})

    def _security_file(self, security: dict[str, str] | None) -> Path | None:
        """The master's security settings in a 0600 file of this worker's secret folder (None without any)."""
        if not security:
            return None
        path = self.secrets.path / "client.properties"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(format_property(k, v) + "\n" for k, v in security.items())
        return path

    def _ship_while_running(self, interval_s: float) -> None:
        while self.session is not None and not self.session.closed:
            gevent.sleep(min(interval_s, 0.5))
            self._ship_and_report()

    def _ship_and_report(self) -> None:
        if self.shipper is None or self.session is None:
            return
        self.shipper.ship()
        stats = self.session.stats(self.env, state="running")
        self._send(channel.PROGRESS, {"stats": stats.model_dump_json()})

    def _on_stop(self, environment: Environment, msg: Message, **_kw: Any) -> None:
        session, shipper = self.session, self.shipper
        if session is None or shipper is None:
            self.finished.set()
            return
        log.info("worker: told to stop by the master (%s)", msg.data.get("reason"))
        session.abandoned = bool(msg.data.get("abandon"))
        session.mark_stopping()
        self.runner.stop()  # each user drains its producer in on_stop
        session.close()
        shipper.ship()
        stats = session.stats(self.env, state="stopped", final=True, stop_reason=msg.data.get("reason"))
        session.write_stats(self.env, state="stopped", final=True, stop_reason=msg.data.get("reason"))
        self._send(channel.DONE, {"stats": stats.model_dump_json(), "sizes": dict(shipper.sent)})
        log.info("worker: done, sent %d acked %d; %d ledger bytes sent", stats.sent, stats.acked,
                 shipper.sent[ACKED_SENDS.name])
        self.finished.set()

    def abandon(self, reason: str) -> None:
        """The master is gone or this process is told to stop: stop producing at once, keep the local ledger."""
        log.warning("worker: %s; stopping without waiting for acks", reason)
        if self.session is not None and not self.session.closed:
            self.session.abandoned = True
            self.session.mark_stopping()
            self.runner.stop()
            self.session.close()
            self.session.write_stats(self.env, state="stopped", final=True, stop_reason=reason)
        self.finished.set()

    def serve(self, stopping: Event) -> bool:
        """Until the master's run ends (True) or this process is told to stop (False)."""
        while not self.finished.wait(timeout=1.0):
            if stopping.is_set():
                self.abandon("told to stop")
                return False
            if not len(self.runner.greenlet):  # Locust's quit from the master kills the runner's greenlets
                self.finished.set()
                break
            beat = self.runner.last_heartbeat_timestamp
            if beat is not None and time.time() - beat > MASTER_SILENCE_S:
                self.abandon(f"no heartbeat from the master for {MASTER_SILENCE_S:g}s")
                break
        # Until the master's quit: messages still queued in ZeroMQ (the ledger's last chunks) are
        # lost if this process exits first, and the master quits once it holds every ledger.
        deadline = time.monotonic() + QUIT_WAIT_S
        while len(self.runner.greenlet) and time.monotonic() < deadline and not stopping.is_set():
            gevent.sleep(0.1)
        self._close()
        return True

    def _close(self) -> None:
        try:
            self.runner.greenlet.kill(block=True, timeout=5)
            close: Callable[[], None] = self.runner.client.close  # Locust's rpc client is unannotated
            close()
        except Exception as e:  # noqa: BLE001 - a closing socket must not hide the run's outcome
            log.debug("closing the worker runner: %s", e)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mirrordrill.loadgen.load_worker",
                                     description="Produce a distributed load's share for its master.")
    parser.add_argument("--master", required=True, help="HOST:PORT the master listens on")
    parser.add_argument("--dir", default="mirrordrill-load-worker",
                        help="this worker's folder: its own ledger and stats (default: ./mirrordrill-load-worker)")
    parser.add_argument("--once", action="store_true", help="exit after one master run")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    setup_logging(args.log_level)
    try:
        master = channel.parse_master(args.master)
    except ValueError as e:
        print(f"load-worker: {e}", file=sys.stderr)
        return 2
    directory = Path(args.dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    stopping = Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        gevent.signal_handler(sig, stopping.set)
    secrets = SecretDir("load-worker")
    try:
        while not stopping.is_set():
            log.info("worker: joining the master at %s:%d; ledger and stats in %s", *master, directory)
            try:
                session = WorkerSession(master, directory, secrets)
            except ConnectionError:
                print(f"load-worker: no master answered at {args.master}", file=sys.stderr)
                return 1
            if not session.serve(stopping) or args.once:
                break
    finally:
        secrets.remove()
    return 0


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as load_process: librdkafka teardown behind a dead link can hang
