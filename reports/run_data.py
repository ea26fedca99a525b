"""One drill run's output folder, read back for reports: summary, scenario, and per-flow series.

The per-second series and per-record latencies are not in ``summary.json`` (they would make
it huge), so they are recomputed here from the histories with the checker itself: the
report plots exactly what the checker counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from harness.checker.model import FlowSeries
from harness.scenario.checking import Histories, check_pair
from harness.scenario.topology import CheckPair, check_pairs, origin_topics
from harness.scenario.validate import load_scenario


@dataclass(frozen=True)
class LatencySample:
    """One replicated record: when it was first seen on the target, and how long it took."""

    seen_ts_ms: int
    latency_ms: int


@dataclass
class FlowData:
    """What the reports show about one flow (one origin -> target pair)."""

    name: str
    summary: dict                      # the flow's entry in summary.json
    series: FlowSeries | None          # None when the histories could not be checked
    latencies: list[LatencySample] = field(default_factory=list)


@dataclass
class RunData:
    """A drill run folder, loaded."""

    run_dir: Path
    summary: dict
    scenario_text: str
    flows: list[FlowData]

    @property
    def name(self) -> str:
        return str(self.summary.get("scenario", self.run_dir.name))

    @property
    def replicator(self) -> str:
        return str(self.summary.get("replicator", "unknown"))

    @property
    def started_ms(self) -> int:
        """Drill start, epoch ms (from summary ``started_at``; falls back to the folder's mtime)."""
        from datetime import datetime
        started = self.summary.get("started_at")
        if started:
            return int(datetime.fromisoformat(started).timestamp() * 1000)
        return int((self.run_dir / "summary.json").stat().st_mtime * 1000)


def load_run(run_dir: Path) -> RunData:
    """Read a run folder written by ``mirrordrill run``; raises FileNotFoundError without summary.json."""
    run_dir = Path(run_dir).resolve()
    summary = json.loads((run_dir / "summary.json").read_text())
    scenario_file = run_dir / "scenario.yaml"
    scenario_text = scenario_file.read_text() if scenario_file.exists() else ""
    pairs = _pairs(scenario_file) if scenario_text else {}
    histories = _histories(run_dir / "histories") if pairs else None
    flows = []
    for f in summary.get("flows", []):
        name = f.get("name") or f"{f['source']}->{f['target']}"
        pair = pairs.get(name)
        if histories is None or pair is None:
            flows.append(FlowData(name, f, None))
            continue
        flows.append(FlowData(name, f, check_pair(histories, pair).series, latency_samples(histories, pair)))
    return RunData(run_dir, summary, scenario_text, flows)


def _histories(directory: Path) -> Histories | None:
    try:
        return Histories(directory)
    except Exception:  # a torn or missing history: the report still shows summary.json
        return None


def _pairs(scenario_file: Path) -> dict[str, CheckPair]:
    """The check pairs the engine used, by name, derived the same way from the same scenario."""
    try:
        scenario = load_scenario(scenario_file)
    except Exception:
        return {}
    return {p.name: p for p in check_pairs(scenario, origin_topics(scenario))}


def latency_samples(h: Histories, pair: CheckPair) -> list[LatencySample]:
    """Per replicated acknowledged record: first sighting on the target minus its send time."""
    origin_topics = set(pair.topic_map.values())
    sent = {(a.producer_id, a.seq): a.send_ts_ms for a in h.acked
            if a.cluster == pair.origin and a.topic in origin_topics}
    first_seen: dict[tuple[str, int], int] = {}
    for r in h.observed:
        if r.cluster != pair.target or r.topic not in pair.topic_map:
            continue
        key = (r.producer_id, r.seq)
        if key in sent and (key not in first_seen or r.seen_ts_ms < first_seen[key]):
            first_seen[key] = r.seen_ts_ms
    return sorted((LatencySample(seen, seen - sent[k]) for k, seen in first_seen.items()),
                  key=lambda s: s.seen_ts_ms)
