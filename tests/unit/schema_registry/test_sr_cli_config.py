"""``RegistryConfig.from_props``: Confluent's property names, defaults and bad values."""

from __future__ import annotations

import pytest

from schema_registry.config import RegistryConfig, parse_host_port
from schema_registry.errors import RegistryConfigError


def test_defaults():
    config = RegistryConfig.from_props({})
    assert (config.host, config.port, config.topic, config.group_id) == (
        "127.0.0.1", 8081, "_schemas", "schema-registry")
    assert config.default_compatibility == "BACKWARD"
    assert config.leader_eligible and config.mode_mutable
    assert config.advertised(8081) == ("127.0.0.1", 8081)


def test_confluent_names_are_read():
    config = RegistryConfig.from_props({
        "listeners": "http://0.0.0.0:18081,http://0.0.0.0:18082",
        "host.name": "sr-1.example", "kafkastore.topic": "_schemas_b",
        "schema.compatibility.level": "full_transitive",
        "schema.registry.group.id": "sr-b", "leader.eligibility": "false",
        "kafkagroup.session.timeout.ms": "6000", "mode.mutability": "FALSE",
        "kafkastore.bootstrap.servers": "PLAINTEXT://k1:9092,k2:9093",
        "unknown.key": "ignored"})
    assert (config.host, config.port) == ("0.0.0.0", 18081)
    assert config.advertised(18081) == ("sr-1.example", 18081)
    assert config.topic == "_schemas_b" and config.group_id == "sr-b"
    assert config.default_compatibility == "FULL_TRANSITIVE"
    assert not config.leader_eligible and not config.mode_mutable
    assert config.session_timeout_ms == 6000
    assert config.log_url_from_bootstrap() == "kafka://k1:9092,k2:9093"


def test_the_deprecated_names_still_work():
    config = RegistryConfig.from_props({"master.eligibility": "false",
                                        "avro.compatibility.level": "none"})
    assert not config.leader_eligible
    assert config.default_compatibility == "NONE"


@pytest.mark.parametrize(("props", "key"), [
    ({"kafkagroup.session.timeout.ms": "soon"}, "kafkagroup.session.timeout.ms"),
    ({"kafkastore.timeout.ms": "0"}, "kafkastore.timeout.ms"),
    ({"leader.eligibility": "maybe"}, "leader.eligibility"),
    ({"schema.compatibility.level": "sideways"}, "schema.compatibility.level"),
    ({"listeners": "ftp://h:1"}, "listeners"),
])
def test_bad_values_name_their_key(props, key):
    with pytest.raises(RegistryConfigError, match=key):
        RegistryConfig.from_props(props)


@pytest.mark.parametrize(("text", "expected"), [
    ("127.0.0.1:8081", ("127.0.0.1", 8081)), ("[::1]:0", ("::1", 0)),
    ("http://localhost:80/", ("localhost", 80)),
])
def test_listener_forms(text, expected):
    assert parse_host_port(text) == expected


@pytest.mark.parametrize("text", ["8081", "host:", ":8081", "host:99999", "host:port"])
def test_bad_listeners(text):
    with pytest.raises(RegistryConfigError, match="HOST:PORT"):
        parse_host_port(text)
