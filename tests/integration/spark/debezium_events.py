"""Debezium-shaped change events for the ``ferry-cdc`` tests (not a test module).

Hand-made events let these tests pin exact values and offsets (``test_cdc_from_postgres.py``
feeds the same pipeline from the real Postgres CDC connector). They are exactly the JSON
envelope Debezium's PostgreSQL connector writes through Connect's ``JsonConverter`` with
``schemas.enable=true`` (key and value each ``{"schema", "payload"}``; NUMERIC as
``org.apache.kafka.connect.data.Decimal`` base64 bytes, ``timestamp`` as
``io.debezium.time.MicroTimestamp``; a tombstone after each delete).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json

from core.backends import ProducerRecord

__all__ = ["order_event"]

SERVER, TABLE = "pg", "orders"
_ROW_FIELDS = [
    {"type": "int32", "optional": False, "default": 0, "field": "id"},
    {"type": "int32", "optional": False, "field": "customer_id"},
    {"type": "bytes", "optional": False, "name": "org.apache.kafka.connect.data.Decimal",
     "version": 1, "parameters": {"scale": "2", "connect.decimal.precision": "10"},
     "field": "amount"},
    {"type": "int64", "optional": True, "name": "io.debezium.time.MicroTimestamp",
     "version": 1, "field": "created_at"},
]
_ROW = {"type": "struct", "fields": _ROW_FIELDS, "optional": True,
        "name": f"{SERVER}.public.{TABLE}.Value"}
_SOURCE = {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source",
           "fields": [
               {"type": "string", "optional": False, "field": "version"},
               {"type": "string", "optional": False, "field": "connector"},
               {"type": "string", "optional": False, "field": "name"},
               {"type": "int64", "optional": False, "field": "ts_ms"},
               {"type": "string", "optional": True, "name": "io.debezium.data.Enum",
                "version": 1, "parameters": {"allowed": "true,last,false,incremental"},
                "default": "false", "field": "snapshot"},
               {"type": "string", "optional": False, "field": "db"},
               {"type": "string", "optional": True, "field": "sequence"},
               {"type": "string", "optional": False, "field": "schema"},
               {"type": "string", "optional": False, "field": "table"},
               {"type": "int64", "optional": True, "field": "txId"},
               {"type": "int64", "optional": True, "field": "lsn"},
               {"type": "int64", "optional": True, "field": "xmin"}],
           "field": "source"}
VALUE_SCHEMA = {
    "type": "struct", "optional": False, "name": f"{SERVER}.public.{TABLE}.Envelope",
    "version": 1,
    "fields": [{**_ROW, "field": "before"}, {**_ROW, "field": "after"}, _SOURCE,
               {"type": "string", "optional": False, "field": "op"},
               {"type": "int64", "optional": True, "field": "ts_ms"},
               {"type": "struct", "optional": True, "name": "event.block", "version": 1,
                "field": "transaction", "fields": [
                    {"type": "string", "optional": False, "field": "id"},
                    {"type": "int64", "optional": False, "field": "total_order"},
                    {"type": "int64", "optional": False, "field": "data_collection_order"}]}]}
KEY_SCHEMA = {"type": "struct", "optional": False, "name": f"{SERVER}.public.{TABLE}.Key",
              "fields": [{"type": "int32", "optional": False, "default": 0, "field": "id"}]}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _row(order_id: int, customer: int, amount: str, created: dt.datetime) -> dict:
    unscaled = int(decimal.Decimal(amount).scaleb(2))
    raw = unscaled.to_bytes((unscaled.bit_length() + 8) // 8 or 1, "big", signed=True)
    return {"id": order_id, "customer_id": customer,
            "amount": base64.b64encode(raw).decode(),
            "created_at": (created - _EPOCH) // dt.timedelta(microseconds=1)}


def order_event(op: str, order_id: int, customer: int, amount: str, created: dt.datetime,
                lsn: int, before: dict | None = None) -> list[ProducerRecord]:
    """The records Debezium writes for one change of an ``orders`` row (a delete also
    gets its tombstone)."""
    row = _row(order_id, customer, amount, created)
    ts_ms = int((created - _EPOCH).total_seconds() * 1000)
    payload = {
        "before": (before if before is not None else row) if op == "d" else before,
        "after": None if op == "d" else row,
        "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": SERVER,
                   "ts_ms": ts_ms, "snapshot": "true" if op == "r" else "false",
                   "db": "shop", "sequence": json.dumps([None, str(lsn)]),
                   "schema": "public", "table": TABLE, "txId": 700 + lsn,
                   "lsn": lsn, "xmin": None},
        "op": op, "ts_ms": ts_ms + 5, "transaction": None}
    key = json.dumps({"schema": KEY_SCHEMA, "payload": {"id": order_id}}).encode()
    value = json.dumps({"schema": VALUE_SCHEMA, "payload": payload}).encode()
    out = [ProducerRecord(key, value, timestamp=ts_ms + 5)]
    if op == "d":
        out.append(ProducerRecord(key, None, timestamp=ts_ms + 5))
    return out
