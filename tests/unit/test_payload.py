"""The load's payload models (loadgen/payload.py): JSON values from their stated cardinalities, a sample
file's lines, bytes that compress to the ratio asked, and the envelope in front of each one intact."""

from __future__ import annotations

import json
import random
import time

import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from mirrordrill.harness.cli import commands as cli
from mirrordrill.loadgen.envelope import EnvelopeEncoder, decode_verified
from mirrordrill.loadgen.payload import WORDS, FieldSpec, PayloadSpec, compressible_body
from mirrordrill.loadgen.spec import LoadSpec
from tests.unit.test_scenario_validation import BASE

# One field of each kind, with the cardinality hypothesis draws for it.
FIELDS = st.one_of(
    st.integers(1, 10_000).map(lambda n: {"ids": n}),
    st.lists(st.one_of(st.text("abcdef", min_size=1, max_size=6), st.integers(-5, 5)), min_size=1, max_size=6,
             unique=True).map(lambda v: {"enum": v}),
    st.sampled_from([{"timestamp": "ms"}, {"timestamp": "iso"}]),
    st.integers(1, 20).map(lambda n: {"words": n}),
    st.tuples(st.floats(-1e6, 1e6), st.floats(0, 1e6)).map(lambda t: {"number": [t[0], t[0] + t[1]]}),
)


