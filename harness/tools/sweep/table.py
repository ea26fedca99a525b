"""A sweep as plain text: one line per point, the ceilings, the spread of repeated runs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mirrordrill.harness.tools.sweep.bottleneck import find_bottleneck
from mirrordrill.primitives.cpu import MACHINE

if TYPE_CHECKING:
    from mirrordrill.harness.tools.sweep.result import SweepResult


def fmt(v) -> str:
    return "–" if v is None else (f"{v:,.1f}" if isinstance(v, float) else str(v))


def spread(result: SweepResult) -> list[str]:
    """Per combination run more than once: the median and the range of its capacities."""
    groups: dict[str, list] = {}
    for pt in result.points:
        if not pt.error and pt.capacity is not None:
            groups.setdefault(", ".join(f"{k}={v}" for k, v in pt.params.items()), []).append(pt)
    lines = []
    for label, runs in groups.items():
        if len(runs) > 1:
            caps = sorted(pt.capacity for pt in runs)
            lines.append(f"{label}: {len(runs)} runs, median {fmt(caps[(len(caps) - 1) // 2])}, "
                         f"range {fmt(caps[0])}-{fmt(caps[-1])} records/s")
    return lines


def _wan(pt) -> str:
    """WAN bytes per record, with the share above the records' own size (headers, batching, protocol)."""
    if pt.wan_bytes_per_record is None:
        return "–"
    if not pt.record_bytes:
        return fmt(pt.wan_bytes_per_record)
    return f"{fmt(pt.wan_bytes_per_record)} ({pt.wan_bytes_per_record / pt.record_bytes - 1:+.0%})"  # compressed: below


def _offered(pt) -> str:
    """Records/s the load produced; with ``LOAD SHORT`` when that fell short of the rate asked."""
    if pt.produced_records_s is None:
        return "backlog"
    return fmt(pt.produced_records_s) + (f" LOAD SHORT of {pt.asked_records_s:,.0f}" if pt.load_short else "")


def load_short_lines(result: SweepResult) -> list[str]:
    """One line per point whose load produced less than it was asked: what it carried is the load's ceiling."""
    return [f"LOAD SHORT at {', '.join(f'{k}={v}' for k, v in pt.params.items())}: the load achieved "
            f"{pt.produced_records_s:,.0f} of the offered {pt.asked_records_s:,.0f} records/s, so what this point "
            "carried is bounded by the load, not by the replicator (one load process's ceiling: mirrordrill bench load)"
            for pt in result.points if not pt.error and pt.load_short]


def cpu_by_role_lines(result: SweepResult) -> list[str]:
    """Where the machine's CPU went while each point's backlog drained: cores per role, and what
    no role accounts for (anything else on the machine, or containers on the docker backend)."""
    lines = []
    for pt in result.points:
        cores = pt.backlog_cores
        if not cores or pt.error:
            continue
        machine = cores.get(MACHINE, 0.0)
        roles = {k: v for k, v in cores.items() if k != MACHINE}
        shown = ", ".join(f"{role} {v:.2f}" for role, v in sorted(roles.items(), key=lambda kv: -kv[1]))
        run = f" (run {pt.run})" if pt.run > 1 else ""
        lines.append(f"cores busy during the backlog at {', '.join(f'{k}={v}' for k, v in pt.params.items())}{run}: "
                     f"{shown}; else {max(0.0, machine - sum(roles.values())):.2f}; the machine {machine:.2f}")
    return lines


def render_table(result: SweepResult) -> str:
    """A plain-text table, one line per point."""
    keys = [p.key for p in result.params]
    repeated = any(pt.run > 1 for pt in result.points)
    head = keys + ["offered/s", "carried/s", "of ceiling", "lag", "p50 ms", "p99 ms", "cpu cores",
                   "WAN B/record", "catch-up s", "not yet replicated", "load avg"]
    if repeated:
        head = head[:len(keys)] + ["run"] + head[len(keys):]
    rows = [[str(pt.params.get(k)) for k in keys] + ([str(pt.run)] if repeated else []) + (
        [_offered(pt), fmt(pt.capacity),
         f"{pt.of_ceiling:.0%}" if pt.of_ceiling is not None else "–",
         pt.lag_label if pt.backlog_records_s is not None or pt.saturated else
         "bounded" if pt.lag_bounded else f"GROWING ({fmt(pt.final_lag)})",
         fmt(pt.latency_p50_ms), fmt(pt.latency_p99_ms),
         "–" if pt.replicator_cpu_cores is None else f"{pt.replicator_cpu_cores:.2f}",  # a codec's cost is hundredths
         _wan(pt), fmt(pt.catch_up_s), fmt(pt.lost), f"{pt.load_avg[0]:.1f}" if pt.load_avg else "–"]
        if not pt.error else [f"FAILED: {pt.error[:60]}"] + [""] * 10)
        for pt in result.points]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.append("carried/s: with a backlog, the rate at which its middle 90% reached the target (each "
                 "record's first sighting, to the millisecond) -- the flow's ceiling at that setting; else, "
                 "when saturated (load above capacity), the mean replicated records/s over the seconds records "
                 "stayed queued; otherwise replicated records/s while load ran, and with lag bounded its "
                 "capacity is at least that")
    lines.append("WAN B/record: bytes the WAN link carried in the flow's direction (Toxiproxy's counters) per "
                 "record replicated, and how much more (or, compressed, less) that is than the records' own size; "
                 "catch-up s: from the end of the drill's outage (heal, replicator back) until the lag was back to what "
                 "it was before")
    lines += load_short_lines(result)
    lines += [f"bottleneck at {', '.join(f'{k}={v}' for k, v in pt.params.items())}: "
              f"{find_bottleneck(pt, result.ceiling)}" for pt in result.points if not pt.error]
    lines += cpu_by_role_lines(result)
    if result.ceiling:
        c = result.ceiling
        lines.append(f"machine ceiling: ProducerPerformance {c.produce_records_s:,.0f}/s into the target, plain "
                     f"consumer {c.consume_records_s:,.0f}/s on the source, of {c.record_size} B records"
                     + (f" (load avg {c.load_avg[0]:.1f})" if c.load_avg else ""))
    if result.ceiling_after:
        c = result.ceiling_after
        lines.append(f"machine ceiling again after the points: {c.produce_records_s:,.0f}/s into the target, "
                     f"{c.consume_records_s:,.0f}/s from the source"
                     + (f" (load avg {c.load_avg[0]:.1f})" if c.load_avg else "")
                     + " -- a large change means the machine was busier during one of the measurements")
    short = [pt for pt in result.points if pt.backlog_too_short]
    if short:
        lines.append(f"{len(short)} point(s) copied their backlog in under 5 s: too short for a steady rate; "
                     "sweep a larger one (--param backlog=600000) before sizing on them")
    repeats = spread(result)
    if repeats:
        lines.append("repeated combinations (the knee and the plot use each one's median run):")
        lines += [f"  {line}" for line in repeats]
    if result.interrupted:
        lines.append(f"interrupted: {len(result.points)} point(s) measured; rerun the same command to finish")
    return "\n".join(lines)
