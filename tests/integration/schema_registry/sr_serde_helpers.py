"""What the ``test_sr_serde_*`` integration tests share (imported by name: pytest puts
this directory on ``sys.path``; not a test file): a Ferry registry on an embedded log,
configured converters, and the check that a converter names subjects as Confluent's
serializers do."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from broker_process import free_port
from confluent_kafka.schema_registry import (
    SchemaRegistryClient,
    record_subject_name_strategy,
    topic_record_subject_name_strategy,
)
from confluent_kafka.serialization import MessageField, SerializationContext

from connect.api.data import Schema, SchemaBuilder, Struct
from schema_registry.serde.converter_base import RegistryConverter
from schema_registry.service import RegistryService

__all__ = ["SUBJECT_STRATEGIES", "configured", "running_registry", "subjects",
           "value_ctx", "written_with_strategy"]

STRATEGIES = "io.confluent.kafka.serializers.subject"

#: (strategy class, confluent_kafka's matching strategy or None for its default, the
#: subject both name, as a format string of topic and record).
SUBJECT_STRATEGIES = [
    ("TopicNameStrategy", None, "{topic}-value"),
    ("RecordNameStrategy", record_subject_name_strategy, "{record}"),
    ("TopicRecordNameStrategy", topic_record_subject_name_strategy, "{topic}-{record}"),
]

C = TypeVar("C", bound=RegistryConverter[Any, Any])
#: Confluent's serializer for what ``converter`` writes for ``schema``:
#: (converter, schema, client, serializer conf) -> serializer.
SerializerFor = Callable[[C, Schema, SchemaRegistryClient, dict[str, Any]],
                         Callable[[Any, SerializationContext], bytes]]


@contextmanager
def running_registry(log_dir: Path) -> Iterator[RegistryService]:
    """A registry on 127.0.0.1 (a free port) keeping its log in ``log_dir``; stopped on
    exit."""
    svc = RegistryService(f"embedded:{log_dir}", listen=f"127.0.0.1:{free_port()}",
                          config={"kafkagroup.heartbeat.interval.ms": "500"})
    svc.start(wait_ready=30)
    try:
        assert svc.ready, "the registry did not become ready within 30 s"
        yield svc
    finally:
        svc.stop()


def configured(cls: type[C], registry: RegistryService, is_key: bool = False,
               **configs: str) -> C:
    """A ``cls`` converter configured for ``registry`` and ``configs``."""
    conv = cls()
    conv.configure({"schema.registry.url": registry.url, **configs}, is_key)
    return conv


def value_ctx(topic: str) -> SerializationContext:
    """Confluent's serialization context of a record value of ``topic``."""
    return SerializationContext(topic, MessageField.VALUE)


def subjects(registry: RegistryService) -> set[str]:
    return set(SchemaRegistryClient({"url": registry.url}).get_subjects())


def written_with_strategy(registry: RegistryService, cls: type[C], serializer_for: SerializerFor,
                          strategy: str, python_strategy: Any, expected: str, *, topic: str,
                          record: str) -> tuple[bytes, bytes]:
    """What a ``cls`` converter with subject name strategy ``strategy`` writes for a
    record named ``record`` on ``topic``, and what Confluent's serializer with the
    matching strategy writes for the same value. Checks that the converter adds the
    ``expected`` subject, and that the serializer then finds it (adds none)."""
    schema = SchemaBuilder.struct().name(record).field("a", Schema.INT32_SCHEMA).build()
    conv = configured(cls, registry, **{"value.subject.name.strategy": f"{STRATEGIES}.{strategy}"})
    before = subjects(registry)
    ours = conv.from_connect_data(topic, schema, Struct(schema).put("a", 1))
    added = subjects(registry) - before
    assert added == {expected.format(topic=topic, record=record)}, f"converter added {added}"
    conf = {} if python_strategy is None else {"subject.name.strategy": python_strategy}
    serializer = serializer_for(conv, schema, SchemaRegistryClient({"url": registry.url}), conf)
    before = subjects(registry)
    theirs = serializer({"a": 1}, value_ctx(topic))
    after = subjects(registry)
    assert after == before, f"Confluent's serializer changed the subjects to {after}"
    assert ours is not None
    return ours, theirs
