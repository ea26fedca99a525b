"""The measurement tables of the manual and the README, generated from the records in docs/measurements/*.json.

A figure is written once, by the command that measured it (``--record``), so a page cannot drift
from what was measured. Each table sits between two marker comments in its page; the text around
it is hand-written and stays as it is. ``mirrordrill docs`` rewrites the tables, and a unit test
fails when a committed one differs from what the records give.
"""

from __future__ import annotations

import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mirrordrill.harness.tools.bench.drills import side_by_side_table, step_stall_table
from mirrordrill.primitives.measurement_record import RECORDS_DIR, read_records

Record = dict[str, Any]
BASELINE = "mirrormaker2"  # the replicator every table compares against
OURS = "pyspark"  # the bundled replicator


@dataclass(frozen=True)
class Table:
    """One generated table: the page it sits in, the marker name, the record kind it reads and
    how it renders the newest record of that kind that ``applies``."""

    page: Path
    name: str
    kind: str
    render: Callable[[Record, str], list[str]]  # (record, link to its file from the page) -> lines
    applies: Callable[[Record], bool] = lambda record: True


def _begin(name: str) -> str:
    return f"<!-- generated:{name} by ./mirrordrill docs from the newest record; edit the record, not this table -->"


def _end(name: str) -> str:
    return f"<!-- /generated:{name} -->"


def _sitting(record: Record, link: str) -> str:
    m = record.get("machine") or {}
    machine = ", ".join(x for x in (f"{m['cores']} cores" if m.get("cores") else "",
                                    m.get("cpu_model") or "",
                                    f"{m['memory_gib']} GiB" if m.get("memory_gib") else "") if x)
    return (f"Record [{Path(link).name}]({link}): {record['date']}, commit {str(record['commit'])[:12]}"
            + (f", {machine}" if machine else "") + ".")


def bench_table(record: Record, link: str) -> list[str]:
    """Every drill with each replicator: the medians, as ``bench drills`` prints them."""
    cells = record["figures"]["cells"]
    steps = step_stall_table(cells)
    return [_sitting(record, link), "", *side_by_side_table(cells), *([""] + steps if steps else [])]


NODE_LOSS_DRILL = "replicator-node-loss"


def _drills(record: Record) -> set[str]:
    return {c["drill"] for c in record["figures"]["cells"]}


def _is_every_drill(record: Record) -> bool:
    """A bench of every drill side by side: not one of some drills (``--drills``), which have tables of their own."""
    return "--drills" not in record["command"] and _drills(record) != {NODE_LOSS_DRILL}


# The drills on steady load whose p99 the bundled replicator is to hold at or below MirrorMaker 2's
TAIL_DRILLS = frozenset({"active-active", "hub-and-spoke", "fan-out", "active-passive-failback"})


def _is_tail_sitting(record: Record) -> bool:
    """A bench of some of the tail drills alone."""
    return "--drills" in record["command"] and bool(_drills(record)) and _drills(record) <= TAIL_DRILLS


def _is_node_loss(record: Record) -> bool:
    return NODE_LOSS_DRILL in _drills(record)


def node_loss_table(record: Record, link: str) -> list[str]:
    """The node-loss drill: ours (active + standby) beside MM2 tuned, and MM2 with Connect's defaults."""
    cells = [c for c in record["figures"]["cells"] if c["drill"] == NODE_LOSS_DRILL]
    return [_sitting(record, link), "", *side_by_side_table(cells, step_stall_columns=True)]


def _pair(cells: dict[str, Record], key: str) -> str:
    """Ours / MM2; runs passed as '3 / 2 of 3'."""
    if key == "passed":
        passed = [str((cells.get(rep) or {}).get("passed", "-/-")).split("/") for rep in ("pyspark", BASELINE)]
        return f"{passed[0][0]} / {passed[1][0]} of {passed[0][-1]}"
    values = [(cells.get(rep) or {}).get("medians", {}).get(key) for rep in ("pyspark", BASELINE)]
    return " / ".join("-" if v is None else f"{v:,.0f}" for v in values)


