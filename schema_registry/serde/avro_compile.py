"""What the datum compilers of ``avro_reader`` and ``avro_writer`` share.

Both turn a (Connect schema, Avro node) pair into a function applied to every value of
that schema, once per schema; they differ in direction, not in how arrays, string-keyed
maps and struct fields are walked. A function that changes nothing is ``identity``
itself, so containers of such values are passed through without being copied.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from connect.api.data import Schema
from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_from_connect import Node

__all__ = ["Compiler", "Convert", "each_item", "each_value", "identity"]

Convert = Callable[[Any], Any]


def identity(value: Any) -> Any:
    return value


def each_item(element: Convert) -> Convert:
    """A list with ``element`` applied to each item (``identity`` if it is)."""
    if element is identity:
        return identity
    return lambda items: [element(e) for e in items]


def each_value(value: Convert) -> Convert:
    """A dict with ``value`` applied to each value (``identity`` if it is)."""
    if value is identity:
        return identity
    return lambda entries: {k: value(v) for k, v in entries.items()}


class Compiler(ABC):
    """Compiles the functions of one direction for one ``AvroDataConfig``."""

    def __init__(self, config: n.AvroDataConfig) -> None:
        self.config = config

    @abstractmethod
    def compile(self, schema: Schema, node: Node) -> Convert:
        """The function for values of ``schema`` and datums of ``node``."""

    def fields(self, schema: Schema, node: Node) -> list[tuple[str, Convert]]:
        """Each field of the struct ``schema`` as the name of its field in the Avro record
        ``node`` (scrubbed with ``scrub.invalid.names``) and its compiled function."""
        by_name = {f["name"]: f["type"] for f in node["fields"]}
        scrub = self.config.scrub_invalid_names
        fields = []
        for field in schema.fields:
            avro_name = n.scrub_name(field.name) if scrub else field.name
            if avro_name not in by_name:
                raise DataError(f"The Avro record {node['name']} has no field {avro_name!r}")
            fields.append((avro_name, self.compile(field.schema, by_name[avro_name])))
        return fields
