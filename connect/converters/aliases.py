"""Finding a converter class by the name a config gives: ``resolve_converter``.

Worker and connector configs name converters in ``key.converter``, ``value.converter``
and ``header.converter``. So that configs copied from a Kafka deployment work
unchanged, a name may be any of:

* an entry-point name in the ``ferry.converters`` group (``JsonConverter``; third-party
  distributions register theirs there, possibly under their Kafka class name);
* a Kafka class name (``org.apache.kafka.connect.json.JsonConverter``);
* Kafka's short aliases: the simple class name, or it without ``Converter``
  (``JsonConverter``, ``Json``), as Kafka's plugin aliases work;
* a Python class path, ``package.module:Class`` or ``package.module.Class``.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from typing import Any

from connect.api.errors import ConfigError
from connect.api.storage import Converter, HeaderConverter

__all__ = ["BUILTIN_CONVERTERS", "ENTRY_POINT_GROUP", "KAFKA_CLASS_NAMES", "resolve_converter"]

ENTRY_POINT_GROUP = "ferry.converters"

#: The built-in converters by entry-point name (also registered under ENTRY_POINT_GROUP;
#: listed here so that they resolve even where the distribution's metadata is missing).
BUILTIN_CONVERTERS: dict[str, str] = {
    "JsonConverter": "connect.converters.json:JsonConverter",
    "StringConverter": "connect.converters.string:StringConverter",
    "ByteArrayConverter": "connect.converters.bytearray:ByteArrayConverter",
    "ShortConverter": "connect.converters.numeric:ShortConverter",
    "IntegerConverter": "connect.converters.numeric:IntegerConverter",
    "LongConverter": "connect.converters.numeric:LongConverter",
    "FloatConverter": "connect.converters.numeric:FloatConverter",
    "DoubleConverter": "connect.converters.numeric:DoubleConverter",
    "BooleanConverter": "connect.converters.boolean:BooleanConverter",
    "SimpleHeaderConverter": "connect.converters.header:SimpleHeaderConverter",
}

#: Kafka's class names of the built-in converters, mapped to their entry-point names.
KAFKA_CLASS_NAMES: dict[str, str] = {
    "org.apache.kafka.connect.json.JsonConverter": "JsonConverter",
    "org.apache.kafka.connect.storage.StringConverter": "StringConverter",
    "org.apache.kafka.connect.converters.ByteArrayConverter": "ByteArrayConverter",
    "org.apache.kafka.connect.converters.ShortConverter": "ShortConverter",
    "org.apache.kafka.connect.converters.IntegerConverter": "IntegerConverter",
    "org.apache.kafka.connect.converters.LongConverter": "LongConverter",
    "org.apache.kafka.connect.converters.FloatConverter": "FloatConverter",
    "org.apache.kafka.connect.converters.DoubleConverter": "DoubleConverter",
    "org.apache.kafka.connect.converters.BooleanConverter": "BooleanConverter",
    "org.apache.kafka.connect.storage.SimpleHeaderConverter": "SimpleHeaderConverter",
}


def resolve_converter(name: str | type, *, config_key: str | None = None) -> type:
    """The converter class ``name`` denotes; see the module docstring for the forms (a
    class, as a parsed CLASS config holds, is checked and returned).

    Raises ``ConfigError`` (a 400 at the REST edge) naming the value, and
    ``config_key`` when given (e.g. ``value.converter``), if nothing of that name is
    installed or it is neither a ``Converter`` nor a ``HeaderConverter``.
    """
    if isinstance(name, type):
        return _checked(name, name.__qualname__, config_key)
    text = str(name).strip()
    target = _entry_point_target(text)
    if target is None:
        builtin = KAFKA_CLASS_NAMES.get(text) or _short_alias(text)
        target = BUILTIN_CONVERTERS.get(builtin) if builtin is not None else None
    if target is None and ("." in text or ":" in text):
        target = text
    if target is None:
        raise _unknown(text, config_key)
    return _checked(_load(target, text, config_key), text, config_key)


def _entry_point_target(name: str) -> str | None:
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP, name=name):
        return str(entry_point.value)
    return None


def _short_alias(name: str) -> str | None:
    if name in BUILTIN_CONVERTERS:
        return name
    if name + "Converter" in BUILTIN_CONVERTERS:
        return name + "Converter"
    return None


def _load(target: str, name: str, config_key: str | None) -> Any:
    module_name, colon, attribute = target.partition(":")
    if not colon:
        module_name, _, attribute = target.rpartition(".")
    if not module_name or not attribute:
        raise _unknown(name, config_key)
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError, TypeError, ValueError):  # "..x": relative/empty
        raise _unknown(name, config_key) from None
    return found


def _checked(found: Any, name: str, config_key: str | None) -> type:
    if not isinstance(found, type) or not (
        issubclass(found, Converter) or issubclass(found, HeaderConverter)
    ):
        raise ConfigError(
            config_key,
            f"{name} is not a converter: it implements neither Converter nor HeaderConverter",
            value=name,
        )
    return found


def _unknown(name: str, config_key: str | None) -> ConfigError:
    known = ", ".join(sorted(BUILTIN_CONVERTERS))
    message = (
        f"Converter {name!r} could not be found. Give an entry-point name of the "
        f"'{ENTRY_POINT_GROUP}' group (built in: {known}), a Kafka class name such as "
        "org.apache.kafka.connect.json.JsonConverter, or a Python class path such as "
        "package.module:Class"
    )
    return ConfigError(config_key, message, value=name)
