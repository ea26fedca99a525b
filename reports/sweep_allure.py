"""A sweep in the Allure results: each point a test of its own, and one test for the sweep."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from html import escape
from pathlib import Path


def label_point_results(results: Path, combo: dict, carried: str, lag: str) -> None:
    """Make a point's Allure results one test per combination: its parameters name the
    combination (the drill's historyId names only scenario, replicator and flow, so every
    point would otherwise look like a retry of one test)."""
    label = ", ".join(f"{k}={v}" for k, v in combo.items())
    for f in results.glob("*-result.json"):
        r = json.loads(f.read_text())
        r["name"] = f"{r.get('name', '')} sweep {label}"
        r["historyId"] = hashlib.md5(f"{r.get('historyId', '')}\0{label}".encode()).hexdigest()
        known = {p.get("name") for p in r.get("parameters", [])}  # the drill already names its replicator
        r.setdefault("parameters", []).extend({"name": k, "value": str(v)} for k, v in combo.items() if k not in known)
        r["parameters"] += [{"name": "carried records/s", "value": carried, "excluded": True},
                            {"name": "lag", "value": lag, "excluded": True}]
        f.write_text(json.dumps(r))


def write_sweep_result(results: Path, params: dict[str, list], swept: str, table: str, recommendation: str,
                       plot: Path | None, started_ms: int, passed: bool) -> None:
    """One Allure test result for the sweep itself (table, recommendation, plot) in ``results``,
    the first point's results folder, so ``mirrordrill report`` over the points shows it."""
    if not results.exists():
        return
    for old in results.glob("sweep-*"):
        old.unlink()
    text = table + "\n\n" + recommendation + "\n"
    attachments = [{"name": "sweep table and recommendation", "source": "sweep-table-attachment.txt",
                    "type": "text/plain"}]
    (results / "sweep-table-attachment.txt").write_text(text)
    if plot and plot.exists():
        (results / "sweep-plot-attachment.png").write_bytes(plot.read_bytes())
        attachments.append({"name": "throughput vs " + swept, "source": "sweep-plot-attachment.png",
                            "type": "image/png"})
    now = int(time.time() * 1000)
    name = f"sweep over {', '.join(params)}"
    r = {"uuid": str(uuid.uuid4()), "name": name, "fullName": f"mirrordrill.sweep.{name}",
         "historyId": hashlib.md5(name.encode()).hexdigest(), "status": "passed" if passed else "broken",
         # a zero-length result broke its page in Allure 3 once the history held an earlier one
         "start": started_ms, "stop": max(now, started_ms + 1), "description": text,
         "descriptionHtml": _sweep_html(swept, table, recommendation, plot),
         "attachments": attachments,
         "labels": [{"name": "parentSuite", "value": "mirrordrill sweeps"}, {"name": "suite", "value": name},
                    {"name": "framework", "value": "mirrordrill"}],
         "parameters": [{"name": key, "value": ",".join(map(str, values))} for key, values in params.items()]}
    (results / "sweep-result.json").write_text(json.dumps(r))


def _sweep_html(swept: str, table: str, recommendation: str, plot: Path | None) -> str:
    """The sweep's page: recommendation first, then the plot (inlined) and the table as typed."""
    parts = ["<h3>Recommendation</h3><ul>"]
    parts += [f"<li>{escape(line)}</li>" for line in recommendation.splitlines()]
    parts.append("</ul>")
    if plot and plot.exists():
        data = base64.b64encode(plot.read_bytes()).decode()
        parts.append(f'<img alt="throughput vs {escape(swept)}" style="max-width:100%" '
                     f'src="data:image/png;base64,{data}"/>')
    parts.append(f"<pre style='font-size:11px;overflow-x:auto'>{escape(table)}</pre>")
    return "".join(parts)
