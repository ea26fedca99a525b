"""The Toxiproxy server process and our one wrapper around toxiproxy-python, its client.

This is the only module that talks to Toxiproxy's HTTP API (through toxiproxy-python). The
library needs three things added, and they are added here only:

- It keeps the server address in class-level state (``APIConsumer.host``/``port``). Two
  servers in one process (two drills, a test beside a drill) would talk to whichever was set
  last, so every call binds our address under one lock and puts the previous one back.
- Its objects cannot update a toxic in place or re-point a proxy's upstream, set no timeout
  (a wedged server would hang a drill), and let a server error (5xx) pass silently: a proxy
  that failed to re-enable looks healed. So every call here goes through the library's own
  transport (``APIConsumer.get/post/delete``, which maps 400/404/409 to its exceptions) with
  a timeout and its status checked, and reads come back as the library's ``Proxy``/``Toxic``.
- Its errors (``ProxyExists``, ``NotFound``, ``InvalidToxic``, connection errors) become one
  ``ToxiproxyError`` whose message names the server, the request and Toxiproxy's answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import requests
import toxiproxy
from toxiproxy.api import APIConsumer
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.toxic import Toxic as LibraryToxic

from mirrordrill.primitives.ports import LOOPBACK
from mirrordrill.primitives.process import ManagedProcess, ProcessError

# The library's address is one per process, so the lock that guards it must be too: it is the
# only module-level state here, and it exists because the library's state does.
_ADDRESS_LOCK = threading.RLock()
_LIBRARY_ERRORS = (ProxyExists, NotFound, InvalidToxic, requests.RequestException)


class ToxiproxyError(RuntimeError):
    """The Toxiproxy API refused a request or could not be reached; the message has its answer."""


@dataclass(frozen=True)
class Toxic:
    """One toxic as Toxiproxy defines it (type, stream, attributes)."""

    name: str
    type: str
    stream: str  # "upstream" (client -> server) or "downstream" (server -> client)
    attributes: dict
    toxicity: float = 1.0

    def as_json(self) -> dict:
        return {"name": self.name, "type": self.type, "stream": self.stream,
                "toxicity": self.toxicity, "attributes": self.attributes}


# Toxiproxy's per-proxy counter (its METRICS.md): bytes each proxy received, by direction
RECEIVED_BYTES_METRIC = "toxiproxy_proxy_received_bytes_total"


class ToxiproxyClient:
    """One Toxiproxy server's API through toxiproxy-python, with checked calls."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0):
        self.host, self.port = host, port
        self.base = f"http://{host}:{port}"
        self.timeout_s = timeout_s

    @contextmanager
    def _bound(self, what: str) -> Iterator[None]:
        """Point the library at this server for one call; turn its errors into ours."""
        with _ADDRESS_LOCK:
            saved = (APIConsumer.host, APIConsumer.port)
            APIConsumer.host, APIConsumer.port = self.host, self.port
            try:
                yield
            except _LIBRARY_ERRORS as e:
                detail = e.args[0].decode(errors="replace") if e.args and isinstance(e.args[0], bytes) else e
                raise ToxiproxyError(f"Toxiproxy at {self.base}: {what} failed ({type(e).__name__}): "
                                     f"{str(detail).strip()}") from e
            finally:
                APIConsumer.host, APIConsumer.port = saved

    def _call(self, method: str, path: str, what: str, body: dict | None = None):
        """One request through the library's transport, with a timeout and its status checked."""
        send = {"GET": APIConsumer.get, "POST": APIConsumer.post, "DELETE": APIConsumer.delete}[method]
        kwargs = {"json": body} if body is not None else {}
        with self._bound(what):
            resp = send(path, timeout=self.timeout_s, **kwargs)
        if resp.status_code >= 300:
            raise ToxiproxyError(f"Toxiproxy at {self.base}: {what} -> {resp.status_code}: {resp.text.strip()}")
        return resp

    def received_bytes(self) -> dict[str, dict[str, int]]:
        """Per proxy, the bytes it received in each direction since the server started ("upstream":
        from its clients, "downstream": from its server), from the Prometheus text the server
        serves when started with ``-proxy-metrics``."""
        out: dict[str, dict[str, int]] = {}
        for line in self._call("GET", "/metrics", "GET /metrics").text.splitlines():
            name, _, rest = line.partition("{")
            if name != RECEIVED_BYTES_METRIC or "}" not in rest:
                continue
            labels_text, _, value = rest.rpartition("}")
            labels = dict(part.split("=", 1) for part in labels_text.split(",") if "=" in part)
            proxy, direction = labels.get("proxy", "").strip('"'), labels.get("direction", "").strip('"')
            if proxy and direction:
                out.setdefault(proxy, {})[direction] = int(float(value.strip()))
        return out

    def version(self) -> str:
        return self._call("GET", "/version", "GET /version").text.strip()

    def proxies(self) -> dict[str, dict]:
        found = {name: toxiproxy.Proxy(**values)
                 for name, values in self._call("GET", "/proxies", "list proxies").json().items()}
        return {name: {"name": p.name, "listen": p.listen, "upstream": p.upstream, "enabled": p.enabled}
                for name, p in found.items()}

    def create_proxy(self, name: str, listen_port: int, upstream: str) -> None:
        self._call("POST", "/proxies", f"create proxy {name}", {
            "name": name, "listen": f"{LOOPBACK}:{listen_port}", "upstream": upstream, "enabled": True})

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}", f"delete proxy {name}")

    def set_enabled(self, name: str, enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones (a hard partition)."""
        # Checked: re-enabling answers 500 when the listen port was taken meanwhile, and a
        # heal that silently did not happen would blame the replicator for the proxy.
        self._call("POST", f"/proxies/{name}", f"{'enable' if enabled else 'disable'} proxy {name}",
                   {"enabled": enabled})

    def set_upstream(self, name: str, upstream: str) -> None:
        """Point a proxy elsewhere; Toxiproxy restarts it, closing the connections it held."""
        self._call("POST", f"/proxies/{name}", f"re-point proxy {name}", {"upstream": upstream, "enabled": True})

    def toxics(self, proxy: str) -> dict[str, dict]:
        found = [LibraryToxic(**t) for t in self._call("GET", f"/proxies/{proxy}/toxics", f"list toxics of {proxy}").json()]
        return {t.name: {"name": t.name, "type": t.type, "stream": t.stream, "toxicity": t.toxicity,
                         "attributes": t.attributes} for t in found}

    def add_toxic(self, proxy: str, toxic: Toxic) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics", f"add toxic {toxic.name} to {proxy}", toxic.as_json())

    def update_toxic(self, proxy: str, toxic: Toxic) -> None:
        """Change a toxic's attributes in place (the library has no call for it)."""
        self._call("POST", f"/proxies/{proxy}/toxics/{toxic.name}", f"update toxic {toxic.name} on {proxy}",
                   {"toxicity": toxic.toxicity, "attributes": toxic.attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}", f"remove toxic {name} from {proxy}")


class ToxiproxyServer:
    """The Toxiproxy server on a free loopback port, owned like any other child process."""

    def __init__(self, binary: Path, port: int, workdir: Path, process: ManagedProcess | None = None):
        """``process``: the server made elsewhere (a container in the docker backend) from ``argv``."""
        self.port = port
        self.process = process or ManagedProcess(
            name="toxiproxy", argv=self.argv(binary, port),
            log_path=workdir / "toxiproxy.log", cwd=workdir, stop_timeout_s=5.0,
            infrastructure=True,
        )
        self.client = ToxiproxyClient(LOOPBACK, port)

    @staticmethod
    def argv(binary: Path | str, port: int) -> list[str]:
        # -proxy-metrics: per-proxy byte counters, the WAN bytes a drill reports per replicated record
        return [str(binary), "-host", LOOPBACK, "-port", str(port), "-proxy-metrics"]

    def start(self, timeout_s: float = 15.0) -> None:
        self.process.start()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.process.running:
                raise ProcessError(f"toxiproxy exited at start (code {self.process.returncode}); "
                                   f"log {self.process.log_path}:\n{self.process.log_tail()}")
            try:
                self.client.version()
                return
            except ToxiproxyError:
                time.sleep(0.1)
        raise ProcessError(f"toxiproxy did not answer on port {self.port} within {timeout_s:.0f}s; "
                           f"log {self.process.log_path}")

    def stop(self) -> None:
        self.process.stop()
