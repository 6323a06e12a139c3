"""interval, point, money, bit/varbit, range, citext-free built-ins: each column type
checked against a real PostgreSQL value, read by the snapshot and by the stream, with
the schema and value Debezium 3.2 gives it."""

from __future__ import annotations

import base64
import struct

import pytest

psycopg = pytest.importorskip("psycopg")

from pgcdc_driver import Driver, props, sql  # noqa: E402
from postgres_process import postgres_fixture  # noqa: E402

pytestmark = pytest.mark.integration

TABLE = ("CREATE TABLE t (id int PRIMARY KEY, iv interval, iv_neg interval, "
         "pt point, m money, b1 bit(1), b bit(10), vb varbit, r4 int4range, "
         "rn numrange, rts tstzrange, rd daterange)")
ROW = ("'1 year 2 months 3 days 04:05:06.5', '-4 hours -5 minutes', '(1.5,-2)', "
       "-1234.567, B'1', B'0000000101', B'1101', '[1,10)', '(1.5,2.5]', "
       "'[2024-01-01 10:00+02,2024-01-02 00:00+00)', '[2024-01-01,2024-02-01)'")

# Debezium: months are 365.25/12 days; 1y2m3d 04:05:06.5 -> 429.125 days + 4h5m6.5s.
IV_MICROS = int((((429.125 * 24 + 4) * 60 + 5) * 60 + 6.5) * 1e6)


pg = postgres_fixture()


def _point(x: float, y: float) -> dict:
    return {"x": x, "y": y, "wkb": base64.b64encode(struct.pack("<BIdd", 1, 1, x, y))
            .decode(), "srid": None}


def _check_row(after: dict, interval_mode: str) -> None:
    if interval_mode == "numeric":
        assert after["iv"] == IV_MICROS == 37091106500000
        assert after["iv_neg"] == -(4 * 3600 + 5 * 60) * 1_000_000
    else:
        assert after["iv"] == "P1Y2M3DT4H5M6.5S"
        assert after["iv_neg"] == "P0Y0M0DT-4H-5M0S"
    assert after["pt"] == _point(1.5, -2.0)
    assert after["b1"] is True
    # Debezium's Bits: the bit string as an integer, little-endian: 0b101 -> 05.
    assert base64.b64decode(after["b"]) == b"\x05"
    assert base64.b64decode(after["vb"]) == b"\x0d"
    assert after["r4"] == "[1,10)" and after["rn"] == "(1.5,2.5]"
    assert after["rts"] == '["2024-01-01 08:00:00+00","2024-01-02 00:00:00+00")'
    assert after["rd"] == "[2024-01-01,2024-02-01)"


@pytest.mark.parametrize("interval_mode", ["numeric", "string"])
def test_types_in_snapshot_and_stream(pg, db, interval_mode):
    sql(pg, TABLE, f"INSERT INTO t VALUES (1, {ROW})", dbname=db)
    d = Driver(props(pg, db, **{"interval.handling.mode": interval_mode}))
    try:
        snap = d.poll_until(1)
        assert d.quiet() == []
        sql(pg, f"INSERT INTO t VALUES (2, {ROW})", dbname=db)
        streamed = d.poll_until(1)
        for record in (snap[0], streamed[0]):
            payload = d.payload(record)
            _check_row(payload["after"], interval_mode)
            # JSON with the money as a Connect Decimal (scale 2): base64 of -123457.
            fields = {f.name: f.schema for f in record.value_schema.field("after")
                      .schema.fields}
            money = fields["m"]
            assert money.name == "org.apache.kafka.connect.data.Decimal"
            assert money.parameters["scale"] == "2"
            assert record.value.get("after").get("m").as_tuple() == (1, (1, 2, 3, 4, 5, 7), -2)
            assert fields["pt"].name == "io.debezium.data.geometry.Point"
            assert fields["b"].name == "io.debezium.data.Bits"
            assert fields["b"].parameters == {"length": "10"}
            assert fields["b1"].type.name == "BOOLEAN"
            assert fields["iv"].name == ("io.debezium.time.MicroDuration"
                                         if interval_mode == "numeric"
                                         else "io.debezium.time.Interval")
            assert fields["r4"].name is None and fields["r4"].type.name == "STRING"
        assert [d.payload(r)["op"] for r in (snap[0], streamed[0])] == ["r", "c"]
    finally:
        d.stop()


def test_money_as_string_and_double(pg, db):
    sql(pg, "CREATE TABLE m (id int PRIMARY KEY, m money)",
        "INSERT INTO m VALUES (1, 1234567.891), (2, -0.5)", dbname=db)
    for mode, expected in (("string", ["1234567.89", "-0.50"]), ("double", [1234567.89, -0.5])):
        d = Driver(props(pg, db, decimal_handling_mode=mode, slot_name=f"slot_{db}_{mode}"))
        try:
            got = [d.payload(r)["after"]["m"] for r in d.poll_until(2)]
            assert got == expected
        finally:
            d.stop()
