"""``broker_properties`` may tune a started broker, never take over what the harness runs it with.

The harness writes each broker's listeners, KRaft identity and quorum, and data folder
(harness/lab/brokers/broker.py, ``KafkaBroker.properties``), and on a cluster with ``security`` its
TLS and SASL settings (harness/lab/brokers/secure.py): a drill file that replaced them would open the
broker beyond 127.0.0.1, bypass the WAN proxies, or write outside the run folder.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from mirrordrill.harness.drill.schema import Scenario

Report = Callable[[tuple, str], None]  # (path in the drill file, message)

_LISTENERS = "the harness owns listeners: it binds 127.0.0.1 and the WAN proxies"
_KRAFT = "the harness owns each broker's KRaft identity and controller quorum"
_STORAGE = "the harness owns each broker's data folder, inside the run folder"
_SECURITY = "the harness owns TLS and SASL on a cluster with security: it makes the certificates and users"

# Exact names, then prefixes, each with the reason it is the harness's.
OWNED = {
    "listeners": _LISTENERS, "advertised.listeners": _LISTENERS, "listener.security.protocol.map": _LISTENERS,
    "inter.broker.listener.name": _LISTENERS, "security.inter.broker.protocol": _LISTENERS,
    "controller.listener.names": _LISTENERS,
    "process.roles": _KRAFT, "node.id": _KRAFT, "broker.id": _KRAFT,
    "log.dirs": _STORAGE, "log.dir": _STORAGE, "metadata.log.dir": _STORAGE,
}
OWNED_PREFIXES = {"listener.name.": _LISTENERS, "controller.quorum.": _KRAFT}
# Set by harness/lab/brokers/secure.py (BrokerSecurity.broker_properties) when the cluster has security.
SECURE_OWNED_PREFIXES = ("ssl.", "sasl.")

_IPV4 = re.compile(r"(?<![\d.])(\d{1,3})\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\d.])")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+._-]*://(\[[^\]]*\]|[^:/\s,;]*)")
_HOST_PORT = re.compile(r"^(\[[^\]]*\]|[A-Za-z0-9.-]*[A-Za-z.][A-Za-z0-9.-]*)?:\d{1,5}$")
_LOOPBACK_NAMES = ("localhost", "[::1]", "::1")


def owner_reason(key: str, secure: bool) -> str | None:
    """Why ``key`` is the harness's to set, or None when a drill may set it."""
    if key in OWNED:
        return OWNED[key]
    for prefix, reason in OWNED_PREFIXES.items():
        if key.startswith(prefix):
            return reason
    if secure and key.startswith(SECURE_OWNED_PREFIXES):
        return _SECURITY
    return None


def _is_loopback(host: str) -> bool:
    return host.lower() in _LOOPBACK_NAMES or host.startswith("127.")


def outside_address(value: str) -> str | None:
    """The first address in ``value`` that is not loopback (an empty host binds every interface)."""
    for m in _IPV4.finditer(value):
        if m.group(1) != "127":
            return m.group(0)
    for m in _URL.finditer(value):
        if not _is_loopback(m.group(1)):
            return m.group(1) or "(every interface)"
    for token in re.split(r"[\s,;]+", value):
        host_port = _HOST_PORT.match(token)
        if host_port and not _is_loopback(host_port.group(1) or ""):
            return host_port.group(1) or "(every interface)"
    return None


def broker_property_problems(s: Scenario, bad: Report) -> None:
    """Every ``broker_properties`` entry that would replace a setting the harness owns, or reach
    beyond 127.0.0.1."""
    for name, cluster in s.clusters.items():
        secure = cluster.security is not None
        for key, value in cluster.broker_properties.items():
            path = ("clusters", name, "broker_properties", key)
            if reason := owner_reason(key.strip(), secure):
                bad(path, f"{key} is set by mirrordrill ({reason}); remove it from broker_properties")
            elif isinstance(value, str) and (address := outside_address(value)):
                bad(path, f"{key} names {address}, which is not loopback: the brokers the harness starts "
                          "listen and connect on 127.0.0.1 only; use 127.0.0.1 or remove the setting")
