"""The drill's figures as PNG plots (matplotlib, Agg: no display needed).

Every plot takes seconds since the drill started on its x axis and shades the fault
windows, so a reader sees cause (the fault) and effect (lag, latency, throughput) together.
"""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # before pyplot: reports are made on headless machines
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from mirrordrill.harness.drill.results import FlowResults
from mirrordrill.reports.timeline import Window

_FAULT_COLOURS = ("tab:red", "tab:orange", "tab:purple", "tab:brown", "tab:pink")
_SIZE = (10, 4)
_XLABEL = "seconds since load started"


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def _shade(ax, windows: list[Window], t0_ms: int) -> None:
    """Shaded spans for faults, thin grey ones for other steps, labelled at the top."""
    ax.set_xlim(left=0)  # records before load started are set-up, not the drill
    for i, w in enumerate(windows):
        start = (w.start_ms - t0_ms) / 1000
        stop = max((w.end_ms - t0_ms) / 1000, start + 0.5)  # a 100 ms step must still be visible
        colour = _FAULT_COLOURS[i % len(_FAULT_COLOURS)] if w.is_fault else "grey"
        ax.axvspan(start, stop, color=colour, alpha=0.18 if w.is_fault else 0.12,
                   label=w.label + ("" if w.outcome in ("ok", "") else f" ({w.outcome})"))


def _mark_stall(ax, flow: FlowResults, t0_ms: int) -> None:
    """The flow's longest stall (its worst partition's) as a hatched span, so a flat stretch of
    the lag plot reads as a stop of the replicator, not a quiet source."""
    stalls = [(s.stall_s, name, s.started_ms) for name, s in flow.summary.stall_by_partition.items()
              if s.started_ms is not None and s.stall_s > 0]
    if not stalls:
        return
    stall_s, partition, started_ms = max(stalls, key=lambda s: (s[0], -s[2]))
    start = (started_ms - t0_ms) / 1000
    ax.axvspan(start, start + stall_s, facecolor="none", edgecolor="black", hatch="//", linewidth=0.8,
               label=f"longest stall: {stall_s:.1f} s ({partition})")


def _timed_png(fig: Figure, ax, windows: list[Window], t0_ms: int, title: str, ylabel: str) -> bytes:
    """A plot over the drill's seconds, faults shaded, finished the same way for every series."""
    _shade(ax, windows, t0_ms)
    ax.set(title=title, xlabel=_XLABEL, ylabel=ylabel)
    ax.set_ylim(bottom=0)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def _seconds(points, t0_ms: int) -> tuple[list[float], list]:
    xs, ys = [], []
    for sec, v in points:
        xs.append(sec - t0_ms / 1000 + 1)  # value at the end of that second
        ys.append(v)
    return xs, ys


def lag_plot(flow: FlowResults, windows: list[Window], t0_ms: int) -> bytes:
    """Exact lag (acknowledged, not yet replicated) and offset lag over time, faults shaded."""
    fig, ax = plt.subplots(figsize=_SIZE)
    if flow.series is not None:
        ax.plot(*_seconds(flow.series.lag.points(), t0_ms), label="lag (records acked, not yet on target)",
                color="tab:blue", linewidth=1.6)
        off = [(s, v) for s, v in flow.series.offset_lag.points() if v is not None]
        if off:
            ax.plot(*_seconds(off, t0_ms), label="offset lag (source end - target end)", color="tab:cyan",
                    linewidth=1, linestyle="--")
    _mark_stall(ax, flow, t0_ms)
    return _timed_png(fig, ax, windows, t0_ms, f"{flow.name}: replication lag", "records")


def throughput_plot(flow: FlowResults, windows: list[Window], t0_ms: int) -> bytes:
    """Records per second produced on the source vs replicated to the target."""
    fig, ax = plt.subplots(figsize=_SIZE)
    if flow.series is not None:
        ax.plot(*_seconds(flow.series.produced.points(), t0_ms), label="produced (acked/s)", color="tab:green")
        ax.plot(*_seconds(flow.series.replicated.points(), t0_ms), label="replicated (first seen/s)",
                color="tab:blue")
    return _timed_png(fig, ax, windows, t0_ms, f"{flow.name}: throughput", "records/s")


