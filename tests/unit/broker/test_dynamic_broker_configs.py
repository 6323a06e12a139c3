"""Dynamic broker configs over real frames: IncrementalAlterConfigs and AlterConfigs on
BROKER resources, per broker and as the cluster-wide default, their sources in
DescribeConfigs, per-resource errors naming the keys, and persistence across restarts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from broker_harness import InProcessBroker
from kafka.protocol.admin.configs import (
    AlterConfigsRequest,
    DescribeConfigsRequest,
    IncrementalAlterConfigsRequest,
)

from core.broker.admin_common import ConfigSource
from core.broker.dynamic_config import DYNAMIC_FILE
from core.protocol.errors import ErrorCode

BROKER, TOPIC = 4, 2
SET, DELETE, APPEND = 0, 1, 2
_Inc = IncrementalAlterConfigsRequest.AlterConfigsResource
_Op = _Inc.AlterableConfig
_Rep = AlterConfigsRequest.AlterConfigsResource
_Desc = DescribeConfigsRequest.DescribeConfigsResource


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[InProcessBroker]:
    b = InProcessBroker(tmp_path, {"log.retention.ms": "3600000"})
    b.manager.create_topic("t", 1)
    b.manager.create_topic("own", 1, {"retention.ms": "5"})
    yield b
    b.close()


def incremental(b: InProcessBroker, name: str, *ops: tuple[str, int, str | None],
                resource_type: int = BROKER, validate_only: bool = False) -> Any:
    client = b.client()
    try:
        [r] = client.call(IncrementalAlterConfigsRequest(validate_only=validate_only, resources=[
            _Inc(resource_type=resource_type, resource_name=name,
                 configs=[_Op(name=k, config_operation=op, value=v) for k, op, v in ops])]),
            1).responses
        return r
    finally:
        client.close()


def describe(b: InProcessBroker, name: str) -> dict[str, Any]:
    client = b.client()
    try:
        [r] = client.call(DescribeConfigsRequest(
            resources=[_Desc(resource_type=BROKER, resource_name=name, configuration_keys=None)],
            include_synonyms=True, include_documentation=False), 4).results
    finally:
        client.close()
    assert r.error_code == ErrorCode.NONE
    return {c.name: c for c in r.configs}


def _describe_topic(b: InProcessBroker, name: str) -> list[Any]:
    client = b.client()
    try:
        [r] = client.call(DescribeConfigsRequest(
            resources=[_Desc(resource_type=TOPIC, resource_name=name,
                             configuration_keys=["retention.ms"])],
            include_synonyms=True, include_documentation=False), 4).results
    finally:
        client.close()
    return r.configs


def test_passwords_are_neither_described_nor_logged(broker: InProcessBroker,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    secret = "listener.name.plain.ssl.keystore.password"
    with caplog.at_level("INFO"):
        assert incremental(broker, "0", (secret, SET, "hunter2")).error_code == 0
    entry = describe(broker, "0")[secret]
    assert (entry.value, entry.is_sensitive) == (None, True)
    assert all(s.value is None for s in entry.synonyms)
    assert f"'{secret}': '[hidden]'" in caplog.text
    assert "hunter2" not in caplog.text
    assert (broker.data_dir / DYNAMIC_FILE).stat().st_mode & 0o077 == 0


def test_a_dynamic_topic_default_reaches_topics_at_once(broker: InProcessBroker) -> None:
    r = incremental(broker, "0", ("log.retention.ms", SET, "120000"))
    assert (r.error_code, r.error_message) == (ErrorCode.NONE, None)
    assert broker.manager.topic("t").config.retention_ms == 120000
    assert broker.manager.log("t", 0).config.retention_ms == 120000
    assert broker.manager.topic("own").config.retention_ms == 5  # its override wins
    entry = describe(broker, "0")["log.retention.ms"]
    assert (entry.value, entry.config_source, entry.read_only) == (
        "120000", ConfigSource.DYNAMIC_BROKER_CONFIG, False)
    assert [(s.value, s.source) for s in entry.synonyms] == [
        ("120000", ConfigSource.DYNAMIC_BROKER_CONFIG),
        ("3600000", ConfigSource.STATIC_BROKER_CONFIG),
        ("604800000", ConfigSource.DEFAULT_CONFIG)]
    [topic] = _describe_topic(broker, "t")
    assert (topic.value, topic.config_source) == ("120000", ConfigSource.DYNAMIC_BROKER_CONFIG)
    assert [s.source for s in topic.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.STATIC_BROKER_CONFIG,
        ConfigSource.DEFAULT_CONFIG]
    # DELETE goes back to the config file's value.
    assert incremental(broker, "0", ("log.retention.ms", DELETE, None)).error_code == 0
    assert broker.manager.topic("t").config.retention_ms == 3600000


def test_cluster_default_level_and_kafka_only_names(broker: InProcessBroker) -> None:
    assert incremental(broker, "", ("message.max.bytes", SET, "2000000"),
                       ("num.network.threads", SET, "4")).error_code == 0
    assert incremental(broker, "0", ("sasl.kerberos.min.time.before.relogin", SET, "58000"),
                       ("log.cleanup.policy", APPEND, "compact")).error_code == 0
    assert broker.manager.topic("t").config.max_message_bytes == 2000000
    assert broker.manager.topic("t").config.cleanup_policy == ("delete", "compact")
    defaults = describe(broker, "")
    assert {n: (c.value, c.config_source) for n, c in defaults.items()} == {
        "message.max.bytes": ("2000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        "num.network.threads": ("4", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)}
    mine = describe(broker, "0")
    assert (mine["message.max.bytes"].value, mine["message.max.bytes"].config_source) == (
        "2000000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
    assert mine["sasl.kerberos.min.time.before.relogin"].value == "58000"


@pytest.mark.parametrize(("name", "op", "code", "text"), [
    (("node.id", SET, "3"), "0", ErrorCode.INVALID_REQUEST,
     "Cannot update these configs dynamically: ['node.id']"),
    (("no.such.config", SET, "1"), "0", ErrorCode.INVALID_CONFIG,
     "Unknown broker config name: no.such.config"),
    (("listeners", SET, "PLAINTEXT://:1"), "", ErrorCode.INVALID_REQUEST,
     "broker id must be specified: ['listeners']"),
    (("ssl.keystore.location", SET, "/k"), "0", ErrorCode.INVALID_REQUEST,
     "only per-listener using the listener prefix: ['ssl.keystore.location']"),
    (("log.retention.ms", SET, "soon"), "0", ErrorCode.INVALID_CONFIG, "log.retention.ms"),
    (("num.network.threads", SET, "many"), "", ErrorCode.INVALID_CONFIG,
     "Invalid value many for configuration num.network.threads: Not a number of type INT"),
    (("num.io.threads", APPEND, "2"), "0", ErrorCode.INVALID_CONFIG, "num.io.threads"),
    (("log.retention.ms", SET, None), "0", ErrorCode.INVALID_CONFIG, "log.retention.ms"),
])
def test_refused_keys_fail_their_resource_only(broker: InProcessBroker, name: tuple,
                                               op: str, code: int, text: str) -> None:
    client = broker.client()
    try:
        response = client.call(IncrementalAlterConfigsRequest(validate_only=False, resources=[
            _Inc(resource_type=BROKER, resource_name=op,
                 configs=[_Op(name=name[0], config_operation=name[1], value=name[2])]),
            _Inc(resource_type=TOPIC, resource_name="t",
                 configs=[_Op(name="retention.ms", config_operation=SET, value="7")])]), 1)
    finally:
        client.close()
    refused, topic = response.responses
    assert refused.error_code == code
    assert text in refused.error_message
    assert topic.error_code == ErrorCode.NONE
    assert broker.manager.topic("t").overrides == {"retention.ms": "7"}
    assert not (broker.data_dir / DYNAMIC_FILE).exists()


def test_validate_only_and_legacy_alter_configs(broker: InProcessBroker) -> None:
    r = incremental(broker, "0", ("log.retention.ms", SET, "1000"), validate_only=True)
    assert r.error_code == 0
    assert broker.manager.topic("t").config.retention_ms == 3600000
    client = broker.client()
    try:
        for pairs in ({"log.segment.bytes": "1000000", "num.io.threads": "2"},
                      {"num.io.threads": "3"}):
            [r] = client.call(AlterConfigsRequest(validate_only=False, resources=[
                _Rep(resource_type=BROKER, resource_name="0", configs=[
                    _Rep.AlterableConfig(name=k, value=v) for k, v in pairs.items()])]),
                2).responses
            assert r.error_code == 0
    finally:
        client.close()
    # The legacy API replaces the whole level.
    stored = json.loads((broker.data_dir / DYNAMIC_FILE).read_text())
    assert stored["broker"] == {"num.io.threads": "3"}
    assert broker.manager.topic("t").config.segment_bytes == 1073741824


def test_dynamic_configs_survive_a_restart(tmp_path: Path) -> None:
    first = InProcessBroker(tmp_path)
    try:
        first.manager.create_topic("t", 1)
        assert incremental(first, "0", ("log.segment.bytes", SET, "500000")).error_code == 0
        assert incremental(first, "", ("log.retention.ms", SET, "99000")).error_code == 0
    finally:
        first.close()
    second = InProcessBroker(tmp_path)
    try:
        config = second.manager.topic("t").config
        assert (config.segment_bytes, config.retention_ms) == (500000, 99000)
        assert describe(second, "0")["log.segment.bytes"].config_source == (
            ConfigSource.DYNAMIC_BROKER_CONFIG)
    finally:
        second.close()
