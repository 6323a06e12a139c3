"""Parsing config values from Kafka's string forms into typed values, and back."""

from __future__ import annotations

import importlib
import re
from typing import Any

from connect.api.config.types import ConfigType, Password
from connect.api.errors import ConfigError

__all__ = ["parse_value", "to_config_string"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_COMMA = re.compile(r"\s*,\s*")
_INT_RANGES = {
    ConfigType.SHORT: (-(2**15), 2**15 - 1),
    ConfigType.INT: (-(2**31), 2**31 - 1),
    ConfigType.LONG: (-(2**63), 2**63 - 1),
}


def parse_value(name: str, config_type: ConfigType, value: Any) -> Any:
    """Parse ``value`` (a string as found in a properties file or REST body, or an
    already-typed value) as ``config_type``; ``None`` stays ``None``.

    String forms are Kafka's: booleans ``true``/``false`` in any case; integers in
    decimal; doubles as Java writes them (``1.5``, ``1e-3``, ``NaN``); lists
    comma-separated with whitespace around commas ignored (the empty string is the empty
    list); classes as ``package.module.Name`` or ``package.module:Name``. Surrounding
    whitespace is trimmed, as Kafka trims it. Raises ``ConfigError`` naming the key; a
    password's value never appears in the message.
    """
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    if config_type is ConfigType.PASSWORD:
        if isinstance(value, Password):
            return value
        if text is None:
            raise ConfigError(
                name,
                f"Expected a string for a password, got {type(value).__name__}",
                value=Password.HIDDEN,
            )
        return Password(text)
    if config_type is ConfigType.BOOLEAN:
        if isinstance(value, bool):
            return value
        if text is not None and text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ConfigError(name, "Expected value to be either true or false", value=value)
    if config_type is ConfigType.STRING:
        if text is None:
            raise ConfigError(
                name,
                f"Expected value to be a string, but it was a {type(value).__name__}",
                value=value,
            )
        return text
    if config_type in _INT_RANGES:
        return _parse_int(name, config_type, value, text)
    if config_type is ConfigType.DOUBLE:
        return _parse_double(name, value, text)
    if config_type is ConfigType.LIST:
        if isinstance(value, list | tuple):
            return list(value)
        if text is None:
            raise ConfigError(name, "Expected a comma separated list.", value=value)
        return _COMMA.split(text) if text else []
    if config_type is ConfigType.CLASS:
        if isinstance(value, type):
            return value
        if text is None:
            raise ConfigError(name, "Expected a class or a class name.", value=value)
        return _load_class(name, text)
    raise ConfigError(name, f"Unknown config type {config_type!r}")


def _parse_int(name: str, config_type: ConfigType, value: Any, text: str | None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif text is not None and _INTEGER.fullmatch(text):
        number = int(text)
    else:
        raise ConfigError(name, f"Not a number of type {config_type.value}", value=value)
    low, high = _INT_RANGES[config_type]
    if not low <= number <= high:
        raise ConfigError(
            name, f"Not a number of type {config_type.value} (range {low} to {high})", value=value
        )
    return number


def _parse_double(name: str, value: Any, text: str | None) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    # Python's float() also takes "1_000" and "infinity"; Java's parseDouble does not
    # take underscores, and Kafka configs must mean the same in both.
    if text is not None and "_" not in text:
        try:
            return float(text)
        except ValueError:
            pass
    raise ConfigError(name, "Not a number of type DOUBLE", value=value)


def _load_class(name: str, text: str) -> type:
    module_name, colon, attribute = text.partition(":")
    if not colon:
        module_name, _, attribute = text.rpartition(".")
    found: Any = None
    if module_name and attribute:
        try:
            found = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError):
            found = None
    if not isinstance(found, type):
        raise ConfigError(
            name,
            f"Class {text} could not be found; give it as package.module.ClassName "
            "of an installed module",
            value=text,
        )
    return found


def to_config_string(value: Any, config_type: ConfigType) -> str | None:
    """Kafka's string form of a parsed value (``None`` stays ``None``).

    A password is always ``[hidden]``: this string is for display (docs, REST, logs),
    and Ferry never writes a secret back out.
    """
    if value is None:
        return None
    if config_type is ConfigType.PASSWORD:
        return Password.HIDDEN
    if config_type is ConfigType.BOOLEAN:
        return "true" if value else "false"
    if config_type is ConfigType.LIST:
        return ",".join(str(item) for item in value)
    if config_type is ConfigType.CLASS and isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    return str(value)
