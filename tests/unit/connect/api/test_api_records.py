"""Connect records: construction, immutability and new_record copies for transformations."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest

from connect.api.coordinates import RecordMetadata, TimestampType, TopicPartition
from connect.api.data import Schema, SchemaBuilder, Struct
from connect.api.errors import DataError
from connect.api.header import Header, Headers
from connect.api.record import ConnectRecord, SinkRecord, SourceRecord, headers_or_none


def _source() -> SourceRecord:
    return SourceRecord(
        source_partition={"file": "/tmp/in.txt"},
        source_offset={"position": 42},
        topic="lines",
        kafka_partition=None,
        key_schema=Schema.OPTIONAL_STRING_SCHEMA,
        key=None,
        value_schema=Schema.STRING_SCHEMA,
        value="hello",
        timestamp=1_700_000_000_000,
        headers=Headers().add_string("origin", "file"),
    )



def _headerless() -> list[SourceRecord]:
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    built = SourceRecord.many(Struct.from_rows(schema, [(1,), (2,)]), [{"n": 1}, {"n": 2}],
                              topic="t", value_schema=schema, source_partition={"p": 1})
    made = SourceRecord.maker(topic="t", key_schema=Schema.INT64_SCHEMA, value_schema=schema,
                              source_partition={"p": 1})(4, Struct.from_values(schema, [4]),
                                                         {"n": 4})
    return [*built, SourceRecord(topic="t", value=3, headers=None), made]


def test_source_records_built_without_headers_make_them_on_first_read():
    for record in _headerless():
        assert "headers" not in vars(record) and headers_or_none(record) is None
        headers = record.headers
        assert headers == Headers() and record.headers is headers  # made once, then kept
        headers.add_string("h", "v")
        assert headers_or_none(record) is headers
        assert record.headers.last_with_name("h").value == "v"
    first, second, *_ = _headerless()
    first.headers.add_string("h", "v")
    assert not second.headers  # each record's own
    given = _source()
    assert headers_or_none(given) is given.headers
    assert list(vars(given)) == [f.name for f in dataclasses.fields(given)]
    assert headers_or_none(SinkRecord(topic="t", kafka_partition=0, kafka_offset=0)) == \
        Headers()


def test_headerless_source_records_work_with_copies_equality_and_dataclass_helpers():
    record, other, keyworded, _made = _headerless()
    derived = record.new_record(value=None)
    assert headers_or_none(derived) is None and headers_or_none(record) is None
    derived.headers.add_string("h", "v")
    assert headers_or_none(record) is None  # the copy's headers are its own
    assert record.new_record(headers=[Header("k", None, 1)]).headers.last_with_name("k")
    assert record == _headerless()[0] and record != other
    assert "headers=Headers([])" in repr(_headerless()[0])
    assert keyworded == SourceRecord(topic="t", value=3, headers=Headers())
    for clone in (pickle.loads(pickle.dumps(_headerless()[0])), copy.copy(_headerless()[0]),
                  copy.deepcopy(_headerless()[0])):
        assert clone == record and type(clone) is SourceRecord
        assert clone.headers is not record.headers
    replaced = dataclasses.replace(_headerless()[0], value="x")
    assert replaced.value == "x" and replaced.headers == Headers()
    assert dataclasses.asdict(_headerless()[2])["headers"] == Headers()
    assert [f.name for f in dataclasses.fields(SourceRecord)].count("headers") == 1


def _sink() -> SinkRecord:
    return SinkRecord(
        topic="orders",
        kafka_partition=3,
        kafka_offset=1001,
        value_schema=Schema.INT64_SCHEMA,
        value=7,
        timestamp=5,
        timestamp_type=TimestampType.CREATE_TIME,
    )


def test_records_are_keyword_only_and_default_to_empty_headers():
    with pytest.raises(TypeError):
        ConnectRecord("t")  # type: ignore[misc]
    first, second = ConnectRecord(topic="t"), ConnectRecord(topic="t")
    assert first.headers == Headers() and first.headers is not second.headers
    assert (first.key, first.value, first.timestamp, first.kafka_partition) == (None,) * 4


def test_header_iterables_are_turned_into_validated_headers():
    record = ConnectRecord(topic="t", headers=[Header("h", Schema.STRING_SCHEMA, "v")])
    assert isinstance(record.headers, Headers)
    assert record.headers.last_with_name("h").value == "v"
    with pytest.raises(DataError):
        ConnectRecord(topic="t", headers=[Header("h", Schema.INT8_SCHEMA, "v")])
    with pytest.raises(DataError, match="topic"):
        ConnectRecord(topic=None)  # type: ignore[arg-type]


def test_sink_records_need_their_kafka_coordinates():
    with pytest.raises(TypeError, match="kafka_partition"):
        SinkRecord(topic="t", kafka_offset=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="kafka_offset"):
        SinkRecord(topic="t", kafka_partition=0)  # type: ignore[call-arg]


def test_records_are_immutable_and_unhashable():
    for record in (ConnectRecord(topic="t"), _source(), _sink()):
        with pytest.raises(dataclasses.FrozenInstanceError):
            record.value = 1  # type: ignore[misc]
        with pytest.raises(TypeError):
            hash(record)


def test_new_record_changes_only_what_is_named_and_keeps_the_type():
    original = _source()
    renamed = original.new_record(topic="lines-v2", value=None)
    assert type(renamed) is SourceRecord
    assert (renamed.topic, renamed.value) == ("lines-v2", None)
    assert renamed.source_partition == {"file": "/tmp/in.txt"}
    assert renamed.source_offset == {"position": 42}
    assert (renamed.key_schema, renamed.value_schema, renamed.timestamp) == (
        original.key_schema,
        original.value_schema,
        original.timestamp,
    )
    assert original.topic == "lines" and original.value == "hello"


def test_new_record_duplicates_headers_unless_given():
    original = _source()
    copy = original.new_record(value="changed")
    copy.headers.add_string("added", "x")
    assert original.headers.last_with_name("added") is None
    assert copy.headers.last_with_name("origin").value == "file"
    replaced = original.new_record(headers=[Header("only", None, 1)])
    assert [h.key for h in replaced.headers] == ["only"]


def test_sink_record_keeps_original_coordinates_through_transformations():
    record = _sink()
    assert (
        record.original_topic,
        record.original_kafka_partition,
        record.original_kafka_offset,
    ) == (
        "orders",
        3,
        1001,
    )
    routed = record.new_record(topic="orders-archive", kafka_partition=0)
    assert type(routed) is SinkRecord
    assert (routed.topic, routed.kafka_partition, routed.kafka_offset) == (
        "orders-archive",
        0,
        1001,
    )
    assert (routed.original_topic, routed.original_kafka_partition) == ("orders", 3)
    assert routed.timestamp_type is TimestampType.CREATE_TIME
    assert record == _sink() and routed != record


def test_kafka_types_are_tuples_compatible_with_plain_tuples():
    assert TopicPartition("t", 1) == ("t", 1)
    assert {TopicPartition("t", 1): 5}[("t", 1)] == 5
    assert RecordMetadata("t", 0, 10, 99).offset == 10
    assert TimestampType(1) is TimestampType.LOG_APPEND_TIME


def test_records_with_structs_and_headers_survive_pickling():
    # Spark ships records to executors with pickle.
    schema = SchemaBuilder.struct().name("Row").field("id", Schema.INT64_SCHEMA).build()
    record = SinkRecord(
        topic="t",
        kafka_partition=0,
        kafka_offset=1,
        value_schema=schema,
        value=Struct(schema).put("id", 9),
        headers=Headers().add_string("h", "v"),
    )
    assert pickle.loads(pickle.dumps(record)) == record


def test_hand_written_constructors_match_the_dataclass_fields():
    # The records fill their instance dict directly (a frozen dataclass's generated
    # __init__ costs a setattr per field): every field is set, in declaration order, and
    # the dataclass helpers still work.
    for record in (ConnectRecord(topic="t"), _source(), _sink()):
        names = [f.name for f in dataclasses.fields(record)]
        assert list(vars(record)) == names
        assert dataclasses.replace(record) == record
    copy = dataclasses.replace(_sink(), kafka_offset=5)
    assert (copy.kafka_offset, copy.original_kafka_offset) == (5, 1001)
    assert repr(_sink()).startswith("SinkRecord(topic='orders', kafka_partition=3,")
    assert _source() == _source() and _source() != dataclasses.replace(_source(), value="x")


def test_dataclass_subclasses_of_records_are_still_checked():
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class Tagged(SinkRecord):
        tag: str = "x"

    tagged = Tagged(topic="t", kafka_partition=1, kafka_offset=2, headers=None, tag="y")
    assert (tagged.original_topic, tagged.original_kafka_partition,
            tagged.original_kafka_offset) == ("t", 1, 2)
    assert isinstance(tagged.headers, Headers) and tagged.tag == "y"
    with pytest.raises(DataError, match="topic"):
        Tagged(topic=1, kafka_partition=1, kafka_offset=2)  # type: ignore[arg-type]


def test_source_records_built_many_at_once_equal_keyword_built_ones():
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).field(
        "name", Schema.OPTIONAL_STRING_SCHEMA).build()
    part = {"table": "t"}
    rows = [(1, "a"), [2, None]]
    structs = Struct.from_rows(schema, rows)
    assert structs == [Struct.from_values(schema, list(r)) for r in rows]
    rows[1][1] = "changed"  # each struct has a list of its own
    assert structs[1].get("name") is None
    offsets = [{"n": 1}, None]
    many = SourceRecord.many(structs, offsets, topic="db-t", value_schema=schema,
                             source_partition=part, kafka_partition=2)
    assert many == [SourceRecord(topic="db-t", kafka_partition=2, value_schema=schema,
                                 value=s, source_partition=part, source_offset=o)
                    for s, o in zip(structs, offsets, strict=True)]
    assert type(many[0]) is SourceRecord and many[0].source_partition is part
    assert many[0].headers is not many[1].headers
    many[0].headers.add_string("h", "v")  # headers stay mutable per record
    assert not many[1].headers
    with pytest.raises(dataclasses.FrozenInstanceError):
        many[0].topic = "x"  # type: ignore[misc]
    with pytest.raises(ValueError):
        SourceRecord.many(structs, [None], topic="t", value_schema=schema,
                          source_partition=part)
    with pytest.raises(DataError, match="topic"):
        SourceRecord.many([], [], topic=None, value_schema=None,  # type: ignore[arg-type]
                          source_partition=None)
    with pytest.raises(DataError, match="1 values given for a struct of 2 fields"):
        Struct.from_rows(schema, [(1, "a"), (2,)])
    with pytest.raises(DataError, match="STRUCT schema"):
        Struct.from_rows(Schema.INT64_SCHEMA, [(1,)])


def test_a_makers_records_equal_keyword_built_ones():
    schema = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()
    part = {"server": "db"}
    make = SourceRecord.maker(topic="db.public.t", key_schema=Schema.INT64_SCHEMA,
                              value_schema=schema, source_partition=part, kafka_partition=1)
    values = [Struct.from_values(schema, [i]) for i in range(3)]
    made = [make(i, v, {"lsn": i}) for i, v in enumerate(values)]
    assert list(vars(made[0])) == [f.name for f in dataclasses.fields(made[0])
                                   if f.name != "headers"]  # headers: made on first read
    assert headers_or_none(made[0]) is None
    assert made == [SourceRecord(topic="db.public.t", kafka_partition=1,
                                 key_schema=Schema.INT64_SCHEMA, key=i, value_schema=schema,
                                 value=v, source_partition=part, source_offset={"lsn": i})
                    for i, v in enumerate(values)]
    assert all(type(r) is SourceRecord for r in made)
    made[0].headers.add_string("h", "v")  # each record's own, made on first read
    assert not made[1].headers
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].key = 9  # type: ignore[misc]
    with pytest.raises(DataError, match="topic"):
        SourceRecord.maker(topic=None, key_schema=None,  # type: ignore[arg-type]
                           value_schema=None, source_partition=None)
