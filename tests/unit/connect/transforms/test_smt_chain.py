"""Building a connector's transformation chain: aliases, predicates, negate and errors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from connect.api import ConfigDef, Schema, SourceRecord
from connect.api.errors import ConfigError
from connect.transforms import (
    Filter,
    PredicatedTransformation,
    TopicNameMatches,
    build_transformation_chain,
)

KAFKA = "org.apache.kafka.connect.transforms."


def test_kafka_docs_example_hoist_then_insert():
    # Kafka's connect.html example: wrap each line of a file source, then tag its source.
    chain = build_transformation_chain(
        {
            "transforms": "MakeMap, InsertSource",
            "transforms.MakeMap.type": KAFKA + "HoistField$Value",
            "transforms.MakeMap.field": "line",
            "transforms.InsertSource.type": KAFKA + "InsertField$Value",
            "transforms.InsertSource.static.field": "data_source",
            "transforms.InsertSource.static.value": "test-file-source",
        }
    )
    out = chain.apply(SourceRecord(topic="t", value_schema=Schema.STRING_SCHEMA, value="foo"))
    assert [(f.name, f.schema) for f in out.value_schema.fields] == [
        ("line", Schema.STRING_SCHEMA),
        ("data_source", Schema.OPTIONAL_STRING_SCHEMA),
    ]
    assert (out.value.get("line"), out.value.get("data_source")) == ("foo", "test-file-source")
    schemaless = chain.apply(SourceRecord(topic="t", value="bar"))
    assert schemaless.value == {"line": "bar", "data_source": "test-file-source"}


def filter_foo(negate: str | None) -> dict[str, str]:
    props = {
        "transforms": "Filter",
        "transforms.Filter.type": KAFKA + "Filter",
        "transforms.Filter.predicate": "IsFoo",
        "predicates": "IsFoo",
        "predicates.IsFoo.type": KAFKA + "predicates.TopicNameMatches",
        "predicates.IsFoo.pattern": "foo",
    }
    if negate is not None:
        props["transforms.Filter.negate"] = negate
    return props


@pytest.mark.parametrize(
    ("negate", "kept_topics"),
    [(None, ["bar", "foobar"]), ("false", ["bar", "foobar"]), ("true", ["foo"]), (True, ["foo"])],
)
def test_predicate_and_negate_gate_the_transformation(negate, kept_topics):
    chain = build_transformation_chain(filter_foo(negate))
    records = [SourceRecord(topic=topic, value=1) for topic in ("foo", "bar", "foobar")]
    kept = [r.topic for r in records if chain.apply(r) is not None]
    assert kept == kept_topics


def test_chain_runs_stages_in_order_and_stops_at_a_drop():
    chain = build_transformation_chain(
        {
            "transforms": "route,tag,drop",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "(.*)-raw",
            "transforms.route.replacement": "$1",
            "transforms.tag.type": "InsertField$Value",
            "transforms.tag.topic.field": "topic",
            "transforms.drop.type": "Filter",
            "transforms.drop.predicate": "tombstone",
            "predicates": "tombstone",
            "predicates.tombstone.type": "RecordIsTombstone",
        }
    )
    assert len(chain) == 3
    out = chain.apply(SourceRecord(topic="orders-raw", value={"id": 1}))
    assert (out.topic, out.value) == ("orders", {"id": 1, "topic": "orders"})
    assert chain.apply(SourceRecord(topic="orders-raw", value=None)) is None


def test_each_stage_gets_its_own_predicate_instance():
    props = filter_foo(None)
    props["transforms"] = "a,b"
    for alias in ("a", "b"):
        props[f"transforms.{alias}.type"] = "Filter"
        props[f"transforms.{alias}.predicate"] = "IsFoo"
    first, second = build_transformation_chain(props).stages
    assert isinstance(first.predicate, TopicNameMatches)
    assert first.predicate is not second.predicate
    assert (first.alias, second.alias) == ("a", "b")


def test_no_transforms_is_an_empty_chain():
    chain = build_transformation_chain({"name": "connector"})
    record = SourceRecord(topic="t", value=1)
    assert chain.apply(record) is record
    assert len(build_transformation_chain({"transforms": ""})) == 0


@pytest.mark.parametrize(
    ("props", "key", "message"),
    [
        ({"transforms": "a,a"}, "transforms", "Duplicate alias provided"),
        (
            {"transforms": "a"},
            "transforms.a.type",
            'Missing required configuration "transforms.a.type"',
        ),
        (
            {"transforms": "a", "transforms.a.type": "Nope"},
            "transforms.a.type",
            "Unknown transformation type 'Nope'",
        ),
        (
            {"transforms": "a", "transforms.a.type": KAFKA + "predicates.HasHeaderKey"},
            "transforms.a.type",
            "is a predicate, not a transformation",
        ),
        (
            {"transforms": "a", "transforms.a.type": "RegexRouter", "transforms.a.regex": "("},
            "transforms.a.regex",
            r"Invalid value \( for configuration transforms.a.regex: Invalid regex",
        ),
        (
            {
                "transforms": "a",
                "transforms.a.type": "RegexRouter",
                "transforms.a.replacement": "x",
            },
            "transforms.a.regex",
            'Missing required configuration "transforms.a.regex"',
        ),
        (
            {"transforms": "a", "transforms.a.type": "InsertField$Value"},
            "transforms.a.type",
            r"transforms.a \(InsertField\$Value\): No field insertion configured",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.predicate": "p"},
            "transforms.a.predicate",
            "there is no predicate with alias p in 'predicates'",
        ),
        (
            {"transforms": "a", "transforms.a.type": "Filter", "transforms.a.negate": "yes"},
            "transforms.a.negate",
            "Expected value to be either true or false",
        ),
        ({"predicates": "p,p"}, "predicates", "Duplicate alias provided"),
        (
            {"predicates": "p"},
            "predicates.p.type",
            'Missing required configuration "predicates.p.type"',
        ),
        (
            {"predicates": "p", "predicates.p.type": "Filter"},
            "predicates.p.type",
            "Filter is a transformation, not a predicate",
        ),
        (
            {"predicates": "p", "predicates.p.type": "connect.transforms.filter:Filter"},
            "predicates.p.type",
            "is not a predicate",
        ),
        (
            {
                "transforms": "a",
                "transforms.a.type": "Filter",
                "transforms.a.predicate": "p",
                "predicates": "p",
                "predicates.p.type": "TopicNameMatches",
            },
            "predicates.p.pattern",
            'Missing required configuration "predicates.p.pattern"',
        ),
    ],
)
def test_config_errors_name_the_key_the_user_wrote(props, key, message):
    with pytest.raises(ConfigError, match=message) as caught:
        build_transformation_chain(props)
    assert caught.value.name == key


class Recording:
    """A transformation (or predicate) that records close() calls."""

    closed: list[str] = []

    def __init__(self) -> None:
        self.name = ""

    def configure(self, configs: Mapping[str, Any]) -> None:
        self.name = configs.get("name", "")
        if configs.get("fail"):
            raise ConfigError("fail", "asked to fail")

    def apply(self, record: Any) -> Any:
        return record

    def test(self, record: Any) -> bool:
        return True

    def config(self) -> ConfigDef:
        return ConfigDef()

    def close(self) -> None:
        Recording.closed.append(self.name)


def test_plugins_created_before_an_error_are_closed():
    Recording.closed = []
    here = f"{__name__}:Recording"
    props = {
        "transforms": "ok,bad",
        "transforms.ok.type": here,
        "transforms.ok.name": "ok",
        "transforms.bad.type": here,
        "transforms.bad.name": "bad",
        "transforms.bad.fail": "true",
    }
    with pytest.raises(ConfigError) as caught:
        build_transformation_chain(props)
    assert caught.value.name == "transforms.bad.fail"
    assert sorted(Recording.closed) == ["bad", "ok"]


def test_chain_close_closes_transformations_and_predicates():
    Recording.closed = []
    here = f"{__name__}:Recording"
    chain = build_transformation_chain(
        {
            "transforms": "t",
            "transforms.t.type": here,
            "transforms.t.name": "transformation",
            "transforms.t.predicate": "p",
            "predicates": "p",
            "predicates.p.type": here,
            "predicates.p.name": "predicate",
        }
    )
    chain.close()
    assert Recording.closed == ["transformation", "predicate"]


def test_predicated_transformation_directly():
    stage = PredicatedTransformation(Filter(), None, alias="all")
    assert stage.apply(SourceRecord(topic="t", value=1)) is None
    predicate = TopicNameMatches()
    predicate.configure({"pattern": "keep"})
    negated = PredicatedTransformation(Filter(), predicate, negate=True)
    record = SourceRecord(topic="keep", value=1)
    assert negated.applies_to(record) is False
    assert negated.apply(record) is record
    assert negated.apply(SourceRecord(topic="other", value=1)) is None
    assert negated.config() is Filter.CONFIG_DEF
