"""The fields a ``PUT /config`` body may set, checked and kept; everything else is dropped.

Confluent reads the body into ``ConfigUpdateRequest`` (``@JsonIgnoreProperties(
ignoreUnknown = true)``): unknown fields are ignored, never stored, and a known field of the
wrong type is an error. Storing the body as sent would keep arbitrary JSON in the
``_schemas`` topic and serve it back from ``GET /config``. Request bodies are read without
``NaN``/``Infinity`` (``rest.http.json_body``), and views of stored configs keep only these
fields, so a config written by an older version that kept anything is served clean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from schema_registry.errors import InvalidConfigError

__all__ = ["CONFIG_FIELDS", "LEVEL_KEYS", "config_fields", "known_config"]

#: The compatibility level arrives as ``compatibility`` (Confluent's request name) or
#: ``compatibilityLevel`` (its response name); the registry checks its value.
LEVEL_KEYS = ("compatibility", "compatibilityLevel")

#: Every other field of Confluent's ``ConfigUpdateRequest``, with the JSON type it takes.
CONFIG_FIELDS: dict[str, type] = {
    "normalize": bool,
    "validateFields": bool,
    "validateNewSchemas": bool,
    "validateRules": bool,
    "alias": str,
    "aliasForDeks": str,
    "compatibilityPolicy": str,
    "compatibilityGroup": str,
    "defaultMetadata": dict,
    "overrideMetadata": dict,
    "defaultRuleSet": dict,
    "overrideRuleSet": dict,
}

_TYPE_NAMES = {bool: "a boolean", str: "a string", dict: "an object"}


def config_fields(body: Mapping[str, Any]) -> dict[str, Any]:
    """The known non-level fields of a request body, type-checked (``InvalidConfigError``
    naming the field); unknown fields and JSON nulls are left out."""
    fields = {}
    for key, kind in CONFIG_FIELDS.items():
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, kind):
            raise InvalidConfigError(f"Invalid config: '{key}' must be {_TYPE_NAMES[kind]}, "
                                     f"got {type(value).__name__}")
        fields[key] = value
    return fields


def known_config(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of a stored config that ``config_fields`` would keep."""
    try:
        return config_fields(stored)
    except InvalidConfigError:
        return {k: v for k, v in stored.items()
                if k in CONFIG_FIELDS and isinstance(v, CONFIG_FIELDS[k])}
