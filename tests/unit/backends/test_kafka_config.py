"""The ``kafka://`` URL and client settings: parsed once, errors name the offending key."""

from __future__ import annotations

import pytest

from core.backends import errors as be
from core.backends.kafka import ClientConfig, KafkaBackend
from core.backends.kafka.config import BrokerAddress, parse_bootstrap


def test_bootstrap_lists_hosts_ports_and_ipv6():
    assert parse_bootstrap("kafka://h1:9093,h2,[::1]:19092/") == (
        BrokerAddress("h1", 9093), BrokerAddress("h2", 9092), BrokerAddress("::1", 19092))
    assert str(BrokerAddress("::1", 1)) == "[::1]:1"


@pytest.mark.parametrize("url", ["kafka://", "kafka://h:99999", "kafka://h:1,,h2:2",
                                 "embedded:./x", "kafka:/h:1", "kafka://h:port"])
def test_bad_urls_are_invalid_backend_urls(url):
    with pytest.raises(be.InvalidBackendUrlError):
        ClientConfig.parse(url)


def test_settings_by_kafka_names():
    config = ClientConfig.parse("kafka://h:1", {
        "client.id": "me", "request.timeout.ms": "500", "acks": "1",
        "compression.type": "zstd", "num.partitions": "3"})  # not a client setting: ignored
    assert (config.client_id, config.request_timeout_ms, config.acks) == ("me", 500, 1)
    assert config.compression == 4 and config.acks_configured
    defaults = ClientConfig.parse("kafka://h:1")
    assert (defaults.acks, defaults.api_timeout_ms, defaults.acks_configured) == (-1, 60000, False)


@pytest.mark.parametrize(("key", "value"), [("request.timeout.ms", "soon"), ("acks", "2"),
                                            ("compression.type", "brotli"),
                                            ("retry.backoff.ms", "-1")])
def test_bad_values_name_their_key(key, value):
    with pytest.raises(be.InvalidConfigError) as info:
        KafkaBackend.from_url("kafka://h:1", {key: value})
    assert info.value.key == key
    assert value in str(info.value)


def test_opening_does_not_connect_and_close_is_final():
    backend = KafkaBackend.from_url("kafka://127.0.0.1:1")  # nothing listens there
    assert backend.url == "kafka://127.0.0.1:1"
    backend.close()
    backend.close()
    with pytest.raises(be.BackendError, match="closed"):
        backend.list_topics()
