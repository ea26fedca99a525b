"""Everything a drill's report attaches, built once from a drill's saved results.

Both paths use this list: ``write_allure_results`` (after ``mirrordrill run``) writes it
into ``allure-results``, and a pytest drill test hands it to ``allure.attach``. Files of the
run folder (the scenario, the replicator's configuration, logs) are attached as they are when
present; nothing here needs them to draw the report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from primitives.redaction import REDACTED, is_secret_key, redact_properties
from harness.results import DrillResults, FlowResults
from reports import plots
from reports.summary_html import summary_html
from reports.timeline import fault_windows

LOG_TAIL_LINES = 200
_CONFIG_SUFFIXES = (".properties", ".yaml", ".yml", ".json")


@dataclass(frozen=True)
class DrillAttachment:
    """One attachment: its title, content and MIME type (``extension`` names the file)."""

    name: str
    body: bytes
    mime: str
    extension: str


def load_start_ms(run: DrillResults) -> int:
    """The x-axis origin of plots: when load or the first step began (not cluster start-up)."""
    starts = [f.series.produced.start_s * 1000 for f in run.flows if f.series is not None and f.series.produced.values]
    starts += [e.start_ts_ms for e in run.summary.timeline]
    return min(starts) if starts else run.started_ms


def _end_ms(run: DrillResults) -> int:
    ends = [e.end_ts_ms or e.start_ts_ms for e in run.summary.timeline]
    ends += [f.series.lag.end_s * 1000 for f in run.flows if f.series is not None and f.series.lag.end_s]
    return max(ends) if ends else run.started_ms


def flow_plots(run: DrillResults, flow: FlowResults) -> list[DrillAttachment]:
    """Lag (faults shaded), latency over time and distribution, throughput: PNGs."""
    t0 = load_start_ms(run)
    windows = fault_windows(run.summary.timeline, _end_ms(run))
    png = lambda name, body: DrillAttachment(f"{flow.name}: {name}", body, "image/png", "png")  # noqa: E731
    return [
        png("lag over time", plots.lag_plot(flow, windows, t0)),
        png("replication latency over time", plots.latency_over_time_plot(flow, windows, t0)),
        png("replication latency distribution", plots.latency_distribution_plot(flow)),
        png("throughput: produced vs replicated", plots.throughput_plot(flow, windows, t0)),
    ]


def run_attachments(run: DrillResults) -> list[DrillAttachment]:
    """The summary (table and JSON), and when the run folder still holds them, the scenario file
    and the replicator's configuration (redacted)."""
    out = [
        DrillAttachment("summary", summary_html(run.summary).encode(), "text/html", "html"),
        DrillAttachment("summary.json", json.dumps(run.summary.to_json(), indent=2).encode(), "application/json", "json"),
    ]
    if run.run_dir is None:
        return out
    scenario = run.run_dir / "scenario.yaml"
    if scenario.is_file():
        out.append(DrillAttachment("scenario.yaml", redact_yaml(scenario.read_text()).encode(), "text/plain", "yaml"))
    config = replicator_config_text(run.run_dir / "replicator")
    if config:
        out.append(DrillAttachment("replicator configuration (secrets redacted)", config.encode(), "text/plain", "txt"))
    return out


_YAML_PAIR = re.compile(r"(?P<key>[\w.\-\"']+)(?P<sep>\s*:\s*)(?P<value>[^,{}\[\]\n#]+)")


def redact_yaml(text: str) -> str:
    """A drill file with the values of secret-looking keys replaced (block and flow style)."""
    def hide(m: re.Match) -> str:
        if not is_secret_key(m.group("key").strip("\"'")) or not m.group("value").strip():
            return m.group(0)
        return m.group("key") + m.group("sep") + REDACTED
    return _YAML_PAIR.sub(hide, text)


def replicator_config_text(folder: Path) -> str:
    """Every configuration file the adapter rendered under ``replicator/``, secrets redacted."""
    if not folder.is_dir():
        return ""
    parts = []
    for path in sorted(folder.rglob("*")):
        # the replicator's own work area (checkpoints, metrics) is state, not configuration
        if not path.is_file() or path.suffix not in _CONFIG_SUFFIXES or "work" in path.relative_to(folder).parts:
            continue
        parts.append(f"# ---- {path.relative_to(folder)}\n{redact_properties(path.read_text(errors='replace'))}")
    return "\n".join(parts)


def log_tails(run: DrillResults, lines: int = LOG_TAIL_LINES) -> list[DrillAttachment]:
    """The last lines of every broker, replicator, proxy and load log named in summary.json."""
    logs = run.summary.logs
    named: list[tuple[str, str]] = [(f"broker {k} log", v) for k, v in logs.brokers.items()]
    named += [(f"replicator {k} log", v) for k, v in (logs.replicator or {}).items()]
    if logs.toxiproxy:
        named.append(("toxiproxy log", logs.toxiproxy))
    named += [(f"load log {Path(p).name}", p) for p in logs.load or []]
    out = []
    for title, path in named:
        tail = _tail(Path(path), lines)
        if tail is not None:
            out.append(DrillAttachment(f"{title} (last {lines} lines)", tail.encode(), "text/plain", "log"))
    return out


def _tail(path: Path, lines: int) -> str | None:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - 256 * 1024))  # logs can be large; the end is what matters
            text = f.read().decode(errors="replace")
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:]) + "\n"
