"""The rows of each history kind: one frozen, slotted dataclass per kind, its field names the file's columns."""

from __future__ import annotations

from dataclasses import dataclass, fields

# Free text (an error, a step's name or detail), written folded onto one line; a plain ``str``
# field is a name (cluster, topic, producer id) and may hold no line break (``codec``).
Text = str


@dataclass(frozen=True, slots=True)
class AckedSend:
    """One acknowledged produce: the ledger of what the source cluster promised to keep."""

    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    send_ts_ms: int
    ack_ts_ms: int
    size_bytes: int
    checksum: int


@dataclass(frozen=True, slots=True)
class UncertainSend:
    """A send with no acknowledgement: delivery error, or still pending at shutdown."""

    cluster: str
    topic: str
    producer_id: str
    seq: int
    send_ts_ms: int
    error: Text


@dataclass(frozen=True, slots=True)
class TargetRecord:
    """One read of one record on a target cluster by the harness's observer."""

    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    seen_ts_ms: int
    checksum_ok: bool
    checksum: int


@dataclass(frozen=True, slots=True)
class ProcessedRecord:
    """An application consumer (a group member) processed one record."""

    group: str
    cluster: str
    topic: str
    partition: int
    offset: int
    producer_id: str
    seq: int
    processed_ts_ms: int


@dataclass(frozen=True, slots=True)
class LagSample:
    """The end offset of one partition on one cluster, sampled at ``ts_ms`` (the checker computes
    lag from these; the files are ``end_offsets.*.csv`` because that is what they hold)."""

    ts_ms: int
    cluster: str
    topic: str
    partition: int
    end_offset: int


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """A fault or a failover step; ``end_ts_ms`` is None while it has not ended.

    ``condition`` is the step's ``when`` in words (None when it had none), ``condition_held`` whether
    it held before the step ran (None without a condition) and ``condition_checked_ts_ms``
    when that was decided: a fault injected before replication caught up must not read as
    replicator loss.
    """

    name: Text
    kind: Text
    start_ts_ms: int
    end_ts_ms: int | None
    outcome: Text
    detail: Text
    condition: Text | None = None  # None and "" are both written as an empty field
    condition_held: bool | None = None
    condition_checked_ts_ms: int | None = None


def _names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


ACKED_SEND_FIELDS = _names(AckedSend)
UNCERTAIN_SEND_FIELDS = _names(UncertainSend)
TARGET_RECORD_FIELDS = _names(TargetRecord)
PROCESSED_RECORD_FIELDS = _names(ProcessedRecord)
LAG_SAMPLE_FIELDS = _names(LagSample)
TIMELINE_EVENT_FIELDS = _names(TimelineEvent)
