"""``mirrordrill bench load`` against a real broker it starts: a tiny run, and the record it writes."""

from __future__ import annotations

import pytest

from harness.cli import commands as cli
from primitives.measurement_record import read_record

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
    # the exit code says whether a rate held, and the figure is that run's
    assert (code == cli.EXIT_OK) == bool(held)
    assert size["max_sustained_records_s"] == (held[0]["acked_records_s"] if held else None)
    # two workers: said to be unmeasured, not given a number
    assert figures["two_workers"] is None and "not built yet" in figures["two_workers_note"]
    assert "| 100 B |" in out and "2 workers: not measured" in out
