"""run --trace against real brokers: the bundled replicator's interceptor, in its own sink and in MirrorMaker 2's
producers, traces every copy, and each flow's tail_trace splits the latency the checker measured."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.tail_trace import STEPS
from mirrordrill.harness.drill.validate import parse_scenario

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _short_quickstart() -> str:
    data = yaml.safe_load((REPO / "scenarios" / "quickstart.yaml").read_text())
    data.update(name="quickstart-traced", duration="15s", drain_timeout="45s", timeline=[])
    data["expectations"] = {"lost": 0}
    return yaml.safe_dump(data)


@pytest.mark.parametrize("replicator", ["pyspark", "mirrormaker2"])
def test_every_copy_is_traced_and_its_steps_add_up_to_the_checkers_latency(tmp_path, artifacts, replicator):
    path = tmp_path / "traced.yaml"
    path.write_text(_short_quickstart())
    out = tmp_path / "run"
    result = Drill(parse_scenario(path.read_text(), str(path)), path, out, replicator=replicator,
                   artifacts=artifacts, trace_records=True).run()
    assert result.summary.passed, result.summary.error
    flow = json.loads((out / "summary.json").read_text())["flows"][0]
    trace = flow["tail_trace"]
    assert trace["replicated"] == flow["replicated"] > 1000
    assert trace["traced"] == trace["replicated"], "every copy's send and acknowledgement was traced"
    # the same records, the same nearest rank: the tail starts at the checker's own p99
    assert trace["tail_from_ms"] == flow["latency_ms"]["p99"]
    assert trace["all"]["latency_p50_ms"] == flow["latency_ms"]["p50"]
    for record in trace["slowest"]:
        assert sum(record["steps"].values()) == record["latency_ms"]
        assert record["steps"]["sink_ms"] >= 0, "a record is acknowledged after it was sent"
    assert set(trace["tail"]["steps"]) == set(STEPS)
    assert abs(sum(s["share"] for s in trace["all"]["steps"].values()) - 1) < 0.01
    assert "tail trace" in (out / "drill.log").read_text()