def readme_table(record: Record, link: str) -> list[str]:
    """The README's short table: per drill, ours against MM2 on what a drill is judged by."""
    by_drill: dict[str, dict[str, Record]] = {}
    for c in record["figures"]["cells"]:
        by_drill.setdefault(c["drill"], {})[c["replicator"]] = c
    lines = [_sitting(record, link) + " Medians, ours / MirrorMaker 2:", "",
             "| drill | runs passed | duplicates | p99 ms | reprocessed |", "|---|---|---|---|---|"]
    lines += [f"| {drill} | {_pair(cells, 'passed')} | {_pair(cells, 'duplicates')} | "
              f"{_pair(cells, 'latency_p99_ms')} | {_pair(cells, 'reprocessed')} |" for drill, cells in by_drill.items()]
    return lines


def _capacity(point: Record) -> float | None:
    """A point's capacity as the sweep compares it (SweepPoint.capacity): the backlog's rate, else
    the saturated rate, else what it carried."""
    for key in ("backlog_records_s", "saturated_records_s", "sustained_records_s", "replicated_records_s"):
        if point.get(key) is not None:
            return float(point[key])
    return None


def _is_capacity_comparison(record: Record) -> bool:
    """A sweep of ours against MM2 by ``num_streams`` (one of MirrorMaker 1 against MM2 is not this table's)."""
    params = {p["key"]: p["values"] for p in record["figures"].get("params", [])}
    return {BASELINE, OURS} <= set(params.get("replicator", [])) and "num_streams" in params


def capacity_table(record: Record, link: str) -> list[str]:
    """Each replicator's median records/s (each run as taken) per ``num_streams``, and its ratio to MM2's."""
    runs: dict[tuple[str, int], list[float]] = {}
    for pt in record["figures"]["points"]:
        if pt.get("error") is None and (capacity := _capacity(pt)) is not None:
            p = pt["params"]
            label = p["replicator"] if p["replicator"] == BASELINE or "mode" not in p else f"{p['replicator']}, {p['mode']}"
            runs.setdefault((label, int(p["num_streams"])), []).append(capacity)
    streams = sorted({n for _, n in runs})
    labels = list(dict.fromkeys(label for label, _ in runs))
    median = {key: statistics.median_low(values) for key, values in runs.items()}
    lines = [_sitting(record, link) + " Records/s: the median (each run as taken), and its ratio to MM2's.", "",
             "| replicator | " + " | ".join(f"`num_streams` {n} | ratio" for n in streams) + " |",
             "|---|" + "---|---|" * len(streams)]
    for label in labels:
        cells = []
        for n in streams:
            values = runs.get((label, n))
            if not values:
                cells += ["-", ""]
                continue
            base = median.get((BASELINE, n))
            ratio = f"{median[(label, n)] / base:.2f}×" if base and label != BASELINE else ""
            cells += [f"{median[(label, n)]:,.0f} ({' / '.join(f'{v:,.0f}' for v in values)})", ratio]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return lines + cpu_per_record_table(record["figures"]["points"])


