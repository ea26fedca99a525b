"""The measurement tables of the manual and the README come from the records: a new record changes
the table, a table edited by hand or left behind a newer record is stale, and a page that lost its
markers is refused rather than silently left as it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mirrordrill.harness.tools.measurement_tables import TABLES, measurement_pages, render_page
from mirrordrill.primitives.measurement_record import RECORDS_DIR, Sitting

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The pages with tables and the committed records, copied."""
    for table in TABLES:
        (tmp_path / table.page).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / table.page, tmp_path / table.page)
    shutil.copytree(REPO / RECORDS_DIR, tmp_path / RECORDS_DIR, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("*.md"))
    return tmp_path


def _cell(drill: str, replicator: str, p99: float) -> dict:
    return {"drill": drill, "replicator": replicator, "passed": "1/1", "phase_spread": False,
            "medians": {"duplicates": 0, "latency_p50_ms": 50, "latency_p99_ms": p99}}


def _bench_sitting(checkout: Path, args: list[str], drill: str, ours_p99: int, mm2_p99: int) -> tuple[Path, dict]:
    """A bench record of one drill (``bench drills`` with ``args``) written into the checkout, and the pages then."""
    path = Sitting.begin(["mirrordrill"], ["bench", "drills", *args]).write(
        "bench-drills", {"runs": 1, "cells": [_cell(drill, "pyspark", ours_p99), _cell(drill, "mirrormaker2", mm2_p99)]},
        checkout / RECORDS_DIR)
    return path, measurement_pages(checkout)


def test_the_committed_tables_are_what_the_records_give():
    pages = measurement_pages(REPO)
    assert sorted(map(str, pages)) == sorted({str(t.page) for t in TABLES})
    assert all((REPO / path).read_text() == text for path, text in pages.items())


def test_a_newer_record_makes_the_committed_tables_stale_until_regenerated(checkout):
    path, pages = _bench_sitting(checkout, ["--runs", "1"], "quickstart", 4321, 9876)
    bench = pages[Path("docs/measurements/bench.md")]
    assert bench != (checkout / "docs/measurements/bench.md").read_text()
    assert f"[{path.name}]({path.name})" in bench
    assert "| quickstart | pyspark | 1/1 | 0 | 50 | 4,321 |" in bench
    assert "| failover-strategies |" not in bench  # the older record's rows are gone
    readme = pages[Path("README.md")]
    assert f"(docs/measurements/{path.name})" in readme
    assert "| quickstart | 1 / 1 of 1 | 0 / 0 | 4,321 / 9,876 | - / - |" in readme
    # the hand-written text around the tables is kept
    assert readme.startswith("# mirrordrill") and "## Results" in readme


def test_a_node_loss_sitting_fills_its_own_table_and_leaves_the_side_by_side_ones(checkout):
    sitting = Sitting.begin(["mirrordrill"], ["bench", "drills", "--drills", "scenarios/replicator-node-loss.yaml"])
    cells = [_cell("replicator-node-loss", "pyspark", 9000), _cell("replicator-node-loss", "mirrormaker2", 9500),
             _cell("replicator-node-loss", "mirrormaker2, Connect's defaults", 310000)]
    path = sitting.write("bench-drills", {"runs": 3, "cells": cells}, checkout / RECORDS_DIR)
    pages = measurement_pages(checkout)
    bench = pages[Path("docs/measurements/bench.md")]
    node_loss = bench[bench.index("<!-- generated:node-loss"):]
    assert f"[{path.name}]({path.name})" in node_loss
    assert "| replicator-node-loss | mirrormaker2, Connect's defaults | 1/1 | 0 | 50 | 310,000 |" in node_loss
    side_by_side = bench[:bench.index("<!-- generated:node-loss")]
    assert path.name not in side_by_side and path.name not in pages[Path("README.md")]


