"""Filter and the predicates TopicNameMatches, HasHeaderKey and RecordIsTombstone."""

from __future__ import annotations

import pytest

from connect.api import Headers, Predicate, SourceRecord, Transformation
from connect.api.errors import ConfigError
from connect.transforms import Filter, HasHeaderKey, RecordIsTombstone, TopicNameMatches


def test_filter_drops_everything_and_takes_no_config():
    xform = Filter()
    xform.configure({"unrelated": "ignored"})
    assert xform.apply(SourceRecord(topic="t", value=1)) is None
    assert xform.config().names() == []
    assert isinstance(xform, Transformation)


@pytest.mark.parametrize(
    ("pattern", "topic", "matches"),
    [
        ("foo", "foo", True),
        ("foo", "foobar", False),
        ("my-prefix-.*", "my-prefix-orders", True),
        ("my-prefix-.*", "other", False),
        ("(?<env>prod|dev)-.*", "dev-x", True),
    ],
)
def test_topic_name_matches_the_whole_name(pattern, topic, matches):
    predicate = TopicNameMatches()
    predicate.configure({"pattern": pattern})
    assert predicate.test(SourceRecord(topic=topic, value=1)) is matches
    assert isinstance(predicate, Predicate)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({}, "Missing required configuration"),
        ({"pattern": ""}, "non-empty"),
        ({"pattern": "["}, "Invalid regex"),
    ],
)
def test_topic_name_matches_config_errors(props, message):
    with pytest.raises(ConfigError, match=message) as caught:
        TopicNameMatches().configure(props)
    assert caught.value.name == "pattern"


def test_has_header_key():
    predicate = HasHeaderKey()
    predicate.configure({"name": "trace"})
    assert predicate.test(SourceRecord(topic="t", headers=Headers().add_string("trace", None)))
    assert not predicate.test(SourceRecord(topic="t", headers=Headers().add_string("other", "x")))
    with pytest.raises(ConfigError) as caught:
        HasHeaderKey().configure({"name": ""})
    assert caught.value.name == "name"


def test_record_is_tombstone():
    predicate = RecordIsTombstone()
    predicate.configure({})
    assert predicate.test(SourceRecord(topic="t", key="k", value=None))
    assert not predicate.test(SourceRecord(topic="t", key="k", value=0))
