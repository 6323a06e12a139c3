"""The Elasticsearch sink's pure parts: index names, ids, versions, actions, mappings,
mapping conflicts, offset tracking and cross-key config rules (no server needed)."""

from __future__ import annotations

import datetime as dt
import decimal
import json

import pytest

from connect.api import (
    ConfigError,
    DataError,
    Date,
    Decimal,
    Headers,
    OffsetAndMetadata,
    SchemaBuilder,
    SinkRecord,
    Struct,
    Timestamp,
    TopicPartition,
)
from connectors.elasticsearch.config import EsSinkConfig
from connectors.elasticsearch.documents import to_action
from connectors.elasticsearch.mapping import MappingConflict, conflicts, mapping_for
from connectors.elasticsearch.naming import data_stream_name, index_name
from connectors.elasticsearch.offsets import OffsetTracker


def cfg(**extra: str) -> EsSinkConfig:
    return EsSinkConfig.from_props({"connection.url": "http://localhost:9200", **extra})


def rec(value: object, key: object = "k", offset: int = 7, schema=None, topic: str = "T",
        headers: Headers | None = None, timestamp: int | None = 1234) -> SinkRecord:
    return SinkRecord(topic=topic, kafka_partition=2, kafka_offset=offset, key=key,
                      value=value, value_schema=schema, timestamp=timestamp,
                      headers=headers or Headers())


def lines(action) -> list[dict]:
    return [json.loads(line) for line in action.lines.splitlines()]


@pytest.mark.parametrize(("topic", "index"), [
    ("Orders", "orders"), ("_private", "private"), ("-dash", "dash"), (".", "dot"),
    ("..", "dotdot"), ("a" * 300, "a" * 255), ("__x", "_x")])
def test_index_names_follow_confluent(topic: str, index: str) -> None:
    assert index_name(topic) == index


def test_data_stream_names() -> None:
    c = cfg(**{"data.stream.type": "LOGS", "data.stream.dataset": "app"})
    assert data_stream_name(c, "Clicks") == "logs-app-clicks"
    assert data_stream_name(c, "x" * 150) == "logs-app-" + "x" * 100


def test_index_action_with_offset_version_and_key_id() -> None:
    action = to_action(cfg(), rec({"a": 1}))
    assert lines(action) == [{"index": {"_index": "t", "_id": "k", "version": 7,
                                        "version_type": "external"}}, {"a": 1}]


def test_key_ignore_uses_topic_partition_offset_without_versions() -> None:
    action = to_action(cfg(**{"key.ignore": "true"}), rec({"a": 1}, key=None))
    assert lines(action)[0] == {"index": {"_index": "t", "_id": "T+2+7"}}


def test_keys_must_be_strings_or_integers() -> None:
    with pytest.raises(DataError, match="can not be null"):
        to_action(cfg(), rec({"a": 1}, key=None))
    with pytest.raises(DataError, match="cannot be a document id"):
        to_action(cfg(), rec({"a": 1}, key={"id": 1}))
    assert lines(to_action(cfg(), rec({"a": 1}, key=42)))[0]["index"]["_id"] == "42"


def test_version_from_header_and_from_field() -> None:
    headers = Headers().add_string("ver", "99")
    action = to_action(cfg(**{"external.version.header": "ver"}), rec({"a": 1},
                                                                       headers=headers))
    assert lines(action)[0]["index"]["version"] == 99
    with pytest.raises(DataError, match="no header 'ver'"):
        to_action(cfg(**{"external.version.header": "ver"}), rec({"a": 1}))
    field = cfg(**{"version.mode": "field", "version.field": "ts"})
    assert lines(to_action(field, rec({"ts": 5})))[0]["index"]["version"] == 5
    with pytest.raises(DataError, match="not an integer"):
        to_action(field, rec({"ts": "soon"}))


def test_tombstones() -> None:
    assert to_action(cfg(**{"behavior.on.null.values": "ignore"}), rec(None)) is None
    with pytest.raises(DataError, match=r"behavior\.on\.null\.values=FAIL"):
        to_action(cfg(), rec(None))
    delete = to_action(cfg(**{"behavior.on.null.values": "delete"}), rec(None))
    assert lines(delete) == [{"delete": {"_index": "t", "_id": "k", "version": 7,
                                         "version_type": "external"}}]
    assert to_action(cfg(**{"behavior.on.null.values": "delete"}), rec(None, key=None)) \
        is None


def test_upsert_and_data_stream_actions() -> None:
    up = to_action(cfg(**{"write.method": "upsert"}), rec({"a": 1}))
    assert lines(up) == [{"update": {"_index": "t", "_id": "k", "retry_on_conflict": 5}},
                         {"doc": {"a": 1}, "doc_as_upsert": True}]
    ds = cfg(**{"data.stream.type": "metrics", "data.stream.dataset": "d",
                "data.stream.timestamp.field": "when"})
    assert lines(to_action(ds, rec({"a": 1}))) == [
        {"create": {"_index": "metrics-d-t", "_id": "k"}}, {"a": 1, "@timestamp": 1234}]
    assert lines(to_action(ds, rec({"when": "2024-01-01"})))[1]["@timestamp"] == "2024-01-01"


