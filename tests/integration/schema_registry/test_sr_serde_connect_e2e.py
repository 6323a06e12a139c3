"""The registry converters inside a Connect worker, configured as for Confluent's:
``value.converter=io.confluent.connect.avro.AvroConverter`` plus
``value.converter.schema.registry.url``. Datagen writes through the converter, Confluent's
deserializer reads the topic, and a sink connector reads it back through the converter."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.schema_registry.json_schema import JSONDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from sr_serde_helpers import running_registry

from connect.api import ConfigDef, SinkConnector, SinkRecord, SinkTask
from connect.runtime.plugins import Plugins
from connect.runtime.standalone_herder import StandaloneHerder
from connect.runtime.worker import Worker
from connect.runtime.worker_config import WorkerConfig
from connectors.datagen.connector import DatagenConnector
from core.backends import TopicPartition, open_backend
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

RECEIVED: list[SinkRecord] = []
_LOCK = threading.Lock()


class KeepingSinkTask(SinkTask):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        pass

    def put(self, records: Sequence[SinkRecord]) -> None:
        with _LOCK:
            RECEIVED.extend(records)

    def stop(self) -> None:
        pass


class KeepingSink(SinkConnector):
    def version(self) -> str:
        return "1"

    def start(self, props: Mapping[str, str]) -> None:
        self._props = dict(props)

    def task_class(self) -> type:
        return KeepingSinkTask

    def task_configs(self, max_tasks: int) -> list[dict[str, str]]:
        return [dict(self._props)]

    def stop(self) -> None:
        pass

    def config(self) -> ConfigDef:
        return ConfigDef()


def wait_for(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RegistryService]:
    with running_registry(tmp_path / "registry-log") as svc:
        yield svc


@pytest.fixture
def herder(tmp_path: Path, registry: RegistryService) -> Iterator[Callable[..., StandaloneHerder]]:
    backend = open_backend(f"embedded:{tmp_path / 'connect-log'}")
    started: list[StandaloneHerder] = []

    def make(converter: str) -> StandaloneHerder:
        plugins = Plugins({"datagen": DatagenConnector, "KeepingSink": KeepingSink})
        config = WorkerConfig.from_props({
            "offset.flush.interval.ms": "100", "task.shutdown.graceful.timeout.ms": "500",
            "offset.storage.partitions": "1",
            "key.converter": converter, "value.converter": converter,
            "key.converter.schema.registry.url": registry.url,
            "value.converter.schema.registry.url": registry.url,
        })
        h = StandaloneHerder(Worker(backend, config, plugins), "127.0.0.1:8083")
        h.start()
        started.append(h)
        return h

    yield make
    for h in started:
        h.stop()
    backend.close()


def _produced(h: StandaloneHerder, topic: str, count: int) -> list:
    backend = h.worker.backend
    tp = TopicPartition(topic, 0)

    def enough() -> bool:
        return topic in backend.list_topics() and len(backend.fetch({tp: 0})[tp].records) >= count

    wait_for(enough, f"{count} records on {topic}")
    return backend.fetch({tp: 0})[tp].records[:count]


def _run(h: StandaloneHerder, topic: str) -> list:
    RECEIVED.clear()
    h.put_connector_config("gen", {
        "connector.class": "datagen", "kafka.topic": topic, "quickstart": "orders",
        "iterations": "10", "tasks.max": "1",
        "topic.creation.default.replication.factor": "1",
        "topic.creation.default.partitions": "1"}, allow_replace=False)
    records = _produced(h, topic, 10)
    h.put_connector_config("keep", {"connector.class": "KeepingSink", "topics": topic},
                           allow_replace=False)
    wait_for(lambda: len(RECEIVED) >= 10, "the sink to receive 10 records")
    return records


def test_avro_converter_in_a_worker_is_read_by_confluents_deserializer(herder, registry):
    records = _run(herder("io.confluent.connect.avro.AvroConverter"), "orders-avro")
    client = SchemaRegistryClient({"url": registry.url})
    deserializer = AvroDeserializer(client)
    values = [deserializer(r.value, SerializationContext("orders-avro", MessageField.VALUE))
              for r in records]
    keys = [deserializer(r.key, SerializationContext("orders-avro", MessageField.KEY))
            for r in records]
    assert all(isinstance(v, dict) and "orderid" in v for v in values)
    assert keys == [v["orderid"] for v in values]
    assert {"orders-avro-key", "orders-avro-value"} <= set(client.get_subjects())
    with _LOCK:
        received = list(RECEIVED)
    assert [r.value.get("orderid") for r in received[:10]] == keys
    assert received[0].value_schema.name == received[0].value.schema.name
    assert received[0].key == keys[0]


def test_json_schema_converter_in_a_worker(herder, registry):
    records = _run(herder("io.confluent.connect.json.JsonSchemaConverter"), "orders-json")
    client = SchemaRegistryClient({"url": registry.url})
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    values = [deserializer(r.value, SerializationContext("orders-json", MessageField.VALUE))
              for r in records]
    assert all("orderid" in v for v in values)
    with _LOCK:
        received = list(RECEIVED)
    assert [r.value.get("orderid") for r in received[:10]] == [v["orderid"] for v in values]
