"""A CDC stream mirrored into an index: the real Postgres CDC source (Debezium's connector
JSON, JsonConverter with schemas) and the Elasticsearch sink with Debezium's documented
unwrap pipeline (``ExtractNewRecordState`` keeping tombstones, ``ExtractField$Key``,
``behavior.on.null.values=delete``) in one real worker (``Harness``). After a snapshot,
inserts, updates, deletes, a primary-key change and a re-insert of a deleted key, the
index equals the table: the latest state of every row, deleted rows absent."""

from __future__ import annotations

import decimal
from typing import Any

import pytest
from es_support import CLASS, Http
from rt_test_connectors import committed, end_offset, wait_for

psycopg = pytest.importorskip("psycopg")

from postgres_process import PASSWORD, PostgresProcess, postgres_fixture  # noqa: E402

pytestmark = pytest.mark.integration

TOPIC = "dbserver1.public.products"
JSON_CONVERTERS = {
    "key.converter": "org.apache.kafka.connect.json.JsonConverter",
    "key.converter.schemas.enable": "true",
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "true"}
WAIT_S = 90.0


pg = postgres_fixture()


def table(pg: PostgresProcess) -> dict[str, dict[str, Any]]:
    """The table as the index should hold it: documents by id (numeric as a double)."""
    with psycopg.connect(pg.dsn()) as conn:
        rows = conn.execute("SELECT id, name, price, in_stock, qty FROM products").fetchall()
    return {str(i): {"id": i, "name": n, "price": float(p) if p is not None else None,
                     "in_stock": s, "qty": q} for i, n, p, s, q in rows}


def test_cdc_inserts_updates_and_deletes_mirror_the_table_into_an_index(
        harness, es_url, pg) -> None:
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        conn.execute("CREATE TABLE products (id int PRIMARY KEY, name text NOT NULL, "
                     "price numeric(10,2), in_stock boolean NOT NULL, qty int)")
        conn.execute("INSERT INTO products SELECT g, 'product ' || g, g * 1.25, true, g "
                     "FROM generate_series(1, 50) g")
    h, http = harness, Http(es_url)
    h.create("inventory-connector", {
        "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
        "tasks.max": "1", "plugin.name": "pgoutput", "database.hostname": "127.0.0.1",
        "database.port": str(pg.port), "database.user": "postgres",
        "database.password": PASSWORD, "database.dbname": "postgres",
        "topic.prefix": "dbserver1", "slot.name": "es_cdc",
        "table.include.list": "public.products", "publication.autocreate.mode": "filtered",
        "poll.interval.ms": "100", "topic.creation.default.partitions": "1",
        "topic.creation.default.replication.factor": "1", **JSON_CONVERTERS})
    # Debezium's Elasticsearch example: the unwrapped delete becomes a tombstone, the id
    # is the key's field, and a tombstone deletes the document.
    h.create("es", {
        "connector.class": CLASS, "topics": TOPIC, "connection.url": es_url,
        "key.ignore": "false", "behavior.on.null.values": "delete", "linger.ms": "1",
        "transforms": "unwrap,key",
        "transforms.unwrap.type": "io.debezium.transforms.ExtractNewRecordState",
        "transforms.unwrap.drop.tombstones": "false",
        "transforms.key.type": "org.apache.kafka.connect.transforms.ExtractField$Key",
        "transforms.key.field": "id", **JSON_CONVERTERS})
    detail = lambda: (h.herder.connector_status("inventory-connector").to_json(),  # noqa: E731
                      h.herder.connector_status("es").to_json())
    wait_for(lambda: http.docs(TOPIC) == table(pg), "the snapshot in the index", WAIT_S,
             detail)

    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        conn.execute("INSERT INTO products SELECT g, 'product ' || g, g * 1.25, true, g "
                     "FROM generate_series(51, 80) g")
        conn.execute("UPDATE products SET price = price + 1, qty = qty - 1 WHERE id % 3 = 0")
        conn.execute("UPDATE products SET name = 'renamed', price = NULL WHERE id = 7")
        conn.execute("DELETE FROM products WHERE id % 5 = 0")  # snapshot and streamed rows
        with conn.transaction():  # several changes of one key in one transaction
            conn.execute("UPDATE products SET in_stock = false WHERE id = 11")
            conn.execute("UPDATE products SET qty = 0 WHERE id = 11")
        conn.execute("DELETE FROM products WHERE id = 12")
        conn.execute("INSERT INTO products VALUES (12, 'back again', 9.99, true, 1)")
        conn.execute("UPDATE products SET id = 1000 WHERE id = 14")  # delete + create
        conn.execute("UPDATE products SET qty = 100 WHERE id = 13")
        conn.execute("DELETE FROM products WHERE id = 13")
    expected = table(pg)
    assert not {"10", "75", "13", "14"} & set(expected) and "1000" in expected
    assert expected["12"]["name"] == "back again" and expected["7"]["price"] is None

    # Settled: every record of the change topic is committed by the sink, and the index
    # then equals the table.
    def settled() -> bool:
        end = end_offset(h.backend, TOPIC)
        return end > 0 and committed(h.backend, "connect-es", TOPIC) == end \
            and http.docs(TOPIC) == expected
    wait_for(settled, "the changes in the index", WAIT_S,
             lambda: (detail(), sorted(set(http.docs(TOPIC)) ^ set(expected))))
    docs = http.docs(TOPIC)
    assert docs == expected
    assert h.task_state("es") == "RUNNING" and h.task_state("inventory-connector") == "RUNNING"
    # The mapping comes from the unwrapped row's Connect schema (numeric → Decimal → double).
    props = http.mapping(TOPIC)["properties"]
    assert {k: v["type"] for k, v in props.items()} == {
        "id": "integer", "name": "text", "price": "double", "in_stock": "boolean",
        "qty": "integer"}
    assert decimal.Decimal(str(docs["12"]["price"])) == decimal.Decimal("9.99")
