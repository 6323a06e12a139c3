"""ReplaceField: keep, drop and rename fields of the key or value (Kafka's
``ReplaceField$Key`` and ``ReplaceField$Value``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance, LambdaValidator
from connect.api.data import Schema, SchemaBuilder
from connect.api.errors import ConfigError
from connect.transforms.base import (
    REPLACE_NULL_WITH_DEFAULT_CONFIG,
    KeySide,
    R,
    SidedTransformation,
    ValueSide,
    define_replace_null_with_default,
)
from connect.transforms.requirements import require_map, require_struct
from connect.transforms.schema_util import FieldCopy, SchemaCache, copy_fields, copy_schema_basics

__all__ = ["ReplaceField", "ReplaceFieldKey", "ReplaceFieldValue", "parse_renames"]

log = logging.getLogger(__name__)

EXCLUDE = "exclude"
INCLUDE = "include"
RENAMES = "renames"
# Deprecated since Kafka 2.6 and removed in 4.0; still accepted so old configs work.
BLACKLIST = "blacklist"
WHITELIST = "whitelist"
_DEPRECATED = {EXCLUDE: BLACKLIST, INCLUDE: WHITELIST}

_PURPOSE = "field replacement"


def parse_renames(mappings: list[str]) -> dict[str, str]:
    """``old:new`` pairs as a dict; ``ConfigError`` on ``renames`` for a malformed pair."""
    renames: dict[str, str] = {}
    for mapping in mappings:
        # Java's String.split drops trailing empty strings: "a:" is one part, ":b" two.
        parts = mapping.split(":")
        while parts and not parts[-1]:
            parts.pop()
        if len(parts) != 2:
            raise ConfigError(
                RENAMES, f"Invalid rename mapping: {mapping}", value=",".join(mappings)
            )
        renames[parts[0]] = parts[1]
    return renames


def _check_renames(name: str, value: Any) -> None:
    parse_renames(value)


_CONFIG_DEF = (
    ConfigDef()
    .define(
        EXCLUDE,
        ConfigType.LIST,
        default=[],
        importance=Importance.MEDIUM,
        documentation="Fields to exclude. This takes precedence over the fields to include.",
    )
    .define(
        BLACKLIST,
        ConfigType.LIST,
        default=None,
        importance=Importance.LOW,
        documentation=f"Deprecated. Use {EXCLUDE} instead.",
    )
    .define(
        INCLUDE,
        ConfigType.LIST,
        default=[],
        importance=Importance.MEDIUM,
        documentation="Fields to include. If specified, only these fields are kept.",
    )
    .define(
        WHITELIST,
        ConfigType.LIST,
        default=None,
        importance=Importance.LOW,
        documentation=f"Deprecated. Use {INCLUDE} instead.",
    )
    .define(
        RENAMES,
        ConfigType.LIST,
        default=[],
        validator=LambdaValidator.with_(
            _check_renames, "list of colon-delimited pairs, e.g. foo:bar,abc:xyz"
        ),
        importance=Importance.MEDIUM,
        documentation="Field rename mappings.",
    )
)
define_replace_null_with_default(_CONFIG_DEF)


class ReplaceField(SidedTransformation):
    """Filter or rename fields of a struct (with a schema) or map (schemaless). A field is
    kept unless it is excluded or an include list is given without it; kept fields are
    then renamed. Null keys or values pass through unchanged."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._exclude: frozenset[str] = frozenset()
        self._include: frozenset[str] = frozenset()
        self._renames: dict[str, str] = {}
        self._with_default = True
        self._plans: SchemaCache[tuple[Schema, tuple[FieldCopy, ...]]] = SchemaCache()

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        for current, deprecated in _DEPRECATED.items():
            if parsed[deprecated] is None:
                continue
            if current in configs:
                log.warning("Ignoring deprecated %s because %s is set", deprecated, current)
            else:
                log.warning("%s is deprecated; use %s instead", deprecated, current)
                parsed[current] = parsed[deprecated]
        self._exclude = frozenset(parsed[EXCLUDE])
        self._include = frozenset(parsed[INCLUDE])
        self._renames = parse_renames(parsed[RENAMES])
        self._with_default = parsed[REPLACE_NULL_WITH_DEFAULT_CONFIG]
        self._plans = SchemaCache()

    def _kept(self, name: str) -> bool:
        return name not in self._exclude and (not self._include or name in self._include)

    def apply(self, record: R) -> R:
        value = self.operating_value(record)
        if value is None:
            return record
        if self.operating_schema(record) is None:
            renames = self._renames
            updated = {
                renames.get(name, name): item
                for name, item in require_map(value, _PURPOSE).items()
                if self._kept(name)
            }
            return self.updated_record(record, None, updated)
        struct = require_struct(value, _PURPOSE)
        schema, copies = self._plans.get_or_build(struct.schema, self._plan)
        result = copy_fields(schema, struct, copies, self._with_default)
        return self.updated_record(record, schema, result)

    def _plan(self, schema: Schema) -> tuple[Schema, tuple[FieldCopy, ...]]:
        updated = self._updated_schema(schema)
        kept = (field for field in schema.fields if self._kept(field.name))
        return updated, tuple(zip(kept, updated.fields, strict=True))

    def _updated_schema(self, schema: Schema) -> Schema:
        builder = copy_schema_basics(schema, SchemaBuilder.struct())
        for field in schema.fields:
            if self._kept(field.name):
                builder.field(self._renames.get(field.name, field.name), field.schema)
        return builder.build()


class ReplaceFieldKey(KeySide, ReplaceField):
    """ReplaceField on the record key (Kafka's ``ReplaceField$Key``)."""


class ReplaceFieldValue(ValueSide, ReplaceField):
    """ReplaceField on the record value (Kafka's ``ReplaceField$Value``)."""
