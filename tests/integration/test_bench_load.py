"""``mirrordrill bench load`` against a real broker it starts: a tiny run, and the record it writes."""

from __future__ import annotations

import pytest

from mirrordrill.harness.cli import commands as cli
from mirrordrill.primitives.measurement_record import read_record

pytestmark = pytest.mark.integration


def test_bench_load_prints_the_sustained_rate_and_writes_its_record(tmp_path, capsys):
    record = tmp_path / "bench-load.json"
    code = cli.main(["bench", "load", "--sizes", "100", "--seconds", "2", "--out", str(tmp_path / "bench"),
                     "--record", str(record)])
    out = capsys.readouterr().out
    doc = read_record(record)
    assert doc["kind"] == "bench-load" and doc["machine"]["cores"]
    figures = doc["figures"]
    assert figures["settings"]["seconds"] == 2 and figures["ledger_rows_s"] > 0
    (size,) = figures["sizes"]
    assert size["record_bytes"] == 100
    unthrottled, *below = size["runs"]
    assert unthrottled["label"] == "unthrottled" and unthrottled["failed"] == 0
    assert size["unthrottled_records_s"] > 0
    assert below and all(r["asked_records_s"] < size["unthrottled_records_s"] for r in below)
    held = [r for r in below if r["label"] == "held"]
    # the figure is the held run's; the exit code says whether a rate held (below, with two workers too)
    assert size["max_sustained_records_s"] == (held[0]["acked_records_s"] if held else None)
    # two workers: the same search with a Locust master and two worker processes, at the one size given
    two = figures["two_workers"]
    assert two["workers"] == 2 and two["record_bytes"] == 100 and two["unthrottled_records_s"] > 0
    assert two["runs"][0]["label"] == "unthrottled" and two["runs"][0]["failed"] == 0
    two_held = [r for r in two["runs"][1:] if r["label"] == "held"]
    assert two["max_sustained_records_s"] == (two_held[0]["acked_records_s"] if two_held else None)
    assert (code == cli.EXIT_OK) == bool(held and two_held)
    assert "| 100 B |" in out and "2 workers (a Locust master and 2 worker processes on this machine" in out
