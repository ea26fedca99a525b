"""Config-provider references (${env:…}, ${file:…}, ${dir:…}) and the client security model."""

from __future__ import annotations

import stat

import pytest

from mirrordrill.primitives.config_refs import (
    ConfigRefError,
    RefResolver,
    check_ref_syntax,
    find_refs,
    is_pure_ref,
    parse_properties,
)
from mirrordrill.primitives.kafka.security import ClientSecurity, ResolvedSecurity, jaas_quote, java_to_librdkafka, write_private


def test_env_file_and_dir_references_resolve(tmp_path):
    (tmp_path / "creds.properties").write_text("# team creds\nuser = alice\npassword=s3cr=t\\\n  x\n")
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "key-pass").write_text("k3y")
    r = RefResolver({"PW": "from-env"}, base_dir=tmp_path)
    assert r.resolve("${env:PW}") == "from-env"
    assert r.resolve("${file:creds.properties:password}") == "s3cr=tx"
    assert r.resolve(f"${{file:{tmp_path}/creds.properties:user}}") == "alice"
    assert r.resolve("${dir:secrets:key-pass}") == "k3y"
    assert r.resolve("u=${file:creds.properties:user};p=${env:PW}") == "u=alice;p=from-env"
    assert r.resolve("no reference here") == "no reference here"


@pytest.mark.parametrize("ref, words", [
    ("${env:MISSING}", ["MISSING", "not set", "export"]),
    ("${file:nofile.properties:pw}", ["nofile.properties", "does not exist"]),
    ("${file:creds.properties:nokey}", ["no key 'nokey'", "password"]),
    ("${dir:secrets:absent}", ["no file 'absent'"]),
    ("${dir:secrets:../creds.properties}", ["no file"]),
    ("${vault:path:key}", ["unknown provider 'vault'", "env, file, dir"]),
    ("${file:pw}", ["needs a path and a key"]),
    ("${env}", ["is not a reference"]),
])
def test_bad_references_name_cause_and_fix(tmp_path, ref, words):
    (tmp_path / "creds.properties").write_text("password=x\n")
    (tmp_path / "secrets").mkdir()
    with pytest.raises(ConfigRefError) as err:
        RefResolver({}, base_dir=tmp_path).resolve(ref)
    for word in words:
        assert word in str(err.value)
    assert "password=x" not in str(err.value)


def test_syntax_checks_need_no_environment():
    assert check_ref_syntax("${env:A} and ${file:/p:k} and ${dir:/d:f}") == []
    assert check_ref_syntax("${nope:x}")
    assert is_pure_ref("${env:A}") and not is_pure_ref("x${env:A}") and not is_pure_ref("hunter2")
    assert [r.provider for r in find_refs("${env:A}${file:/p:k}")] == ["env", "file"]


def test_properties_parsing_follows_java():
    props = parse_properties("a=1\nb : 2\nc 3\n! comment\nd=multi\\\n    line\ne\\=f=4\n")
    assert props == {"a": "1", "b": "2", "c": "3", "d": "multiline", "e=f": "4"}


def test_inline_secrets_are_refused_and_shapes_checked():
    with pytest.raises(ValueError, match="must be a reference"):
        ClientSecurity(protocol="SASL_SSL", sasl_mechanism="PLAIN", username="u", password="hunter2")
    with pytest.raises(ValueError, match="needs sasl_mechanism, password"):
        ClientSecurity(protocol="SASL_SSL", username="u")
    with pytest.raises(ValueError, match="cert_pem and key_pem go together"):
        ClientSecurity(protocol="SSL", cert_pem="/c.pem")
    with pytest.raises(ValueError, match="uses no TLS"):
        ClientSecurity(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", username="u", password="${env:P}",
                       ca_pem="/ca.pem")
    with pytest.raises(ValueError):
        ClientSecurity(protocol="SASL_SSL", sasl_mechanism="GSSAPI", username="u", password="${env:P}")


def test_rendering_for_librdkafka_jvm_and_spark(tmp_path):
    (tmp_path / "key.pem").write_text("-----BEGIN PRIVATE KEY-----\nK\n-----END PRIVATE KEY-----\n")
    (tmp_path / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\nC\n-----END CERTIFICATE-----\n")
    model = ClientSecurity(protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username="drill",
                           password="${env:PW}", ca_pem="/ca.pem", cert_pem=str(tmp_path / "cert.pem"),
                           key_pem=str(tmp_path / "key.pem"))
    sec = model.resolve(RefResolver({"PW": 'p"w\\'}))
    assert "p\"w" not in repr(sec) and sec.secrets() == ['p"w\\']
    rd = sec.librdkafka()
    assert rd["sasl.password"] == 'p"w\\' and rd["ssl.ca.location"] == "/ca.pem"
    assert rd["ssl.key.location"].endswith("key.pem") and rd["ssl.endpoint.identification.algorithm"] == "https"
    jvm = sec.jvm()
    assert jvm["sasl.jaas.config"] == ('org.apache.kafka.common.security.scram.ScramLoginModule required '
                                       'username="drill" password="p\\"w\\\\";')
    assert jvm["ssl.truststore.type"] == "PEM" and jvm["ssl.keystore.type"] == "PEM"
    assert "BEGIN PRIVATE KEY" in jvm["ssl.keystore.key"] and "BEGIN CERTIFICATE" in jvm["ssl.keystore.certificate.chain"]
    assert sec.spark_options()["kafka.security.protocol"] == "SASL_SSL"
    assert ResolvedSecurity().librdkafka() == {"security.protocol": "PLAINTEXT"}
    assert jaas_quote('a"b') == '"a\\"b"'


def test_private_files_are_owner_only(tmp_path):
    path = tmp_path / "d" / "f"
    write_private(path, "x")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "x"


def test_java_settings_translate_to_librdkafka(tmp_path):
    (tmp_path / "key.pem").write_text("KEY")
    (tmp_path / "cert.pem").write_text("CERT")
    sec = ResolvedSecurity(protocol="SASL_SSL", sasl_mechanism="PLAIN", username="u", password='a"b',
                           ca_pem="/ca.pem", cert_pem=str(tmp_path / "cert.pem"), key_pem=str(tmp_path / "key.pem"))
    rd = java_to_librdkafka({"bootstrap.servers": "h:1", "max.poll.records": "5", **sec.jvm()})
    assert rd == {"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                  "sasl.username": "u", "sasl.password": 'a"b', "ssl.endpoint.identification.algorithm": "https",
                  "ssl.ca.location": "/ca.pem", "ssl.certificate.pem": "CERT", "ssl.key.pem": "KEY"}
    with pytest.raises(ValueError, match="PEM only"):
        java_to_librdkafka({"ssl.truststore.location": "/t.jks"})
