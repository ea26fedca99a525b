"""The proxy as a child process of the harness, owned like Toxiproxy (see ``harness.lab.network.toxiproxy``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mirrordrill.harness.lab.network.kafka_proxy.spec import KafkaProxySpec
from mirrordrill.primitives.import_root import child_pythonpath
from mirrordrill.primitives.kafka.security import write_private
from mirrordrill.primitives.ports import LOOPBACK, is_listening
from mirrordrill.primitives.process import ManagedProcess, ProcessError, child_environment


class KafkaProxyProcess:
    """One ``python -m mirrordrill.harness.lab.network.kafka_proxy`` process serving ``spec``.

    ``spec_dir`` receives the spec file (0600: it names key files); give the drill's secret
    folder when the spec has TLS material, since ``workdir`` (the log's folder) is in the run
    folder. The caller adds ``.process`` to its ProcessSupervisor, so every exit path stops it.
    """

    def __init__(self, spec: KafkaProxySpec, workdir: Path, python: str = sys.executable,
                 spec_dir: Path | None = None, debug: bool = False):
        self.spec = spec
        self.spec_path = (spec_dir or workdir) / f"kafka-proxy-{spec.name}.json"
        write_private(self.spec_path, spec.to_json())
        argv = [python, "-m", "mirrordrill.harness.lab.network.kafka_proxy", str(self.spec_path)] + (["--debug"] if debug else [])
        # The proxy imports the harness from this checkout, wherever the caller's cwd is.
        env = child_environment({"PYTHONPATH": child_pythonpath(os.environ.get("PYTHONPATH"))})
        self.process = ManagedProcess(
            name=f"kafka-proxy-{spec.name}", argv=argv, env=env,
            log_path=workdir / f"kafka-proxy-{spec.name}.log", cwd=workdir, stop_timeout_s=5.0,
            infrastructure=True,
        )

    @property
    def ports(self) -> list[int]:
        return [listener.listen_port for listener in self.spec.listeners]

    def start(self, timeout_s: float = 20.0) -> None:
        """Start the process and wait until every listen port accepts connections."""
        self.process.start()
        deadline = time.monotonic() + timeout_s
        waiting = self.ports
        while time.monotonic() < deadline:
            if not self.process.running:
                raise ProcessError(f"kafka proxy {self.spec.name} exited at start (code {self.process.returncode}); "
                                   f"log {self.process.log_path}:\n{self.process.log_tail()}")
            waiting = [p for p in waiting if not is_listening(LOOPBACK, p)]
            if not waiting:
                return
            time.sleep(0.1)
        self.process.stop()
        raise ProcessError(f"kafka proxy {self.spec.name}: ports {waiting} did not accept connections within "
                           f"{timeout_s:.0f}s; log {self.process.log_path}:\n{self.process.log_tail()}")

    def stop(self) -> None:
        self.process.stop()
