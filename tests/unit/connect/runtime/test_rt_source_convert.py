"""The worker's per-record conversion of a source record (``WorkerSourceTask._convert``)
with real converters and transformations: headers reach the produced record, and a
record built without headers gets none made on the way (``headers_or_none``)."""

from __future__ import annotations

import threading

from connect.api import Schema, SchemaBuilder, SourceRecord, Struct
from connect.api.record import headers_or_none
from connect.converters.header import SimpleHeaderConverter
from connect.converters.json import JsonConverter
from connect.runtime.connector_config import error_config
from connect.runtime.retry_with_tolerance import RetryWithToleranceOperator
from connect.runtime.worker_source_task import WorkerSourceTask
from connect.transforms.chain import build_transformation_chain

SCHEMA = SchemaBuilder.struct().field("id", Schema.INT64_SCHEMA).build()


def _convert(records: list[SourceRecord], transforms: dict[str, str]) -> list:
    key_conv, value_conv = JsonConverter(), JsonConverter()
    key_conv.configure({"schemas.enable": "false"}, True)
    value_conv.configure({"schemas.enable": "false"}, False)
    op = RetryWithToleranceOperator(error_config({}), [], threading.Event())
    chain = build_transformation_chain(transforms)
    return [WorkerSourceTask._convert(r, op, key_conv, value_conv, SimpleHeaderConverter(),
                                      chain) for r in records]


def _records() -> list[SourceRecord]:
    return SourceRecord.many(Struct.from_rows(SCHEMA, [(1,), (2,)]), [None, None],
                             topic="t", value_schema=SCHEMA, source_partition=None)


def test_records_without_headers_are_produced_without_making_any():
    records = _records()
    produced = _convert(records, {})
    assert [(topic, p.value, p.headers) for topic, p in produced] == [
        ("t", b'{"id":1}', []), ("t", b'{"id":2}', [])]
    assert all(headers_or_none(r) is None for r in records)


def test_headers_given_or_added_by_a_transformation_are_produced():
    given = SourceRecord(topic="t", value_schema=SCHEMA,
                         value=Struct.from_values(SCHEMA, [3]), headers=None)
    given.headers.add_string("origin", "db")
    produced = _convert([given, *_records()], {
        "transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.h.header": "via", "transforms.h.value.literal": "ferry"})
    assert produced[0][1].headers == [("origin", b"db"), ("via", b"ferry")]
    assert produced[1][1].headers == [("via", b"ferry")]
