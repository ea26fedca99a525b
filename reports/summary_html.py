"""The drill's summary as a small self-contained HTML page (an Allure attachment)."""

from __future__ import annotations

from html import escape

from mirrordrill.harness.drill.results import DrillResults, DrillSummary, FlowResults

_FLOW_COLUMNS = ("acked", "replicated", "lost", "in_flight", "duplicates", "reordered", "corrupted", "unexpected")
_STYLE = ("body{font-family:sans-serif;font-size:13px} table{border-collapse:collapse;margin:8px 0}"
          "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right} th{background:#f3f3f3}"
          "td.l,th.l{text-align:left} .bad{color:#b00;font-weight:bold} .ok{color:#070}")


def _num(v) -> str:
    if v is None:
        return "–"
    return f"{v:,.1f}" if isinstance(v, float) else escape(str(v))


def _row(cells: list[str], header: bool = False) -> str:
    tag = "th" if header else "td"
    return "<tr>" + "".join(c if c.startswith("<t") else f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"


def summary_html(summary: DrillSummary) -> str:
    """Flows, failovers and expectations of one ``summary.json`` as tables."""
    word = summary.verdict or ("passed" if summary.passed else "failed")
    verdict = f'<span class="{"ok" if word == "passed" else "bad"}">{word.upper()}</span>'
    parts = [f"<html><head><meta charset='utf-8'><style>{_STYLE}</style></head><body>",
             f"<h3>{escape(summary.scenario)} with {escape(summary.replicator)}: {verdict}</h3>",
             f"<p>started {escape(summary.started_at)}, took {_num(summary.duration_s)} s"
             + (f"; <span class='bad'>error: {escape(summary.error)}</span>" if summary.error else "")
             + ("; <span class='bad'>interrupted</span>" if summary.interrupted else "") + "</p>"]
    parts.append("<table>" + _row(["<th class='l'>flow</th>", *_FLOW_COLUMNS, "p50 ms", "p90 ms", "p99 ms", "max ms",
                                   "records/s", "MB/s"], header=True))
    for f in summary.flows:
        lat = f.latency_ms
        cells = [f"<td class='l'>{escape(f.name)}</td>"]
        for c in _FLOW_COLUMNS:
            bad = c not in ("acked", "replicated") and getattr(f, c) > 0
            cells.append(f"<td class='{'bad' if bad else ''}'>{_num(getattr(f, c))}</td>")
        cells += [_num(getattr(lat, k)) for k in ("p50", "p90", "p99", "max")]
        cells += [_num(f.throughput_records_s), _num(f.throughput_mb_s)]
        parts.append(_row(cells))
    parts.append("</table>")
    if summary.failovers:
        cols = ("group", "strategy", "primary", "dr", "skipped", "reprocessed", "rto_s", "rpo_records")
        parts.append("<table>" + _row(list(cols), header=True))
        for fo in summary.failovers:
            parts.append(_row([_num(getattr(fo, c)) for c in cols]))
        parts.append("</table>")
    if summary.failbacks:
        cols = ("name", "converged", "topics", "records", "missing", "extra", "converge_s", "history_records")
        parts.append("<table>" + _row(["failback (new primary->rebuilt)", *cols[1:]], header=True))
        for fb in summary.failbacks:
            parts.append(_row([_num(getattr(fb, c)) for c in cols]))
        parts.append("</table>")
    unmet = summary.unmet_conditions()
    if unmet:  # a fault injected before replication caught up: its loss is not the replicator's alone
        parts.append("<p class='bad'>timeline conditions not met (the step ran anyway):</p><table>"
                     + _row(["<th class='l'>step</th>", "<th class='l'>condition</th>", "checked (epoch ms)"],
                            header=True))
        for e in unmet:
            parts.append(_row([f"<td class='l'>{escape(e.name)}</td>", f"<td class='l bad'>{escape(e.condition or '')}</td>",
                               _num(e.condition_checked_ts_ms)]))
        parts.append("</table>")
    parts += _timeline_rows(summary)
    if summary.invariants:  # the built-in ones, checked whatever the expectations list
        parts.append("<table>" + _row(["<th class='l'>built-in invariant</th>", "<th class='l'>outcome</th>",
                                       "<th class='l'>reason</th>"], header=True))
        for inv in summary.invariants:
            css = "bad" if inv.outcome == "failed" else "ok" if inv.outcome == "held" else ""
            parts.append(_row([f"<td class='l'>{escape(inv.name)}</td>", f"<td class='l {css}'>{escape(inv.outcome)}</td>",
                               f"<td class='l'>{escape(inv.reason or '')}</td>"]))
        parts.append("</table>")
    parts.append("<table>" + _row(["<th class='l'>expectation</th>", "actual", "limit", "result"], header=True))
    for exp in summary.expectations:
        if exp.relaxed or (exp.note and exp.passed):
            mark = f"<td class='l'>{'relaxed' if exp.relaxed else 'not judged'}: {escape(exp.relaxed or exp.note or '')}</td>"
        else:
            mark = "<td class='ok'>held</td>" if exp.passed else "<td class='bad'>VIOLATED</td>"
        parts.append(_row([f"<td class='l'>{escape(exp.name)}</td>", _num(exp.actual), _num(exp.limit), mark]))
    parts.append("</table></body></html>")
    return "\n".join(parts)


def _timeline_rows(summary: DrillSummary) -> list[str]:
    """The timeline on the drill's clock: seconds since the load began producing (what ``at`` counts)."""
    zero = summary.load_started_ms
    if zero is None or not summary.timeline:
        return []
    def t(ms: int | None) -> str:
        return f"{(ms - zero) / 1000:.1f}" if ms is not None else "-"

    rows = ["<table>" + _row(["<th class='l'>timeline step (t = 0: load start)</th>", "start s", "end s",
                              "outcome"], header=True)]
    for e in summary.timeline:
        rows.append(_row([f"<td class='l'>{escape(e.name)}</td>", t(e.start_ts_ms), t(e.end_ts_ms),
                          f"<td class='{'' if e.outcome == 'ok' else 'bad'}'>{escape(e.outcome)}</td>"]))
    rows.append("</table>")
    return rows


def overview_html(run: DrillResults, flow: FlowResults | None, plots) -> str:
    """A flow's figures and its plots (inlined as data URIs) for the top of its Allure page."""
    import base64
    f = flow.summary if flow is not None else None  # a drill that failed before checking has no figures
    def fig(k: str) -> str:
        return _num(getattr(f, k) if f is not None else None)

    def lat(k: str) -> str:
        return _num(getattr(f.latency_ms, k) if f is not None else None)

    parts = [f"<p><b>{escape(run.name)}</b> replicated by <b>{escape(run.replicator)}</b>"
             f"{' — flow ' + escape(flow.name) if flow is not None else ''}</p>",
             f"<p class='figures'>{' · '.join(f'{k}={fig(k)}' for k in _FLOW_COLUMNS)}</p>",
             f"<p>latency p50={lat('p50')} ms · p90={lat('p90')} ms · p99={lat('p99')} ms · max={lat('max')} ms · "
             f"throughput {fig('throughput_records_s')} records/s</p>"]
    for p in plots:
        data = base64.b64encode(p.body).decode()
        parts.append(f"<p><img alt='{escape(p.name)}' title='{escape(p.name)}' style='max-width:100%' "
                     f"src='data:{p.mime};base64,{data}'/></p>")
    parts.append(f"<p>run folder: <code>{escape(str(run.run_dir))}</code></p>")
    return "\n".join(parts)