def test_struct_documents_convert_logical_types() -> None:
    schema = (SchemaBuilder.struct().field("d", Date.SCHEMA).field("ts", Timestamp.SCHEMA)
              .field("m", Decimal.schema(2))
              .field("kv", SchemaBuilder.map(SchemaBuilder.int32().build(),
                                             SchemaBuilder.string().build()).build())
              .build())
    value = (Struct(schema).put("d", dt.date(2024, 2, 29))
             .put("ts", dt.datetime(2024, 1, 1, tzinfo=dt.UTC))
             .put("m", decimal.Decimal("1.25")).put("kv", {1: "x"}))
    assert lines(to_action(cfg(), rec(value, schema=schema)))[1] == {
        "d": "2024-02-29", "ts": 1704067200000, "m": 1.25, "kv": [{"key": 1, "value": "x"}]}
    assert mapping_for(schema) == {"properties": {
        "d": {"type": "date"}, "ts": {"type": "date"}, "m": {"type": "double"},
        "kv": {"properties": {"key": {"type": "integer"}, "value": {
            "type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 256}}}}}}}


def test_primitive_values_are_not_documents() -> None:
    with pytest.raises(DataError, match="only structs and maps"):
        to_action(cfg(), rec("just a string"))


def test_mapping_conflicts_name_the_field_and_both_types() -> None:
    server = {"properties": {"a": {"type": "keyword"}, "n": {"type": "integer"},
                             "o": {"properties": {"x": {"type": "date"}}}}}
    wanted = {"properties": {"a": {"type": "long"}, "n": {"type": "long"},
                             "o": {"properties": {"x": {"type": "boolean"}}},
                             "new": {"type": "long"}}}
    found = conflicts(server, wanted)
    assert found == [MappingConflict("n", "integer", "long"),
                     MappingConflict("o.x", "date", "boolean")]
    assert str(found[0]) == ("field 'n' is 'integer' in the index but 'long' in the record "
                             "schema")


def test_offsets_stop_at_the_first_record_not_done() -> None:
    tracker, tp = OffsetTracker(), TopicPartition("t", 0)
    states = [tracker.add(tp, o) for o in (3, 4, 6)]  # 5 was filtered by a transform
    current = {tp: OffsetAndMetadata(7)}
    assert tracker.offsets(current) == {tp: OffsetAndMetadata(3)}
    states[0].done()
    states[2].done()
    assert tracker.offsets(current) == {tp: OffsetAndMetadata(4)}
    states[1].done()
    assert tracker.offsets(current) == {tp: OffsetAndMetadata(7)}


@pytest.mark.parametrize(("props", "key"), [
    ({"connection.url": "localhost:9200"}, "connection.url"),
    ({"version.mode": "field"}, "version.field"),
    ({"external.resource.usage": "INDEX"}, "topic.to.external.resource.mapping"),
    ({"topic.to.external.resource.mapping": "a:b"}, "external.resource.usage"),
    ({"write.method": "upsert", "use.autogenerated.ids": "true"}, "use.autogenerated.ids"),
    ({"data.stream.type": "logs", "write.method": "upsert"}, "write.method"),
])
def test_config_rules_name_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as err:
        EsSinkConfig.from_props({"connection.url": "http://h:9200", **props})
    assert err.value.name == key


def test_a_retried_unversioned_write_is_followed_by_the_later_writes_of_its_id() -> None:
    from connectors.elasticsearch.bulk import _Item, _with_later_writes_of_the_same_ids
    from connectors.elasticsearch.offsets import OffsetState

    plain = cfg(**{"version.mode": "none"})
    items = [_Item(to_action(plain, rec({"v": n}, key=k, offset=n)), OffsetState(n))
             for n, k in enumerate(["a", "b", "a", "c", "a"])]
    # Item 0 (a) refused with 429, the later writes of a (2 and 4) had succeeded.
    assert _with_later_writes_of_the_same_ids(items, [items[0], items[3]]) == [
        items[0], items[2], items[3], items[4]]
    versioned = [_Item(to_action(cfg(), rec({"v": n}, key="a", offset=n)), OffsetState(n))
                 for n in range(3)]
    assert _with_later_writes_of_the_same_ids(versioned, [versioned[0]]) == [versioned[0]]


def test_java_keystores_are_refused_naming_the_key(tmp_path) -> None:
    jks = tmp_path / "truststore.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    with pytest.raises(ConfigError) as err:
        cfg(**{"elastic.security.protocol": "SSL",
               "elastic.https.ssl.truststore.location": str(jks)})
    assert err.value.name == "elastic.https.ssl.truststore.location"
    assert "not a PEM file" in str(err.value)
    with pytest.raises(ConfigError, match="cannot read"):
        cfg(**{"elastic.https.ssl.keystore.location": str(tmp_path / "missing.pem")})
