"""What a load process is asked to do (``LoadSpec``) and what it reports back (``LoadStats``).

Plain pydantic, no Locust import: the harness builds and validates specs in its own process.
Record sizes and keys are written the way a drill file writes them::

    record_size: {fixed: 1024} | {uniform: [256, 4096]} | {normal: [1024, 200]}
    keys: none | {uniform: 1000} | {hot: {keys: 1000, hot_keys: 3, fraction: 0.8}}
    payload: random | {json: {fields: ...}} | {file: PATH} | {compress_ratio: R}  (loadgen/payload.py)
    topics: [orders, payments]  (round robin)  |  {orders: 3, payments: 1}  (weighted)
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mirrordrill.loadgen.envelope import PRODUCER_ID
from mirrordrill.loadgen.payload import PayloadSpec
from mirrordrill.primitives.config_refs import parse_properties

MAX_RECORD_BYTES = 16 * 1024 * 1024
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

# Client settings the spec owns elsewhere; letting the producer map override them would
# make the ledger lie (acks) or point the load at another cluster than the one recorded.
_RESERVED_PRODUCER_KEYS = {"bootstrap.servers", "metadata.broker.list", "on_delivery",
                           "error_cb", "stats_cb"}


def check_producer_rules(settings: dict[str, Any]) -> None:
    """ValueError for producer settings the load cannot honour: keys it sets itself, and acks=0
    (no acknowledgement, so no offset for the ledger). The drill file's validation calls it too,
    so the rule is told before any cluster starts."""
    reserved = sorted(set(settings) & _RESERVED_PRODUCER_KEYS)
    if reserved:
        raise ValueError(f"producer settings {reserved} are set by mirrordrill itself (the address comes "
                         "from the producer's cluster, or bootstrap_servers for the load process); remove them")
    for key in ("acks", "request.required.acks"):
        if str(settings.get(key, "")).strip() == "0":
            raise ValueError(f"{key}: 0 means the broker never acknowledges, so there is no offset for "
                             "the ledger; use 1 or all")


DEFAULT_PRODUCER_SETTINGS: dict[str, Any] = {"acks": "all", "enable.idempotence": True}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _refuse_unknown_keys(data: dict[str, Any], known: set[str], what: str, forms: str) -> None:
    """Names the unknown keys and the forms a drill file may write (``extra="forbid"`` would only name a key)."""
    unknown = set(data) - known
    if unknown:
        raise ValueError(f"unknown {what} {sorted(unknown)}; use {forms}")


# --------------------------------------------------------------------------- record sizes

_SIZE_FORMS = "{fixed: N}, {uniform: [min, max]}, {normal: [mean, sd]}"


class SizeSpec(_Strict):
    """Record value sizes in bytes: exactly one of ``fixed``, ``uniform``, ``normal``."""

    fixed: int | None = Field(default=None, gt=0, le=MAX_RECORD_BYTES)
    uniform: tuple[int, int] | None = None
    normal: tuple[float, float] | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, data: Any) -> Any:
        if isinstance(data, int) and not isinstance(data, bool):
            return {"fixed": data}
        if isinstance(data, dict):
            _refuse_unknown_keys(data, {"fixed", "uniform", "normal"}, "size distribution", f"one of {_SIZE_FORMS}")
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> SizeSpec:
        given = [n for n in ("fixed", "uniform", "normal") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(f"record_size needs exactly one of {_SIZE_FORMS}; got {given or 'none'}")
        if self.uniform is not None:
            lo, hi = self.uniform
            if not 0 < lo <= hi <= MAX_RECORD_BYTES:
                raise ValueError(f"uniform: [min, max] needs 0 < min <= max <= {MAX_RECORD_BYTES}, "
                                 f"got {list(self.uniform)}")
        if self.normal is not None:
            mean, sd = self.normal
            if not 0 < mean <= MAX_RECORD_BYTES or sd < 0:
                raise ValueError(f"normal: [mean, sd] needs 0 < mean <= {MAX_RECORD_BYTES} and "
                                 f"sd >= 0, got {list(self.normal)}")
        return self

    def mean(self) -> float:
        """The mean size (for bandwidth estimates)."""
        if self.fixed is not None:
            return float(self.fixed)
        if self.uniform is not None:
            return sum(self.uniform) / 2
        return self._normal()[0]

    def _normal(self) -> tuple[float, float]:
        """``normal``, the one left when neither fixed nor uniform is given (``_exactly_one``)."""
        assert self.normal is not None, "SizeSpec without a distribution"  # _exactly_one refuses that
        return self.normal

    def sampler(self, rng: random.Random) -> Callable[[], int]:
        """A function of no arguments returning the next size (normal clipped to 1..max)."""
        if self.fixed is not None:
            size = self.fixed
            return lambda: size
        if self.uniform is not None:
            lo, hi = self.uniform
            return lambda: rng.randint(lo, hi)
        mean, sd = self._normal()
        return lambda: min(MAX_RECORD_BYTES, max(1, round(rng.gauss(mean, sd))))


# --------------------------------------------------------------------------- keys

_KEY_FORMS = "none, {uniform: N} or {hot: {keys: N, hot_keys: K, fraction: F}}"


class HotKeys(_Strict):
    """``fraction`` of the records go to the first ``hot_keys`` of ``keys`` keys."""

    keys: int = Field(gt=1)
    hot_keys: int = Field(default=1, gt=0)
    fraction: float = Field(default=0.8, ge=0.0, le=1.0)

    @model_validator(mode="after")
    def _fewer_hot(self) -> HotKeys:
        if self.hot_keys >= self.keys:
            raise ValueError(f"hot_keys ({self.hot_keys}) must be fewer than keys ({self.keys})")
        return self


class KeySpec(_Strict):
    """Record keys: ``none`` (no key), ``{uniform: N}`` or ``{hot: {...}}``."""

    uniform: int | None = Field(default=None, gt=0)
    hot: HotKeys | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, data: Any) -> Any:
        if data is None or data == "none":
            return {}
        if isinstance(data, str):
            raise ValueError(f"unknown key spec {data!r}; use {_KEY_FORMS}")
        if isinstance(data, dict):
            _refuse_unknown_keys(data, {"uniform", "hot"}, "key distribution", _KEY_FORMS)
        return data

    @model_validator(mode="after")
    def _at_most_one(self) -> KeySpec:
        if self.uniform is not None and self.hot is not None:
            raise ValueError("keys: give either uniform or hot, not both")
        return self

    @property
    def kind(self) -> Literal["none", "uniform", "hot"]:
        return "uniform" if self.uniform is not None else "hot" if self.hot is not None else "none"

    def sampler(self, rng: random.Random) -> Callable[[], bytes | None]:
        """A function of no arguments returning the next key (bytes or None)."""
        if self.uniform is not None:
            keys = [f"k{i}".encode() for i in range(self.uniform)]
            return lambda: keys[rng.randrange(len(keys))]
        if self.hot is not None:
            h = self.hot
            keys = [f"k{i}".encode() for i in range(h.keys)]
            hot, rest = keys[:h.hot_keys], keys[h.hot_keys:]

            def pick() -> bytes:
                if rng.random() < h.fraction:
                    return hot[rng.randrange(len(hot))]
                return rest[rng.randrange(len(rest))]
            return pick
        return lambda: None


# --------------------------------------------------------------------------- topics


def _check_topic(name: str) -> str:
    if not TOPIC_NAME.match(name) or name in (".", ".."):
        raise ValueError(f"invalid topic name {name!r} (letters, digits, '.', '_', '-'; 1-249 chars)")
    return name


class TopicSelection(_Strict):
    """Topics by name, or every topic whose full name matches a regex (``__`` ones excluded)."""

    names: tuple[str, ...] = ()
    pattern: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            return {"pattern": data} if data.startswith("^") else {"names": (data,)}
        if isinstance(data, (list, tuple)):
            return {"names": tuple(data)}
        return data

    @model_validator(mode="after")
    def _one_way(self) -> TopicSelection:
        if bool(self.names) == (self.pattern is not None):
            raise ValueError("select topics by names or by pattern, exactly one of them")
        for n in self.names:
            _check_topic(n)
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as e:
                raise ValueError(f"invalid topic pattern {self.pattern!r}: {e}") from None
        return self

    @classmethod
    def of(cls, topics: TopicsArg) -> TopicSelection:
        """From a selection, a list of names, one name, or ``^regex``."""
        return topics if isinstance(topics, TopicSelection) else cls.model_validate(topics)

    def matches(self, topic: str) -> bool:
        if self.pattern is not None:
            return not topic.startswith("__") and re.fullmatch(self.pattern, topic) is not None
        return topic in self.names


# What TopicSelection.of takes: a selection, one name or ``^regex``, or a list or tuple of names.
TopicsArg = TopicSelection | str | list[str] | tuple[str, ...]


# --------------------------------------------------------------------------- the spec


class LoadSpec(_Strict):
    """One load process: where to produce, how much, what records, and where to write histories."""

    cluster: str = Field(min_length=1, description="cluster name written into the ledger")
    bootstrap_servers: str = Field(min_length=1)
    topics: dict[str, float] = Field(description="topic -> weight; a list means round robin")
    round_robin: bool = True
    rate: float = Field(gt=0, description="records/s over all users of the process")
    duration_s: float | None = Field(default=None, gt=0, description="None: until SIGTERM")
    users: int = Field(default=1, ge=1, le=1000)
    record_size: SizeSpec = SizeSpec(fixed=1024)
    keys: KeySpec = KeySpec()
    payload: PayloadSpec = PayloadSpec()  # a sample file's path is absolute here (PayloadSpec.resolved)
    producer: dict[str, str | int | float | bool] = Field(default_factory=dict)
    producer_id_prefix: str = "load"
    # Security settings live in a 0600 file outside the run folder: this spec is saved in it.
    client_properties_file: Path | None = Field(
        default=None, description="librdkafka security settings (a properties file), read at start")
    instance: str | None = Field(
        default=None, description="unique per process start; in producer ids and file names "
                                  "(None: a random one)")
    output_dir: Path
    flush_timeout_s: float = Field(default=10.0, ge=0,
                                   description="at shutdown, how long to wait for acks")
    create_topics_partitions: int | None = Field(
        default=None, gt=0, description="create missing topics with this many partitions")
    seed: int | None = None
    stats_interval_s: float = Field(default=2.0, gt=0)
    start_signal: Path | None = Field(
        default=None, description="produce only once this file exists: the harness launches the "
                                  "process early, so that its start-up overlaps the replicator's")
    connect_ahead: bool = Field(
        default=True, description="with start_signal: connect and fetch metadata while held (false when "
                                  "the bootstrap address resolves elsewhere until the release, as a "
                                  "stable address does before a failover re-points it)")
    # Locust's distributed mode: with workers or remote_workers, this process is a Locust master
    # that produces nothing itself; the workers produce, each with its own producer ids and ledger,
    # and send their ledgers to it (loadgen/load_master.py, loadgen/load_worker.py).
    workers: int = Field(default=0, ge=0, le=64,
                         description="worker processes this process starts on its own machine")
    remote_workers: int = Field(default=0, ge=0, le=256,
                                description="workers started elsewhere (mirrordrill load-worker) it waits for")
    master_bind: str = Field(default="127.0.0.1", min_length=1,
                             description="the address the master listens on for its workers")
    master_port: int = Field(default=0, ge=0, le=65535, description="0: a free port")
    worker_join_timeout_s: float = Field(default=60.0, gt=0,
                                         description="how long the master waits for every worker to join")

    @property
    def worker_count(self) -> int:
        """Workers the master waits for (0: this process produces itself)."""
        return self.workers + self.remote_workers

    def worker_instance(self, index: int) -> str:
        """The instance of worker ``index``: in its producer ids and file names, unique per worker."""
        assert self.instance is not None, "a master's spec has its instance set before workers join"
        return f"{self.instance}w{index}"

    @model_validator(mode="after")
    def _a_user_per_worker(self) -> LoadSpec:
        if self.worker_count and self.users < self.worker_count:
            raise ValueError(f"users ({self.users}) must be at least the number of workers ({self.worker_count}): "
                             "Locust spreads users over workers, and a worker without one produces nothing")
        return self

    @field_validator("topics", mode="before")
    @classmethod
    def _topic_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [t for t in v.split(",") if t]
        if isinstance(v, (list, tuple)):
            if len(set(v)) != len(v):
                raise ValueError(f"topics listed twice: {v}")
            return {t: 1.0 for t in v}
        return v

    @model_validator(mode="before")
    @classmethod
    def _weights_mean_weighted(cls, data: Any) -> Any:
        # A mapping names weights: choose by weight unless round_robin is set explicitly.
        if isinstance(data, dict) and isinstance(data.get("topics"), dict):
            data = {"round_robin": False, **data}
        return data

    @field_validator("topics")
    @classmethod
    def _topics_valid(cls, v: dict[str, float]) -> dict[str, float]:
        if not v:
            raise ValueError("at least one topic is needed")
        for name, weight in v.items():
            _check_topic(name)
            if not weight > 0:
                raise ValueError(f"topic {name}: weight must be > 0, got {weight}")
        return v

    @field_validator("producer_id_prefix")
    @classmethod
    def _prefix(cls, v: str) -> str:
        if not PRODUCER_ID.match(v) or len(v) > 64:
            raise ValueError(f"producer_id_prefix {v!r} must match {PRODUCER_ID.pattern} and be "
                             "at most 64 characters (it is part of every producer id; no commas)")
        return v

    @field_validator("instance")
    @classmethod
    def _instance(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,32}", v):
            raise ValueError(f"instance {v!r} must be 1-32 letters, digits, '_' or '-'")
        return v

    @field_validator("cluster")
    @classmethod
    def _cluster(cls, v: str) -> str:
        if any(c in v for c in ',"\n\r'):
            raise ValueError(f"cluster name {v!r} cannot hold ',', '\"' or line breaks")
        return v

    @field_validator("producer")
    @classmethod
    def _producer(cls, v: dict[str, Any]) -> dict[str, Any]:
        check_producer_rules(v)
        return v

    def producer_settings(self) -> dict[str, Any]:
        """librdkafka settings: the defaults (acks=all, idempotence) overlaid by ``producer``."""
        return {**DEFAULT_PRODUCER_SETTINGS, **self.producer, **self.client_security(),
                "bootstrap.servers": self.bootstrap_servers}

    def client_security(self) -> dict[str, str]:
        """The security settings of ``client_properties_file`` ({} without one)."""
        if self.client_properties_file is None:
            return {}
        return parse_properties(Path(self.client_properties_file).read_text())

    def writer_tag(self, instance: str) -> str:
        """The tag of this process's history files (see ``histories.history_path``)."""
        return f"{self.producer_id_prefix}-{instance}"

    @classmethod
    def load(cls, path: str | Path) -> LoadSpec:
        """Read a spec from a JSON file."""
        return cls.model_validate(json.loads(Path(path).read_text()))

    def dump(self, path: str | Path) -> Path:
        """Write the spec as JSON; returns the path."""
        path = Path(path)
        path.write_text(self.model_dump_json(indent=2))
        return path


