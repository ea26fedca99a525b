"""The replication benchmark's pure logic: argument checks, rates, backlog filtering, the table."""

from __future__ import annotations

import pytest

from mirrordrill.harness.tools.bench.replication import (
    DEFAULT_REPLICATORS,
    BenchResult,
    LoadMark,
    after_boundaries,
    backlog_rate,
    parse_args,
    parse_replicators,
    render_table,
)
from mirrordrill.loadgen.histories.records import TargetRecord


def test_parse_replicators_keeps_order_and_rejects_unknown_and_repeats():
    assert parse_replicators("mirrormaker2, pyspark-realtime") == ["mirrormaker2", "pyspark-realtime"]
    with pytest.raises(ValueError, match="unknown replicator 'pyspark'"):
        parse_replicators("pyspark")
    with pytest.raises(ValueError, match="twice"):
        parse_replicators("mirrormaker2,mirrormaker2")
    with pytest.raises(ValueError, match="no replicator"):
        parse_replicators(" , ")


def test_defaults_run_every_replicator_with_six_tasks():
    args = parse_args([])
    assert args.replicators == list(DEFAULT_REPLICATORS)
    assert (args.records, args.rate, args.partitions, args.size, args.tasks) == (100_000, 1000.0, 6, 1024, 6)
    with pytest.raises(SystemExit):
        parse_args(["--replicators", "kafka-connect"])
    with pytest.raises(SystemExit):
        parse_args(["--records", "0"])


def test_backlog_rate_in_records_and_si_megabytes():
    assert backlog_rate(100_000, 1000, 10.0) == (10_000.0, 10.0)
    assert backlog_rate(0, 1024, 5.0) == (None, None)
    assert backlog_rate(10, 1024, 0.0) == (None, None)


def _row(partition: int, offset: int, producer: str = "p") -> TargetRecord:
    return TargetRecord("dst", "src.t", partition, offset, producer, offset, 0, True, 0)


def test_after_boundaries_drops_backlog_positions_per_partition():
    rows = [_row(0, 4, ""), _row(0, 5), _row(1, 0, ""), _row(1, 9), _row(2, 0)]
    kept = after_boundaries(rows, {("src.t", 0): 5, ("src.t", 1): 9})
    assert [(r.partition, r.offset) for r in kept] == [(0, 5), (1, 9), (2, 0)]


def test_table_shows_figures_dashes_load_and_errors():
    ok = BenchResult("mirrormaker2", startup_s=12.3, at_ready=10, records_s=25_000.4, mb_s=25.6, cpu_s=40,
                     p50_ms=12, p99_ms=80, max_ms=300, lost=0, duplicates=0,
                     load=[LoadMark("mirrormaker2: ready", 61.0, 3.5, 2.25, 1.0)])
    failed = BenchResult("pyspark-realtime", error="RuntimeError: boom")
    text = render_table([ok, failed])
    header, _, first, second = text.splitlines()[:4]
    assert header.split()[0] == "replicator"
    assert first.split() == ["mirrormaker2", "12.3", "25,000", "25.6", "10", "40", "12", "80", "300", "0", "0"]
    assert second.split() == ["pyspark-realtime"] + ["-"] * 10
    assert "mirrormaker2: ready" in text and "3.50  2.25  1.00" in text
    assert "ERROR: RuntimeError: boom" in text
