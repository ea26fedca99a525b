"""No secret of a secure drill leaks: not into any file of its run folder, not onto a command line.

A short form of scenarios/secure-failover.yaml runs for real (SASL_SSL with SCRAM-SHA-512,
mutual TLS between brokers). While it runs, a sampler reads the command line of every process
the harness started (/proc/<pid>/cmdline of its descendants) and the private keys from the
drill's secret folder. Afterwards every file of the run folder (summary, histories, Allure
results, the replicator's properties copy, logs, drill.log) is searched, as bytes, for the
password and for every line of every private key's PEM body. The same search is run on a
planted leak first, so an empty result cannot come from a search that finds nothing. It runs
with each replicator: ours, MirrorMaker 2, and a team's own through the command adapter (the
test's pipe replicator, given its SASL_SSL settings as files through the placeholders).
"""

from __future__ import annotations

import os
import secrets
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from harness.scenario.engine import Drill
from harness.scenario.validate import parse_scenario
from primitives.bootstrap import mirrordrill_home

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PIPE = Path(__file__).parent / "fixtures" / "pipe_replicator.py"


def short_secure_drill(replicator: str) -> str:
    """secure-failover.yaml, shortened: 25 s of load, the primary killed at 10 s."""
    doc = yaml.safe_load((REPO / "scenarios" / "secure-failover.yaml").read_text())
    doc.update(name=f"secure-leak-check-{replicator}", duration="25s", drain_timeout="40s")
    doc["replication"]["replicator"] = replicator
    doc["replication"].pop("mode", None)
    if replicator == "command":  # a team's own replicator: credentials reach it as files, by placeholder
        doc["replication"]["command"] = (
            f"{sys.executable} {PIPE} --source-bootstrap {{source_bootstrap}} --target-bootstrap {{target_bootstrap}} "
            "--topics-regex {topics_regex} --topics-exclude-regex {topics_exclude_regex} --remote-prefix "
            "{remote_prefix} --group pipe-{source}-{target} --workdir {workdir} "
            "--source-properties {source_librdkafka_properties} --target-properties {target_librdkafka_properties}")
        # it has no offset translation: the group restarts from the beginning on dr (skips nothing)
        doc["load"]["consumers"][0]["failover_strategy"] = "earliest"
    doc["timeline"][0].update(at="10s", when={"lag_at_most": 100000, "timeout": "10s"})
    # This test is about secrets: its drill must run and keep the guarantees every replicator
    # owes, but the file's latency, replay and RTO limits are calibrated for the bundled
    # replicator in real-time mode (the drill's own test checks them), not for each replicator's
    # default mode here; the RPO gets 10 s of traffic (micro-batch lags ~2 s at the kill).
    doc["expectations"] = {"corrupted": 0, "unexpected": 0, "lost": "<= 1000", "failover.skipped": 0}
    doc["invariants"]["rpo_records"] = 1000
    return yaml.safe_dump(doc, sort_keys=False)


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (from /proc's parent links)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    out, frontier = [], [root]
    while frontier:
        pid = frontier.pop()
        children = [p for p, pp in parents.items() if pp == pid]
        out += children
        frontier += children
    return out


class Sampler(threading.Thread):
    """Every 0.5 s: command lines of the harness's processes, and the private keys of secret folders."""

    def __init__(self, secret_glob: str):
        super().__init__(daemon=True)
        self.secret_glob = secret_glob
        self.cmdlines: dict[int, bytes] = {}
        self.keys: dict[str, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for pid in descendants(os.getpid()):
                try:
                    self.cmdlines.setdefault(pid, Path(f"/proc/{pid}/cmdline").read_bytes())
                except OSError:
                    continue
            for key in (mirrordrill_home() / "secrets").glob(self.secret_glob):
                try:
                    self.keys[key.name] = key.read_text()
                except OSError:
                    continue


def key_lines(pem: str) -> list[str]:
    """The base64 lines of a PEM body (each one is unique to the key)."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----") and len(line) >= 40]


def leaks_in(folder: Path, cmdlines: dict[int, bytes], needles: dict[str, str]) -> list[str]:
    """Where any needle (name -> secret text) occurs: files of ``folder`` and command lines."""
    found = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{path.relative_to(folder)}: {name}" for name, text in needles.items() if text.encode() in data]
    for pid, cmd in cmdlines.items():
        found += [f"pid {pid} command line: {name}" for name, text in needles.items() if text.encode() in cmd]
    return found


@pytest.mark.parametrize("replicator", ["pyspark", "mirrormaker2", "command"])
def test_secure_drill_leaks_no_secret(artifacts, tmp_path, monkeypatch, replicator):
    password = "leakcheck-" + secrets.token_hex(12)
    monkeypatch.setenv("MIRRORDRILL_SECURE_PASSWORD", password)
    text = short_secure_drill(replicator)
    path = tmp_path / "secure.yaml"
    path.write_text(text)
    out = tmp_path / "run"
    sampler = Sampler(f"{out.name}-env-*/*.key.pem")
    sampler.start()
    try:
        result = Drill(parse_scenario(text, str(path)), path, out, artifacts=artifacts).run()
    finally:
        sampler.stop.set()
        sampler.join()

    assert sampler.keys, "no private key was seen in the secret folder during the run"
    assert len(sampler.cmdlines) >= 3, "the sampler saw no harness processes"
    needles = {"the password": password}
    for name, pem in sampler.keys.items():
        needles |= {f"{name} line {i}": line for i, line in enumerate(key_lines(pem))}

    # The search finds a planted leak (so an empty answer below means something).
    planted = tmp_path / "planted"
    (planted / "allure-results").mkdir(parents=True)
    (planted / "allure-results" / "x.json").write_text(f'{{"p": "{password}"}}')
    (planted / "broker.log").write_text(next(iter(sampler.keys.values())))
    assert len(leaks_in(planted, {1: f"java -Dpw={password}".encode()}, needles)) >= 3

    assert leaks_in(out, sampler.cmdlines, needles) == []
    assert not list((mirrordrill_home() / "secrets").glob(f"{out.name}-env-*")), "the secret folder was left behind"
    # Last: on a machine too busy for the drill to pass, the search above still ran.
    assert result.passed, (out / "drill.log").read_text()[-3000:]
