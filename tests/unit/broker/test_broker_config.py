"""BrokerConfig: Kafka names, types, defaults, files (.properties and JSON), clear errors."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest

from core.broker.config import BrokerConfig, BrokerConfigError, load_config_file, parse_properties


def test_defaults_are_kafkas_except_auto_create() -> None:
    config = BrokerConfig.parse({})
    assert (config.node_id, config.num_partitions, config.auto_create_topics_enable,
            config.socket_request_max_bytes, config.group_initial_rebalance_delay_ms,
            config.offsets_topic_num_partitions) == (0, 1, False, 104857600, 3000, 50)
    assert config.topic_defaults.max_message_bytes == 1048588


def test_values_are_parsed_once_into_types_and_topic_defaults() -> None:
    config = BrokerConfig.parse({
        "broker.id": "4", "num.partitions": "3", "auto.create.topics.enable": "TRUE",
        "log.retention.hours": "2", "message.max.bytes": "5000",
        "log.flush.interval.messages": "1", "group.initial.rebalance.delay.ms": 0,
    })
    assert (config.node_id, config.num_partitions, config.auto_create_topics_enable) == (4, 3,
                                                                                        True)
    assert config.group_initial_rebalance_delay_ms == 0
    defaults = config.topic_defaults
    assert (defaults.retention_ms, defaults.max_message_bytes, defaults.flush_messages) == (
        7200000, 5000, 1)
    assert config.raw["broker.id"] == "4" and config.raw["group.initial.rebalance.delay.ms"] == "0"


@pytest.mark.parametrize(("settings", "key"), [
    ({"num.partitions": "many"}, "num.partitions"),
    ({"num.partitions": "0"}, "num.partitions"),
    ({"auto.create.topics.enable": "yes"}, "auto.create.topics.enable"),
    ({"default.replication.factor": "3"}, "default.replication.factor"),
    ({"log.retention.ms": "soon"}, "log.retention.ms"),
    ({"log.segment.bytes": "1"}, "log.segment.bytes"),
    ({"broker.id": "-1"}, "broker.id"),
    ({"group.min.session.timeout.ms": "10", "group.max.session.timeout.ms": "5"},
     "group.min.session.timeout.ms"),
    ({"num.partitions": ["1"]}, "num.partitions"),
])
def test_a_bad_value_is_one_error_naming_the_key(settings: dict, key: str) -> None:
    with pytest.raises(BrokerConfigError) as info:
        BrokerConfig.parse(settings)
    assert info.value.key == key and key in str(info.value)


def test_unknown_keys_are_logged_and_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="core.broker.config"):
        config = BrokerConfig.parse({"no.such.setting": "1", "zookeeper.connect": "zk:2181"})
    assert dataclasses.replace(config, raw={}) == BrokerConfig.parse({})
    messages = [r.getMessage() for r in caplog.records]
    assert any("no.such.setting" in m and r.levelno == logging.WARNING
               for m, r in zip(messages, caplog.records, strict=True))
    assert any("zookeeper.connect" in m and "no effect" in m for m in messages)


def test_properties_syntax() -> None:
    text = "\n".join([
        "# comment", "! also a comment", "a=1", "b : 2", "c 3", "  d = spaced  ",
        "long=first\\", "    second", "key\\=with\\:seps=v", "uni=\\u0041\\t", "empty=",
    ])
    assert parse_properties(text) == {
        "a": "1", "b": "2", "c": "3", "d": "spaced  ", "long": "firstsecond",
        "key=with:seps": "v", "uni": "A\t", "empty": "",
    }


def test_config_files_properties_and_json(tmp_path: Path) -> None:
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=6\nlog.dirs=/data/kafka\n")
    assert load_config_file(props) == {"num.partitions": "6", "log.dirs": "/data/kafka"}
    as_json = tmp_path / "broker.json"
    as_json.write_text('{"num.partitions": 6, "auto.create.topics.enable": true}')
    config = BrokerConfig.parse(load_config_file(as_json))
    assert (config.num_partitions, config.auto_create_topics_enable) == (6, True)
    for bad, text in (("list.json", "[1]"), ("broken.json", "{nope")):
        (tmp_path / bad).write_text(text)
        with pytest.raises(BrokerConfigError, match=bad):
            load_config_file(tmp_path / bad)
    with pytest.raises(BrokerConfigError, match="missing"):
        load_config_file(tmp_path / "missing.properties")