def _holds(spec: FieldSpec, value, before_ms: int, after_ms: int) -> bool:
    """The value is one the field's stated cardinality allows."""
    if spec.ids is not None:
        return isinstance(value, int) and 0 <= value < spec.ids
    if spec.enum is not None:
        return value in spec.enum
    if spec.timestamp == "ms":
        return before_ms <= value <= after_ms
    if spec.timestamp == "iso":
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(before_ms // 1000)) <= value <= \
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(after_ms // 1000 + 1))
    if spec.words is not None:
        words = value.split(" ")
        return len(words) == spec.words and set(words) <= set(WORDS)
    assert spec.number is not None
    return spec.number[0] - 0.005 <= value <= spec.number[1] + 0.005  # rounded to 2 decimals


@settings(max_examples=60, deadline=None)
@given(fields=st.dictionaries(st.text("abcxyz_", min_size=1, max_size=8), FIELDS, min_size=1, max_size=5),
       seed=st.integers(0, 2**32))
def test_json_values_come_from_the_stated_cardinalities(fields, seed):
    payload = PayloadSpec.model_validate({"json": {"fields": fields}})
    assert payload.json_ is not None
    body = payload.bodies(seed)("load-x-u0")
    assert body is not None
    before = time.time_ns() // 1_000_000
    records = [json.loads(body(seq, 0)) for seq in range(30)]
    after = time.time_ns() // 1_000_000
    for record in records:
        assert list(record) == list(fields)
        for name, spec in payload.json_.fields.items():
            assert _holds(spec, record[name], before, after), (name, spec, record[name])


def test_ids_take_no_more_distinct_values_than_stated():
    body = PayloadSpec.model_validate({"json": {"fields": {"user": {"ids": 7}, "s": {"enum": ["a", "b"]}}}}).bodies(1)("p")
    assert body is not None
    records = [json.loads(body(i, 0)) for i in range(2000)]
    assert {r["user"] for r in records} == set(range(7))  # all 7, and only those, in 2000 draws
    assert {r["s"] for r in records} == {"a", "b"}


BLOCK_SIZES = [256, 1024, 4096, 10_240]
# Within these of R, for R from 1 to 10 and bodies of 256 B to 10 KB in a batch of about 100 KB, zstd at
# Kafka's default level 3 and lz4's frame format (what Kafka's lz4 is): the random share of each block
# costs its length, the zeros almost nothing, and lz4 spends more on each match than zstd (most at
# small bodies and high ratios: 256 B at R=10 reaches about 8.3). zstd's worst seen: 8.1% (256 B, R 9.6).
TOLERANCE = {"zstd": 0.10, "lz4": 0.20}


@settings(max_examples=40, deadline=None)
@given(ratio=st.floats(1.0, 10.0), size=st.sampled_from(BLOCK_SIZES), seed=st.integers(0, 2**32))
def test_compress_ratio_payloads_compress_to_about_the_ratio_asked(ratio, size, seed):
    rng = random.Random(seed)
    bodies = [compressible_body(rng, size, ratio) for _ in range(max(1, 100_000 // size))]
    assert all(len(b) == size for b in bodies)
    batch = b"".join(bodies)
    reached = {"zstd": len(batch) / len(zstandard.ZstdCompressor(level=3).compress(batch)),
               "lz4": len(batch) / len(lz4.frame.compress(batch))}
    for codec, r in reached.items():
        assert abs(r / ratio - 1) <= TOLERANCE[codec], (codec, r, ratio)


@pytest.mark.parametrize("payload", [{"json": {"fields": {"id": {"ids": 10}, "t": {"timestamp": "ms"}}}},
                                     {"compress_ratio": 4}, "file"])
def test_the_envelope_in_front_of_every_model_verifies(payload, tmp_path):
    if payload == "file":
        (tmp_path / "samples.txt").write_text('{"a": 1}\n\n{"b": 2}\r\n')
        payload = {"file": str(tmp_path / "samples.txt")}
    spec = PayloadSpec.model_validate(payload)
    encoder = EnvelopeEncoder("load-x-u0", spec.bodies(3)("load-x-u0"))
    for seq in range(50):
        value, crc = encoder.encode(seq, 1_700_000_000_000 + seq, 1024)
        env, ok = decode_verified(value)
        assert ok and env is not None and (env.producer_id, env.seq, env.checksum) == ("load-x-u0", seq, crc)
        body = value[len(value) - env.payload_size:]
        if spec.kind == "file":
            assert body in (b'{"a": 1}', b'{"b": 2}')  # a line, without its line break; the empty one never
        elif spec.kind == "compress_ratio":
            assert len(value) == 1024


@pytest.mark.parametrize("payload", [{"json": {"fields": {"a": {"enum": ["x", 1]}}}}, {"file": "/tmp/x"},
                                     {"compress_ratio": 2.5}, "random"])
def test_a_load_spec_with_a_payload_survives_its_json_file(payload, tmp_path):
    # the harness hands the load process its spec as a JSON file
    spec = LoadSpec.model_validate({"cluster": "a", "bootstrap_servers": "x:1", "topics": ["t"], "rate": 1,
                                    "output_dir": "o", "payload": payload})
    assert LoadSpec.load(spec.dump(tmp_path / "spec.json")) == spec


def test_forms_and_refusals():
    assert PayloadSpec.model_validate("random").kind == "random" and PayloadSpec().bodies()("p") is None
    assert LoadSpec.model_validate({"cluster": "a", "bootstrap_servers": "x:1", "topics": ["t"], "rate": 1,
                                    "output_dir": "o", "payload": {"compress_ratio": 3}}).payload.compress_ratio == 3
    for bad, phrase in [("zipped", "unknown payload 'zipped'"), ({"csv": 1}, "unknown payload kind ['csv']"),
                        ({"file": "a", "compress_ratio": 2}, "give one of"),
                        ({"compress_ratio": 0.5}, "greater than or equal to 1"),
                        ({"json": {"fields": {"a": "uuid"}}}, "unknown field kind 'uuid'"),
                        ({"json": {"fields": {"a": {"ids": 3, "words": 2}}}}, "exactly one of"),
                        ({"json": {"fields": {"a": {"number": [5, 1]}}}}, "low <= high")]:
        with pytest.raises(ValidationError, match=phrase.replace("[", r"\[").replace("]", r"\]")):
            PayloadSpec.model_validate(bad)


PRODUCER = "    - {cluster: primary, topics: [orders], rate: 100"


def _drill(producer_fields: str) -> str:
    assert PRODUCER in BASE
    return BASE.replace(PRODUCER, PRODUCER + ", " + producer_fields, 1)


@pytest.mark.parametrize("fields,phrase", [
    ("payload: {file: nowhere.txt}", "nowhere.txt: no such file (a relative path is read from the drill file's folder)"),
    ("payload: {file: empty.txt}", "no non-empty line to send as a record"),
    ("payload: {json: {fields: {a: {ids: 3}}}}, record_size: {fixed: 100}",
     "a json payload's records are as long as their text: remove record_size"),
])
def test_validate_refuses_a_payload_that_cannot_be_sent(fields, phrase, tmp_path, capsys, nothing_starts):
    (tmp_path / "empty.txt").write_text("\n\n")
    drill = tmp_path / "drill.yaml"
    drill.write_text(_drill(fields))
    assert cli.main(["validate", str(drill)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert phrase in err and "Traceback" not in err, err


def test_a_sample_file_is_read_from_the_drill_file_s_folder(tmp_path, capsys, nothing_starts):
    (tmp_path / "samples.jsonl").write_text('{"order": 1}\n')
    drill = tmp_path / "drill.yaml"
    drill.write_text(_drill("payload: {file: samples.jsonl}"))
    assert cli.main(["validate", str(drill)]) == cli.EXIT_OK, capsys.readouterr().err