def test_a_sitting_of_the_tail_drills_fills_its_own_table_and_leaves_the_side_by_side_ones(checkout):
    path, pages = _bench_sitting(checkout, ["--drills", "scenarios/active-active.yaml"], "active-active", 150, 160)
    manual = pages[Path("docs/explanations/replicator.md")]
    tail = manual[manual.index("<!-- generated:tail"):]
    assert f"(../measurements/{path.name})" in tail and "| active-active | pyspark | 1/1 | 0 | 50 | 150 |" in tail
    bench = pages[Path("docs/measurements/bench.md")]
    assert path.name not in bench and path.name not in pages[Path("README.md")]
    assert "| failover-strategies |" in bench  # the bench of every drill stays


def test_the_capacity_table_compares_each_replicator_to_mm2_at_its_stream_count(checkout):
    points = [{"params": {"replicator": rep, "mode": "realtime", "num_streams": n}, "run": run,
               "backlog_records_s": rate}
              for rep, n, run, rate in [("pyspark", 2, 1, 3000), ("pyspark", 2, 2, 1000), ("pyspark", 2, 3, 2000),
                                        ("mirrormaker2", 2, 1, 1000)]]
    figures = {"params": [{"key": "replicator", "values": ["pyspark", "mirrormaker2"]},
                          {"key": "num_streams", "values": [2]}], "points": points}
    Sitting.begin(["mirrordrill"], []).write("sweep", figures, checkout / RECORDS_DIR)
    page = measurement_pages(checkout)[Path("docs/measurements/capacity.md")]
    assert "| pyspark, realtime | 2,000 (3,000 / 1,000 / 2,000) | 2.00× |" in page
    assert "| mirrormaker2 | 1,000 (1,000) |  |" in page
    assert "CPU per record copied" not in page  # points from before the roles were measured


def test_the_capacity_page_shows_each_median_run_s_cpu_per_record_by_role(checkout):
    def pt(rep, run, rate, replicator_cores):
        return {"params": {"replicator": rep, "mode": "realtime", "num_streams": 1}, "run": run,
                "backlog_records_s": rate,
                "backlog_cores": {"replicator": replicator_cores, "brokers primary": 0.2, "brokers dr": 0.4,
                                  "harness": 0.4, "network": 0.08, "load": 0.02, "machine": 1.9}}
    points = [pt("pyspark", 1, 25_000, 0.5), pt("pyspark", 2, 20_000, 0.9), pt("pyspark", 3, 30_000, 0.1),
              pt("mirrormaker2", 1, 20_000, 0.8)]
    figures = {"params": [{"key": "replicator", "values": ["pyspark", "mirrormaker2"]},
                          {"key": "num_streams", "values": [1]}], "points": points}
    Sitting.begin(["mirrordrill"], []).write("sweep", figures, checkout / RECORDS_DIR)
    page = measurement_pages(checkout)[Path("docs/measurements/capacity.md")]
    # ours' median run is the 25,000/s one: 0.5 cores over 25,000 records/s is 20 microseconds a record
    assert "| pyspark | 1 | 20.0 | 24.0 | 16.0 | 4.0 | 1.90 |" in page
    assert "| mirrormaker2 | 1 | 40.0 | 30.0 | 20.0 | 5.0 | 1.90 |" in page


