"""What the built-in transformations share: the config hooks and the ``$Key``/``$Value`` sides.

Kafka writes most SMTs once, as an abstract class whose ``Key`` and ``Value`` subclasses
say which half of the record they read and rewrite. Ferry does the same with two small
mixins: ``InsertFieldKey(KeySide, InsertField)`` reads ``record.key_schema``/``record.key``
and writes a record with a new key; everything else is shared.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.data import Schema
from connect.api.header import Headers
from connect.api.record import ConnectRecord

__all__ = [
    "REPLACE_NULL_WITH_DEFAULT_CONFIG",
    "BuiltinPredicate",
    "BuiltinTransformation",
    "KeySide",
    "SidedTransformation",
    "ValueSide",
    "define_replace_null_with_default",
]

R = TypeVar("R", bound=ConnectRecord)

#: KIP-1040 (Kafka 3.9): read struct fields with or without their schema defaults.
REPLACE_NULL_WITH_DEFAULT_CONFIG = "replace.null.with.default"


def define_replace_null_with_default(definition: ConfigDef) -> ConfigDef:
    """Add Kafka's ``replace.null.with.default`` key (BOOLEAN, default true)."""
    return definition.define(
        REPLACE_NULL_WITH_DEFAULT_CONFIG,
        ConfigType.BOOLEAN,
        default=True,
        importance=Importance.MEDIUM,
        documentation="Whether a null struct field that has a default value is read as that "
        "default (true) or as null (false).",
    )


class BuiltinTransformation(ABC):
    """Base of Ferry's built-in SMTs: ``config()`` returns the class's ``CONFIG_DEF`` and
    ``close()`` does nothing. Subclasses parse their config in ``configure`` and rewrite
    one record in ``apply``; instances are per task and used from the task's thread only
    (see ``connect.api.transforms.Transformation``)."""

    CONFIG_DEF: ClassVar[ConfigDef]

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def apply(self, record: R) -> R | None: ...

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def close(self) -> None:  # noqa: B027  an optional hook: most SMTs hold nothing
        """Nothing to release: caches are plain dicts collected with the instance."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class BuiltinPredicate(ABC):
    """Base of Ferry's built-in predicates; same contract as ``BuiltinTransformation``."""

    CONFIG_DEF: ClassVar[ConfigDef]

    @abstractmethod
    def configure(self, configs: Mapping[str, Any]) -> None: ...

    @abstractmethod
    def test(self, record: ConnectRecord) -> bool: ...

    def config(self) -> ConfigDef:
        return self.CONFIG_DEF

    def close(self) -> None:  # noqa: B027  an optional hook
        """Nothing to release."""


class KeySide:
    """Mixin for ``$Key`` variants: operate on the record key and its schema."""

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.key_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.key

    @staticmethod
    def updated_record(
        record: R, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> R:
        if headers is None:
            return record.new_record(key_schema=schema, key=value)
        return record.new_record(key_schema=schema, key=value, headers=headers)


class ValueSide:
    """Mixin for ``$Value`` variants: operate on the record value and its schema."""

    @staticmethod
    def operating_schema(record: ConnectRecord) -> Schema | None:
        return record.value_schema

    @staticmethod
    def operating_value(record: ConnectRecord) -> Any:
        return record.value

    @staticmethod
    def updated_record(
        record: R, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> R:
        if headers is None:
            return record.new_record(value_schema=schema, value=value)
        return record.new_record(value_schema=schema, value=value, headers=headers)


class SidedTransformation(BuiltinTransformation):
    """A transformation with ``$Key`` and ``$Value`` variants; the variant's side mixin
    (listed first in its bases) supplies these three methods."""

    @staticmethod
    @abstractmethod
    def operating_schema(record: ConnectRecord) -> Schema | None: ...

    @staticmethod
    @abstractmethod
    def operating_value(record: ConnectRecord) -> Any: ...

    @staticmethod
    @abstractmethod
    def updated_record(
        record: R, schema: Schema | None, value: Any, headers: Headers | None = None
    ) -> R:
        """A copy of ``record`` with this side replaced (and ``headers``, if given)."""
