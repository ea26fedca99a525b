"""Upper bounds a drill file's figures stay within: what one machine can run, said with the limit.

A drill runs its brokers, replicator and load on one laptop or CI machine. A figure far past
these limits is a typo (an extra zero) or a drill for another tool; without a bound it would
be found only after the clusters start, as an out-of-memory broker or a load that never reaches
its rate. The shipped drills and tests use a small fraction of each.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import AfterValidator

if TYPE_CHECKING:  # model.py imports this module for its field bounds
    from mirrordrill.harness.drill.schema import Scenario

Report = Callable[[tuple, str], None]  # (path in the drill file, message)

MAX_CLUSTERS = 8
MAX_BROKERS = 5  # per cluster
MAX_HEAP_MB = 8192  # per broker
MAX_TOPICS = 500  # declared in one drill file
MAX_PARTITIONS = 1000  # per topic
MAX_CLUSTER_PARTITIONS = 10_000  # on one cluster, declared and created by steps
MAX_PRODUCERS = 50
MAX_CONSUMERS = 50
MAX_RATE = 100_000  # records/s, per producer
MAX_BACKLOG_RECORDS = 10_000_000  # per backlog entry
MAX_STEPS = 500
MAX_LATENCY_MS = 60_000  # a WAN link's added delay
MAX_DURATION_S = 24 * 3600  # of load
MAX_REPLICATOR_NODES = 8  # MirrorMaker 2 processes per target (each a JVM on this machine)
MAX_WAIT_S = 6 * 3600  # any one timeout: drain, a condition, a runbook command, a failback's copy


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.3g}"


def _seconds(value: float) -> str:
    hours, rest = divmod(value, 3600)
    text = f"{int(hours)}h" if hours and not rest else f"{_number(value)} s"
    return text if text.endswith(" s") else f"{text} ({_number(value)} s)"


def _at_most(limit: float, limit_said: str, what: str, size: Callable[[Any], float], unit: str) -> AfterValidator:
    """A bound on ``size(value)`` whose message states the limit as ``limit_said``."""
    def check(value: Any) -> Any:
        if size(value) > limit:
            raise ValueError(f"at most {limit_said} {what}; got {_number(size(value))}{unit}")
        return value
    return AfterValidator(check)


def at_most(limit: float, what: str) -> AfterValidator:
    """A field bound whose message states the limit: 'at most 1,000 partitions per topic ...'."""
    return _at_most(limit, _number(limit), what, lambda value: value, "")


def at_most_seconds(limit: float, what: str) -> AfterValidator:
    """A duration's bound, said in hours and seconds: 'at most 24h (86,400 s) of load ...'."""
    return _at_most(limit, _seconds(limit), what, lambda value: value, " s")


def at_most_items(limit: int, what: str) -> AfterValidator:
    """A list's or mapping's length bound: 'at most 50 producers in one drill ...'."""
    return _at_most(limit, _number(limit), what, len, "")


def cluster_partition_problems(s: Scenario, bad: Report) -> None:
    """The partitions on each cluster, declared and created by steps, within what its brokers serve."""
    from mirrordrill.harness.drill.schema_timeline import (  # here: the schema imports this module for its bounds
        AddPartitions,
        CreateTopic,
    )
    # per cluster, per topic: its latest partition count (add_partitions gives the new total)
    latest: dict[str, dict[str, tuple[int, tuple]]] = {}
    places = [(t.cluster, t.name, t.partitions, ("topics", i, "partitions")) for i, t in enumerate(s.topics)]
    places += [(st.cluster, st.topic, st.partitions, ("timeline", i, "partitions")) for i, st in enumerate(s.timeline)
               if isinstance(st, (CreateTopic, AddPartitions))]
    for cluster, topic, partitions, path in places:
        latest.setdefault(cluster, {}).pop(topic, None)  # re-inserted last: the dict keeps the file's order
        latest[cluster][topic] = (partitions, path)
    for cluster, topics in latest.items():
        if (total := sum(n for n, _ in topics.values())) > MAX_CLUSTER_PARTITIONS:
            path = list(topics.values())[-1][1]  # where the total goes past the limit, at the latest
            bad(path, f"the topics of {cluster} add up to {_number(total)} partitions; at most "
                      f"{_number(MAX_CLUSTER_PARTITIONS)} per cluster, which one machine's brokers serve: "
                      "use fewer topics or partitions")


# Kafka's own limits on one record, unless a drill raises them (producer, topic or broker setting).
KAFKA_MAX_REQUEST_BYTES = 1_048_576  # the producer's max.request.size
KAFKA_MAX_MESSAGE_BYTES = 1_048_588  # the broker's message.max.bytes, a topic's max.message.bytes
RECORD_OVERHEAD = 1024  # the key and the record and batch headers around a value, at most


def _int_setting(settings: dict, key: str) -> int | None:
    try:
        return int(str(settings[key]).strip())
    except (KeyError, ValueError):
        return None  # unset, or not a number (the settings' own check says so)


def _record_limit(s: Scenario, producer: Any) -> tuple[int, str]:
    """The most bytes one record of ``producer`` may take, and the setting that says so."""
    limits = [(_int_setting(producer.settings, "max.request.size") or KAFKA_MAX_REQUEST_BYTES,
               "the producer's max.request.size (settings)")]
    cluster = s.clusters.get(producer.cluster)
    broker = _int_setting(cluster.broker_properties, "message.max.bytes") if cluster else None
    for t in s.topics:
        if t.cluster == producer.cluster and t.name in producer.topics:
            topic = _int_setting(t.config, "max.message.bytes")
            limits.append((topic, f"topic {t.name}'s max.message.bytes (config)") if topic else
                          (broker or KAFKA_MAX_MESSAGE_BYTES, f"the brokers' message.max.bytes (broker_properties of "
                                                              f"{producer.cluster}), or topic {t.name}'s max.message.bytes"))
    return min(limits)


def record_size_problems(s: Scenario, bad: Report) -> None:
    """Records a producer writes that Kafka would refuse as too large (RecordTooLargeException)."""
    for i, p in enumerate(s.load.producers):
        size = p.record_size
        if size.fixed is not None:
            largest = size.fixed
        elif size.uniform is not None:
            largest = size.uniform[1]
        elif size.normal is not None:
            largest = round(size.normal[0] + 6 * size.normal[1])  # beyond 6 sd: never drawn
        else:
            continue  # SizeSpec refuses a size without a distribution
        limit, setting = _record_limit(s, p)
        if largest + RECORD_OVERHEAD > limit:
            bad(("load", "producers", i, "record_size"),
                f"records of up to {_number(largest)} bytes, with about {_number(RECORD_OVERHEAD)} bytes of key and "
                f"headers, exceed the {_number(limit)} bytes Kafka takes by {setting}; write at most "
                f"{_number(limit - RECORD_OVERHEAD)} bytes, or raise that setting")
