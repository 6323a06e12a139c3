"""Checks that a key or value has the shape a transformation needs (Kafka's Requirements).

Each raises ``DataError`` with Kafka's wording, naming the transformation's purpose and
the Python type found, so the error tolerance and dead letter queue report the same
cause a Java worker would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.data import Schema, Struct
from connect.api.errors import DataError
from connect.api.record import ConnectRecord, SinkRecord

__all__ = [
    "require_map",
    "require_map_or_null",
    "require_schema",
    "require_sink_record",
    "require_struct",
    "require_struct_or_null",
    "type_name",
]


def type_name(value: Any) -> str:
    """The name Kafka's messages give a value's type: ``null`` for None."""
    return "null" if value is None else type(value).__name__


def require_schema(schema: Schema | None, purpose: str) -> Schema:
    if schema is None:
        raise DataError(f"Schema required for [{purpose}]")
    return schema


def require_map(value: Any, purpose: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise DataError(
            f"Only Map objects supported in absence of schema for [{purpose}], "
            f"found: {type_name(value)}"
        )
    return value


def require_map_or_null(value: Any, purpose: str) -> Mapping[str, Any] | None:
    return None if value is None else require_map(value, purpose)


def require_struct(value: Any, purpose: str) -> Struct:
    if not isinstance(value, Struct):
        raise DataError(f"Only Struct objects supported for [{purpose}], found: {type_name(value)}")
    return value


def require_struct_or_null(value: Any, purpose: str) -> Struct | None:
    return None if value is None else require_struct(value, purpose)


def require_sink_record(record: ConnectRecord, purpose: str) -> SinkRecord:
    if not isinstance(record, SinkRecord):
        raise DataError(f"Only SinkRecord supported for [{purpose}], found: {type_name(record)}")
    return record
