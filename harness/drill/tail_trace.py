"""``run --trace``: which step of the path a flow's slowest records waited in.

Per replicated record four moments are known besides the load's send: the source's
acknowledgement (the load's ledger), the replicator's send to the target and the target's
acknowledgement (the lines ``RecordTrace`` in the replicator's jar writes, one per target
position), and the observer's first sighting. The four steps between them add up to the
latency the checker reports (first sighting minus send):

- ``source_ms``: send to the source's acknowledgement (the load's own batching, the source broker);
- ``read_ms``: the source's acknowledgement to the replicator's send (the fetch across the WAN, the
  task's poll and transform);
- ``sink_ms``: the replicator's send to the target's acknowledgement (its producer's batch, the
  request, the target's append);
- ``visible_ms``: the target's acknowledgement to the observer's first sighting (a transaction's
  commit, the observer's own fetch).

The moments come from one machine's clock (the harness, the load and the replicator run on it);
a replicator on another machine would shift ``read_ms`` and ``sink_ms`` by the clocks' offset.

The tail is the traced records from their p99 up (by nearest rank, as the checker's p99: the
slowest 1%, at least one); each step's ``share`` is its part of the group's summed latency.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict

from mirrordrill.harness.drill.checker.figures import nearest_rank
from mirrordrill.loadgen.histories.columnar import frame_of
from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, TARGET_RECORDS
from mirrordrill.loadgen.histories.records import AckedSend, TargetRecord

TRACE_GLOB = "trace-*.csv"  # RecordTrace's files, in each flow's metrics folder
TRACE_SCHEMA = {"topic": pl.String, "partition": pl.Int64, "offset": pl.Int64, "sent_ms": pl.Int64,
                "acked_ms": pl.Int64}
STEPS = ("source_ms", "read_ms", "sink_ms", "visible_ms")
SLOWEST_SHOWN = 5
ID = ["producer_id", "seq"]
_C = pl.col


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class StepFigures(_Model):
    """One step over a group of records: its median, p90 and max in ms, and its share of their latency."""

    p50_ms: int
    p90_ms: int
    max_ms: int
    share: float


class TracedGroup(_Model):
    """A group of traced records (all of them, or the tail) and each step's figures over it."""

    records: int
    latency_p50_ms: int
    steps: dict[str, StepFigures]  # by STEPS' names


class TracedRecord(_Model):
    """One slow record, its positions and its steps."""

    id: str  # producer id and sequence number, as the checker's samples name ids
    source: str  # topic-partition@offset
    target: str
    latency_ms: int
    steps: dict[str, int]


class TailTrace(_Model):
    """A flow's entry ``tail_trace`` in summary.json (``run --trace``)."""

    replicated: int
    traced: int  # replicated records whose first sighting's position a trace line names
    tail_from_ms: int  # the traced records' p99: the tail is the records from it up in latency order
    all: TracedGroup
    tail: TracedGroup
    slowest: list[TracedRecord]

    def line(self, flow: str) -> str:
        """The tail in one line: which step its records waited in."""
        ranked = sorted(self.tail.steps.items(), key=lambda kv: -kv[1].share)
        parts = ", ".join(f"{name.removesuffix('_ms')} {s.share:.0%} (p50 {s.p50_ms} ms)" for name, s in ranked)
        return (f"tail trace {flow}: the {self.tail.records} slowest of {self.traced} traced records "
                f"(>= {self.tail_from_ms} ms) spent their latency in: {parts}")


def read_traces(run_dir: Path) -> pl.DataFrame:
    """Every trace line under ``run_dir`` (empty when the run was not traced); a torn last line (a killed
    driver's, with no end of line) is skipped."""
    frames = []
    for path in sorted(run_dir.rglob(TRACE_GLOB)):
        text = path.read_bytes()
        whole = text[:text.rfind(b"\n") + 1]
        if not whole:
            continue
        frame = pl.read_csv(io.BytesIO(whole), schema=TRACE_SCHEMA, ignore_errors=True, truncate_ragged_lines=True)
        frames.append(frame.drop_nulls())
    if not frames:
        return pl.DataFrame(schema=TRACE_SCHEMA)
    # a position is taken once; the same line twice would be one record counted twice
    return pl.concat(frames).unique(subset=["topic", "partition", "offset"], keep="first")


def traced_records(acked: Sequence[AckedSend], observed: Sequence[TargetRecord], traces: pl.DataFrame) -> pl.DataFrame:
    """Per replicated id whose first sighting's position is traced: its moments, latency and steps."""
    ledger = (frame_of(ACKED_SENDS, acked).sort([*ID, "ack_ts_ms"])
              .group_by(ID, maintain_order=True)
              .agg(_C("topic", "partition", "offset", "send_ts_ms", "ack_ts_ms").first()))
    sightings = (frame_of(TARGET_RECORDS, observed).sort([*ID, "seen_ts_ms"])
                 .group_by(ID, maintain_order=True)
                 .agg(_C("topic").first().alias("t_topic"), _C("partition").first().alias("t_partition"),
                      _C("offset").first().alias("t_offset"), _C("seen_ts_ms").first()))
    return (ledger.join(sightings, on=ID)
            .join(traces, left_on=["t_topic", "t_partition", "t_offset"], right_on=["topic", "partition", "offset"])
            .with_columns(latency_ms=_C("seen_ts_ms") - _C("send_ts_ms"),
                          source_ms=_C("ack_ts_ms") - _C("send_ts_ms"),
                          read_ms=_C("sent_ms") - _C("ack_ts_ms"),
                          sink_ms=_C("acked_ms") - _C("sent_ms"),
                          visible_ms=_C("seen_ts_ms") - _C("acked_ms")))


def tail_trace(acked: Sequence[AckedSend], observed: Sequence[TargetRecord], traces: pl.DataFrame,
               replicated: int) -> TailTrace | None:
    """Where a flow's records, and its slowest 1%, waited (``replicated``: the checker's count of the flow's
    replicated records); None when none of them was traced."""
    if traces.is_empty():
        return None
    records = traced_records(acked, observed, traces)
    if records.is_empty():
        return None
    ordered = records.sort("latency_ms", maintain_order=True)
    rank = max(1, -(-ordered.height * 99 // 100))  # the p99's nearest rank, as the checker's
    tail = ordered.slice(rank - 1)
    slowest = tail.reverse().head(SLOWEST_SHOWN)
    return TailTrace(replicated=replicated, traced=records.height, tail_from_ms=int(tail["latency_ms"][0]),
                     all=_group(records), tail=_group(tail),
                     slowest=[_record(row) for row in slowest.iter_rows(named=True)])


def _group(records: pl.DataFrame) -> TracedGroup:
    total = max(1, int(records["latency_ms"].sum()))
    steps = {}
    for step in STEPS:
        values = records[step].sort().to_list()
        steps[step] = StepFigures(p50_ms=nearest_rank(values, 50), p90_ms=nearest_rank(values, 90), max_ms=values[-1],
                                  share=round(sum(values) / total, 4))
    return TracedGroup(records=records.height, latency_p50_ms=nearest_rank(records["latency_ms"].sort().to_list(), 50),
                       steps=steps)


def _record(row: dict) -> TracedRecord:
    return TracedRecord(id=f"{row['producer_id']}:{row['seq']}",
                        source=f"{row['topic']}-{row['partition']}@{row['offset']}",
                        target=f"{row['t_topic']}-{row['t_partition']}@{row['t_offset']}",
                        latency_ms=row["latency_ms"], steps={step: row[step] for step in STEPS})
