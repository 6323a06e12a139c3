"""Debezium's ExtractNewRecordState SMT on the Postgres source's own change events."""

from __future__ import annotations

import struct

import pytest
from test_conn_postgres_events import BASE, _stream, _tuple, begin, commit, relation

from connect.api import ConfigError
from connect.transforms.aliases import resolve_transform
from connectors.postgres.config import PostgresConfig
from connectors.postgres.unwrap import ExtractNewRecordState


def events() -> list:
    cfg = PostgresConfig.parse({**BASE, "skipped.operations": "none"})
    stream = _stream(cfg)
    stream.handle(0, relation())
    out = []
    rel = struct.pack(">I", 16385)
    for lsn, payload in [
            (10, begin(90, 5)), (20, b"I" + rel + b"N" + _tuple("1", "a", "b", "c")),
            (30, b"U" + rel + b"N" + _tuple("1", "a2", "b", "c")),
            (40, b"D" + rel + b"K" + _tuple("1", None, None, None)),
            (50, b"T" + struct.pack(">iB", 1, 0) + rel), (90, commit(90, 91))]:
        out += stream.handle(lsn, payload)
    return out  # c, u, d, tombstone, t


def smt(**config: str) -> ExtractNewRecordState:
    t = ExtractNewRecordState()
    t.configure(config)
    return t


def test_is_found_by_debeziums_class_name() -> None:
    assert resolve_transform("io.debezium.transforms.ExtractNewRecordState") \
        is ExtractNewRecordState


def test_default_keeps_rows_turns_deletes_into_null_values_and_drops_the_rest() -> None:
    out = [smt().apply(r) for r in events()]
    c, u, d, tomb, t = out
    assert c.value.schema.name == "PostgreSQL_server.public.customers.Value"
    assert c.value.values() == [1, "a", "b", "c"] and u.value.get("first_name") == "a2"
    assert d is not None and d.value is None and d.key.get("id") == 1
    assert tomb is None and t is None


def test_rewrite_adds_deleted_and_fields_and_headers() -> None:
    t = smt(**{"delete.tombstone.handling.mode": "rewrite",
               "add.fields": "op,table,source.ts_ms", "add.headers": "db,op"})
    c, _u, d, tomb, tr = [t.apply(r) for r in events()]
    names = [f.name for f in c.value.schema.fields]
    assert names == ["id", "first_name", "last_name", "email", "__op", "__table",
                     "__source_ts_ms", "__deleted"]
    assert c.value.get("__op") == "c" and c.value.get("__deleted") == "false"
    assert c.value.get("__table") == "customers"
    assert d.value.get("__deleted") == "true" and d.value.get("id") == 1
    assert d.value.get("__op") == "d"
    assert [(h.key, h.value) for h in c.headers] == [("__db", "postgres"), ("__op", "c")]
    assert tomb is None and tr is None


@pytest.mark.parametrize(("config", "delete", "tombstone"), [
    ({"delete.tombstone.handling.mode": "drop"}, "dropped", "dropped"),
    ({"delete.tombstone.handling.mode": "delete-to-tombstone"}, "tombstone", "dropped"),
    ({"delete.tombstone.handling.mode": "rewrite-with-tombstone"}, "row", "kept"),
    ({"delete.handling.mode": "drop"}, "dropped", "dropped"),
    ({"delete.handling.mode": "rewrite", "drop.tombstones": "false"}, "row", "kept"),
])
def test_delete_and_tombstone_modes(config: dict[str, str], delete: str,
                                    tombstone: str) -> None:
    _, _, d, tomb, _ = [smt(**config).apply(r) for r in events()]
    got = ("dropped" if d is None else "tombstone" if d.value is None
           and d.value_schema is None else "row")
    assert got == delete
    assert ("dropped" if tomb is None else "kept") == tombstone


def test_bad_mode_names_the_key() -> None:
    with pytest.raises(ConfigError, match=r"delete\.tombstone\.handling\.mode"):
        smt(**{"delete.tombstone.handling.mode": "sometimes"})
