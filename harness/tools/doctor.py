"""``mirrordrill doctor``: can this machine run drills? Checks it for real, end to end."""

from __future__ import annotations

import importlib.metadata as md
import platform
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import KafkaException, Producer, libversion

from mirrordrill.harness.lab.brokers.cluster import ClusterClients, ClusterSpec
from mirrordrill.harness.lab.environment import Environment, TopologySpec
from mirrordrill.harness.lab.network.probe import measure_round_trip
from mirrordrill.harness.lab.network.wan import WanLink
from mirrordrill.primitives import versions
from mirrordrill.primitives.bootstrap import Bootstrap, BootstrapError
from mirrordrill.primitives.kafka.reading import watermarks
from mirrordrill.primitives.process import ProcessError

INJECTED_LATENCY_MS = 50


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class DoctorReport:
    versions: dict[str, str] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    startup_s: float | None = None
    workdir: str = ""

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def as_dict(self) -> dict:
        return {"ok": self.ok, "versions": self.versions, "startup_s": self.startup_s, "workdir": self.workdir,
                "checks": [asdict(c) for c in self.checks]}


def _pkg(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "not installed"


class Doctor:
    """Runs each check in order, recording it; a failed check stops the ones that need it."""

    def __init__(self, workdir: Path, progress: Callable[[Check], None] | None = None):
        self.workdir = workdir
        self.report = DoctorReport(workdir=str(workdir))
        self.progress = progress or (lambda c: None)

    def _record(self, name: str, started: float, ok: bool, detail: str) -> bool:
        check = Check(name, ok, detail, round(time.monotonic() - started, 2))
        self.report.checks.append(check)
        self.progress(check)
        return ok

    def run(self) -> DoctorReport:
        t = time.monotonic()
        try:
            artifacts = Bootstrap().ensure_all(with_allure=True)
        except BootstrapError as e:
            self._record("toolchains and artifacts", t, False, str(e))
            return self.report
        self.report.versions = {
            "python": platform.python_version(), "java": artifacts.java,
            "kafka (broker, MirrorMaker 2)": versions.kafka_version(), "pyspark": _pkg("pyspark"),
            "spark kafka connector": versions.spark_version(), "toxiproxy": versions.TOXIPROXY_VERSION,
            "confluent-kafka / librdkafka": f"{_pkg('confluent-kafka')} / {libversion()[0]}",
            "locust": _pkg("locust"), "allure-python-commons": _pkg("allure-python-commons"),
            "allure (npm)": str(artifacts.allure_cli),
        }
        self._record("toolchains and artifacts", t, True,
                     f"{len(artifacts.broker_classpath)} broker jars, {len(artifacts.mirrormaker_classpath)} "
                     f"MirrorMaker jars, {len(artifacts.spark_kafka_jars)} Spark connector jars, Toxiproxy, Allure")
        spec = TopologySpec(clusters=(ClusterSpec("dc-a"), ClusterSpec("dc-b")))
        env = Environment(spec, self.workdir, artifacts)
        try:
            t = time.monotonic()
            try:
                env.start()
            except (ProcessError, OSError) as e:
                self._record("start two clusters and a WAN link", t, False, str(e))
                return self.report
            self.report.startup_s = round(env.startup.total_s, 2)
            self._record("start two clusters and a WAN link", t, True,
                         f"ready in {env.startup.total_s:.1f}s (storage format {env.startup.format_s:.1f}s); "
                         f"logs under {self.workdir}")
            self._link_checks(env)
        finally:
            t = time.monotonic()
            problems = env.stop()
            leftover = [p.name for p in env.supervisor.processes if p.running]
            self._record("stop everything", t, not problems and not leftover,
                         "; ".join(problems + [f"still running: {n}" for n in leftover]) or "no process left running")
        return self.report

    def _link_checks(self, env: Environment) -> None:
        """Each check of the WAN link, in order; after a failed one the link is in doubt, so the rest do not run."""
        link, a = env.link("dc-a", "dc-b"), env.cluster("dc-a")
        for name, check in _LINK_CHECKS:
            t = time.monotonic()
            ok, detail = check(link, a)
            if not self._record(name, t, ok, detail):
                return


# A check of the link from dc-a to dc-b: whether it passed, and what it saw.
LinkCheck = Callable[[WanLink, ClusterClients], tuple[bool, str]]


def _latency(link: WanLink, a: ClusterClients) -> tuple[bool, str]:
    try:
        before = measure_round_trip(a.wan_bootstrap("dc-b"))
        link.set(latency_ms=INJECTED_LATENCY_MS)
        after = measure_round_trip(a.wan_bootstrap("dc-b"))
        link.heal()
    except KafkaException as e:
        return False, f"client through the link failed: {e}"
    added = after.median_ms - before.median_ms
    expected = 2 * INJECTED_LATENCY_MS  # the request and the response each cross the link once
    return (0.8 * expected <= added <= 1.6 * expected,
            f"round trip through the link {before.median_ms:.1f} ms -> {after.median_ms:.1f} ms with "
            f"{INJECTED_LATENCY_MS} ms each way (added {added:.1f} ms, expected ~{expected} ms)")


def _blackhole(link: WanLink, a: ClusterClients) -> tuple[bool, str]:
    topic = "doctor-blackhole"
    a.create_topics([_new_topic(topic)])
    acks: list = []
    producer = Producer({"bootstrap.servers": a.wan_bootstrap("dc-b"), "acks": "all",
                         "enable.idempotence": True, "message.timeout.ms": 120000, "log_level": 0})
    producer.produce(topic, b"warm-up", on_delivery=lambda e, m: acks.append(e))
    producer.flush(15)
    link.blackhole()
    token = uuid.uuid4().hex.encode()
    producer.produce(topic, token, on_delivery=lambda e, m: acks.append(e))
    held_until = time.monotonic() + 3
    while time.monotonic() < held_until:
        producer.poll(0.1)
    held = len(acks) == 1
    link.heal()
    healed_at = time.monotonic()
    producer.flush(60)
    delivered = len(acks) == 2 and acks[1] is None
    count = _count_value(a.bootstrap, topic, token)
    return (held and delivered and count == 1,
            f"ack held during the partition: {held}; delivered {time.monotonic() - healed_at:.1f}s after heal: "
            f"{delivered}; copies on the broker: {count} (want 1)")


def _hard_partition(link: WanLink, a: ClusterClients) -> tuple[bool, str]:
    link.partition()
    refused = not _reachable(a, timeout_s=3)
    link.heal()
    back = _reachable(a, timeout_s=15)
    return refused and back, f"clients refused while down: {refused}; reachable after heal: {back}"


def _reachable(a: ClusterClients, timeout_s: float) -> bool:
    """Whether one round trip from dc-a through the link succeeds within ``timeout_s``."""
    try:
        measure_round_trip(a.wan_bootstrap("dc-b"), samples=1, timeout_s=timeout_s)
    except KafkaException:
        return False
    return True


_LINK_CHECKS: tuple[tuple[str, LinkCheck], ...] = (
    ("latency injection", _latency),
    ("blackhole partition and heal", _blackhole),
    ("hard partition and heal", _hard_partition),
)


def _new_topic(name: str):
    from confluent_kafka.admin import NewTopic
    return NewTopic(name, 1, 1)


def _count_value(bootstrap: str, topic: str, value: bytes, timeout_s: float = 15.0) -> int:
    """How many records of ``topic`` (partition 0, from the start) carry ``value``."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"__doctor-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "log_level": 0})
    try:
        _, high = watermarks(c, topic, [0], timeout_s)[0]
        c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        n, pos, deadline = 0, 0, time.monotonic() + timeout_s
        while pos < high and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            offset = m.offset()
            if offset is None:
                continue  # the client sets it on every record it returns
            pos = offset + 1
            n += m.value() == value
        return n
    finally:
        c.close()
