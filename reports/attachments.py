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

from mirrordrill.harness.drill.results import DrillResults, FlowResults
from mirrordrill.harness.drill.run_folder import BASELINE_FILE, SCENARIO_COPY, SUMMARY_FILE
from mirrordrill.primitives.redaction import REDACTED, is_secret_key, redact_properties
from mirrordrill.reports import plots
from mirrordrill.reports.summary_html import summary_html
from mirrordrill.reports.timeline import fault_windows

# Whole logs reach the report; only a log bigger than this is cut (to its end, which is
# where a failure shows), so that one runaway log cannot make the report unopenable.
LOG_CAP_BYTES = 20 * 2**20
_CONFIG_SUFFIXES = (".properties", ".yaml", ".yml", ".json")


@dataclass(frozen=True)
class DrillAttachment:
    """One attachment: its title, content and MIME type (``extension`` names the file)."""

    name: str
    body: bytes
    mime: str
    extension: str


def load_start_ms(run: DrillResults) -> int:
    """The x-axis origin of plots: the drill's zero, when the load began producing (the clock the
    timeline's ``at`` counts on); for older summaries without it, when load or the first step began."""
    if run.summary.load_started_ms is not None:
        return run.summary.load_started_ms
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
    def png(name: str, body: bytes) -> DrillAttachment:
        return DrillAttachment(f"{flow.name}: {name}", body, "image/png", "png")

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
        DrillAttachment(SUMMARY_FILE, json.dumps(run.summary.to_json(), indent=2).encode(), "application/json", "json"),
    ]
    if run.run_dir is None:
        return out
    scenario = run.run_dir / SCENARIO_COPY
    if scenario.is_file():
        out.append(DrillAttachment(SCENARIO_COPY, redact_yaml(scenario.read_text()).encode(), "text/plain", "yaml"))
    out += baseline_attachments(run.run_dir)
    config = replicator_config_text(run.run_dir / "replicator")
    if config:
        out.append(DrillAttachment("replicator configuration (secrets redacted)", config.encode(), "text/plain", "txt"))
    return out


def baseline_attachments(run_dir: Path) -> list[DrillAttachment]:
    """``run --baseline``'s comparison (baseline.json, written by the engine): its table and the JSON."""
    path = run_dir / BASELINE_FILE
    if not path.is_file():
        return []
    body = path.read_bytes()
    try:
        table = json.loads(body).get("table") or ""
    except (ValueError, AttributeError):
        table = ""
    out = [DrillAttachment("baseline comparison", table.encode(), "text/plain", "txt")] if table else []
    return out + [DrillAttachment(BASELINE_FILE, body, "application/json", "json")]


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


def drill_log(run: DrillResults, cap_bytes: int = LOG_CAP_BYTES) -> list[DrillAttachment]:
    """The drill's own log (drill.log): small, and what it did and when, passed or failed."""
    path = run.summary.logs.drill
    attachment = _log_attachment("drill log", Path(path), cap_bytes) if path else None
    return [attachment] if attachment is not None else []


def log_files(run: DrillResults, cap_bytes: int = LOG_CAP_BYTES) -> list[DrillAttachment]:
    """Every log named in summary.json, whole: the drill's, brokers', replicator's, proxy's, load's.
    A log over ``cap_bytes`` keeps its last ``cap_bytes`` and says so in its title and first line."""
    logs = run.summary.logs
    named: list[tuple[str, str]] = [("drill log", logs.drill)] if logs.drill else []
    named += [(f"broker {k} log", v) for k, v in logs.brokers.items()]
    named += [(f"replicator {k} log", v) for k, v in (logs.replicator or {}).items()]
    if logs.toxiproxy:
        named.append(("toxiproxy log", logs.toxiproxy))
    named += [(f"load log {Path(p).name}", p) for p in logs.load or []]
    return [a for title, path in named if (a := _log_attachment(title, Path(path), cap_bytes)) is not None]


def _log_attachment(title: str, path: Path, cap_bytes: int) -> DrillAttachment | None:
    try:
        with path.open("rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - cap_bytes))
            body = f.read()
    except OSError:  # a log the run never wrote (a process that did not start)
        return None
    if size > cap_bytes:
        note = (f"[mirrordrill: {path} is {size / 2**20:.1f} MB; the report keeps its last "
                f"{cap_bytes / 2**20:.0f} MB. The whole file is in the run folder.]\n")
        body = note.encode() + body
        title = f"{title} (last {cap_bytes / 2**20:.0f} MB of {size / 2**20:.1f} MB)"
    return DrillAttachment(title, body, "text/plain", "log")
