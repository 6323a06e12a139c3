"""What Ferry's converters share: the ``converter.type`` key (Kafka's ``ConverterConfig``),
the plugin version, and header conversion by delegation to data conversion."""

from __future__ import annotations

import importlib.metadata
from abc import abstractmethod
from collections.abc import Mapping
from functools import cache
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, ValidString
from connect.api.data import Schema, SchemaAndValue
from connect.api.errors import ConfigError
from connect.api.storage import CONVERTER_TYPE_CONFIG, Converter, ConverterType, HeaderConverter

__all__ = [
    "CONVERTER_TYPE_DOC",
    "HeaderCapableConverter",
    "converter_config_def",
    "converter_type",
    "plugin_version",
    "with_converter_type",
]

CONVERTER_TYPE_DOC = "How this converter will be used."
_TYPE_NAMES = tuple(t.value for t in ConverterType)


def converter_config_def() -> ConfigDef:
    """A new definition holding ``converter.type``, for a converter to extend (Kafka's
    ``ConverterConfig.newConfigDef``). The key has no default, as in Kafka: the runtime
    sets it, and ``configure(configs, is_key)`` overrides it."""
    return ConfigDef().define(
        CONVERTER_TYPE_CONFIG,
        ConfigType.STRING,
        validator=ValidString.in_(*_TYPE_NAMES),
        importance=Importance.LOW,
        documentation=CONVERTER_TYPE_DOC,
    )


def converter_type(configs: Mapping[str, Any], is_key: bool | None) -> ConverterType:
    """What an instance converts: ``is_key`` when the runtime configures it as a key or
    value converter, else ``converter.type`` from ``configs``, else (the
    ``HeaderConverter.configure(configs)`` call, which passes neither) a header."""
    if is_key is not None:
        return ConverterType.KEY if is_key else ConverterType.VALUE
    raw = configs.get(CONVERTER_TYPE_CONFIG, ConverterType.HEADER.value)
    text = raw.value if isinstance(raw, ConverterType) else str(raw).strip()
    if text not in _TYPE_NAMES:
        raise ConfigError(
            CONVERTER_TYPE_CONFIG, f"String must be one of: {', '.join(_TYPE_NAMES)}", value=raw
        )
    return ConverterType(text)


def with_converter_type(configs: Mapping[str, Any], type_: ConverterType) -> dict[str, Any]:
    """``configs`` with ``converter.type`` set, ready to parse against a definition from
    ``converter_config_def``."""
    return {**configs, CONVERTER_TYPE_CONFIG: type_.value}


@cache
def plugin_version() -> str:
    """The Ferry distribution's version, which the built-in converters report (Kafka's
    report Kafka's)."""
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


class HeaderCapableConverter(Converter, HeaderConverter):
    """Base of the converters that also convert headers, as each of Kafka's built-in
    converters does: a header value is converted exactly like a record value.

    One ``configure`` serves both protocols: ``configure(configs, is_key)`` from the
    runtime's key and value converters, ``configure(configs)`` for a header converter.
    Threading and lifecycle are those of ``Converter``: one instance per task, used from
    the task's thread only.
    """

    @abstractmethod
    def configure(self, configs: Mapping[str, Any], is_key: bool | None = None) -> None:
        """Configure from the converter's sub-keys; see ``converter_type`` for ``is_key``."""

    def version(self) -> str:
        """The Ferry distribution's version (Kafka reports its own for these)."""
        return plugin_version()

    def from_connect_header(
        self, topic: str, header_key: str, schema: Schema | None, value: Any
    ) -> bytes | None:
        return self.from_connect_data(topic, schema, value)

    def to_connect_header(self, topic: str, header_key: str, value: bytes | None) -> SchemaAndValue:
        return self.to_connect_data(topic, value)

    def close(self) -> None:
        """Nothing to release."""
