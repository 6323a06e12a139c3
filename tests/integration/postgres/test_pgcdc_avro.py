"""Postgres CDC events through the AvroConverter and a running Schema Registry: the
subjects, the Avro schemas and the decoded values a Debezium + Confluent consumer sees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "schema_registry"))

from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402
from postgres_process import postgres_fixture  # noqa: E402
from sr_serde_helpers import running_registry  # noqa: E402
from test_pgcdc_task import Driver, props, sql  # noqa: E402

from schema_registry.serde.avro_converter import AvroConverter  # noqa: E402

pytestmark = pytest.mark.integration


pg = postgres_fixture()


def test_avro_subjects_and_values_have_debeziums_shape(pg, tmp_path: Path) -> None:
    sql(pg, "CREATE DATABASE avro")
    sql(pg, "CREATE TABLE customers (id int PRIMARY KEY, first_name text NOT NULL, "
        "email text, score numeric(6,2), at timestamptz)",
        "INSERT INTO customers VALUES (1, 'Anne', 'annek@noanswer.org', 1.25, "
        "'2024-01-01 10:00:00+00')", dbname="avro")
    d = Driver(props(pg, "avro"))
    with running_registry(tmp_path / "registry") as registry:
        try:
            [snap] = d.poll_until(1)
            sql(pg, "UPDATE customers SET email = NULL WHERE id = 1", dbname="avro")
            [update] = d.poll_until(1)
        finally:
            d.stop()
        keys, values = AvroConverter(), AvroConverter()
        keys.configure({"schema.registry.url": registry.url}, True)
        values.configure({"schema.registry.url": registry.url}, False)
        topic = "dbserver1.public.customers"
        raw = [(keys.from_connect_data(topic, r.key_schema, r.key),
                values.from_connect_data(topic, r.value_schema, r.value))
               for r in (snap, update)]
        client = SchemaRegistryClient({"url": registry.url})
        assert set(client.get_subjects()) == {f"{topic}-key", f"{topic}-value"}
        value_schema = json.loads(
            client.get_latest_version(f"{topic}-value").schema.schema_str)
        assert (value_schema["name"], value_schema.get("namespace")) == (
            "Envelope", "dbserver1.public.customers")
        assert [f["name"] for f in value_schema["fields"]] == [
            "before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns"]
        key_schema = json.loads(client.get_latest_version(f"{topic}-key").schema.schema_str)
        assert (key_schema["name"], key_schema["fields"]) == ("Key", [
            {"name": "id", "type": "int"}])
        decode = AvroDeserializer(client)
        ctx = SerializationContext(topic, MessageField.VALUE)
        first, second = (decode(v, ctx) for _, v in raw)
        assert first["op"] == "r" and first["source"]["snapshot"] == "last"
        assert first["after"]["first_name"] == "Anne"
        assert first["after"]["at"] == "2024-01-01T10:00:00.000000Z"
        assert second["op"] == "u" and second["after"]["email"] is None
        assert second["source"]["connector"] == "postgresql"
        assert decode(raw[0][0], SerializationContext(topic, MessageField.KEY)) == {"id": 1}
