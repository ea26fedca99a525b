"""Locust producers for Kafka: every acknowledged send goes to the ledger.

Used two ways:
- headless, by ``python -m mirrordrill.loadgen.load_process --spec spec.json`` (what drills do);
- by a person with Locust's own web UI, against clusters started by ``mirrordrill up``::

      locust -f loadgen/producer_user.py --kafka-bootstrap 127.0.0.1:9092 --topics orders \\
             --rate 500 --record-size 1024 --ledger-dir ledger

  (each option also reads ``LOCUST_<OPTION>``, e.g. ``LOCUST_KAFKA_BOOTSTRAP``). Every test
  started from the UI is a new instance: new producer ids, new ledger files, and a stats
  summary ``load-stats.<tag>.json`` next to the ledger when it stops.

Importing this module imports Locust, which monkey-patches the process with gevent: never
import it from the harness; the harness starts it in its own process (``loadgen.runner``).
"""

from __future__ import annotations

from locust import User, events, task
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.exception import StopUser

import bisect
import json
import logging
import os
import random
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gevent
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

try:
    from mirrordrill.loadgen.envelope import EnvelopeEncoder
except ModuleNotFoundError:  # `locust -f loadgen/producer_user.py` from a checkout not installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from mirrordrill.loadgen.envelope import EnvelopeEncoder
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, UNCERTAIN_SENDS, history_path
from mirrordrill.loadgen.histories.records import AckedSend, UncertainSend
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.spec import KeySpec, LatencySummary, LoadSpec, LoadStats, SizeSpec, TopicStats
from mirrordrill.primitives.kafka.topics import create_topics

log = logging.getLogger("loadgen.producer")

TICK_S = 0.005          # pacing granularity when ahead of schedule
MAX_BURST_S = 1.0       # after a stall, catch up at most this much of the schedule at once
MAX_PER_TICK = 1000     # sends between two yields, so acks and stats keep being served
BUFFER_BACKOFF_S = 0.005


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --------------------------------------------------------------------------- client


@dataclass(slots=True)
class _TopicCounts:
    """Per-topic counters on the hot path (a pydantic model costs a validation per +=)."""

    sent: int = 0
    acked: int = 0
    failed: int = 0


