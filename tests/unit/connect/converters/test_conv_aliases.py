"""Converter names from Kafka configs, the plugin surface, and the package's exports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import connect.converters
from connect.api.errors import ConfigError
from connect.api.storage import Converter, ConverterType, HeaderConverter
from connect.converters import (
    BUILTIN_CONVERTERS,
    KAFKA_CLASS_NAMES,
    BooleanConverter,
    ByteArrayConverter,
    DoubleConverter,
    FloatConverter,
    IntegerConverter,
    JsonConverter,
    LongConverter,
    ShortConverter,
    SimpleHeaderConverter,
    StringConverter,
    resolve_converter,
)
from connect.converters.base import converter_type

KAFKA = {
    "org.apache.kafka.connect.json.JsonConverter": JsonConverter,
    "org.apache.kafka.connect.storage.StringConverter": StringConverter,
    "org.apache.kafka.connect.converters.ByteArrayConverter": ByteArrayConverter,
    "org.apache.kafka.connect.converters.ShortConverter": ShortConverter,
    "org.apache.kafka.connect.converters.IntegerConverter": IntegerConverter,
    "org.apache.kafka.connect.converters.LongConverter": LongConverter,
    "org.apache.kafka.connect.converters.FloatConverter": FloatConverter,
    "org.apache.kafka.connect.converters.DoubleConverter": DoubleConverter,
    "org.apache.kafka.connect.converters.BooleanConverter": BooleanConverter,
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": SimpleHeaderConverter,
}


@pytest.mark.parametrize(("name", "cls"), sorted(KAFKA.items()))
def test_kafka_class_names_resolve(name, cls):
    assert resolve_converter(name) is cls
    assert resolve_converter(f"  {name} ") is cls  # properties files leave spaces


@pytest.mark.parametrize("cls", sorted(KAFKA.values(), key=lambda c: c.__name__))
def test_short_names_and_class_paths_resolve(cls):
    short = cls.__name__
    assert resolve_converter(short) is cls
    assert resolve_converter(short.removesuffix("Converter")) is cls  # Kafka's pruned alias
    assert resolve_converter(f"{cls.__module__}:{short}") is cls
    assert resolve_converter(f"{cls.__module__}.{short}") is cls


def test_every_builtin_has_a_kafka_name_and_loads():
    assert sorted(KAFKA_CLASS_NAMES.values()) == sorted(BUILTIN_CONVERTERS)
    assert set(KAFKA_CLASS_NAMES) == set(KAFKA)


@pytest.mark.parametrize(
    "name", ["NoSuchConverter", "org.apache.kafka.connect.avro.Nope", "no.module:Nope", ":x"]
)
def test_unknown_names_are_config_errors_naming_the_value(name):
    with pytest.raises(ConfigError) as error:
        resolve_converter(name, config_key="value.converter")
    assert error.value.name == "value.converter"
    assert name.strip() in str(error.value)


def test_a_class_that_is_no_converter_is_refused():
    with pytest.raises(ConfigError, match="is not a converter"):
        resolve_converter("connect.api.data:Schema")


@pytest.mark.parametrize("cls", [c for c in KAFKA.values() if c is not SimpleHeaderConverter])
def test_builtins_are_converters_and_header_converters(cls):
    converter = cls()
    assert isinstance(converter, Converter) and isinstance(converter, HeaderConverter)
    converter.configure({}, is_key=True)
    converter.configure({"converter.type": "header"})
    assert "converter.type" in converter.config().config_keys
    assert converter.version()
    converter.close()


def test_simple_header_converter_is_only_a_header_converter():
    converter = SimpleHeaderConverter()
    assert isinstance(converter, HeaderConverter) and not isinstance(converter, Converter)
    assert converter.config().names() == []


def test_json_converter_declares_kafka_keys_and_defaults():
    keys = JsonConverter().config().config_keys
    assert list(keys) == [
        "converter.type",
        "schemas.enable",
        "schemas.cache.size",
        "decimal.format",
        "replace.null.with.default",
    ]
    assert keys["schemas.enable"].default is True
    assert keys["schemas.cache.size"].default == 1000
    assert keys["decimal.format"].default == "BASE64"
    assert keys["replace.null.with.default"].default is True
    with pytest.raises(ConfigError, match=r"decimal\.format"):
        JsonConverter().configure({"decimal.format": "TEXT"}, is_key=False)


def test_converter_type_comes_from_is_key_then_config_then_header():
    assert converter_type({"converter.type": "header"}, True) is ConverterType.KEY
    assert converter_type({"converter.type": "value"}, None) is ConverterType.VALUE
    assert converter_type({}, None) is ConverterType.HEADER


def test_exports_are_pinned():
    assert connect.converters.__all__ == [
        "BUILTIN_CONVERTERS",
        "ENTRY_POINT_GROUP",
        "KAFKA_CLASS_NAMES",
        "BooleanConverter",
        "ByteArrayConverter",
        "DoubleConverter",
        "FloatConverter",
        "IntegerConverter",
        "JsonConverter",
        "JsonConverterConfig",
        "LongConverter",
        "ShortConverter",
        "SimpleHeaderConverter",
        "StringConverter",
        "StringConverterConfig",
        "resolve_converter",
    ]


def test_converters_import_only_the_plugin_api():
    # Converters are plugins: connect.api and their own package, nothing else of Ferry's.
    package = Path(connect.converters.__file__).parent
    offenders = []
    for path in sorted(package.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                top = node.module.split(".")[0]
                if top in ("core", "connect", "connectors", "schema_registry") and not (
                    node.module.startswith(("connect.api", "connect.converters"))
                ):
                    offenders.append(f"{path.name}: {node.module}")
    assert offenders == []