# --------------------------------------------------------------------------- the report


class LatencySummary(BaseModel):
    """Acknowledgement latency in ms (Locust's percentiles: 2 significant digits above 100)."""

    avg: float = 0.0
    p50: float = 0.0
    p90: float = 0.0
    p99: float = 0.0
    max: float = 0.0


class TopicStats(BaseModel):
    """Per-topic counts."""

    sent: int = 0
    acked: int = 0
    failed: int = 0


class WorkerStats(BaseModel):
    """One worker of a distributed load, as its master saw it."""

    index: int
    worker_id: str  # Locust's client id (host name and a random part)
    host: str
    instance: str  # in its producer ids and ledger file names
    joined: bool = True
    done: bool = False  # it reported its end and the master holds its whole ledger
    sent: int = 0
    acked: int = 0
    failed: int = 0
    pending_at_shutdown: int = 0
    ledger_bytes: int = 0  # of its acked history, received and written into the run folder
    error: str | None = None


class LoadStats(BaseModel):
    """What a load process did; rewritten while it runs (``final`` False) and at its end."""

    final: bool = False
    # held: started and checked, producing once the spec's start signal exists
    state: Literal["starting", "held", "running", "stopping", "stopped", "failed"] = "starting"
    stop_reason: str | None = None
    cluster: str
    instance: str
    pid: int
    producer_ids: list[str] = Field(default_factory=list)
    target_rate: float
    users: int
    # producers made while held that got their topics' metadata: the first records do not wait to connect
    connected_ahead: int = 0
    started_ts_ms: int | None = None
    stopped_ts_ms: int | None = None
    elapsed_s: float = 0.0
    sent: int = 0
    acked: int = 0
    failed: int = 0
    rejected: int = 0
    pending_at_shutdown: int = 0
    acked_bytes: int = 0
    achieved_rate: float = 0.0    # records/s acknowledged between start and the stop request
    send_rate: float = 0.0        # records/s handed to the producer in that time
    ack_latency_ms: LatencySummary = LatencySummary()
    locust_requests: int = 0
    locust_failures: int = 0
    topics: dict[str, TopicStats] = Field(default_factory=dict)
    ledger_path: str
    uncertain_path: str
    error: str | None = None
    # a distributed load's master: where it listened, and each worker (empty otherwise)
    master_address: str | None = None
    workers: list[WorkerStats] = Field(default_factory=list)