class ProducerClient:
    """One producer id: a confluent-kafka Producer, its in-flight sends and its history rows.

    Never blocks: ``try_send`` and ``serve`` use ``produce``/``poll(0)`` only, so a gevent
    greenlet can drive it; waiting is the caller's (``gevent.sleep``).
    """

    def __init__(self, session: LoadSession, producer_id: str,
                 fire: Callable[..., None]) -> None:
        self.session = session
        self.producer_id = producer_id
        self._fire = fire
        self._cluster = session.spec.cluster
        self._encoder = EnvelopeEncoder(producer_id, session.bodies(producer_id))
        self._pending: dict[int, tuple[str, int, int, int]] = {}  # seq -> topic, ts, size, crc
        self._closing = False
        self._closed = False
        self.next_seq = 0
        self.sent = self.acked = self.failed = self.rejected = self.pending_at_shutdown = 0
        self.acked_while_running = 0  # acks before the stop: the rate, without the drain
        self.acked_bytes = 0
        self.per_topic: dict[str, _TopicCounts] = {}
        self._acked_rows: list[AckedSend] = []  # written in one call per delivery batch
        self.producer = Producer({**session.spec.producer_settings(), "error_cb": self._on_error})

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    def try_send(self, topic: str, key: bytes | None, size: int) -> bool:
        """Hand one record to librdkafka; False if its queue is full (nothing consumed)."""
        seq = self.next_seq
        ts = now_ms()
        value, crc = self._encoder.encode(seq, ts, size)
        try:
            self.producer.produce(topic, value, key, on_delivery=partial(self._delivered, seq))
        except BufferError:
            return False
        except KafkaException as e:
            # Refused before leaving the process (e.g. too large): recorded as uncertain too,
            # so every seq of a producer is in exactly one of the two histories.
            self.next_seq += 1
            self.rejected += 1
            self._topic(topic).failed += 1
            self.session.uncertain.write(UncertainSend(self._cluster, topic, self.producer_id,
                                                       seq, ts, f"rejected: {e}"))
            self._fire(request_type="produce", name=topic, response_time=0,
                       response_length=len(value), exception=e, context={})
            return True
        self.next_seq += 1
        self.sent += 1
        self._topic(topic).sent += 1
        self._pending[seq] = (topic, ts, len(value), crc)
        return True

    def serve(self) -> int:
        """Serve delivery reports without waiting; the rows reach the OS before returning."""
        served = self.producer.poll(0)
        if self._acked_rows:
            self.session.acked.write_many(self._acked_rows)
            self._acked_rows.clear()
            served = served or 1
        if served:
            self.session.flush_histories()
        return served

    def _delivered(self, seq: int, err: KafkaError | None, msg: Message) -> None:
        entry = self._pending.pop(seq, None)
        if entry is None or self._closed:  # already written off as uncertain at shutdown
            return
        topic, ts, size, crc = entry
        partition, offset = msg.partition(), msg.offset()
        if err is None and partition is not None and offset is not None:  # the client sets both on an ack
            latency = msg.latency()
            latency_ms = latency * 1000.0 if latency is not None else float(now_ms() - ts)
            self._acked_rows.append(AckedSend(self._cluster, topic, partition, offset,
                                              self.producer_id, seq, ts, ts + round(latency_ms),
                                              size, crc))
            self.acked += 1
            if not self.session.stopping:
                self.acked_while_running += 1
            self.acked_bytes += size
            self._topic(topic).acked += 1
            self._fire(request_type="produce", name=topic, response_time=latency_ms,
                       response_length=size, exception=None, context={})
            return
        reason = f"{err.name()}: {err.str()}" if err is not None else "acked without a partition and offset"
        if self._closing:
            self.pending_at_shutdown += 1
            reason = f"no ack before shutdown ({reason})"
        else:
            self.failed += 1
        self._topic(topic).failed += 1
        self.session.uncertain.write(UncertainSend(self._cluster, topic, self.producer_id, seq, ts,
                                                   reason))
        self._fire(request_type="produce", name=topic, response_time=float(now_ms() - ts),
                   response_length=size, exception=KafkaException(err), context={})

    def _on_error(self, err: KafkaError) -> None:
        # Client-level errors (all brokers down, ...): librdkafka keeps retrying by itself.
        log.warning("producer %s: %s", self.producer_id, err)

    def _topic(self, topic: str) -> _TopicCounts:
        t = self.per_topic.get(topic)
        if t is None:
            t = self.per_topic[topic] = _TopicCounts()
        return t

    def close(self, deadline: float, sleep: Callable[[float], None]) -> None:
        """Wait for acks until ``deadline`` (monotonic), then write what is left off as uncertain."""
        if self._closed:
            return
        while True:
            self.serve()
            if not self._pending or time.monotonic() >= deadline:
                break
            sleep(0.01)
        self._closing = True
        if self._pending:
            # Purged sends come back as delivery errors and are recorded like any failure;
            # blocking=False: a broker behind a blackholed link must not stall shutdown.
            self.producer.purge(in_queue=True, in_flight=True, blocking=False)
            give_up = time.monotonic() + 0.5
            while self._pending and time.monotonic() < give_up:
                self.serve()
                if self._pending:
                    sleep(0.01)
        for seq, (topic, ts, _size, _crc) in sorted(self._pending.items()):
            self.pending_at_shutdown += 1
            self._topic(topic).failed += 1
            self.session.uncertain.write(UncertainSend(self._cluster, topic, self.producer_id, seq,
                                                       ts, "no ack before shutdown"))
        self._pending.clear()
        self._closed = True
        self.session.flush_histories()


# --------------------------------------------------------------------------- session


