"""The replicator's metrics as Prometheus text on a local port, so a person can watch the tail live.

MM2's figures are scraped from JMX; ours come from the same readings that go into
``metrics.json`` (the producer interceptor's per-partition counts and latency histogram, the
lag probe, the flows' status and the start-up clock), rendered in the text exposition format
(version 0.0.4). The latency histogram is the interceptor's own, built from every record's
ack: bucket ``i`` of ``MirrorProducerInterceptor`` counts whole-millisecond latencies in
``[2^(i-1), 2^i)`` (bucket 0: 0 ms), so its inclusive upper bound is ``2^i - 1`` ms and the
Prometheus ``le`` bounds below are exact, not estimated. The last bucket also holds every
larger latency, so it is reported only through ``+Inf``.

The server binds to 127.0.0.1 only: the figures name topics, and nothing here authenticates.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mirrordrill.replicator.metrics import BUCKETS, PartitionMetrics

log = logging.getLogger("replicator")

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
PREFIX = "mirrordrill_replicator_"
# Inclusive upper bound (seconds) of each interceptor bucket but the last (open-ended) one.
LATENCY_BOUNDS_S = [((1 << i) - 1) / 1000 for i in range(BUCKETS - 1)]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _labels(**labels: object) -> str:
    return "{" + ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items()) + "}"


def _number(v: float) -> str:
    if v == float("inf"):
        return "+Inf"
    return repr(float(v)) if isinstance(v, float) else str(v)


class _Family:
    """One metric family: its HELP/TYPE header once, then its samples."""

    def __init__(self, lines: list[str], name: str, kind: str, help_text: str):
        self.lines, self.name = lines, PREFIX + name
        lines.append(f"# HELP {self.name} {help_text}")
        lines.append(f"# TYPE {self.name} {kind}")

    def sample(self, value: float, suffix: str = "", **labels: object) -> None:
        self.lines.append(f"{self.name}{suffix}{_labels(**labels) if labels else ''} {_number(value)}")


def render(flows: dict[str, list[PartitionMetrics]], status: dict[str, dict[str, Any]], startup: dict[str, Any]) -> str:
    """Prometheus text for every flow's target partitions, the flows' query starts and start-up times."""
    lines: list[str] = []
    parts = [(flow, m) for flow, ms in sorted(flows.items()) for m in ms]
    copied = [(f, m) for f, m in parts if m.records or m.errors or any(m.histogram)]

    latency = _Family(lines, "replication_latency_seconds", "histogram",
                      "Producer ack time minus the source record's timestamp, per target partition "
                      "(MM2's replication-latency-ms), from every record since the process started.")
    for flow, m in copied:
        where = {"flow": flow, "topic": m.topic, "partition": m.partition}
        seen = 0
        # one bound fewer than buckets: the last bucket is the +Inf sample below
        for bound, n in zip(LATENCY_BOUNDS_S, m.histogram, strict=False):
            seen += n
            latency.sample(seen, "_bucket", **where, le=_number(bound))
        latency.sample(sum(m.histogram), "_bucket", **where, le="+Inf")
        latency.sample(m.latency_sum_ms / 1000, "_sum", **where)
        latency.sample(sum(m.histogram), "_count", **where)

    counters = (("records_copied_total", "records", "Records written to the target partition and acknowledged."),
                ("bytes_copied_total", "bytes", "Key and value bytes written to the target partition and acknowledged."),
                ("write_errors_total", "errors", "Records the target partition's producer failed to write."))
    for name, attr, help_text in counters:
        family = _Family(lines, name, "counter", help_text)
        for flow, m in copied:
            family.sample(getattr(m, attr), flow=flow, topic=m.topic, partition=m.partition)

    lag = _Family(lines, "lag_records", "gauge",
                  "Source end offset minus the position after the newest record this flow copied "
                  "(probed every 2 s).")
    for flow, m in parts:
        if m.lag is not None:
            lag.sample(m.lag, flow=flow, topic=m.topic, partition=m.partition)

    for name, key, help_text in (("query_starts_total", "query_starts", "Spark query starts of the flow."),
                                 ("query_failures_total", "query_failures",
                                  "Spark queries of the flow that stopped on failure.")):
        family = _Family(lines, name, "counter", help_text)
        for flow, st in sorted(status.items()):
            family.sample(st.get(key, 0), flow=flow)

    phases = _Family(lines, "startup_seconds", "gauge",
                     "Seconds from the process's start to the end of each start-up phase (absent: not reached).")
    for phase in ("jvm", "spark_session", "positions", "warm_up", "first_query", "query_live", "first_record"):
        value = startup.get(f"{phase}_s")
        if value is not None:
            phases.sample(float(value), phase=phase)
    return "\n".join(lines) + "\n"


class MetricsPortTaken(OSError):
    """The configured metrics port cannot be bound; the message names the setting to change."""


class _Handler(BaseHTTPRequestHandler):
    server: MetricsServer

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        if self.path.split("?", 1)[0] != "/metrics":
            self.send_error(404, "only /metrics is served here")
            return
        body = self.server.text.encode()
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # a scrape per second would flood the log
        pass


class MetricsServer(ThreadingHTTPServer):
    """Serves the latest rendering on http://127.0.0.1:PORT/metrics from a daemon thread.

    ``port`` 0 lets the system pick a free one (``url`` says which): drills run several
    replicators side by side, and a fixed port would collide.
    """

    daemon_threads = True

    def __init__(self, port: int):
        try:
            super().__init__(("127.0.0.1", port), _Handler)
        except OSError as e:
            raise MetricsPortTaken(f"cannot serve metrics on 127.0.0.1:{port} ({e.strerror}); set "
                          "mirrordrill.metrics.port to a free port, or 0 to let the system pick one") from e
        self.text = ""  # replaced whole (one reference swap), so readers never see half a page
        self._thread = threading.Thread(target=self.serve_forever, name="prometheus-metrics", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/metrics"

    def start(self) -> MetricsServer:
        self._thread.start()
        log.info("metrics: %s", self.url)
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(5)
