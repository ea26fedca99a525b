"""Values of the common Kafka client settings a flow passes to its consumer, producer and admin.

Kafka's Java clients refuse a bad value only when the replicator starts them, which in a drill
is after the clusters are up. The settings people tune (batching, fetch sizes, timeouts, acks,
compression) are checked here instead, so a typo such as ``linger.ms: 5x`` fails before anything
starts. Keys not in these tables pass unchecked: the client still has the last word.
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrordrill.primitives.config_errors import InvalidSetting

# Whole numbers of at least the given value.
_AT_LEAST: dict[str, dict[str, int]] = {
    "producer": {"linger.ms": 0, "batch.size": 0, "buffer.memory": 0, "max.request.size": 1,
                 "request.timeout.ms": 0, "delivery.timeout.ms": 0, "retries": 0, "retry.backoff.ms": 0,
                 "max.in.flight.requests.per.connection": 1, "send.buffer.bytes": -1},
    "consumer": {"max.poll.records": 1, "fetch.min.bytes": 0, "fetch.max.bytes": 0, "fetch.max.wait.ms": 0,
                 "max.partition.fetch.bytes": 0, "receive.buffer.bytes": -1, "request.timeout.ms": 0,
                 "session.timeout.ms": 0, "max.poll.interval.ms": 1},
    "admin": {"request.timeout.ms": 0, "default.api.timeout.ms": 0, "retries": 0},
}
_ONE_OF: dict[str, dict[str, tuple[str, ...]]] = {
    "producer": {"acks": ("all", "-1", "0", "1"), "compression.type": ("none", "gzip", "snappy", "lz4", "zstd"),
                 "enable.idempotence": ("true", "false")},
    "consumer": {"isolation.level": ("read_uncommitted", "read_committed"), "check.crcs": ("true", "false")},
    "admin": {},
}


def check_client_values(settings: Mapping[str, str], *, client: str) -> None:
    """Raise InvalidSetting for a known ``client`` setting (consumer, producer, admin) with a bad value."""
    for key, value in settings.items():
        text = str(value).strip()
        minimum = _AT_LEAST.get(client, {}).get(key)
        if minimum is not None:
            try:
                number = int(text)
            except ValueError:
                number = None
            if number is None or number < minimum:
                raise InvalidSetting(f"{client}.{key} = {value!r} is not a whole number of at least {minimum}",
                                     field=client, subkey=key, valid=f"a whole number >= {minimum}")
        allowed = _ONE_OF.get(client, {}).get(key)
        if allowed is not None and text.lower() not in allowed:
            raise InvalidSetting(f"{client}.{key} = {value!r} is not one of the values the client accepts",
                                 field=client, subkey=key, valid=", ".join(allowed))