class LoadSession:
    """Everything one load process shares between its users: the spec, the histories, counters.

    Kept on the Locust ``Environment`` (attribute ``mirrordrill_load``), the object that
    already scopes one test run.
    """

    ATTR = "mirrordrill_load"

    def __init__(self, spec: LoadSpec, instance: str | None = None) -> None:
        self.spec = spec
        self.instance = instance or spec.instance or secrets.token_hex(4)
        tag = spec.writer_tag(self.instance)
        self.ledger_path = history_path(spec.output_dir, ACKED_SENDS, tag)
        self.uncertain_path = history_path(spec.output_dir, UNCERTAIN_SENDS, tag)
        self.stats_path = Path(spec.output_dir) / f"load-stats.{tag}.json"
        self.acked = HistoryWriter(ACKED_SENDS, self.ledger_path)
        self.uncertain = HistoryWriter(UNCERTAIN_SENDS, self.uncertain_path)
        self.bodies = spec.payload.bodies(spec.seed)  # a sample file is read once, for every user
        self.clients: list[ProducerClient] = []
        self._connected_ahead: list[ProducerClient] = []  # made before the release, handed out first
        self.connected_ahead = 0  # of those, how many got their topics' metadata
        self.abandoned = False  # the cluster is lost: stopping waits for no ack
        self.started_ts_ms: int | None = None
        self._started_mono: float | None = None
        self._stopping_mono: float | None = None
        self.stopped_ts_ms: int | None = None
        self.closed = False

    # --- attachment to a Locust environment ---------------------------------------------
    def attach(self, environment: Environment) -> LoadSession:
        setattr(environment, self.ATTR, self)
        return self

    # --- users ---------------------------------------------------------------------------
    def new_client(self, fire: Callable[..., None]) -> ProducerClient:
        """A producer with the next producer id of this instance (one connected ahead, if any is left)."""
        if self.closed:
            raise RuntimeError("load session is closed")
        if self._started_mono is None:
            self._started_mono, self.started_ts_ms = time.monotonic(), now_ms()
        if self._connected_ahead:
            client = self._connected_ahead.pop(0)
        else:
            client = ProducerClient(self, self._producer_id(len(self.clients)), fire)
        self.clients.append(client)
        return client

    def _producer_id(self, n: int) -> str:
        return f"{self.spec.producer_id_prefix}-{self.instance}-u{n}"

    def connect_ahead(self, users: int, fire: Callable[..., None], timeout_s: float = 10.0) -> None:
        """Make the first ``users`` producers now and fetch their topics' metadata, for a load held until a release.

        A producer made at the release spent 0.5 s (quiet machine) to 1.0 s (a drill on 2 cores)
        before its first ack: connection, metadata, and the idempotent producer's id. Every record
        sent meanwhile waited with it, and that wait counted as replication latency of the load's
        first records and as replicator start-up (about a second; made ahead, milliseconds:
        see docs/measurements/behind-the-code.md#loadgen-producer-user-py).
        A cluster that does not answer within ``timeout_s`` (all producers together) is
        left to the run, as before: the producers keep trying by themselves.
        """
        deadline = time.monotonic() + timeout_s
        for n in range(users):
            client = ProducerClient(self, self._producer_id(n), fire)
            self._connected_ahead.append(client)
            if self._fetch_metadata(client, deadline):
                self.connected_ahead += 1
            else:
                deadline = 0.0  # the cluster did not answer one producer: the others would wait the same

    def _fetch_metadata(self, client: ProducerClient, deadline: float) -> bool:
        """Ask for each topic's metadata (which connects the producer) until ``deadline``; True if every answer came."""
        for topic in self.spec.topics:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                client.producer.list_topics(topic, timeout=left)
            except KafkaException as e:
                log.warning("producer %s: no metadata of %s before the release (%s); it keeps trying",
                            client.producer_id, topic, e)
                return False
        return True

    def flush_deadline(self) -> float:
        """Until when a stopping producer waits for its acks (monotonic): none once abandoned."""
        return time.monotonic() + (0.0 if self.abandoned else self.spec.flush_timeout_s)

    def flush_histories(self) -> None:
        self.acked.flush()
        self.uncertain.flush()

    @property
    def stopping(self) -> bool:
        """True once the run is asked to stop: users send nothing more, only collect acks."""
        return self._stopping_mono is not None

    def mark_stopping(self) -> None:
        if self._stopping_mono is None:
            self._stopping_mono, self.stopped_ts_ms = time.monotonic(), now_ms()

    def close(self, sleep: Callable[[float], None] = gevent.sleep) -> None:
        """Drain every producer (up to ``flush_timeout_s``) and close the histories."""
        if self.closed:
            return
        self.mark_stopping()
        deadline = self.flush_deadline()
        try:
            # Users drain their own producers in on_stop; this catches any that did not.
            for c in [*self.clients, *self._connected_ahead]:
                c.close(deadline, sleep)
        finally:
            self.acked.close()
            self.uncertain.close()
            self.closed = True

    # --- reporting -----------------------------------------------------------------------
    def stats(self, environment: Environment, state: str, final: bool = False,
              stop_reason: str | None = None, error: str | None = None) -> LoadStats:
        """A snapshot of the counters and Locust's ack-latency figures."""
        end = self._stopping_mono if self._stopping_mono is not None else time.monotonic()
        elapsed = max(0.0, end - self._started_mono) if self._started_mono is not None else 0.0
        acked = sum(c.acked for c in self.clients)
        acked_while_running = sum(c.acked_while_running for c in self.clients)
        sent = sum(c.sent for c in self.clients)
        topics: dict[str, TopicStats] = {}
        for c in self.clients:
            for name, t in c.per_topic.items():
                agg = topics.setdefault(name, TopicStats())
                agg.sent += t.sent
                agg.acked += t.acked
                agg.failed += t.failed
        total = environment.stats.total
        latency = LatencySummary()
        if total.num_requests:
            latency = LatencySummary(
                avg=total.avg_response_time, max=total.max_response_time,
                p50=total.get_response_time_percentile(0.5),
                p90=total.get_response_time_percentile(0.9),
                p99=total.get_response_time_percentile(0.99))
        return LoadStats(
            final=final, state=state, stop_reason=stop_reason, error=error,
            cluster=self.spec.cluster, instance=self.instance, pid=os.getpid(),
            producer_ids=[c.producer_id for c in self.clients],
            target_rate=self.spec.rate, users=len(self.clients) or self.spec.users,
            connected_ahead=self.connected_ahead,
            started_ts_ms=self.started_ts_ms, stopped_ts_ms=self.stopped_ts_ms,
            elapsed_s=round(elapsed, 3),
            sent=sent, acked=acked,
            failed=sum(c.failed for c in self.clients),
            rejected=sum(c.rejected for c in self.clients),
            pending_at_shutdown=sum(c.pending_at_shutdown for c in self.clients),
            acked_bytes=sum(c.acked_bytes for c in self.clients),
            achieved_rate=round(acked_while_running / elapsed, 2) if elapsed > 0 else 0.0,
            send_rate=round(sent / elapsed, 2) if elapsed > 0 else 0.0,
            ack_latency_ms=latency, locust_requests=total.num_requests,
            locust_failures=total.num_failures, topics=topics,
            ledger_path=str(self.ledger_path), uncertain_path=str(self.uncertain_path))

    def write_stats(self, environment: Environment, path: Path | None = None, **kw: Any) -> Path:
        """Write :meth:`stats` as JSON, atomically (readers never see half a file)."""
        path = Path(path or self.stats_path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(self.stats(environment, **kw).model_dump_json(indent=2))
        os.replace(tmp, path)
        return path


def check_producer_settings(spec: LoadSpec) -> None:
    """Raise KafkaException now if librdkafka refuses the settings (unknown key, bad value),
    instead of every user failing at start while the run looks alive."""
    Producer({**spec.producer_settings(), "log_level": 0})


def ensure_topics(spec: LoadSpec, partitions: int, timeout_s: float = 30.0) -> None:
    """Create the spec's topics that do not exist yet (replication factor: broker default)."""
    admin = AdminClient({"bootstrap.servers": spec.bootstrap_servers, **spec.client_security(), "log_level": 3})
    create_topics(admin, [NewTopic(t, partitions) for t in spec.topics], timeout_s)


# --------------------------------------------------------------------------- the user


class KafkaProducerUser(User):
    """A Locust user producing enveloped records at its share of the spec's rate.

    Pacing is a token bucket driven by elapsed time rather than Locust's per-task
    ``constant_throughput``: at thousands of records/s a task per record would spend more
    on scheduling than on producing.
    """

    session: LoadSession  # set by on_start
    client: ProducerClient

    def on_start(self) -> None:
        session = getattr(self.environment, LoadSession.ATTR, None)
        if session is None or session.closed:
            # No valid load settings (logged when the test started): end this user quietly.
            raise StopUser()
        self.session = session
        spec = self.session.spec
        self.client = self.session.new_client(self.environment.events.request.fire)
        seed = spec.seed if spec.seed is not None else self.client.producer_id
        rng = random.Random(f"{seed}:{len(self.session.clients)}")
        self._next_size = spec.record_size.sampler(rng)
        self._next_key = spec.keys.sampler(rng)
        self._topics = list(spec.topics)
        self._rr = len(self.session.clients) - 1  # users start on different topics
        self._rng = rng
        weights = list(spec.topics.values())
        self._cum = [sum(weights[:i + 1]) for i in range(len(weights))]
        self._credit = 0.0
        self._last = time.monotonic()

    def _next_topic(self) -> str:
        if self.session.spec.round_robin:
            self._rr += 1
            return self._topics[self._rr % len(self._topics)]
        i = bisect.bisect_right(self._cum, self._rng.random() * self._cum[-1])
        return self._topics[min(i, len(self._topics) - 1)]

    def _rate(self) -> float:
        runner = self.environment.runner
        users = getattr(runner, "target_user_count", None) or self.session.spec.users
        return self.session.spec.rate / max(1, users)

    def wait_time(self) -> float:
        return 0.0 if self._credit >= 1.0 else TICK_S

    @task
    def produce(self) -> None:
        if self.session.stopping:
            self.client.serve()
            self._credit = 0.0
            return
        now = time.monotonic()
        rate = self._rate()
        self._credit = min(self._credit + (now - self._last) * rate, max(1.0, rate * MAX_BURST_S))
        self._last = now
        client = self.client
        sent = 0
        while self._credit >= 1.0 and sent < MAX_PER_TICK and not self.session.stopping:
            topic, key, size = self._next_topic(), self._next_key(), self._next_size()
            while not client.try_send(topic, key, size):
                # librdkafka's queue is full (a slow or unreachable cluster): wait for room
                # instead of dropping, which is what a real producer application does.
                client.serve()
                gevent.sleep(BUFFER_BACKOFF_S)
            self._credit -= 1.0
            sent += 1
        client.serve()

    def on_stop(self) -> None:
        session = getattr(self, "session", None)
        if session is None or not hasattr(self, "client"):
            return
        # Runs inside the greenlet being stopped; Locust waits for it to finish. The session
        # is not marked stopping here: a ramp-down in the web UI stops some users only.
        self.client.close(session.flush_deadline(), gevent.sleep)


# --------------------------------------------------------------------------- locust CLI


def _parse_json_or(text: str, shorthand: Callable[[str], Any]) -> Any:
    text = text.strip()
    if text.startswith(("{", "[")):
        return json.loads(text)
    return shorthand(text)


def _topics_arg(text: str) -> Any:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if any(":" in p for p in parts):
        return {n: float(w or 1) for n, _, w in (p.partition(":") for p in parts)}
    return parts


def _size_arg(text: str) -> Any:
    return _parse_json_or(text, lambda t: {"fixed": int(t)})


def _keys_arg(text: str) -> Any:
    def shorthand(t: str) -> Any:
        kind, _, rest = t.partition(":")
        if kind == "uniform":
            return {"uniform": int(rest)}
        if kind == "hot":
            keys, hot, fraction = (rest.split(":") + ["1", "0.8"])[:3]
            return {"hot": {"keys": int(keys), "hot_keys": int(hot), "fraction": float(fraction)}}
        return t
    return _parse_json_or(text, shorthand)


def _producer_arg(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    settings = _parse_json_or(text, lambda t: dict(kv.split("=", 1) for kv in t.split(",") if kv))
    if not isinstance(settings, dict):
        raise ValueError(f"--producer-config: a JSON object or k=v,k=v, not {text!r}")
    return settings


def spec_from_options(options: Any) -> LoadSpec:
    """A LoadSpec from Locust's parsed command line (the web-UI path)."""
    if not options.kafka_bootstrap:
        raise ValueError("--kafka-bootstrap (or LOCUST_KAFKA_BOOTSTRAP) is required")
    return LoadSpec(
        cluster=options.kafka_cluster, bootstrap_servers=options.kafka_bootstrap,
        topics=_topics_arg(options.topics), rate=float(options.rate),
        users=max(1, int(getattr(options, "num_users", None) or 1)),
        record_size=SizeSpec.model_validate(_size_arg(str(options.record_size))),
        keys=KeySpec.model_validate(_keys_arg(str(options.keys))),
        producer=_producer_arg(options.producer_config),
        producer_id_prefix=options.producer_id_prefix, output_dir=Path(options.ledger_dir),
        flush_timeout_s=float(options.flush_timeout),
        create_topics_partitions=int(options.create_topics) or None)


# The `locust -f` options: (flag, default, help). Each is also read from ``LOCUST_`` and the flag
# in upper case (``--kafka-bootstrap``: ``LOCUST_KAFKA_BOOTSTRAP``); a float or int default makes
# the option parse as that type.
_ARGUMENTS: tuple[tuple[str, str | float | int, str | None], ...] = (
    ("--kafka-bootstrap", "", "bootstrap servers of the cluster to produce to"),
    ("--kafka-cluster", "local", "cluster name written into the ledger"),
    ("--topics", "load", "a,b (round robin) or a:3,b:1 (weighted)"),
    ("--rate", 100.0, "records/s over all users"),
    ("--record-size", "1024", 'bytes, or JSON: {"uniform": [min, max]} / {"normal": [mean, sd]}'),
    ("--keys", "none", "none, uniform:N, hot:N:HOT:FRACTION, or JSON"),
    ("--producer-config", "", "librdkafka settings: JSON or k=v,k=v (default acks=all, idempotence on)"),
    ("--producer-id-prefix", "locust", None),
    ("--ledger-dir", "ledger", "where the acked/uncertain histories and the stats summary go"),
    ("--flush-timeout", 10.0, "seconds to wait for acks when a test stops"),
    ("--create-topics", 0, "create missing topics with this many partitions (0: do not)"),
)


def _add_arguments(parser: LocustArgumentParser) -> None:
    g = parser.add_argument_group("mirrordrill Kafka load")
    for flag, default, help_text in _ARGUMENTS:
        typed = {"type": type(default)} if not isinstance(default, str) else {}
        g.add_argument(flag, default=default, env_var="LOCUST_" + flag.removeprefix("--").replace("-", "_").upper(),
                       help=help_text, **typed)


def _on_test_start(environment: Environment, **_kw: object) -> None:
    # The headless load process attaches its own session before starting; only the
    # `locust -f` path builds one from the command line, anew for each test started.
    existing = getattr(environment, LoadSession.ATTR, None)
    if existing is not None and not existing.closed:
        return
    try:
        spec = spec_from_options(environment.parsed_options)
        check_producer_settings(spec)
        if spec.create_topics_partitions:
            ensure_topics(spec, spec.create_topics_partitions)
    except (ValueError, KafkaException) as e:  # pydantic's ValidationError is a ValueError
        log.error("mirrordrill load not started, fix the Kafka options: %s", e)
        return
    LoadSession(spec).attach(environment)


def _on_test_stop(environment: Environment, **_kw: object) -> None:
    session = getattr(environment, LoadSession.ATTR, None)
    if session is None or session.closed:
        return
    session.close()
    path = session.write_stats(environment, state="stopped", final=True, stop_reason="test stopped")
    log.info("load stats: %s; ledger: %s", path, session.ledger_path)


# Registered by call, not as decorators: Locust's add_listener is unannotated, and as a decorator it
# would leave the listeners untyped (pyproject.toml excludes EventHook from the untyped-call check).
events.init_command_line_parser.add_listener(_add_arguments)
events.test_start.add_listener(_on_test_start)
events.test_stop.add_listener(_on_test_stop)
