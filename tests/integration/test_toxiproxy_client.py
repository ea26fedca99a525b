"""Our toxiproxy-python wrapper against real Toxiproxy servers: two at once, in-place updates, errors."""

from __future__ import annotations

import socket

import pytest
from toxiproxy.api import APIConsumer

from mirrordrill.harness.lab.network.toxiproxy import Toxic, ToxiproxyError, ToxiproxyServer
from mirrordrill.primitives.ports import PortAllocator

pytestmark = pytest.mark.integration


@pytest.fixture
def two_servers(artifacts, tmp_path):
    ports = PortAllocator()
    servers = [ToxiproxyServer(artifacts.toxiproxy_server, ports.take(), tmp_path / f"tp{i}") for i in range(2)]
    for i in range(len(servers)):
        (tmp_path / f"tp{i}").mkdir()
    try:
        for s in servers:
            s.start()
        yield servers, ports
    finally:
        for s in servers:
            s.stop()


def test_two_servers_in_one_process_do_not_share_an_address(two_servers):
    (a, b), ports = two_servers
    before = (APIConsumer.host, APIConsumer.port)
    a.client.create_proxy("only_on_a", ports.take(), "127.0.0.1:1")
    b.client.create_proxy("only_on_b", ports.take(), "127.0.0.1:2")
    assert set(a.client.proxies()) == {"only_on_a"}
    assert set(b.client.proxies()) == {"only_on_b"}
    assert (APIConsumer.host, APIConsumer.port) == before  # the library's class state is put back


def test_toxic_is_updated_in_place_and_removed(two_servers):
    (a, _), ports = two_servers
    a.client.create_proxy("p", ports.take(), "127.0.0.1:1")
    a.client.add_toxic("p", Toxic("lat", "latency", "downstream", {"latency": 10, "jitter": 0}))
    a.client.update_toxic("p", Toxic("lat", "latency", "downstream", {"latency": 75, "jitter": 5}, 0.5))
    got = a.client.toxics("p")["lat"]
    assert (got["type"], got["stream"], got["toxicity"]) == ("latency", "downstream", 0.5)
    assert got["attributes"] == {"latency": 75, "jitter": 5}
    a.client.remove_toxic("p", "lat")
    assert a.client.toxics("p") == {}


def test_enable_disable_and_repoint(two_servers):
    (a, _), ports = two_servers
    a.client.create_proxy("p", ports.take(), "127.0.0.1:1")
    a.client.set_enabled("p", False)
    assert a.client.proxies()["p"]["enabled"] is False
    a.client.set_upstream("p", "127.0.0.1:3")
    assert a.client.proxies()["p"] == {"name": "p", "listen": a.client.proxies()["p"]["listen"],
                                       "upstream": "127.0.0.1:3", "enabled": True}
    a.client.delete_proxy("p")
    assert a.client.proxies() == {}


def test_errors_name_the_server_the_request_and_the_answer(two_servers):
    (a, _), ports = two_servers
    port = ports.take()
    a.client.create_proxy("p", port, "127.0.0.1:1")
    with pytest.raises(ToxiproxyError, match=r"create proxy p failed \(ProxyExists\)"):
        a.client.create_proxy("p", ports.take(), "127.0.0.1:1")
    with pytest.raises(ToxiproxyError, match=r"no_such.*NotFound"):
        a.client.delete_proxy("no_such")
    with pytest.raises(ToxiproxyError, match=r"add toxic bad.*InvalidToxic"):
        a.client.add_toxic("p", Toxic("bad", "no_such_type", "downstream", {}))


def test_a_server_error_is_not_swallowed(two_servers):
    """The library ignores a 500; a proxy whose listen port is taken must fail loudly."""
    (a, _), ports = two_servers
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        with pytest.raises(ToxiproxyError, match=r"create proxy q -> 500"):
            a.client.create_proxy("q", taken, "127.0.0.1:1")


def test_a_stopped_server_is_reported_not_hung(two_servers):
    (a, _), _ = two_servers
    a.stop()
    with pytest.raises(ToxiproxyError, match=r"unreachable|ConnectionError"):
        a.client.proxies()