def test_the_load_page_shows_the_load_ceiling_and_compression_s_bytes_beside_its_cpu(checkout):
    sitting = Sitting.begin(["mirrordrill"], [])
    sitting.write("bench-load", {"settings": {"seconds": 2, "users": 1}, "sizes": [
        {"record_bytes": 100, "max_sustained_records_s": 9000.0, "max_sustained_mb_s": 0.9,
         "unthrottled_records_s": 11000.0},
        {"record_bytes": 10240, "max_sustained_records_s": None, "max_sustained_mb_s": None,
         "unthrottled_records_s": 900.0}], "two_workers": None, "two_workers_note": "not measured"},
        checkout / RECORDS_DIR / "bench-load-test.json")
    points = [{"params": {"compression": c}, "sustained_records_s": 480.0, "record_bytes": 250,
               "wan_bytes_per_record": wan, "replicator_cpu_cores": cpu}
              for c, wan, cpu in [("none", 300.0, 0.5), ("zstd", 120.0, 0.75)]]
    sitting.write("sweep", {"params": [{"key": "compression", "values": ["none", "zstd"]}], "points": points},
                  checkout / RECORDS_DIR / "sweep-compression-test.json")
    page = measurement_pages(checkout)[Path("docs/measurements/load.md")]
    assert "| 100 B | 9,000 | 0.9 | 11,000 |" in page and "| 10,240 B | - | - | 900 |" in page
    assert "2 workers: not measured." in page
    assert "| none | 480 | 250 | 300.0 | +0% | 0.50 | - |" in page and "| zstd | 480 | 250 | 120.0 | -60% | 0.75 | - |" in page
    two = {"workers": 2, "users_per_worker": 1, "record_bytes": 1024, "max_sustained_records_s": 20000.0,
           "max_sustained_mb_s": 20.5, "unthrottled_records_s": 25000.0, "runs": []}
    sitting.write("bench-load", {"settings": {"seconds": 2, "users": 1}, "sizes": [], "two_workers": two},
                  checkout / RECORDS_DIR / "bench-load-test.json")
    page = measurement_pages(checkout)[Path("docs/measurements/load.md")]
    assert ("2 workers (a Locust master and 2 worker processes on the same machine, 1 user(s) each), 1,024 B: "
            "max sustained 20,000 records/s; unthrottled 25,000 records/s.") in page
    # the capacity page keeps reading replicator comparisons only
    assert "compression" not in measurement_pages(checkout)[Path("docs/measurements/capacity.md")]


def test_a_page_without_its_markers_is_refused(checkout):
    table = TABLES[0]
    text = (checkout / table.page).read_text()
    stripped = "\n".join(line for line in text.splitlines() if not line.startswith("<!-- generated:"))
    with pytest.raises(ValueError, match="no markers"):
        render_page(checkout, table, stripped)


def test_no_record_of_the_kind_is_refused(checkout):
    for path in (checkout / RECORDS_DIR).glob("bench-drills-*.json"):
        path.unlink()
    with pytest.raises(ValueError, match="no bench-drills record"):
        measurement_pages(checkout)


def test_every_committed_record_is_a_record_with_a_source_or_a_command():
    for path in sorted((REPO / RECORDS_DIR).glob("*.json")):
        doc = json.loads(path.read_text())
        assert doc["format"] == 1 and doc["kind"] and doc["figures"], path
        assert doc.get("source") or doc.get("command"), path


def test_a_recorded_bench_renders_the_table_bench_printed(tmp_path):
    from mirrordrill.harness.tools.bench.drills import BenchCell, BenchResult, figure_columns
    from mirrordrill.harness.tools.measurement_tables import bench_table
    runs = [{"passed": True, **{k: None for k in figure_columns()}, "reprocessed": r, "latency_p99_ms": 300}
            for r in (100, 200, 600)]
    result = BenchResult(tmp_path, 3, [BenchCell("failback", "pyspark", runs=runs, phase_spread=True),
                                       BenchCell("failback", "mirrormaker2", runs=runs[:1])],
                         "2026-12-04 08:00 UTC", "1.0 1.0 1.0", "2 cores")
    path = Sitting.begin(["mirrordrill"], ["bench", "drills"]).write("bench-drills", result.to_json(), tmp_path)
    record = json.loads(path.read_text())  # as the generator reads it: through JSON
    printed = result.markdown().split("\n\n", 1)[1]
    assert "| failback | pyspark | 3/3 | - | - | 300 | - | - | 300* |" in printed
    assert "\n".join(bench_table(record, path.name)).endswith(printed)
