"""TimestampRouter and RegexRouter, with Java's regex and replacement syntax."""

from __future__ import annotations

import re

import pytest

from connect.api import SourceRecord
from connect.api.errors import ConfigError, DataError
from connect.transforms import RegexRouter, TimestampRouter
from connect.transforms.java_regex import JavaReplacement, compile_java_regex


def route(regex: str, replacement: str, topic: str) -> str:
    router = RegexRouter()
    router.configure({"regex": regex, "replacement": replacement})
    return router.apply(SourceRecord(topic=topic, value=1)).topic


def test_timestamp_router_defaults():
    router = TimestampRouter()
    router.configure({})
    out = router.apply(SourceRecord(topic="test", value=1, timestamp=1_483_425_001_864))
    assert out.topic == "test-20170103"
    out = router.apply(SourceRecord(topic="orders", value=1, timestamp=1_704_067_200_000))
    assert out.topic == "orders-20240101"


def test_timestamp_router_reuses_a_format_only_within_its_resolution():
    router = TimestampRouter()
    router.configure({"timestamp.format": "yyyyMMddHH"})
    hour = 3_600_000
    topics = [
        router.apply(SourceRecord(topic="t", value=1, timestamp=ts)).topic
        for ts in (0, hour - 1, hour, hour + 1, 0, -1)
    ]
    assert topics == [
        "t-1970010100",
        "t-1970010100",
        "t-1970010101",
        "t-1970010101",
        "t-1970010100",
        "t-1969123123",
    ]


def test_timestamp_router_custom_formats():
    router = TimestampRouter()
    router.configure(
        {"topic.format": "${timestamp}_${topic}_x", "timestamp.format": "yyyy-MM-dd'T'HH"}
    )
    out = router.apply(SourceRecord(topic="t$1", value=1, timestamp=1_483_425_001_864))
    assert out.topic == "2017-01-03T06_t$1_x"


def test_timestamp_router_errors():
    router = TimestampRouter()
    router.configure({})
    with pytest.raises(DataError, match="Timestamp missing on record"):
        router.apply(SourceRecord(topic="t", value=1))
    with pytest.raises(ConfigError, match="Illegal pattern character 'q'") as caught:
        TimestampRouter().configure({"timestamp.format": "yyyyqq"})
    assert caught.value.name == "timestamp.format"


@pytest.mark.parametrize(
    ("regex", "replacement", "topic", "expected"),
    [
        ("(.*)", "prefix-$1", "orig", "prefix-orig"),
        ("(.*)", "$1-suffix", "orig", "orig-suffix"),
        ("(.*)-(\\d\\d\\d\\d\\d\\d\\d\\d)", "$1", "index-20160117", "index"),
        ("(.*)", "staticReplacement", "orig", "staticReplacement"),
        ("(.*)-match", "$1", "noMatch", "noMatch"),
        ("match", "x", "partial-match", "partial-match"),
        ("(?<base>.*)-raw", "${base}-clean", "orders-raw", "orders-clean"),
        ("(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)(k)", "$11$12", "abcdefghijk", "ka2"),
        ("(.*)", "\\$1 costs \\\\", "x", "$1 costs \\"),
        ("(x)?(.*)", "[$1]$2", "topic", "[]topic"),
        ("a|ab", "X", "ab", "Xb"),
        ("\\Qa.b\\E", "dotted", "a.b", "dotted"),
        ("\\p{Lower}+", "lower", "abc", "lower"),
    ],
)
def test_regex_router(regex, replacement, topic, expected):
    assert route(regex, replacement, topic) == expected


def test_regex_router_leaves_unmatched_records_alone():
    router = RegexRouter()
    router.configure({"regex": "x", "replacement": "y"})
    record = SourceRecord(topic="z", value=1)
    assert router.apply(record) is record


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({"regex": "(", "replacement": "x"}, "regex", "Invalid regex"),
        ({"regex": "[a&&b]", "replacement": "x"}, "regex", "intersection"),
        ({"regex": "(.*)", "replacement": "$2"}, "replacement", "No group 2"),
        ({"regex": "(.*)", "replacement": "$x"}, "replacement", "Illegal group reference"),
        ({"regex": "(.*)", "replacement": "x$"}, "replacement", "group index is missing"),
        ({"regex": "(.*)", "replacement": "${n}"}, "replacement", "No group with name"),
        ({"regex": "(.*)", "replacement": "${n"}, "replacement", "missing trailing '}'"),
        ({"regex": "(.*)", "replacement": "a\\"}, "replacement", "character to be escaped"),
        ({"replacement": "x"}, "regex", "Missing required configuration"),
    ],
)
def test_regex_router_config_errors(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        RegexRouter().configure(props)
    assert caught.value.name == key


def test_java_regex_translation():
    assert compile_java_regex("(?<year>\\d{4})-\\k<year>").fullmatch("2024-2024")
    assert compile_java_regex("a\\z").search("a\n") is None
    assert compile_java_regex("a\\Z").search("a\n")
    assert compile_java_regex("[\\p{Digit}x]+").fullmatch("1x2")
    assert compile_java_regex("\\P{Digit}").fullmatch("a")
    with pytest.raises(ValueError, match="unsupported character class"):
        compile_java_regex("\\p{InGreek}")


def test_java_replacement_with_unmatched_group():
    pattern = re.compile("(a)|(b)")
    replacement = JavaReplacement.parse("<$1|$2>", pattern)
    assert pattern.sub(replacement.expand, "b", count=1) == "<|b>"
