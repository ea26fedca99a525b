"""A sweep's ``sweep-throughput.png``: records/s carried against the swept parameter."""

from __future__ import annotations

from pathlib import Path

from reports.plots import sweep_plot


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
