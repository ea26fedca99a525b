"""Where throughput stops growing, and the size to plan for: 75-80% of what the knee carried."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mirrordrill.harness.tools.sweep.bottleneck import find_bottleneck
from mirrordrill.harness.tools.sweep.points import SweepParam, SweepPoint

if TYPE_CHECKING:
    from mirrordrill.harness.tools.sweep.result import SweepResult

TARGET_UTILISATION = (0.75, 0.80)  # size for headroom: bursts and failover catch-up need it
KNEE_GAIN = 0.10  # a setting within 10% of the best throughput is past the knee


def swept_key(params: list[SweepParam]) -> str:
    """The x axis: the first parameter whose values are all numbers (else the first)."""
    for p in params:
        if all(isinstance(v, (int, float)) for v in p.values):
            return p.key
    return params[0].key


def _order(v):
    return (0, v, "") if isinstance(v, (int, float)) else (1, 0, str(v))


def lines_of(points: list[SweepPoint], swept: str, others: list[str]) -> dict[str, list[SweepPoint]]:
    """The points per line of the plot (one per combination of the other parameters), in swept order."""
    out: dict[str, list[SweepPoint]] = {}
    for pt in points:
        out.setdefault(", ".join(f"{k}={pt.params[k]}" for k in others), []).append(pt)
    for pts in out.values():
        pts.sort(key=lambda p: _order(p.params[swept]))
    return out


def find_knee(points: list[tuple[Any, float]]) -> Any:
    """The smallest setting within ``KNEE_GAIN`` of the best throughput measured: more of the
    parameter adds less than that. Judged against the best rather than step by step, so one
    noisy point (a dip on a shared machine) does not end the search early."""
    pts = sorted(points, key=lambda p: _order(p[0]))
    if not pts:
        return None
    best = max(y for _, y in pts)
    return next(x for x, y in pts if y >= (1 - KNEE_GAIN) * best)


def _load_short_note(pts: list[SweepPoint], swept: str) -> str:
    """What to say of a line whose load produced less than it was asked: those points measured the load."""
    short = [pt for pt in pts if pt.load_short]
    if not short:
        return ""
    where = ", ".join(f"{swept}={pt.params[swept]} ({pt.produced_records_s:,.0f} of {pt.asked_records_s:,.0f}/s)"
                      for pt in short)
    return (f"; BUT the load produced less than it was asked at {where}: there the figure is the load's ceiling, "
            "not the replicator's; split the rate over more producers or users (one load process's ceiling: "
            "mirrordrill bench load)")


def recommend(result: SweepResult) -> str:
    """Per line of the plot, the knee of the swept parameter and a size at 75–80% utilisation."""
    if not result.points:
        return "no point finished: nothing to recommend"
    swept, others = result.swept, result.others
    lo_u, hi_u = TARGET_UTILISATION
    out = []
    for label, all_pts in lines_of(result.representative(), swept, others).items():
        measured = [(pt, capacity) for pt in all_pts if not pt.error and (capacity := pt.capacity)]
        pts = [pt for pt, _ in measured]
        short = _load_short_note(pts, swept)
        if not pts:
            failed = [pt for pt in all_pts if pt.error]
            out.append(f"{label or 'all'}: nothing replicated while load ran at any {swept}"
                       + (f" ({len(failed)} point(s) failed to run)" if failed else
                          " (the replicator did not get going within the drill: start-up or its first "
                          "micro-batch took longer than the load; lengthen the drill's duration)"))
            continue
        if all(pt.lag_bounded for pt in pts):
            best, most = max(measured, key=lambda m: m[1])
            out.append(f"{label or 'all'}: no knee: the flow kept up with the offered load at every {swept} "
                       f"(up to {most:,.0f} records/s at {swept}={best.params[swept]}), so these are "
                       f"lower bounds of its capacity and 75-80% of them would undersize nothing; raise the "
                       f"drill's rate (or its producers' users) until lag grows" + short
                       + _bottleneck_note(best, swept, result))
            continue
        knee = find_knee([(pt.params[swept], capacity) for pt, capacity in measured])
        at_knee, cap = next((pt, capacity) for pt, capacity in measured if pt.params[swept] == knee)
        ceiling = f", {at_knee.of_ceiling:.0%} of the machine ceiling" if at_knee.of_ceiling else ""
        # The knee is where more of the parameter stops paying; when the best setting is the largest
        # swept, no knee was seen, and saying "stops growing" there would contradict "still growing".
        # One setting shows neither (a sweep of mode=realtime at one backlog read "stops growing at
        # backlog=600000").
        if len(pts) == 1:
            text = (f"{label or 'all'}: one {swept} measured, {swept}={knee} (~{cap:,.0f} records/s{ceiling}): "
                    f"a knee needs several values of {swept}. At that setting, plan a peak of at most "
                    f"{cap * lo_u:,.0f}-{cap * hi_u:,.0f} records/s per flow (75-80% utilisation: room for "
                    f"bursts and failover catch-up)")
        elif knee == pts[-1].params[swept]:
            text = (f"{label or 'all'}: no knee yet: throughput still grows at the largest {swept} swept, "
                    f"{swept}={knee} (~{cap:,.0f} records/s{ceiling}); sweep further. Until then, plan a peak "
                    f"of at most {cap * lo_u:,.0f}-{cap * hi_u:,.0f} records/s per flow at {swept}={knee} "
                    f"(75-80% utilisation: room for bursts and failover catch-up)")
        else:
            text = (f"{label or 'all'}: throughput stops growing at {swept}={knee} (~{cap:,.0f} records/s{ceiling}); "
                    f"size for 75-80% utilisation: plan a peak of at most {cap * lo_u:,.0f}-{cap * hi_u:,.0f} "
                    f"records/s per flow at {swept}={knee} (room for bursts and failover catch-up)")
        if at_knee.lag_bounded:
            text += ("; the flow kept up with the offered load there, so this is a lower bound: "
                     "raise the drill's rate to find the real ceiling")
        out.append(text + short + _bottleneck_note(at_knee, swept, result))
    return "\n".join(out)


def _bottleneck_note(pt: SweepPoint, swept: str, result: SweepResult) -> str:
    """What bounded the point the recommendation sizes on, with the figure that says so."""
    return f"; bottleneck at {swept}={pt.params[swept]}: {find_bottleneck(pt, result.ceiling)}"

