"""Which broker_properties a drill may set: tuning yes, the harness's listeners, identity and folders no."""

from __future__ import annotations

import pytest

from mirrordrill.harness.drill.broker_settings import outside_address, owner_reason
from mirrordrill.harness.drill.validate import parse_scenario
from tests.unit.test_scenario_validation import BASE


@pytest.mark.parametrize("value, address", [
    ("PLAINTEXT://127.0.0.1:9092", None), ("SSL://localhost:9093,SASL_SSL://[::1]:9094", None),
    ("127.0.0.5:8080", None), ("600000", None), ("kafka.server:type=BrokerTopicMetrics", None), ("12:30", None),
    ("PLAINTEXT://0.0.0.0:9092", "0.0.0.0"), ("10.1.2.3", "10.1.2.3"), ("https://idp.example.com/keys", "idp.example.com"),
    ("broker-1.internal:9092", "broker-1.internal"), ("PLAINTEXT://:9092", "(every interface)"),
])
def test_an_address_outside_loopback_is_found_in_a_value(value, address):
    assert outside_address(value) == address


def test_tuning_settings_are_the_drill_s_and_tls_is_the_harness_s_only_on_a_secure_cluster():
    assert owner_reason("log.retention.ms", secure=True) is None
    assert owner_reason("num.io.threads", secure=False) is None
    assert owner_reason("ssl.client.auth", secure=False) is None
    assert "owns TLS and SASL" in owner_reason("ssl.client.auth", secure=True)
    assert "owns listeners" in owner_reason("listener.name.wan_dr.ssl.client.auth", secure=False)


def test_a_drill_that_tunes_its_brokers_validates():
    text = BASE.replace("  primary: {brokers: 1}\n", "  primary:\n    brokers: 1\n    broker_properties:\n"
                                                     "      log.retention.ms: 600000\n      message.max.bytes: 2097152\n"
                                                     "      log.cleaner.enable: false\n")
    assert parse_scenario(text, "d.yaml").clusters["primary"].broker_properties["log.retention.ms"] == 600000
