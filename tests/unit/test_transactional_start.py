"""A transactional flow's start fences every writer of its partitions *before* it reads where to resume.

The order is the guarantee: a writer that commits after the read but before being fenced lands
copies the new query copies again. Real brokers show the fence itself
(tests/integration/test_pyspark_transactional.py); the order is shown here, with the reads and
the fence replaced by recorders.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrordrill.replicator import flow_reads
from mirrordrill.replicator.config.flow import FlowConfig
from mirrordrill.replicator.flow_reads import StartReads
from mirrordrill.replicator.resume import FlowOrigin, StartPositions
from mirrordrill.replicator.transactions import id_prefix, transactional_id


class _Source:
    def consumer(self) -> object:
        return object()

    def ends(self, topic: str, partitions: int) -> list[int]:
        return [0] * partitions

    def bounds(self, partitions: list) -> tuple[dict, dict]:
        return {}, {}


class _Consumer:
    def list_topics(self, topic: str, timeout: float) -> None:
        return None

    def close(self) -> None:
        return None


@pytest.fixture
def calls(monkeypatch) -> list[tuple]:
    seen: list[tuple] = []
    monkeypatch.setattr(flow_reads, "target_consumer", lambda conf: _Consumer())
    monkeypatch.setattr(flow_reads, "newest_copies", lambda c, wheres, origin: {
        where: seen.append(("read", *where)) for where in wheres})
    monkeypatch.setattr(flow_reads, "fence", lambda conn, ids: seen.append(("fence", sorted(ids))))
    monkeypatch.setattr(flow_reads, "settled", lambda read: seen.append(("settle",)) or read())
    return seen


def _reads(tmp_path: Path, transactional: bool) -> StartReads:
    return StartReads("A->B", FlowConfig(source="A", target="B").topic_selector(), FlowOrigin("A", False), {"bootstrap.servers": "127.0.0.1:1"},
                      _Source(), StartPositions(tmp_path / "positions.json", "earliest"), None,  # type: ignore[arg-type]
                      None, id_prefix("drill-", "A", "B") if transactional else None)


def test_every_partitions_writer_is_fenced_before_any_read(tmp_path, calls):
    _reads(tmp_path, transactional=True).next_start(("t", "u"), {"t": 2, "u": 1}, settle=True)
    prefix = id_prefix("drill-", "A", "B")
    assert calls[0] == ("fence", sorted(transactional_id(prefix, topic, p) for topic, p in
                                        (("A.t", 0), ("A.t", 1), ("A.u", 0))))
    assert sorted(calls[1:]) == [("read", "A.t", 0), ("read", "A.t", 1), ("read", "A.u", 0)]
    assert ("settle",) not in calls, "once fenced, one read is final: nothing waits for writes to settle"


def test_an_idempotent_flow_waits_for_its_writes_to_settle_instead(tmp_path, calls):
    _reads(tmp_path, transactional=False).next_start(("t",), {"t": 1}, settle=True)
    assert calls[0] == ("settle",)
    assert not [c for c in calls if c[0] == "fence"]


def test_ids_start_with_the_drills_prefix_and_name_the_target_partition():
    prefix = id_prefix("drill-", "east", "west")
    assert transactional_id(prefix, "east.orders", 3) == "drill-mirrordrill.east-west.east.orders.3"