def latency_over_time_plot(flow: FlowResults, windows: list[Window], t0_ms: int) -> bytes:
    """Per-second p50/p99/max replication latency of records by the second they arrived."""
    by_second: dict[int, list[int]] = {}
    for s in flow.latencies:
        by_second.setdefault(s.seen_ts_ms // 1000, []).append(s.latency_ms)
    fig, ax = plt.subplots(figsize=_SIZE)
    if by_second:
        secs = sorted(by_second)
        xs = [sec - t0_ms / 1000 for sec in secs]
        for q, colour in ((0.5, "tab:blue"), (0.99, "tab:orange"), (1.0, "tab:red")):
            ys = [_quantile(sorted(by_second[s]), q) for s in secs]
            ax.plot(xs, ys, label="max" if q == 1.0 else f"p{int(q * 100)}", color=colour, linewidth=1.2)
    _mark_stall(ax, flow, t0_ms)
    return _timed_png(fig, ax, windows, t0_ms, f"{flow.name}: replication latency by arrival second", "ms")


def latency_distribution_plot(flow: FlowResults) -> bytes:
    """Histogram of per-record latency with the checker's p50/p90/p99/max marked."""
    fig, ax = plt.subplots(figsize=_SIZE)
    values = [s.latency_ms for s in flow.latencies]
    if values:
        ax.hist(values, bins=min(60, max(10, len(set(values)) // 4 or 10)), color="tab:blue", alpha=0.7)
    stats = flow.summary.latency_ms
    for (name, colour) in (("p50", "tab:green"), ("p90", "tab:olive"), ("p99", "tab:orange"), ("max", "tab:red")):
        value = getattr(stats, name)
        if value is not None:
            ax.axvline(value, color=colour, linestyle="--", label=f"{name} = {value} ms")
    ax.set(title=f"{flow.name}: latency distribution ({len(values)} records)", xlabel="ms", ylabel="records")
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(alpha=0.3)
    return _png(fig)


def _quantile(ordered: list[int], q: float) -> int:
    """Nearest-rank quantile, as the checker computes its percentiles."""
    rank = max(1, -(-int(len(ordered) * q * 100) // 100))
    return ordered[min(rank, len(ordered)) - 1]


def _sweep_lines(ax, rows: list[dict], param: str, metric: str, series_keys: list[str], ylabel: str) -> None:
    """``metric`` against ``param`` on ``ax``, one line per combination of ``series_keys``."""
    lines: dict[str, list[tuple]] = {}
    for r in rows:
        label = ", ".join(f"{k}={r['params'][k]}" for k in series_keys) or metric
        lines.setdefault(label, []).append((r["params"][param], r.get(metric)))
    for label, pts in lines.items():
        pts = [(x, y) for x, y in pts if y is not None]
        numeric = all(isinstance(x, (int, float)) for x, _ in pts)
        if numeric:  # names (compression=none,lz4,zstd) stay in the order the sweep gave them
            pts.sort()
        xs = [x if numeric else str(x) for x, _ in pts]
        ax.plot(xs, [y for _, y in pts], marker="o", label=label)
    ax.set(title=f"{ylabel} vs {param}", xlabel=param, ylabel=ylabel)
    xs_all = sorted({r["params"][param] for r in rows})
    if all(isinstance(x, (int, float)) and x > 0 for x in xs_all) and xs_all and xs_all[-1] / xs_all[0] >= 8:
        # streams and batch sizes are swept in doublings: equal steps on a log axis
        ax.set_xscale("log", base=2)
        ax.set_xticks(xs_all, [f"{x:g}" for x in xs_all])
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)


def sweep_plot(rows: list[dict], param: str, metric: str, series_keys: list[str], ylabel: str) -> bytes:
    """``metric`` against the swept ``param``, one line per combination of the other settings."""
    fig, ax = plt.subplots(figsize=_SIZE)
    _sweep_lines(ax, rows, param, metric, series_keys, ylabel)
    return _png(fig)


def sweep_pair_plot(rows: list[dict], param: str, series_keys: list[str],
                    panels: tuple[tuple[str, str], tuple[str, str]]) -> bytes:
    """Two metrics against the swept ``param`` side by side: ``panels`` is ((metric, label), (metric, label))."""
    fig, axes = plt.subplots(1, 2, figsize=_SIZE)
    for ax, (metric, label) in zip(axes, panels, strict=True):
        _sweep_lines(ax, rows, param, metric, series_keys, label)
    return _png(fig)
