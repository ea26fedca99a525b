"""No secret in plain sight: one detection rule, and every place that uses it.

A drill file holding a secret is refused by ``validate`` (one line: file, line, field, fix; the
value never in the message); a warning or an error names a secret field without its value; the
processes the harness starts get an allow-listed environment; summary.json names each
cluster's security and no credential.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

import pytest

from mirrordrill.harness.cli import commands as cli
from mirrordrill.harness.drill.actions.registry import action_for
from mirrordrill.harness.drill.validate import parse_scenario
from mirrordrill.harness.lab.brokers.cluster import ClusterSpec
from mirrordrill.primitives.kafka.existing_cluster import ExistingClusterDef
from mirrordrill.primitives.kafka.security import ClientSecurity
from mirrordrill.primitives.process import ManagedProcess, child_environment
from mirrordrill.primitives.redaction import is_secret_key, literal_secret_keys, literal_secret_options, secret_keys
from mirrordrill.replicator.config.properties_reader import parse_mm2_properties
from tests.unit.test_runbook import context
from tests.unit.test_scenario_validation import BASE

SECRET = "hunter2-" + "x" * 8  # what no message may echo


# --- the rule ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["sasl.jaas.config", "ssl.key.password", "ssl.keystore.key", "sasl.password",
                                 "consumer.sasl.jaas.config", "sasl.oauthbearer.client.credentials.client.secret",
                                 "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWD", "API_KEY",
                                 "basic.auth.user.info", "delegation.token.secret.key"])
def test_secret_names_are_secret(key):
    assert is_secret_key(key)


@pytest.mark.parametrize("key", ["linger.ms", "security.protocol", "ssl.client.auth", "ssl.truststore.location",
                                 "sasl.mechanism", "acks", "PATH", "JAVA_HOME", "TEAM"])
def test_ordinary_names_are_not(key):
    assert not is_secret_key(key)


def test_a_reference_is_not_a_literal_secret_but_still_a_secret_key():
    settings = {"sasl.password": SECRET, "ssl.key.password": "${env:KEY_PW}", "acks": "all"}
    assert secret_keys(settings) == ["sasl.password", "ssl.key.password"]
    assert literal_secret_keys(settings) == ["sasl.password"]


def test_a_command_line_with_a_secret_value_is_found_and_one_naming_where_it_is_is_not():
    assert literal_secret_options(["tool", "--password", SECRET, "api_key=" + SECRET]) == ["--password", "api_key"]
    assert literal_secret_options(["tool", "--password", "$PW", "--token", "${env:T}", "--secret-file",
                                   "{source_client_properties}", "token=$T", "--password-stdin"]) == []


# --- validate refuses, per place ------------------------------------------------------------
def _flow_setting(setting: str) -> str:
    return BASE.replace("      topics: [orders]\n", f"      topics: [orders]\n      settings: {{{setting}}}\n", 1)


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    field: str
    phrase: str
    line_of: str


CASES = [
    Case("broker_properties", BASE.replace("  primary: {brokers: 1}\n",
                                           f"  primary: {{brokers: 1, broker_properties: {{ssl.key.password: {SECRET}}}}}\n"),
         "clusters.primary.broker_properties.ssl.key.password", "set clusters.primary.security", "broker_properties"),
    Case("flow settings, as a reference too", _flow_setting("consumer.sasl.jaas.config: '${env:JAAS}'"),
         "replication.flows[0].settings.consumer.sasl.jaas.config", "clusters.primary.security and clusters.dr.security",
         "settings: {consumer.sasl"),
    Case("producer settings", BASE.replace("rate: 100}", f"rate: 100, settings: {{sasl.password: {SECRET}}}}}"),
         "load.producers[0].settings.sasl.password", "set clusters.primary.security", "rate: 100, settings"),
    Case("runbook env", BASE + f"timeline:\n  - {{at: 1s, do: runbook, command: 'true', env: {{API_TOKEN: {SECRET}}}}}\n",
         "timeline[0].env.API_TOKEN", "write a reference, ${env:NAME} or ${file:PATH:KEY}", "do: runbook"),
    Case("failover runbook env", BASE + "timeline:\n  - at: 1s\n    do: unplanned_failover\n    from: primary\n"
         f"    to: dr\n    runbook:\n      - {{command: 'true', env: {{DB_PASSWORD: {SECRET}}}}}\n",
         "timeline[0].runbook[0].env.DB_PASSWORD", "write a reference", "{command: 'true'"),
    Case("runbook command line", BASE + f"timeline:\n  - {{at: 1s, do: runbook, command: 'dns-switch --token {SECRET}'}}\n",
         "timeline[0].command", "--token names a secret", "do: runbook"),
    Case("command replicator line", BASE.replace("replication:\n", "replication:\n  replicator: command\n  command: "
                                                 f"my-rep --from {{source_bootstrap}} --password {SECRET}\n", 1),
         "replication.command", "--password names a secret", "command: my-rep"),
    Case("a password of the wrong type", BASE.replace("  primary: {brokers: 1}\n",
                                                      f"  primary: {{brokers: 1, security: {{password: [{SECRET}]}}}}\n"),
         "clusters.primary.security.password", "not shown", "security:"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_a_secret_in_the_drill_file_is_refused_without_echoing_it(case, tmp_path, capsys, nothing_starts):
    path = tmp_path / "drill.yaml"
    path.write_text(case.text)
    assert cli.main(["validate", str(path)]) == cli.EXIT_USAGE
    err = capsys.readouterr().err
    line = case.text[:case.text.index(case.line_of)].count("\n") + 1
    assert f"{path}:{line}: {case.field}: " in err, err
    assert case.phrase in err, err
    assert SECRET not in err, err


def test_references_in_a_runbook_env_validate():
    parse_scenario(BASE + "timeline:\n  - {at: 1s, do: runbook, command: 'tool --token $API_TOKEN', "
                          "env: {API_TOKEN: '${env:TEAM_TOKEN}', TEAM: blue}}\n", "drill.yaml")


def test_a_runbook_env_reference_reaches_the_command_only_when_it_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("TEAM_TOKEN", SECRET)
    (tmp_path / "creds.properties").write_text(f"token = {SECRET}-file\n")
    ctx = context(tmp_path, "  - {at: 1s, do: runbook, name: check, command: 'echo A=$API_TOKEN B=$FILE_TOKEN', "
                            "env: {API_TOKEN: '${env:TEAM_TOKEN}', FILE_TOKEN: '${file:creds.properties:token}'}}\n")
    step = ctx.scenario.timeline[0]
    action_for(step).apply(ctx, step)
    assert f"A={SECRET} B={SECRET}-file" in (tmp_path / "runbook" / "01-check.log").read_text()


def test_an_unset_runbook_env_reference_fails_the_step_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN_XYZ", raising=False)
    ctx = context(tmp_path, "  - {at: 1s, do: runbook, name: c, command: 'true', env: {T: '${env:NO_SUCH_TOKEN_XYZ}'}}\n")
    step = ctx.scenario.timeline[0]
    with pytest.raises(Exception, match="environment variable NO_SUCH_TOKEN_XYZ is not set"):
        action_for(step).apply(ctx, step)


# --- warnings name the key, never the value --------------------------------------------------
def test_the_dropped_backslash_warning_does_not_echo_a_jaas_config():
    config = parse_mm2_properties(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
        f'A.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required password="{SECRET}\\q";\n'
        "A->B.topics = orders\\.v1\n", "mm2.properties")
    messages = {w.key: str(w) for w in config.warnings}
    assert "drops the backslash" in messages["A.sasl.jaas.config"]
    assert SECRET not in messages["A.sasl.jaas.config"]
    assert "orders.v1" in messages["A->B.topics"]  # an ordinary value is still shown


# --- the environment of started processes ------------------------------------------------------
PARENT = {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8", "JAVA_HOME": "/jdk", "SPARK_HOME": "/spark",
          "MIRRORDRILL_HOME": "/cache", "MIRRORDRILL_PLANTED_FAULT": "x", "AWS_SECRET_ACCESS_KEY": SECRET,
          "AWS_ACCESS_KEY_ID": "AKIA", "MIRRORDRILL_LEAK_CANARY": SECRET, "MIRRORDRILL_SECURE_PASSWORD": SECRET,
          "SPARK_AUTH_SECRET": SECRET, "GITHUB_TOKEN": SECRET}


def test_child_environment_keeps_what_processes_need_and_nothing_else():
    env = child_environment({"PYTHONPATH": "/repo"}, parent=PARENT)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/u", "LC_ALL": "C.UTF-8", "JAVA_HOME": "/jdk",
                   "SPARK_HOME": "/spark", "MIRRORDRILL_HOME": "/cache", "MIRRORDRILL_PLANTED_FAULT": "x",
                   "PYTHONPATH": "/repo"}


def test_a_managed_process_without_an_env_gets_the_allow_listed_one(tmp_path, monkeypatch):
    monkeypatch.setenv("MIRRORDRILL_LEAK_CANARY", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    out = tmp_path / "env.json"
    proc = ManagedProcess("env dump", [sys.executable, "-c", f"import json, os; open({str(out)!r}, 'w')"
                                       ".write(json.dumps(dict(os.environ)))"], tmp_path / "env.log")
    proc.start()
    assert proc.wait(10) == 0, proc.log_tail()
    seen = json.loads(out.read_text())
    assert "PATH" in seen
    assert "MIRRORDRILL_LEAK_CANARY" not in seen and "AWS_SECRET_ACCESS_KEY" not in seen


# --- summary.json's security facts ---------------------------------------------------------------
def _cluster(text: str) -> ClusterSpec:
    s = parse_scenario(BASE.replace("  primary: {brokers: 1}\n", f"  primary: {text}\n"), "drill.yaml")
    c = s.clusters["primary"]
    return ClusterSpec("primary", security=c.security, existing=c.existing)


@pytest.mark.parametrize("text,facts", [
    ("{brokers: 1}", {"protocol": "PLAINTEXT", "sasl_mechanism": None, "tls": False, "mutual_tls": False}),
    ("{brokers: 1, security: {protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-256, password: '${env:PW}'}}",
     {"protocol": "SASL_SSL", "sasl_mechanism": "SCRAM-SHA-256", "tls": True, "mutual_tls": False}),
    ("{brokers: 1, security: {protocol: SSL}}", {"protocol": "SSL", "sasl_mechanism": None, "tls": True, "mutual_tls": True}),
])
def test_a_started_cluster_s_security_is_named_without_a_credential(text, facts):
    assert _cluster(text).security_facts() == facts


def test_an_existing_cluster_s_security_is_named_without_a_credential():
    team = ExistingClusterDef(bootstrap_servers="kafka-1.staging:9093", security=ClientSecurity(
        protocol="SASL_SSL", sasl_mechanism="PLAIN", username="u", password="${env:PW}"))
    assert ClusterSpec("team", existing=team).security_facts() == {
        "protocol": "SASL_SSL", "sasl_mechanism": "PLAIN", "tls": True, "mutual_tls": False}
    mtls = ExistingClusterDef(bootstrap_servers="kafka-1.staging:9093", security=ClientSecurity(
        protocol="SSL", ca_pem="/ca.pem", cert_pem="/c.pem", key_pem="${env:KEY}"))
    assert ClusterSpec("team", existing=mtls).security_facts() == {
        "protocol": "SSL", "sasl_mechanism": None, "tls": True, "mutual_tls": True}
