"""Postgres CDC source without a server: pgoutput decoding, the resume rule, and
Debezium's event format pinned by vectors from Debezium's documentation and sources
(``postgresql.adoc`` "create events"; ``SchemaFactory``; ``PostgresSourceInfoStructMaker``)."""

from __future__ import annotations

import json
import struct

import pytest

from connect.api import ConfigError
from connect.converters.json import JsonConverter
from connectors.postgres import pgoutput as pg
from connectors.postgres.config import PostgresConfig
from connectors.postgres.events import EventFactory, SourceColumn, SourceInfo, TableSchema
from connectors.postgres.position import Position
from connectors.postgres.stream import ChangeStream
from connectors.postgres.types import TypeMapper, parse_array

BASE = {"database.hostname": "h", "database.user": "u", "database.dbname": "postgres",
        "topic.prefix": "PostgreSQL_server"}


def _s(text: str) -> bytes:
    return text.encode() + b"\0"


def _tuple(*values: str | None) -> bytes:
    out = struct.pack(">h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v == "<toast>":
            out += b"u"
        else:
            out += b"t" + struct.pack(">i", len(v.encode())) + v.encode()
    return out


def relation(relid: int = 16385) -> bytes:
    cols = [(1, "id", 23), (0, "first_name", 25), (0, "last_name", 25), (0, "email", 25)]
    body = b"R" + struct.pack(">I", relid) + _s("public") + _s("customers") + b"d"
    body += struct.pack(">h", len(cols))
    for flags, name, oid in cols:
        body += bytes([flags]) + _s(name) + struct.pack(">Ii", oid, -1)
    return body


def begin(final_lsn: int, xid: int, ts_us: int = 1559033904863123) -> bytes:
    return b"B" + struct.pack(">qqI", final_lsn, ts_us - pg.PG_EPOCH_US, xid)


def commit(lsn: int, end: int) -> bytes:
    return b"C" + struct.pack(">bqqq", 0, lsn, end, 0)


def test_decodes_every_message_kind() -> None:
    rel = pg.decode(relation())
    assert isinstance(rel, pg.Relation) and rel.name == "customers"
    assert [(c.name, c.type_oid, c.in_key) for c in rel.columns][:2] == [
        ("id", 23, True), ("first_name", 25, False)]
    b = pg.decode(begin(100, 555))
    assert b == pg.Begin(100, 1559033904863123, 555)
    ins = pg.decode(b"I" + struct.pack(">I", 16385) + b"N" + _tuple("1", "Anne", None, "<toast>"))
    assert ins == pg.Insert(16385, ["1", "Anne", None, pg.UNCHANGED_TOAST])
    upd = pg.decode(b"U" + struct.pack(">I", 7) + b"K" + _tuple("1", None) + b"N"
                    + _tuple("2", "x"))
    assert upd == pg.Update(7, ["1", None], "K", ["2", "x"])
    plain = pg.decode(b"U" + struct.pack(">I", 7) + b"N" + _tuple("2", "x"))
    assert plain.old is None and plain.old_kind is None
    dele = pg.decode(b"D" + struct.pack(">I", 7) + b"O" + _tuple("1", "a"))
    assert dele == pg.Delete(7, ["1", "a"], "O")
    tr = pg.decode(b"T" + struct.pack(">iB", 2, 1) + struct.pack(">II", 7, 8))
    assert tr == pg.Truncate((7, 8), True, False)
    assert pg.decode(commit(100, 148)) == pg.Commit(100, 148, pg.PG_EPOCH_US)
    with pytest.raises(pg.PgOutputError):
        pg.decode(b"Z")
    assert pg.format_lsn(24023128) == "0/16E9058" and pg.parse_lsn("0/16E9058") == 24023128


def _stream(cfg: PostgresConfig, position: Position | None = None) -> ChangeStream:
    factory = EventFactory(cfg, "3.2.0.Final")
    mapper = TypeMapper(decimal_mode="precise", time_mode="adaptive", binary_mode="bytes",
                        include_unknown=False, placeholder="__debezium_unavailable_value",
                        types={})

    def load(rel: pg.Relation) -> TableSchema:
        columns = [SourceColumn(c.name, c.type_oid, c.typmod, False) for c in rel.columns]
        from connectors.postgres.config import TableId
        return TableSchema(cfg.topic_prefix, TableId(rel.namespace, rel.name), columns,
                           ["id"], mapper, cfg)
    return ChangeStream(cfg, factory, load, position)


def test_create_event_matches_debeziums_documented_event() -> None:
    cfg = PostgresConfig.parse(BASE)
    stream = _stream(cfg)
    stream.handle(0, relation())
    stream.handle(24023119, begin(24023119, 555))  # the previous transaction's commit LSN
    stream.handle(24023119, commit(24023119, 24023120))
    stream.handle(24023128, begin(24023200, 556))
    [record] = stream.handle(24023128, b"I" + struct.pack(">I", 16385) + b"N" + _tuple(
        "1", "Anne", "Kretchmar", "annek@noanswer.org"))
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, False)
    doc = json.loads(conv.from_connect_data(record.topic, record.value_schema, record.value))
    key = json.loads(conv.from_connect_data(record.topic, record.key_schema, record.key))
    assert record.topic == "PostgreSQL_server.public.customers"
    assert key == {"schema": {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"}], "optional": False,
        "name": "PostgreSQL_server.public.customers.Key"}, "payload": {"id": 1}}
    schema, payload = doc["schema"], doc["payload"]
    assert schema["name"] == "PostgreSQL_server.public.customers.Envelope"
    assert schema["version"] == 2  # io.debezium.data.Envelope.SCHEMA_VERSION
    assert [f["field"] for f in schema["fields"]] == [
        "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
    value_schema = schema["fields"][1]
    assert value_schema == {"type": "struct", "fields": [
        {"type": "int32", "optional": False, "field": "id"},
        {"type": "string", "optional": False, "field": "first_name"},
        {"type": "string", "optional": False, "field": "last_name"},
        {"type": "string", "optional": False, "field": "email"}],
        "optional": True, "name": "PostgreSQL_server.public.customers.Value",
        "field": "after"}
    source_schema = schema["fields"][2]
    assert source_schema["name"] == "io.debezium.connector.postgresql.Source"
    assert [(f["field"], f["type"], f["optional"]) for f in source_schema["fields"]] == [
        ("version", "string", False), ("connector", "string", False),
        ("name", "string", False), ("ts_ms", "int64", False),
        ("snapshot", "string", True), ("db", "string", False),
        ("sequence", "string", True), ("ts_us", "int64", True), ("ts_ns", "int64", True),
        ("schema", "string", False), ("table", "string", False), ("txId", "int64", True),
        ("lsn", "int64", True), ("xmin", "int64", True), ("origin", "string", True),
        ("origin_lsn", "int64", True)]
    assert source_schema["fields"][4]["name"] == "io.debezium.data.Enum"
    assert source_schema["fields"][4]["default"] == "false"
    assert schema["fields"][3]["name"] == "event.block"
    assert payload["before"] is None and payload["op"] == "c"
    assert payload["after"] == {"id": 1, "first_name": "Anne", "last_name": "Kretchmar",
                                "email": "annek@noanswer.org"}
    source = payload["source"]
    assert {k: source[k] for k in ("connector", "name", "ts_ms", "ts_us", "ts_ns", "db",
                                   "sequence", "schema", "table", "txId", "lsn", "xmin",
                                   "snapshot")} == {
        "connector": "postgresql", "name": "PostgreSQL_server", "ts_ms": 1559033904863,
        "ts_us": 1559033904863123, "ts_ns": 1559033904863123000, "db": "postgres",
        "sequence": '["24023119","24023128"]', "schema": "public", "table": "customers",
        "txId": 556, "lsn": 24023128, "xmin": None, "snapshot": "false"}
    assert payload["ts_ms"] >= source["ts_ms"]
    assert record.source_partition == {"server": "PostgreSQL_server"}
    assert record.source_offset == {"lsn_commit": 24023119, "lsn_proc": 24023128,
                                    "lsn": 24023128, "txId": 556,
                                    "ts_usec": 1559033904863123, "lsn_events_processed": 1}


def test_resume_skips_exactly_what_was_emitted() -> None:
    """Stored: two events of transaction 11 emitted; transaction 10 complete."""
    cfg = PostgresConfig.parse(BASE)
    stored = Position(lsn_commit=500, tx_id=11, lsn=620, events_at_lsn=1)
    stream = _stream(cfg, stored)
    stream.handle(0, relation())

    def ins(i: int) -> bytes:
        return b"I" + struct.pack(">I", 16385) + b"N" + _tuple(str(i), "a", "b", "c")

    out = []
    for lsn, payload in [(400, begin(500, 10)), (450, ins(1)), (500, commit(500, 501)),
                         (600, begin(700, 11)), (610, ins(2)), (620, ins(3)),
                         (620, ins(4)), (630, ins(5)), (700, commit(700, 701)),
                         (710, begin(800, 12)), (720, ins(6)), (800, commit(800, 801))]:
        out += stream.handle(lsn, payload)
    assert [r.key.get("id") for r in out] == [4, 5, 6]


def test_config_errors_name_the_key() -> None:
    with pytest.raises(ConfigError, match=r"plugin\.name"):
        PostgresConfig.parse({**BASE, "plugin.name": "decoderbufs"})
    with pytest.raises(ConfigError, match=r"max\.queue\.size"):
        PostgresConfig.parse({**BASE, "max.batch.size": "10", "max.queue.size": "5"})
    with pytest.raises(ConfigError, match=r"message\.key\.columns"):
        PostgresConfig.parse({**BASE, "message.key.columns": "nocolon"})
    with pytest.raises(ConfigError, match=r"table\.exclude\.list"):
        PostgresConfig.parse({**BASE, "table.include.list": "a", "table.exclude.list": "b"})
    assert PostgresConfig.parse({**BASE, "snapshot.mode": "never"}).snapshot_mode == "no_data"


def test_array_literals() -> None:
    assert parse_array("{}") == []
    assert parse_array('{1,NULL,"a,b","q\\"x"}') == ["1", None, "a,b", 'q"x']
    assert parse_array("[0:1]={7,8}") == ["7", "8"]


def test_key_only_before_image_fills_not_null_columns_with_debeziums_fallbacks() -> None:
    """A delete under REPLICA IDENTITY DEFAULT carries only the key; Debezium fills the
    other NOT NULL columns with its fallback per type (``JdbcValueConverters``): the epoch
    in UTC for timestamptz/timetz, which consumers (Spark, sinks) parse, not ""."""
    from connectors.postgres.config import TableId

    cfg = PostgresConfig.parse(BASE)
    mapper = TypeMapper(decimal_mode="precise", time_mode="adaptive", binary_mode="bytes",
                        include_unknown=False, placeholder="__debezium_unavailable_value",
                        types={})
    oids = {"id": 23, "n": 20, "t": 25, "ok": 16, "at": 1184, "tz_time": 1266, "ts": 1114}
    table = TableSchema("srv", TableId("public", "t"), [
        SourceColumn(name, oid, -1, False) for name, oid in oids.items()], ["id"], mapper, cfg)
    row = table.row(["7", None, None, None, None, None, None])
    assert {f.name: row.get(f.name) for f in table.value_schema.fields} == {
        "id": 7, "n": 0, "t": "", "ok": False, "at": "1970-01-01T00:00:00Z",
        "tz_time": "00:00:00Z", "ts": 0}


def test_streamed_inserts_and_updates_equal_the_factorys_events() -> None:
    """The stream's inline path for inserts and key-preserving updates (a source block
    copied per relation and transaction) builds the records ``EventFactory.change``
    builds from a ``SourceInfo``, through transactions (the sequence's last commit
    moves), a non-transactional message between them, and a Relation message that adds
    a column mid-transaction."""
    cfg = PostgresConfig.parse(BASE)
    stream = _stream(cfg)
    factory = stream.factory
    conv = JsonConverter()
    conv.configure({"schemas.enable": "true"}, False)

    def ins(*values: str) -> bytes:
        return b"I" + struct.pack(">I", 16385) + b"N" + _tuple(*values)

    def upd(*values: str) -> bytes:
        return b"U" + struct.pack(">I", 16385) + b"N" + _tuple(*values)

    def wide() -> bytes:  # the table's Relation message with a fifth column, "age"
        head = b"R" + struct.pack(">I", 16385) + _s("public") + _s("customers") + b"d"
        columns = relation()[len(head) + 2:]
        return (head + struct.pack(">h", 5) + columns + bytes([0]) + _s("age")
                + struct.pack(">Ii", 23, -1))

    message = b"M" + struct.pack(">BQ", 0, 900) + _s("p") + struct.pack(">I", 1) + b"x"
    steps = [(0, relation(), None), (400, begin(500, 10, 1_700_000_000_000_001), None),
             (450, ins("1", "a", "b", "c"), ("c", 10, 1_700_000_000_000_001, 450, None)),
             (460, upd("1", "a", "b", "d"), ("u", 10, 1_700_000_000_000_001, 460, None)),
             (500, commit(500, 501), None), (900, message, None),
             (910, begin(1000, 11, 1_700_000_000_000_002), None),
             (920, ins("2", "e", "f", "g"), ("c", 11, 1_700_000_000_000_002, 920, 900)),
             (921, wide(), None),
             (930, upd("2", "e", "f", "h", "7"), ("u", 11, 1_700_000_000_000_002, 930, 900)),
             (1000, commit(1000, 1001), None),
             (1010, begin(1100, 12, 1_700_000_000_000_003), None),
             (1020, ins("3", "i", "j", "k", "8"), ("c", 12, 1_700_000_000_000_003, 1020,
                                                   1000))]
    seen = 0
    for lsn, payload, expected in steps:
        out = stream.handle(lsn, payload)
        if expected is None:
            assert payload is message or out == []
            continue
        op, xid, ts_us, at, last_commit = expected
        [record] = out
        ts = stream._tables[16385]
        assert ts is not None
        after, key = ts.row_and_key(pg.decode(payload).new)
        info = SourceInfo(ts_us, "false", xid, at, last_commit)
        want = factory.change(ts, op, None, after, info, record.source_offset, key=key)
        assert record.value.get("source") == factory.source(ts.table, info)
        got_doc, want_doc = (json.loads(conv.from_connect_data(r.topic, r.value_schema,
                                                               r.value)) for r in (record, want))
        for doc in (got_doc, want_doc):
            for name in ("ts_ms", "ts_us", "ts_ns"):  # when the event was built
                doc["payload"].pop(name)
        assert got_doc == want_doc
        assert (record.key, record.key_schema, record.topic) == (want.key, want.key_schema,
                                                                 want.topic)
        seen += 1
    assert seen == 5
    assert len(got_doc["payload"]["after"]) == 5  # the added column, after the Relation


@pytest.mark.parametrize("typmod", [-1, 0, 3, 6])
def test_zoned_timestamps_with_six_fraction_digits_match_the_general_conversion(typmod):
    """The shortcut for timestamptz text with all six fraction digits writes what the
    general parse (datetime, to UTC, ``typmod`` digits) writes."""
    import datetime as dt
    mapper = TypeMapper(decimal_mode="precise", time_mode="adaptive", binary_mode="bytes",
                        include_unknown=False, placeholder="__debezium_unavailable_value",
                        types={})
    convert = mapper.map(1184, typmod, True, None).convert  # timestamptz
    width = 6 if typmod < 0 else typmod
    for text in ("2024-03-01 08:11:12.123456+00", "1999-12-31 23:59:59.000001+00",
                 "2024-03-01 08:11:12.5+00", "2024-03-01 08:11:12+00",
                 "2024-03-01 08:11:12.123456+02", "2024-03-01 08:11:12.12345+00",
                 "0099-03-01 08:11:12.123456+00"):
        value = dt.datetime.fromisoformat(text).astimezone(dt.UTC)
        fraction = f".{value.microsecond:06d}"[:width + 1] if width else ""
        expected = value.strftime("%Y-%m-%dT%H:%M:%S").rjust(19, "0") + fraction + "Z"
        assert convert(text) == expected, text
    assert convert("infinity") == "infinity"