def cpu_per_record_table(points: list[dict]) -> list[str]:
    """Where the machine's CPU went per record copied, for each replicator's median run per
    ``num_streams`` (records that kept ``backlog_cores``): CPU microseconds per record of the
    replicator, the brokers, the harness (the checker) and the network and load, and the cores busy."""
    by_key: dict[tuple[str, int], list[dict]] = {}
    for pt in points:
        if pt.get("error") is None and pt.get("backlog_cores") and _capacity(pt):
            p = pt["params"]
            by_key.setdefault((p["replicator"], int(p["num_streams"])), []).append(pt)
    if not by_key:
        return []
    lines = ["", "CPU per record copied while the backlog drained (the median run of each; microseconds of CPU "
                 "per record: a role's cores busy over the records/s):", "",
             "| replicator | `num_streams` | replicator | brokers | harness | network and load | cores busy |",
             "|---|---|---|---|---|---|---|"]
    for (replicator, streams), pts in by_key.items():
        pt = sorted(pts, key=lambda p: _capacity(p) or 0.0)[(len(pts) - 1) // 2]  # median_low, as the table above
        cores, rate = pt["backlog_cores"], _capacity(pt) or 1.0
        brokers = [r for r in cores if r.startswith("brokers ")]
        cells = [_us_per_record(cores, roles, rate) for roles in (["replicator"], brokers, ["harness"], ["network", "load"])]
        lines.append(f"| {replicator} | {streams} | " + " | ".join(cells) + f" | {cores.get('machine', 0.0):.2f} |")
    return lines


def _us_per_record(cores: dict[str, float], roles: list[str], records_s: float) -> str:
    return f"{sum(cores.get(r, 0.0) for r in roles) * 1e6 / records_s:.1f}"


def load_ceiling_table(record: Record, link: str) -> list[str]:
    """``bench load``: per record size, the highest rate one load process held, and its unthrottled rate."""
    f = record["figures"]
    settings = f.get("settings") or {}
    busy = (record.get("machine") or {}).get("load_average_start")
    lines = [_sitting(record, link) + f" One load process, {settings.get('users', 1)} user(s), "
             f"{settings.get('seconds', '?')} s per run, acks=all, idempotence on"
             + (f"; load average {busy[0]:g} at the start (the broker and whatever else ran shared the cores)."
                if busy else "."), "",
             "| record size | max sustained records/s | MB/s | unthrottled records/s |", "|---|---|---|---|"]
    for size in f["sizes"]:
        top = size.get("unthrottled_records_s")
        held, mb = size.get("max_sustained_records_s"), size.get("max_sustained_mb_s")
        lines.append(f"| {size['record_bytes']:,} B | {'-' if held is None else f'{held:,.0f}'} | "
                     f"{'-' if mb is None else f'{mb:,.1f}'} | {'-' if top is None else f'{top:,.0f}'} |")
    two = f.get("two_workers")
    if two is None and f.get("two_workers_note"):  # records made before distributed load existed
        lines += ["", f"2 workers: {f['two_workers_note']}."]
    elif two is not None:
        held, top = two.get("max_sustained_records_s"), two.get("unthrottled_records_s")
        lines += ["", f"{two['workers']} workers (a Locust master and {two['workers']} worker processes on the same "
                      f"machine, {two.get('users_per_worker', 1)} user(s) each), {two['record_bytes']:,} B: max sustained "
                      f"{'-' if held is None else f'{held:,.0f}'} records/s; unthrottled "
                      f"{'-' if top is None else f'{top:,.0f}'} records/s."]
    return lines


def _is_compression_sweep(record: Record) -> bool:
    return any(p["key"] == "compression" for p in record["figures"].get("params", []))


def compression_table(record: Record, link: str) -> list[str]:
    """A sweep over ``compression``: WAN bytes per record beside the replicator's CPU, per point."""
    points = [pt for pt in record["figures"]["points"] if pt.get("error") is None]
    base = next((pt.get("wan_bytes_per_record") for pt in points if pt["params"].get("compression") == "none"), None)
    lines = [_sitting(record, link), "",
             "| compression | records/s carried | record bytes | WAN bytes per record | vs none | replicator CPU cores "
             "| load avg |", "|---|---|---|---|---|---|---|"]

    def num(v: Any, digits: int = 0) -> str:
        return "-" if v is None else f"{v:,.{digits}f}"
    for pt in points:
        wan = pt.get("wan_bytes_per_record")
        share = f"{wan / base - 1:+.0%}" if wan is not None and base else "-"
        carried = pt.get("sustained_records_s") or pt.get("replicated_records_s")
        lines.append(f"| {pt['params']['compression']} | {num(carried)} | {num(pt.get('record_bytes'))} | "
                     f"{num(wan, 1)} | {share} | {num(pt.get('replicator_cpu_cores'), 2)} | "
                     f"{num((pt.get('load_avg') or [None])[0], 1)} |")
    return lines


def _is_checker_scaling(record: Record) -> bool:
    return bool(record["figures"].get("spark_standalone"))


def checker_scaling_table(record: Record, link: str) -> list[str]:
    """``checker.bench --spark-master standalone --executors 1,2``: records/s per executor count, beside the
    reference checker's on the same files, with the machine's load average (other work shared the cores)."""
    f = record["figures"]
    busy = [x for x in ((record.get("machine") or {}).get(k) for k in ("load_average_start", "load_average_end")) if x]
    ref = f["reference"]
    lines = [_sitting(record, link) + f" {f['records']:,} records, every kind of fault; Spark standalone, one core per "
             "executor, file reading included, Spark start-up not"
             + (f"; load average {' and '.join(f'{b[0]:g}' for b in busy)} at the start and the end." if busy else "."),
             "", "| checker | executors | seconds | records/s | agrees with the reference |", "|---|---|---|---|---|",
             f"| reference (columnar) | - | {ref['read_s'] + ref['check_s']:.1f} | {ref['records_s']:,.0f} | - |"]
    one = next((r["records_s"] for r in f["spark_standalone"] if r["executors"] == 1), None)
    for run in f["spark_standalone"]:
        gain = f" ({run['records_s'] / one:.2f}x of 1)" if one and run["executors"] != 1 else ""
        lines.append(f"| Spark | {run['executors']} | {run['wall_s']:.1f} | {run['records_s']:,.0f}{gain} | "
                     f"{'yes' if run['agrees'] else 'NO'} |")
    return lines


MEASUREMENTS = Path("docs") / "measurements"
TABLES = (
    Table(MEASUREMENTS / "bench.md", "bench-drills", "bench-drills", bench_table, _is_every_drill),
    Table(MEASUREMENTS / "bench.md", "node-loss", "bench-drills", node_loss_table, _is_node_loss),
    Table(Path("docs") / "explanations" / "replicator.md", "tail", "bench-drills", bench_table, _is_tail_sitting),
    Table(MEASUREMENTS / "capacity.md", "capacity", "sweep", capacity_table, _is_capacity_comparison),
    Table(Path("README.md"), "latest-against-mirrormaker2", "bench-drills", readme_table, _is_every_drill),
    Table(MEASUREMENTS / "load.md", "load-ceiling", "bench-load", load_ceiling_table),
    Table(MEASUREMENTS / "load.md", "compression", "sweep", compression_table, _is_compression_sweep),
    Table(MEASUREMENTS / "checker.md", "checker-scaling", "bench-checker", checker_scaling_table, _is_checker_scaling),
)


def _newest(root: Path, table: Table) -> tuple[Record, Path]:
    directory = root / RECORDS_DIR
    found = [(r, p) for r, p in read_records(directory, table.kind) if table.applies(r)]
    if not found:
        raise ValueError(f"{table.page}: no {table.kind} record in {directory} for its table '{table.name}'")
    return found[-1]


def render_page(root: Path, table: Table, text: str) -> str:
    """``text`` (the page) with the table between its markers rendered from the newest record."""
    record, path = _newest(root, table)
    link = Path(os.path.relpath(path, root / table.page.parent)).as_posix()
    pattern = re.compile(re.escape(_begin(table.name)) + r"\n.*?" + re.escape(_end(table.name)), re.S)
    if not pattern.search(text):
        raise ValueError(f"{table.page}: no markers for the table '{table.name}' ({_begin(table.name)} ... "
                         f"{_end(table.name)})")
    body = "\n".join([_begin(table.name), *table.render(record, link), _end(table.name)])
    return pattern.sub(lambda _: body, text, count=1)


def measurement_pages(root: Path) -> dict[Path, str]:
    """Each page holding a generated table (relative to ``root``) with its tables as the records give them."""
    pages: dict[Path, str] = {}
    for table in TABLES:
        text = pages.get(table.page) or (root / table.page).read_text()
        pages[table.page] = render_page(root, table, text)
    return pages
