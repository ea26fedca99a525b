"""A sweep's ``sweep-throughput.png`` (records/s carried against the swept parameter) and
``sweep-wan-cpu.png`` (WAN bytes per record beside the replicator's CPU: what compression saves and costs)."""

from __future__ import annotations

from pathlib import Path

from mirrordrill.reports.plots import sweep_pair_plot, sweep_plot


def draw_sweep_plot(png: Path, capacities: list[tuple[dict, float]], swept: str, others: list[str],
                    ceiling_records_s: float | None) -> Path | None:
    """One line per combination of ``others``; ``capacities`` are (a point's parameters, the
    records/s it carried). Writes ``png`` and returns it, or None with no point to draw."""
    if not capacities:
        return None
    label = "records/s carried"
    if ceiling_records_s:
        label += f" (ceiling {ceiling_records_s:,.0f}/s)"
    rows = [{"params": params, "capacity": capacity} for params, capacity in capacities]
    png.write_bytes(sweep_plot(rows, swept, "capacity", others, label))
    return png


def draw_wan_cpu_plot(png: Path, rows: list[dict], swept: str, others: list[str]) -> Path | None:
    """WAN bytes per record and the replicator's CPU cores side by side; ``rows`` are (a point's
    ``params``, ``wan_bytes_per_record``, ``replicator_cpu_cores``). None when no point measured WAN bytes."""
    if not any(r.get("wan_bytes_per_record") is not None for r in rows):
        return None
    png.write_bytes(sweep_pair_plot(rows, swept, others, (("wan_bytes_per_record", "WAN bytes per record"),
                                                          ("replicator_cpu_cores", "replicator CPU cores"))))
    return png
