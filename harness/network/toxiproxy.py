"""The Toxiproxy server process and a small checked client for its HTTP API.

We talk to the API with ``requests`` instead of toxiproxy-python 0.1.1: that library keeps
the server address in a class-level global (two drills in one process would share it), has
no toxic update and lets server errors pass silently. Every call here checks the status.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import requests

from primitives.ports import LOOPBACK
from primitives.process import ManagedProcess, ProcessError


class ToxiproxyError(RuntimeError):
    """The Toxiproxy API refused a request; the message has its answer."""


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


class ToxiproxyClient:
    """Checked calls to one Toxiproxy server's HTTP API."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0):
        self.base = f"http://{host}:{port}"
        self.timeout_s = timeout_s
        self.session = requests.Session()

    def _call(self, method: str, path: str, json: dict | None = None, ok=(200, 201, 204)):
        try:
            resp = self.session.request(method, self.base + path, json=json, timeout=self.timeout_s)
        except requests.RequestException as e:
            raise ToxiproxyError(f"Toxiproxy at {self.base} unreachable ({method} {path}): {e}") from e
        if resp.status_code not in ok:
            raise ToxiproxyError(f"Toxiproxy {method} {path} -> {resp.status_code}: {resp.text.strip()}")
        return resp.json() if resp.content and resp.headers.get("content-type", "").startswith("application/json") else None

    def version(self) -> str:
        resp = self.session.get(self.base + "/version", timeout=self.timeout_s)
        resp.raise_for_status()
        return resp.text.strip()

    def proxies(self) -> dict[str, dict]:
        return self._call("GET", "/proxies") or {}

    def create_proxy(self, name: str, listen_port: int, upstream: str) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": f"{LOOPBACK}:{listen_port}",
                                        "upstream": upstream, "enabled": True})

    def delete_proxy(self, name: str) -> None:
        self._call("DELETE", f"/proxies/{name}")

    def set_enabled(self, name: str, enabled: bool) -> None:
        """A disabled proxy closes its connections and refuses new ones (a hard partition)."""
        self._call("POST", f"/proxies/{name}", {"enabled": enabled})

    def set_upstream(self, name: str, upstream: str) -> None:
        """Point a proxy elsewhere; Toxiproxy restarts it, closing the connections it held."""
        self._call("POST", f"/proxies/{name}", {"upstream": upstream, "enabled": True})

    def toxics(self, proxy: str) -> dict[str, dict]:
        return {t["name"]: t for t in (self._call("GET", f"/proxies/{proxy}/toxics") or [])}

    def add_toxic(self, proxy: str, toxic: Toxic) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics", toxic.as_json())

    def update_toxic(self, proxy: str, toxic: Toxic) -> None:
        self._call("POST", f"/proxies/{proxy}/toxics/{toxic.name}",
                   {"toxicity": toxic.toxicity, "attributes": toxic.attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{name}")


class ToxiproxyServer:
    """The Toxiproxy server on a free loopback port, owned like any other child process."""

    def __init__(self, binary: Path, port: int, workdir: Path):
        self.port = port
        self.process = ManagedProcess(
            name="toxiproxy", argv=[str(binary), "-host", LOOPBACK, "-port", str(port)],
            log_path=workdir / "toxiproxy.log", cwd=workdir, stop_timeout_s=5.0,
            infrastructure=True,
        )
        self.client = ToxiproxyClient(LOOPBACK, port)

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
            except requests.RequestException:
                time.sleep(0.1)
        raise ProcessError(f"toxiproxy did not answer on port {self.port} within {timeout_s:.0f}s; "
                           f"log {self.process.log_path}")

    def stop(self) -> None:
        self.process.stop()
