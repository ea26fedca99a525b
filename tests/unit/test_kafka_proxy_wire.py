"""The proxy's frame rewriting, on frames built here by hand from Kafka's message layouts.

Every test builds the response the broker would send and the one the client must receive, and
compares the bytes: the broker entries change, everything around them is kept exactly.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from mirrordrill.harness.lab.network.kafka_proxy import wire
from mirrordrill.harness.lab.network.kafka_proxy.spec import KafkaProxySpec, ProxyListener

CORR = 4242
MAP = wire.AddressMap("127.0.0.1", {1: 30001, 2: 30002, 3: 30003})
TAIL = b"\x00\x07cluster\xff\xff\xff\xffTOPICS-AND-MORE"  # whatever follows, copied verbatim


# ---------------------------------------------------------------- encoders written for the tests

def i8(v): return struct.pack(">b", v)
def i16(v): return struct.pack(">h", v)
def i32(v): return struct.pack(">i", v)


def uvar(v: int) -> bytes:
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def s(v, flexible):
    if v is None:
        return b"\x00" if flexible else i16(-1)
    raw = v.encode()
    return (uvar(len(raw) + 1) if flexible else i16(len(raw))) + raw


def arr(items, flexible):
    return (uvar(len(items) + 1) if flexible else i32(len(items))) + b"".join(items)


NO_TAGS = b"\x00"
SOME_TAGS = b"\x01" + uvar(7) + uvar(3) + b"abc"  # one unknown tagged field: must survive


def header(flexible):
    return i32(CORR) + (NO_TAGS if flexible else b"")


def metadata_broker(node, host, port, rack, version):
    flexible = version >= 9
    out = i32(node) + s(host, flexible) + i32(port)
    if version >= 1:
        out += s(rack, flexible)
    return out + (SOME_TAGS if flexible else b"")


def metadata(brokers, version):
    flexible = version >= 9
    throttle = i32(5) if version >= 3 else b""
    return header(flexible) + throttle + arr([metadata_broker(*b, version) for b in brokers], flexible) + TAIL


# ---------------------------------------------------------------- requests

def test_request_header_gives_api_version_and_correlation_id():
    frame = i16(3) + i16(12) + i32(CORR) + s("client", False) + NO_TAGS
    assert wire.read_request_header(frame) == wire.RequestHeader(3, 12, CORR)
    with pytest.raises(wire.WireError):
        wire.read_request_header(b"\x00\x03")


# ---------------------------------------------------------------- Metadata

@pytest.mark.parametrize("version", [0, 1, 2, 3, 7, 8, 9, 12, 13])
def test_metadata_brokers_are_rewritten_and_the_rest_kept(version):
    sent = metadata([(1, "broker-a.example", 9093, "r1"), (2, "broker-b.example", 9094, None)], version)
    got = wire.rewrite_response(wire.METADATA, version, sent, MAP)
    assert got.frame == metadata([(1, "127.0.0.1", 30001, "r1"), (2, "127.0.0.1", 30002, None)], version)
    assert got.unknown_nodes == ()


@given(brokers=st.lists(st.tuples(st.sampled_from([1, 2, 3, 7]), st.text(max_size=300), st.integers(0, 65535),
                                  st.none() | st.text(max_size=20)), max_size=6),
       version=st.integers(0, 13))
def test_metadata_any_broker_list(brokers, version):
    sent = metadata(brokers, version)
    expected = [(n, "127.0.0.1", MAP.ports[n], r) if n in MAP.ports else (n, h, p, r) for n, h, p, r in brokers]
    got = wire.rewrite_response(wire.METADATA, version, sent, MAP)
    assert got.frame == metadata(expected, version)
    assert got.unknown_nodes == tuple(n for n, *_ in brokers if n not in MAP.ports)


def test_an_unknown_broker_is_reported_and_left_as_the_broker_sent_it():
    sent = metadata([(1, "a", 1, None), (9, "new-broker", 9092, None)], 12)
    got = wire.rewrite_response(wire.METADATA, 12, sent, MAP)
    assert got.unknown_nodes == (9,)
    assert got.frame == metadata([(1, "127.0.0.1", 30001, None), (9, "new-broker", 9092, None)], 12)


def test_a_truncated_frame_is_an_error_not_garbage():
    sent = metadata([(1, "broker-a", 9093, None)], 12)
    with pytest.raises(wire.WireError):
        wire.rewrite_response(wire.METADATA, 12, sent[:12], MAP)


# ---------------------------------------------------------------- FindCoordinator

def find_coordinator_single(node, host, port, version, error=0):
    flexible = version >= 3
    out = header(flexible)
    if version >= 1:
        out += i32(0)
    out += i16(error) + (s(None, flexible) if version >= 1 else b"")
    out += i32(node) + s(host, flexible) + i32(port)
    return out + (NO_TAGS if flexible else b"")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_find_coordinator_single(version):
    sent = find_coordinator_single(2, "broker-b", 9094, version)
    got = wire.rewrite_response(wire.FIND_COORDINATOR, version, sent, MAP)
    assert got.frame == find_coordinator_single(2, "127.0.0.1", 30002, version)


def test_find_coordinator_error_answer_names_no_broker():
    sent = find_coordinator_single(-1, "", -1, 3, error=15)  # COORDINATOR_NOT_AVAILABLE
    got = wire.rewrite_response(wire.FIND_COORDINATOR, 3, sent, MAP)
    assert got.frame == sent and got.unknown_nodes == ()


def coordinators(entries, version):
    items = [s(key, True) + i32(node) + s(host, True) + i32(port) + i16(err) + s(msg, True) + SOME_TAGS
             for key, node, host, port, err, msg in entries]
    return header(True) + i32(0) + arr(items, True) + NO_TAGS


@pytest.mark.parametrize("version", [4, 5, 6])
def test_find_coordinator_batched(version):
    sent = coordinators([("group-a", 1, "broker-a", 9093, 0, None), ("group-b", 3, "broker-c", 9095, 0, None),
                         ("txn-x", -1, "", -1, 15, "not yet")], version)
    got = wire.rewrite_response(wire.FIND_COORDINATOR, version, sent, MAP)
    assert got.frame == coordinators([("group-a", 1, "127.0.0.1", 30001, 0, None),
                                      ("group-b", 3, "127.0.0.1", 30003, 0, None),
                                      ("txn-x", -1, "", -1, 15, "not yet")], version)


# ---------------------------------------------------------------- DescribeCluster

def describe_cluster(brokers, version, endpoint_type=1):
    out = header(True) + i32(0) + i16(0) + s(None, True)
    if version >= 1:
        out += i8(endpoint_type)
    out += s("cluster-id", True) + i32(1)
    items = [i32(n) + s(h, True) + i32(p) + s(r, True) + (i8(1) if version >= 2 else b"") + NO_TAGS
             for n, h, p, r in brokers]
    return out + arr(items, True) + i32(-2147483648) + NO_TAGS


@pytest.mark.parametrize("version", [0, 1, 2])
def test_describe_cluster(version):
    sent = describe_cluster([(1, "broker-a", 9093, "r"), (2, "broker-b", 9094, None)], version)
    got = wire.rewrite_response(wire.DESCRIBE_CLUSTER, version, sent, MAP)
    assert got.frame == describe_cluster([(1, "127.0.0.1", 30001, "r"), (2, "127.0.0.1", 30002, None)], version)


def test_describe_cluster_of_controllers_is_left_alone():
    sent = describe_cluster([(1, "controller-a", 9090, None)], 1, endpoint_type=2)
    assert wire.rewrite_response(wire.DESCRIBE_CLUSTER, 1, sent, MAP).frame == sent


# ---------------------------------------------------------------- ApiVersions

def api_versions(apis, version, error=0):
    flexible = version >= 3
    out = i32(CORR) + i16(error)  # the response header is v0 even when the body is flexible
    out += arr([i16(k) + i16(lo) + i16(hi) + (NO_TAGS if flexible else b"") for k, lo, hi in apis], flexible)
    if version >= 1:
        out += i32(0)
    return out + (SOME_TAGS if flexible else b"")  # v3+ top-level tagged fields (features) are kept


BROKER_APIS = [(0, 3, 13), (1, 4, 18), (3, 0, 13), (18, 0, 4), (78, 1, 1), (79, 1, 1), (60, 0, 2)]
CLAMPED_APIS = [(0, 3, 9), (1, 4, 15), (3, 0, 13), (18, 0, 4), (60, 0, 2)]


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_api_versions_clamps_produce_and_fetch_and_drops_share_apis(version):
    got = wire.rewrite_response(wire.API_VERSIONS, version, api_versions(BROKER_APIS, version), MAP)
    assert got.frame == api_versions(CLAMPED_APIS, version)


def test_api_versions_below_the_caps_are_unchanged():
    old = [(0, 0, 8), (1, 0, 11), (3, 0, 9)]
    sent = api_versions(old, 3)
    assert wire.rewrite_response(wire.API_VERSIONS, 3, sent, MAP).frame == sent


def test_api_versions_error_answer_is_untouched():
    sent = api_versions([(18, 0, 4)], 0, error=35)  # UNSUPPORTED_VERSION, always in v0 layout
    assert wire.rewrite_response(wire.API_VERSIONS, 4, sent, MAP).frame == sent


def test_other_responses_pass_verbatim():
    frame = i32(CORR) + b"\x01\x02\x03 anything"
    assert wire.rewrite_response(0, 9, frame, MAP).frame == frame


# ---------------------------------------------------------------- encodings

@given(st.integers(0, 2**31 - 1))
def test_uvarint_round_trip(value):
    encoded = wire.uvarint(value)
    assert encoded == uvar(value)
    reader = wire.Reader(encoded)
    assert reader.uvarint() == value and reader.pos == len(encoded)


# ---------------------------------------------------------------- spec

def spec(**changes):
    values = dict(name="p", upstream={1: "b1:9092", 2: "b2:9092"},
                  listeners=[ProxyListener(listen_port=40001, node_id=1, location="local"),
                             ProxyListener(listen_port=40002, node_id=2, location="local")],
                  advertised={"local": {1: 40001, 2: 40002}})
    return KafkaProxySpec(**(values | changes))


def test_spec_json_round_trip():
    assert KafkaProxySpec.from_json(spec().to_json()) == spec()
    assert spec().upstream_address(2) == ("b2", 9092)


@pytest.mark.parametrize("changes, message", [
    (dict(listeners=[ProxyListener(listen_port=1, node_id=5, location="local")]), "node 5, which has no upstream"),
    (dict(listeners=[ProxyListener(listen_port=1, node_id=1, location="dr")]), "location 'dr', which has no advertised"),
    (dict(advertised={"local": {1: 40001}}), "no port for node(s) [2]"),
    (dict(upstream={1: "b1", 2: "b2:9092"}), "write it as host:port"),
    (dict(listeners=[ProxyListener(listen_port=1, node_id=1, location="local"),
                     ProxyListener(listen_port=1, node_id=2, location="local")]), "used by more than one listener"),
])
def test_spec_errors_name_the_cause(changes, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        spec(**changes)
