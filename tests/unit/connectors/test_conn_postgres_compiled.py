"""The generated per-table record makers (``connectors.postgres.compiled``) build exactly
the records ``EventFactory.change`` builds: same topic, key, envelope values (the event
time aside), schemas, partition and offset, and so the same bytes through JsonConverter."""

from __future__ import annotations

import json

import pytest

from connect.api import Struct
from connect.converters.json import JsonConverter
from connectors.postgres.config import PostgresConfig, TableId
from connectors.postgres.events import EventFactory, SourceColumn, SourceInfo, TableSchema
from connectors.postgres.pgoutput import UNCHANGED_TOAST
from connectors.postgres.types import TypeMapper

CONFIG = PostgresConfig.parse({"database.hostname": "h", "database.user": "u",
                               "database.dbname": "postgres", "topic.prefix": "srv"})
COLUMNS = [SourceColumn("id", 23, -1, False), SourceColumn("name", 25, -1, True),
           SourceColumn("code", 25, -1, False), SourceColumn("price", 1700, -1, True),
           SourceColumn("at", 1184, -1, True), SourceColumn("tags", 1009, -1, True)]
ROWS = [
    ("1", "a", "x", "12.50", "2024-03-01 08:11:12.5+00", "{a,b}"),
    ("2", None, "y", None, None, None),  # NULLs of optional columns
    ("3", UNCHANGED_TOAST, "z", "0", "2024-03-01 08:11:12+00", "{}"),  # TOAST placeholder
    ("4", "d", None, "-1", "infinity", "{\"c d\"}"),  # NOT NULL column absent: fallback
]


def _schema(keys: list[str]) -> tuple[EventFactory, TableSchema]:
    mapper = TypeMapper(decimal_mode="precise", time_mode="adaptive", binary_mode="bytes",
                        include_unknown=False, placeholder="__debezium_unavailable_value",
                        types={}, interval_mode="numeric", money_digits=2)
    factory = EventFactory(CONFIG, "3.0.0")
    return factory, TableSchema("srv", TableId("public", "t"), COLUMNS, keys, mapper, CONFIG)


def _bytes(record) -> tuple[bytes | None, dict]:
    key_conv, value_conv = JsonConverter(), JsonConverter()
    key_conv.configure({}, is_key=True)
    value_conv.configure({}, is_key=False)
    key = key_conv.from_connect_data(record.topic, record.key_schema, record.key)
    value = json.loads(value_conv.from_connect_data(record.topic, record.value_schema,
                                                    record.value))
    for name in ("ts_ms", "ts_us", "ts_ns"):  # when the event was built
        assert isinstance(value["payload"].pop(name), int)
    return key, value


@pytest.mark.parametrize("keys", [["id"], ["code", "id"], []])
@pytest.mark.parametrize("op", ["r", "c", "u"])
def test_generated_records_equal_the_factorys(keys, op):
    factory, ts = _schema(keys)
    event, batch = ts.makers(factory.partition)
    info = SourceInfo(1_700_000_000_123_456, "true" if op == "r" else "false", 7, 99, 98)
    source = factory.source(ts.table, info)
    offset = {"lsn": 99, "txId": 7}
    tx = Struct.from_values(ts.envelope_schema.field("transaction").schema,  # type: ignore[union-attr]
                            ["7:99", 1, 1], validate=False)
    expected = []
    for row in ROWS:
        after, key = ts.row_and_key(row)
        expected.append(factory.change(ts, op, None, after, info, offset, key=key,
                                       source=source))
    made = [event(row, op, source, offset) for row in ROWS]
    batched = batch(ROWS, op, source, offset)
    for want, got, got_batched in zip(expected, made, batched, strict=True):
        for record in (got, got_batched):
            assert (record.topic, record.key_schema, record.value_schema) == (
                want.topic, want.key_schema, want.value_schema)
            assert record.source_partition == want.source_partition == {"server": "srv"}
            assert record.source_offset is offset and not record.headers
            assert record.value.values()[:5] == want.value.values()[:5]
            assert _bytes(record) == _bytes(want)
        assert (want.key is None) == (not keys)
    with_tx = event(ROWS[0], op, source, offset, tx)
    after, key = ts.row_and_key(ROWS[0])
    assert _bytes(with_tx) == _bytes(factory.change(ts, op, None, after, info, offset, tx,
                                                    key=key, source=source))


def test_makers_are_built_once_per_table_and_partition():
    factory, ts = _schema(["id"])
    assert ts.makers(factory.partition) is not None
    first = ts.makers(factory.partition)
    assert ts.makers(factory.partition)[0] is first[0]
    other = {"server": "other"}
    assert ts.makers(other)[0](ROWS[0], "c", None, {}).source_partition is other
