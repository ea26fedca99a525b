"""One point's figures: throughput while load ran, when saturated, lag, latency and CPU."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mirrordrill.harness.drill.actions.base import NO_FACTS
from mirrordrill.harness.drill.actions.registry import step_facts
from mirrordrill.harness.drill.results import load_results
from mirrordrill.harness.tools.sweep.points import MIN_SATURATED_S, SweepPoint
from mirrordrill.primitives.cpu import CpuByRole, CpuMeter

WARMUP_S = 5  # seconds of load left out of the sustained rate: batches and connections ramp up
SATURATED_LAG = 1000  # records queued at the start of a second: the replicator had work all that second


def measure_point(run_dir: Path, params: dict, cpu: CpuMeter | float, seconds: float,
                  by_role: CpuByRole | None = None) -> SweepPoint:
    """Figures of one finished drill, from its saved results (summary and the checker's series)."""
    run = load_results(run_dir)
    s = run.summary
    flow = run.flows[0] if run.flows else None
    f, series = (flow.summary, flow.series) if flow is not None else (None, None)
    sustained = offered = final_lag = load_s = cores = None
    if series is not None and series.produced.values:
        load_start = series.produced.start_s
        load_end = load_start + len(series.produced.values)  # exclusive
        load_s = load_end - load_start
        skip = min(WARMUP_S, load_s // 4)
        window = range(load_start + skip, load_end)
        if len(window):
            offered = sum(series.produced.at(t) or 0 for t in window) / len(window)
            sustained = sum(series.replicated.at(t) or 0 for t in window) / len(window)
        lag = [v for sec, v in series.lag.points() if sec < load_end and v is not None]
        final_lag = lag[-1] if lag else None
        if isinstance(cpu, CpuMeter):
            used = cpu.cpu_between(load_start + skip, load_end)
            cores = round(used / (load_end - load_start - skip), 2) if used is not None and load_end - load_start > skip else None
    saturated_rate, saturated_s = saturated_rate_of(series) if series is not None else (None, 0)
    arrival = (backlog_arrival(flow.latencies, s.load_started_ms, s.backlog_records)
               if flow is not None and s.backlog_records and s.load_started_ms else None)
    drain_rate, drain_s = backlog_drain_of(arrival)
    if s.backlog_records:
        offered = None  # a backlog written up front is not a rate: the mean would mix it with start-up
    catch_up = catch_up_of(series, s.timeline) if series is not None else None
    wan_per_record = (wan_bytes_per_record(s.wan_bytes, flow.name, f.replicated)
                      if flow is not None and f is not None else None)
    cpu_s = cpu.cpu_s if isinstance(cpu, CpuMeter) else float(cpu)
    if cores is None and load_s:
        cores = round(cpu_s / load_s, 2)
    # bounded: at the end of the load the flow is at most ~5 s of production behind
    bounded = final_lag is not None and offered is not None and final_lag <= 5 * max(offered, 1)
    if saturated_s >= MIN_SATURATED_S:
        bounded = False  # it had more work than it could do: the rate measured is its ceiling
    return SweepPoint(
        params=params, run_dir=str(run_dir), passed=s.passed,
        replicated_records_s=f.throughput_records_s if f else None,
        sustained_records_s=round(sustained, 1) if sustained is not None else None,
        produced_records_s=round(offered, 1) if offered is not None else None, lag_bounded=bounded,
        final_lag=final_lag, latency_p50_ms=f.latency_ms.p50 if f else None,
        latency_p99_ms=f.latency_ms.p99 if f else None,
        replicator_cpu_s=round(cpu_s, 1), replicator_cpu_cores=cores, lost=f.lost if f else None,
        seconds=round(seconds, 1), load_avg=load_avg(), error=s.error,
        saturated_records_s=saturated_rate, saturated_s=saturated_s,
        backlog_records_s=drain_rate, backlog_drain_s=drain_s, backlog_cores=backlog_cores(by_role, arrival),
        machine_cores=os.cpu_count(), wan_bytes_per_record=wan_per_record, catch_up_s=catch_up,
        record_bytes=round(f.replicated_bytes / f.replicated) if f is not None and f.replicated else None)


def failed_point(run_dir: Path, params: dict, cpu_s: float, seconds: float, error: BaseException) -> SweepPoint:
    """A drill that ran but could not be measured: kept as a failed point, retried on resume."""
    return SweepPoint(params=params, run_dir=str(run_dir), passed=False, replicated_records_s=None,
                      sustained_records_s=None, produced_records_s=None, lag_bounded=False,
                      final_lag=None, latency_p50_ms=None, latency_p99_ms=None,
                      replicator_cpu_s=round(cpu_s, 1), replicator_cpu_cores=None, lost=None,
                      seconds=round(seconds, 1), load_avg=load_avg(),
                      error=f"{type(error).__name__}: {error}")


def saturated_rate_of(series) -> tuple[float | None, int]:
    """Mean records/s replicated over the seconds that started with at least ``SATURATED_LAG``
    records queued, leaving out the first ``WARMUP_S`` seconds after replication began."""
    first = next((sec for sec, v in series.replicated.points() if v), None)
    if first is None:
        return None, 0
    seconds = [sec for sec, v in series.lag.points()
               if sec >= first + WARMUP_S and v is not None and (series.lag.at(sec - 1) or 0) >= SATURATED_LAG]
    if not seconds:
        return None, 0
    return round(sum(series.replicated.at(sec) or 0 for sec in seconds) / len(seconds), 1), len(seconds)


def wan_bytes_per_record(wan_bytes: dict[str, dict[str, int]], flow: str, replicated: int) -> float | None:
    """Bytes the WAN carried in the flow's direction ("a->b") per record it replicated: records,
    headers (ours included), batching and protocol, and whatever else crossed that way (a
    replicator's offset syncs, checkpoints). None when the flow's ends share no link."""
    carried = [way[flow] for way in wan_bytes.values() if flow in way]
    if not carried or not replicated:
        return None
    return round(sum(carried) / replicated, 1)


CATCH_UP_FLOOR = 100  # records: a lag this small is caught up whatever it was before


def catch_up_of(series, timeline) -> float | None:
    """Seconds from the end of the drill's first outage (the heal, or the replicator back) until
    the flow's lag was back to what it was before it (twice its median over the 5 s before, at
    least ``CATCH_UP_FLOOR``): how long the queue an outage built takes to drain at this setting.
    None without an outage, or when the lag never came back."""
    # which kinds stop replication, and which let it go on, is each step's action's declaration
    down = next((e for e in timeline if (step_facts(e.kind) or NO_FACTS).stops_flow), None)
    if down is None:
        return None
    up = next((e for e in timeline
               if (step_facts(e.kind) or NO_FACTS).restores_flow and e.start_ts_ms >= down.start_ts_ms), None)
    if up is None or up.end_ts_ms is None:
        return None
    before = sorted(v for sec, v in series.lag.points()
                    if down.start_ts_ms // 1000 - 5 <= sec < down.start_ts_ms // 1000 and v is not None)
    normal = max(CATCH_UP_FLOOR, 2 * before[len(before) // 2]) if before else CATCH_UP_FLOOR
    back = next((sec for sec, v in series.lag.points()
                 if sec > up.end_ts_ms // 1000 and v is not None and v <= normal), None)
    return None if back is None else round(max(0.0, back - up.end_ts_ms / 1000), 1)


BACKLOG_SHARE = (0.05, 0.95)  # the middle of the backlog: its first and last records meet start-up and the load


@dataclass(frozen=True)
class BacklogArrival:
    """When a backlog reached the target, from each record's first sighting (epoch ms)."""

    first_ms: int
    last_ms: int
    middle_ms: tuple[int, int]  # the middle 90% in arrival order (``BACKLOG_SHARE``)
    records: int


def backlog_arrival(latencies, load_started_ms: int, backlog_records: int) -> BacklogArrival | None:
    """The backlog's arrival at the target: ``seen - latency`` is a record's send time, and a
    record sent before the load started was written as backlog. None below 1,000 records, or when
    fewer than half the backlog was seen."""
    seen = sorted(x.seen_ts_ms for x in latencies if x.seen_ts_ms - x.latency_ms < load_started_ms)
    if len(seen) < max(1000, backlog_records // 2):
        return None
    lo, hi = (seen[int(len(seen) * q)] for q in BACKLOG_SHARE)
    return BacklogArrival(seen[0], seen[-1], (lo, hi), len(seen))


def backlog_drain_of(arrival: BacklogArrival | None) -> tuple[float | None, float | None]:
    """Records/s at which the backlog's middle 90% reached the target, to the millisecond (a
    replicator that copies 100,000 records in two seconds is measured too, which per-second
    counts with a warm-up left out cannot do), and the seconds from its first record there to
    its last."""
    if arrival is None:
        return None, None
    lo, hi = arrival.middle_ms
    share = BACKLOG_SHARE[1] - BACKLOG_SHARE[0]
    return (round(share * arrival.records / (max(hi - lo, 1) / 1000), 1),
            round((arrival.last_ms - arrival.first_ms) / 1000, 2))


def backlog_cores(by_role: CpuByRole | None, arrival: BacklogArrival | None) -> dict[str, float] | None:
    """Cores each role kept busy while the backlog's middle 90% arrived: where the machine's CPU
    went while the flow ran at its ceiling."""
    if by_role is None or arrival is None:
        return None
    lo, hi = arrival.middle_ms
    return by_role.cores_between(lo / 1000, hi / 1000)


def load_avg() -> tuple[float, float, float] | None:
    try:
        one, five, fifteen = os.getloadavg()
        return round(one, 2), round(five, 2), round(fifteen, 2)
    except OSError:
        return None


def fmt_load(load: tuple | None) -> str:
    return "/".join(f"{x:.1f}" for x in load) if load else "?"
