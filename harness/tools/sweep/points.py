"""What a sweep saves in ``sweep.jsonl``: the swept parameters, one point per drill, the ceiling.

Plain data with no import of the rest of the harness, so whatever reads a sweep's saved output
can read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MIN_SATURATED_S = 5  # fewer saturated seconds than this measure start-up, not a rate
# The load produced at least this share of the rate asked. Looser than bench load's 5%: a point's offered
# rate is the mean over the load's seconds, the last of them partial, which alone reads up to ~7% low
# over the short profile's 15 s window.
LOAD_HELD = 0.90


@dataclass(frozen=True)
class SweepParam:
    key: str
    values: tuple[Any, ...]


@dataclass
class SweepPoint:
    """What one drill at one combination measured."""

    params: dict
    run_dir: str
    passed: bool
    replicated_records_s: float | None   # the checker's: replicated / (first send .. last arrival)
    sustained_records_s: float | None    # mean replicated per second while load ran (after warm-up)
    produced_records_s: float | None     # mean acknowledged per second while load ran: the offered rate
    lag_bounded: bool                    # the flow kept up: its capacity is at least sustained_records_s
    final_lag: int | None
    latency_p50_ms: int | None
    latency_p99_ms: int | None
    replicator_cpu_s: float              # the replicator's processes, start-up included
    replicator_cpu_cores: float | None   # average cores those processes kept busy while load ran
    lost: int | None
    seconds: float
    # mean replicated per second over the seconds the flow had work queued (a backlog, or load
    # above its capacity): its ceiling at this setting, independent of what load was offered
    saturated_records_s: float | None = None
    saturated_s: int = 0
    # a backlog written up front: the rate at which its middle 90% reached the target, and the
    # seconds from its first to its last record there (to the millisecond, see measure.py)
    backlog_records_s: float | None = None
    backlog_drain_s: float | None = None
    # cores each role kept busy meanwhile (replicator, each cluster's brokers, network, load,
    # harness, and "machine": every core's busy time), so a point shows where the machine's CPU went
    backlog_cores: dict[str, float] | None = None
    machine_cores: int | None = None  # the cores of the machine the point ran on
    # WAN bytes in the flow's direction per replicated record, and the records' own size (payload)
    wan_bytes_per_record: float | None = None
    record_bytes: int | None = None
    # seconds from the end of the drill's outage (heal, replicator back) until the lag was back to normal
    catch_up_s: float | None = None
    # records/s the drill's producers on the flow's source were asked for (their rates): more than
    # the load produced means the point measured the load's ceiling, not the replicator's
    asked_records_s: float | None = None
    # what the point's replicator and link could offer, beside what they used: the bottleneck's measure
    replicator_cores_available: float | None = None  # its executors' cores, local[N]'s N, or the machine's
    wan_bandwidth_kb_s: float | None = None          # the flow's link's configured bandwidth; None: unlimited
    run: int = 1  # with --repeat, which run of this combination
    of_ceiling: float | None = None
    load_avg: tuple[float, float, float] | None = None  # os.getloadavg() when the point finished
    error: str | None = None              # a drill that failed to run: retried by a resumed sweep
    # sweep --jfr: each replicator JVM's flight-recording summary, by its node's folder in the run
    flight_recordings: dict[str, dict] | None = None

    @property
    def saturated(self) -> bool:
        return self.saturated_records_s is not None and self.saturated_s >= MIN_SATURATED_S

    @property
    def capacity(self) -> float | None:
        """The throughput the sweep compares: how fast a backlog drained, when there was one;
        else the saturated rate when the flow was saturated long enough to measure it; else what
        it carried while load ran (a lower bound)."""
        if self.backlog_records_s is not None:
            return self.backlog_records_s
        if self.saturated:
            return self.saturated_records_s
        return self.sustained_records_s if self.sustained_records_s is not None else self.replicated_records_s

    @property
    def load_short(self) -> bool:
        """The load produced less than the rate asked (``LOAD_HELD``): its own ceiling, not the flow's."""
        return (self.asked_records_s is not None and self.produced_records_s is not None
                and self.produced_records_s < LOAD_HELD * self.asked_records_s)

    @property
    def backlog_too_short(self) -> bool:
        """The backlog reached the target in under ``MIN_SATURATED_S``: a rate from so few seconds
        swings with one busy spell (a 100,000-record backlog measured 57,500 and 118,900/s in
        real-time mode; 600,000 records, 10 s each, measured 64,200 and 56,800)."""
        return self.backlog_drain_s is not None and self.backlog_drain_s < MIN_SATURATED_S

    @property
    def lag_label(self) -> str:
        """How the flow's lag behaved, in a word or two."""
        if self.backlog_records_s is not None:
            return f"backlog in {self.backlog_drain_s:g}s"
        return f"saturated {self.saturated_s}s" if self.saturated else "bounded" if self.lag_bounded else "growing"

    @classmethod
    def from_json(cls, row: dict) -> SweepPoint:
        return _from_row(cls, row)


@dataclass
class Ceiling:
    """What plain Kafka clients do on this machine: the most any replicator could reach."""

    produce_records_s: float
    consume_records_s: float
    record_size: int
    load_avg: tuple[float, float, float] | None = None

    @property
    def records_s(self) -> float:
        # a replicator consumes and produces: the slower side bounds it
        return min(self.produce_records_s, self.consume_records_s)

    @classmethod
    def from_json(cls, row: dict) -> Ceiling:
        return _from_row(cls, row)


def _from_row(cls, row: dict):
    """A dataclass from a sweep.jsonl row: unknown keys (an older or newer mirrordrill) are
    ignored, and the load average JSON stored as a list is a tuple again."""
    kw = {k: v for k, v in row.items() if k in cls.__dataclass_fields__}
    if kw.get("load_avg") is not None:
        kw["load_avg"] = tuple(kw["load_avg"])
    return cls(**kw)
