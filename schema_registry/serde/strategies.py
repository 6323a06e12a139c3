"""Subject name strategies: which subject a key or value schema is registered under.

=========================  ===================================  =========================
strategy                   subject                              use
=========================  ===================================  =========================
``TopicNameStrategy``      ``<topic>-key`` / ``<topic>-value``  one schema per topic (the
                                                                default)
``RecordNameStrategy``     the record's full name               one schema per record type,
                                                                across topics
``TopicRecordNameStrategy``  ``<topic>-<full name>``            several record types per
                                                                topic
=========================  ===================================  =========================

A config names one by Confluent's class name
(``io.confluent.kafka.serializers.subject.RecordNameStrategy``), its simple name, or a
Python class path. The record name is an Avro schema's full name or a JSON schema's
``title``; the record strategies refuse schemas without one, as Confluent's do.
"""

from __future__ import annotations

import importlib
from typing import Protocol, runtime_checkable

from schema_registry.serde.errors import SerializationError

__all__ = [
    "CONFLUENT_PACKAGE",
    "RecordNameStrategy",
    "SubjectNameStrategy",
    "TopicNameStrategy",
    "TopicRecordNameStrategy",
    "resolve_strategy",
]

CONFLUENT_PACKAGE = "io.confluent.kafka.serializers.subject"


@runtime_checkable
class SubjectNameStrategy(Protocol):
    """Maps (topic, key or value, record name) to a subject. Pure and thread-safe."""

    def subject_name(self, topic: str, is_key: bool, record_name: str | None) -> str:
        """The subject; raises ``SerializationError`` if the strategy needs a record name
        and the schema has none."""
        ...


class TopicNameStrategy:
    """``<topic>-key`` or ``<topic>-value`` (Confluent's default)."""

    def subject_name(self, topic: str, is_key: bool, record_name: str | None) -> str:
        return f"{topic}-{'key' if is_key else 'value'}"


class RecordNameStrategy:
    """The record's fully qualified name."""

    def subject_name(self, topic: str, is_key: bool, record_name: str | None) -> str:
        return _require(record_name, "RecordNameStrategy", is_key)


class TopicRecordNameStrategy:
    """``<topic>-<fully qualified record name>``."""

    def subject_name(self, topic: str, is_key: bool, record_name: str | None) -> str:
        return f"{topic}-{_require(record_name, 'TopicRecordNameStrategy', is_key)}"


_BUILTIN: dict[str, type] = {
    "TopicNameStrategy": TopicNameStrategy,
    "RecordNameStrategy": RecordNameStrategy,
    "TopicRecordNameStrategy": TopicRecordNameStrategy,
}


def _require(record_name: str | None, strategy: str, is_key: bool) -> str:
    if not record_name:
        what = "key" if is_key else "value"
        raise SerializationError(
            f"{strategy} needs a named schema but the {what} schema has no name: give the "
            "Connect schema a name (an Avro record, enum or fixed; a JSON schema title) or "
            "use TopicNameStrategy"
        )
    return record_name


def resolve_strategy(name: str) -> SubjectNameStrategy:
    """The strategy ``name`` denotes: a Confluent class name, a simple name, or a Python
    class path (``package.module:Class``). Raises ``ValueError`` naming the choices."""
    text = name.strip()
    simple = text[len(CONFLUENT_PACKAGE) + 1:] if text.startswith(CONFLUENT_PACKAGE + ".") \
        else text
    if simple in _BUILTIN:
        return _BUILTIN[simple]()  # type: ignore[no-any-return]
    module_name, colon, attribute = text.partition(":")
    if not colon:
        module_name, _, attribute = text.rpartition(".")
    found: object = None
    if module_name and attribute:
        try:
            found = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError):
            found = None
    instance = found() if isinstance(found, type) else None
    if not isinstance(instance, SubjectNameStrategy):
        raise ValueError(
            f"Unknown subject name strategy {name!r}: use TopicNameStrategy, "
            "RecordNameStrategy or TopicRecordNameStrategy (optionally with the package "
            f"{CONFLUENT_PACKAGE}), or a Python class path to a class with "
            "subject_name(topic, is_key, record_name)"
        )
    return instance
