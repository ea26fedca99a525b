"""The distributed load's ledger transfer and its settings, without Locust: what a worker's file
holds arrives whole, in order, as the same bytes; anything else is refused, not miscounted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from mirrordrill.loadgen.histories.kinds import ACKED_SENDS, history_path
from mirrordrill.loadgen.histories.reader import read_rows
from mirrordrill.loadgen.histories.records import AckedSend
from mirrordrill.loadgen.histories.writer import HistoryWriter
from mirrordrill.loadgen.load_channel import ROWS, LedgerReceiver, LedgerShipper, parse_master
from mirrordrill.loadgen.spec import LoadSpec


def _row(seq: int) -> AckedSend:
    return AckedSend("east", "orders", seq % 3, seq, "load-abcw0-u0", seq, 1_700_000_000_000 + seq,
                     1_700_000_000_005 + seq, 100, 12345)


def test_a_growing_ledger_arrives_as_the_same_bytes_and_reads_as_the_same_rows(tmp_path):
    mine = history_path(tmp_path / "worker", ACKED_SENDS, "load-abcw0")
    copy = history_path(tmp_path / "run", ACKED_SENDS, "load-abcw0")
    receiver = LedgerReceiver({"acked": copy})
    messages: list[dict[str, Any]] = []

    def send(kind: str, data: dict[str, Any]) -> None:
        assert kind == ROWS
        messages.append(data)
        receiver.receive(data["kind"], data["offset"], data["data"])

    shipper = LedgerShipper({"acked": mine}, send)
    assert shipper.ship() == 0  # no file yet: nothing to send
    writer = HistoryWriter(ACKED_SENDS, mine)
    for seq in range(3000):
        writer.write(_row(seq))
        if seq % 700 == 0:
            writer.flush()
            shipper.ship()
    writer.close()
    shipper.ship()
    with open(mine, "ab") as f:  # a line still being written is not sent until it is whole
        f.write(b"east,orders,0,")
    shipper.ship()
    assert copy.read_bytes() == mine.read_bytes()[:-len(b"east,orders,0,")]
    assert read_rows(ACKED_SENDS, [copy]) == [_row(s) for s in range(3000)]
    assert receiver.complete(dict(shipper.sent)) is None
    assert all(m["data"].endswith(b"\n") for m in messages)


def test_a_lost_or_repeated_chunk_is_refused_and_a_short_ledger_is_named(tmp_path):
    receiver = LedgerReceiver({"acked": tmp_path / "acked.x.csv"})
    receiver.receive("acked", 0, b"header\n")
    with pytest.raises(ValueError, match="chunk at byte 20, expected 7"):
        receiver.receive("acked", 20, b"row\n")
    with pytest.raises(ValueError, match="chunk at byte 0, expected 7"):
        receiver.receive("acked", 0, b"header\n")
    with pytest.raises(ValueError, match="unknown history"):
        receiver.receive("target", 0, b"x\n")
    assert receiver.complete({"acked": 11}) == "acked: 7 of 11 bytes"
    assert (tmp_path / "acked.x.csv").read_bytes() == b"header\n"


def test_each_worker_has_its_own_instance_and_needs_a_user(tmp_path):
    spec = LoadSpec(cluster="east", bootstrap_servers="b:9092", topics=["t"], rate=10, users=3, workers=2,
                    remote_workers=1, output_dir=Path("h"), instance="12345abcdef")
    assert spec.worker_count == 3
    assert {spec.worker_instance(k) for k in range(3)} == {"12345abcdefw0", "12345abcdefw1", "12345abcdefw2"}
    with pytest.raises(ValidationError, match=r"users \(1\) must be at least the number of workers \(2\)"):
        LoadSpec(cluster="east", bootstrap_servers="b:9092", topics=["t"], rate=10, workers=2, output_dir=Path("h"))


@pytest.mark.parametrize("text", ["10.0.0.5", ":5557", "host:", "host:port", "host:70000"])
def test_a_master_address_is_host_and_port(text):
    with pytest.raises(ValueError, match="HOST:PORT"):
        parse_master(text)


def test_a_master_address_parses():
    assert parse_master("10.0.0.5:5557") == ("10.0.0.5", 5557)
