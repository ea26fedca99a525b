"""No secret of a secure drill leaks: not into any file of its run folder, not onto a command line.

A short form of scenarios/secure-failover.yaml runs for real (SASL_SSL with SCRAM-SHA-512,
mutual TLS between brokers). While it runs, a sampler reads the command line of every process
the harness started (/proc/<pid>/cmdline of its descendants) and the private keys from the
drill's secret folder. Afterwards every file of the run folder (summary, histories, Allure
results, the replicator's properties copy, logs, drill.log) is searched, as bytes, for the
password and for every line of every private key's PEM body. The same search is run on a
planted leak first, so an empty result cannot come from a search that finds nothing. It runs
with each replicator: ours, MirrorMaker 2, and a team's own through the command adapter (the
test's pipe replicator, given its SASL_SSL settings as files through the placeholders; its dr
cluster is plain, so summary.json names a secure and a plaintext cluster).

The sampler also reads the environment of every such process (/proc/<pid>/environ): a canary
variable and a fake cloud key set in the test's environment reach none of them (the command
replicator, the team's own program, keeps the user's environment by design). A drill file that
writes a secret where the run would copy it is refused by ``run`` before anything starts.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
from pathlib import Path

import pytest
import yaml

from mirrordrill.harness.cli import commands as cli
from mirrordrill.harness.drill.engine import Drill
from mirrordrill.harness.drill.run_folder import SUMMARY_FILE
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.primitives.bootstrap import mirrordrill_home

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
PIPE = Path(__file__).parent / "fixtures" / "pipe_replicator.py"


def short_secure_drill(replicator: str) -> str:
    """secure-failover.yaml, shortened: 17 s of load, the primary killed at 7 s."""
    doc = yaml.safe_load((REPO / "scenarios" / "secure-failover.yaml").read_text())
    doc.update(name=f"secure-leak-check-{replicator}", duration="17s", drain_timeout="40s")
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
        doc["clusters"]["dr"] = {"brokers": 1}  # plain: summary.json names both kinds
    doc["timeline"][0].update(at="7s", when={"lag_at_most": 100000, "timeout": "10s"})
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
        self.environs: dict[int, bytes] = {}
        self.keys: dict[str, str] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            for pid in descendants(os.getpid()):
                try:
                    self.cmdlines.setdefault(pid, Path(f"/proc/{pid}/cmdline").read_bytes())
                    self.environs.setdefault(pid, Path(f"/proc/{pid}/environ").read_bytes())
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


def environ_leaks(sampler: Sampler, needles: dict[str, str]) -> list[str]:
    """Which process environments hold a needle; the command replicator (the team's own) is exempt."""
    found = []
    for pid, environ in sampler.environs.items():
        if PIPE.name.encode() in sampler.cmdlines.get(pid, b""):
            continue
        name = sampler.cmdlines.get(pid, b"").replace(b"\0", b" ")[:80].decode(errors="replace")
        found += [f"pid {pid} ({name}) environment: {n}" for n, text in needles.items() if text.encode() in environ]
    return found


SECURITY = {"SASL_SSL": {"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-512", "tls": True, "mutual_tls": False},
            "PLAINTEXT": {"protocol": "PLAINTEXT", "sasl_mechanism": None, "tls": False, "mutual_tls": False}}


@pytest.mark.parametrize("replicator", ["pyspark", "mirrormaker2", "command"])
def test_secure_drill_leaks_no_secret(artifacts, tmp_path, monkeypatch, replicator):
    password = "leakcheck-" + secrets.token_hex(12)
    canary, cloud_key = "canary-" + secrets.token_hex(12), "fakeaws-" + secrets.token_hex(16)
    monkeypatch.setenv("MIRRORDRILL_SECURE_PASSWORD", password)
    monkeypatch.setenv("MIRRORDRILL_LEAK_CANARY", canary)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", cloud_key)
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
    # No process the harness started inherited the user's canary, cloud key or drill password.
    env_needles = {"the canary": canary, "the cloud key": cloud_key, "the password": password}
    seen = [pid for pid in sampler.environs if PIPE.name.encode() not in sampler.cmdlines.get(pid, b"")]
    assert len(seen) >= 3, "the sampler read no environment of a harness process"
    planted_env = Sampler("none")
    planted_env.environs, planted_env.cmdlines = {1: f"A=1\0AWS_SECRET_ACCESS_KEY={cloud_key}\0".encode()}, {1: b"java"}
    assert environ_leaks(planted_env, env_needles) != []  # the search finds a planted one
    assert environ_leaks(sampler, env_needles) == []
    # summary.json names each cluster's security, and no credential.
    summary = json.loads((out / SUMMARY_FILE).read_text())
    clusters = summary["environment"]["clusters"]
    dr = "PLAINTEXT" if replicator == "command" else "SASL_SSL"
    assert clusters == {"primary": {"security": SECURITY["SASL_SSL"]}, "dr": {"security": SECURITY[dr]}}
    assert not list((mirrordrill_home() / "secrets").glob(f"{out.name}-env-*")), "the secret folder was left behind"
    # Last: on a machine too busy for the drill to pass, the search above still ran.
    assert result.passed, (out / "drill.log").read_text()[-3000:]


def test_a_drill_file_holding_a_secret_is_refused_before_anything_is_written(tmp_path, capsys):
    """Literal secrets where the run would copy them (the drill file's copy, the load spec,
    server.properties, a runbook's environment): ``run`` refuses, each on its own line, and
    neither the run folder nor a process comes to be."""
    secret = "literal-" + secrets.token_hex(12)
    doc = yaml.safe_load((REPO / "scenarios" / "secure-failover.yaml").read_text())
    doc["clusters"]["dr"] = {"brokers": 1, "broker_properties": {"ssl.key.password": secret}}
    doc["load"]["producers"][0]["settings"] = {"sasl.password": secret}
    doc["timeline"][0]["runbook"] = [{"command": "dns-switch --to dr", "env": {"DNS_API_TOKEN": secret}}]
    path = tmp_path / "literal.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    out = tmp_path / "run"
    before = set(descendants(os.getpid()))
    assert cli.main(["run", str(path), "--out", str(out)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    for field in ("clusters.dr.broker_properties.ssl.key.password", "load.producers[0].settings.sasl.password",
                  "timeline[0].runbook[0].env.DNS_API_TOKEN"):
        assert len([line for line in err.splitlines() if f"{path}:" in line and f": {field}: " in line]) == 1, err
    assert secret not in err
    assert not out.exists()
    assert set(descendants(os.getpid())) <= before
