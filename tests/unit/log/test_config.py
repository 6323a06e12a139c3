"""Topic config declaration: Kafka's names, defaults, parsing and validation."""

from __future__ import annotations

import pytest

from core.log.config import (
    TOPIC_CONFIGS,
    TopicConfig,
    broker_defaults,
    parse_topic_configs,
)
from core.log.errors import InvalidConfigError


def test_defaults_are_kafkas():
    rendered = TopicConfig().to_kafka()
    assert rendered["cleanup.policy"] == "delete"
    assert rendered["retention.ms"] == "604800000"
    assert rendered["segment.bytes"] == "1073741824"
    assert rendered["max.message.bytes"] == "1048588"
    assert rendered["delete.retention.ms"] == "86400000"
    assert rendered["flush.messages"] == str(2**63 - 1)
    assert set(rendered) == set(TOPIC_CONFIGS)


def test_every_key_maps_to_a_field():
    config = TopicConfig()
    for key in TOPIC_CONFIGS.values():
        assert hasattr(config, key.attribute), key.name


def test_overrides_parse_typed_values():
    config = TopicConfig().with_overrides(
        {"cleanup.policy": "compact,delete", "retention.ms": "-1", "preallocate": "TRUE",
         "min.cleanable.dirty.ratio": "0.25"})
    assert config.compact and config.delete
    assert config.retention_ms == -1
    assert config.preallocate is True
    assert config.min_cleanable_dirty_ratio == 0.25


@pytest.mark.parametrize(("key", "value"), [
    ("retention.ms", "soon"),
    ("retention.ms", "-2"),
    ("segment.bytes", "10"),
    ("cleanup.policy", "shred"),
    ("message.timestamp.type", "Sometime"),
    ("preallocate", "yes"),
    ("min.cleanable.dirty.ratio", "1.5"),
])
def test_bad_values_name_the_key(key, value):
    with pytest.raises(InvalidConfigError) as info:
        parse_topic_configs({key: value})
    assert info.value.key == key
    assert key in str(info.value)


def test_unknown_key_is_rejected():
    with pytest.raises(InvalidConfigError) as info:
        TopicConfig().with_overrides({"retention.msx": "1"})
    assert info.value.key == "retention.msx"


def test_broker_defaults_use_broker_names():
    config = broker_defaults({"log.retention.hours": "1", "log.segment.bytes": "1024",
                              "unrelated.key": "x"})
    assert config.retention_ms == 3600000
    assert config.segment_bytes == 1024
    assert broker_defaults({"log.retention.ms": "5", "log.retention.hours": "1"}).retention_ms == 5
    with pytest.raises(InvalidConfigError) as info:
        broker_defaults({"log.segment.bytes": "tiny"})
    assert info.value.key == "log.segment.bytes"


def test_deprecated_topic_configs_are_accepted_validated_and_ignored(caplog) -> None:
    from core.log.config import DEPRECATED_IGNORED, parse_topic_configs

    given = {"message.format.version": "0.10.0", "message.downconversion.enable": "false",
             "message.timestamp.difference.max.ms": "1000"}
    assert set(given) == DEPRECATED_IGNORED
    with caplog.at_level("WARNING"):
        assert parse_topic_configs(given) == given
    assert "message.format.version=0.10.0 is deprecated and ignored" in caplog.text
    for version in ("2.8", "3.0-IV1", "0.8.2"):
        parse_topic_configs({"message.format.version": version})
    with pytest.raises(InvalidConfigError) as info:
        parse_topic_configs({"message.format.version": "banana"})
    assert info.value.key == "message.format.version"


def test_the_page_cache_window_is_a_validated_topic_and_broker_setting():
    assert TopicConfig().page_cache_window_bytes == 1 << 30
    assert TopicConfig().with_overrides(
        {"ferry.page.cache.window.bytes": "-1"}).page_cache_window_bytes == -1
    assert broker_defaults(
        {"ferry.page.cache.window.bytes": "268435456"}).page_cache_window_bytes == 256 << 20
    with pytest.raises(InvalidConfigError) as err:
        TopicConfig().with_overrides({"ferry.page.cache.window.bytes": "-2"})
    assert err.value.key == "ferry.page.cache.window.bytes"
