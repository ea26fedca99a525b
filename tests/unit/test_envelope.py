"""The message envelope: round trip, corruption detection, deterministic payloads."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from mirrordrill.loadgen import envelope as E
from mirrordrill.primitives.import_root import IMPORT_ROOT

REPO = Path(__file__).resolve().parents[2]


class FakeMessage:
    """Only the one method decode() uses; the real type is confluent_kafka.Message."""

    def __init__(self, value: bytes | None) -> None:
        self._value = value

    def value(self) -> bytes | None:
        return self._value


def test_round_trip_carries_id_seq_timestamp_and_checksum():
    enc = E.EnvelopeEncoder("load-ab12-u3")
    value, crc = enc.encode(seq=41, send_ts_ms=1_700_000_123_456, value_size=1024)
    assert len(value) == 1024
    env = E.decode(value)
    assert env == E.Envelope("load-ab12-u3", 41, 1_700_000_123_456, crc, 1024 - enc.overhead())
    assert E.verify(value) and E.verify_payload(value)
    assert E.decode(FakeMessage(value)) == env
    assert E.decode_verified(FakeMessage(value)) == (env, True)


def test_checksum_is_crc32_of_everything_after_it():
    value = E.encode("p", 7, 99, 300)
    assert E.decode(value).checksum == zlib.crc32(value[6:])


@pytest.mark.parametrize("position", ["payload_start", "payload_end", "seq", "timestamp",
                                      "producer_id"])
def test_a_flipped_byte_anywhere_after_the_crc_is_detected(position):
    enc = E.EnvelopeEncoder("producer-1")
    value = bytearray(enc.encode(5, 1234, 512)[0])
    index = {"payload_start": enc.overhead(), "payload_end": len(value) - 1, "seq": 6 + 7,
             "timestamp": 6 + 8 + 3, "producer_id": E.HEADER_SIZE + 2}[position]
    value[index] ^= 0x01
    assert not E.verify(bytes(value))
    assert not E.verify_payload(bytes(value))


def test_a_flipped_checksum_byte_is_detected():
    value = bytearray(E.encode("p", 1, 2, 100))
    value[3] ^= 0x80
    assert not E.verify(bytes(value))


def test_records_without_an_envelope_decode_to_none():
    assert E.decode(None) is None
    assert E.decode(b"") is None
    assert E.decode(b"hello world, not an envelope at all") is None
    value = bytearray(E.encode("p", 1, 2, 100))
    value[0] = 0x00  # magic
    assert E.decode(bytes(value)) is None and not E.verify(bytes(value))
    truncated = E.encode("a-long-producer-id", 1, 2, 100)[:E.HEADER_SIZE + 3]
    assert E.decode(truncated) is None
    assert E.decode(FakeMessage(None)) is None


def test_payload_is_deterministic_per_producer_and_seq():
    a, b = E.EnvelopeEncoder("p-1"), E.EnvelopeEncoder("p-1")
    assert a.encode(10, 5, 2048) == b.encode(10, 5, 2048)
    assert E.expected_payload("p-1", 10, 100) == E.expected_payload("p-1", 10, 100)
    assert E.expected_payload("p-1", 10, 100) != E.expected_payload("p-1", 11, 100)
    assert E.expected_payload("p-1", 10, 100) != E.expected_payload("p-2", 10, 100)
    # a prefix of a longer payload: size changes the length, not the bytes
    assert E.expected_payload("p-1", 10, 300)[:100] == E.expected_payload("p-1", 10, 100)


def test_payload_is_the_same_in_another_process():
    code = ("from mirrordrill.loadgen.envelope import expected_payload; "
            "print(expected_payload('p-1', 77, 64).hex())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(IMPORT_ROOT), "PYTHONHASHSEED": "123"})
    assert out.stdout.strip() == E.expected_payload("p-1", 77, 64).hex()


def test_payload_bytes_are_not_text():
    # A replicator that round-trips values through UTF-8 text must corrupt them visibly.
    payload = E.expected_payload("p-1", 3, 4096)
    with pytest.raises(UnicodeDecodeError):
        payload.decode("utf-8")


def test_a_swapped_payload_with_a_recomputed_checksum_passes_verify_but_not_verify_payload():
    enc = E.EnvelopeEncoder("p-1")
    good = enc.encode(1, 1000, 256)[0]
    other = enc.encode(2, 1000, 256)[0]
    body = good[6:enc.overhead()] + other[enc.overhead():]
    forged = struct.pack(">BBI", E.MAGIC, E.VERSION, zlib.crc32(body)) + body
    assert E.verify(forged)
    assert not E.verify_payload(forged)


def test_sizes_smaller_than_the_envelope_and_larger_than_the_pool():
    enc = E.EnvelopeEncoder("p-1")
    tiny = enc.encode(1, 2, 1)[0]
    assert len(tiny) == enc.overhead() and E.verify_payload(tiny)
    assert E.decode(tiny).payload_size == 0
    big = enc.encode(3, 4, 300_000)[0]
    assert len(big) == 300_000 and E.verify_payload(big)


@pytest.mark.parametrize("bad", ["a,b", "", "with space", "-leading", "x" * 200, "é"])
def test_producer_ids_that_would_break_histories_are_refused(bad):
    with pytest.raises(ValueError, match="producer id"):
        E.EnvelopeEncoder(bad)
