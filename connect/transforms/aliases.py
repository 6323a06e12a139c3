"""Names for transformations and predicates: what ``transforms.<alias>.type`` and
``predicates.<alias>.type`` may say.

A type is resolved, in order, as:

1. a built-in's short name (``InsertField$Value``, ``InsertField.Value``, ``Filter``) or
   Kafka's class name (``org.apache.kafka.connect.transforms.InsertField$Value``), so
   configs copied from a Java deployment work unchanged;
2. the name of an entry point in the ``ferry.transforms`` or ``ferry.predicates`` group,
   for plugins installed as distributions (``Foo$Value`` also finds ``Foo.Value``, the
   spelling entry point names use; the built-ins register that way too);
3. ``module:Class`` (or ``module.Class``), for a class importable from the environment.

Anything else is a ``ConfigError`` listing the known short names.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect.api.errors import ConfigError
from connect.api.transforms import Predicate, Transformation
from connect.transforms.cast import CastKey, CastValue
from connect.transforms.drop_headers import DropHeaders
from connect.transforms.extract_field import ExtractFieldKey, ExtractFieldValue
from connect.transforms.filter import Filter
from connect.transforms.flatten import FlattenKey, FlattenValue
from connect.transforms.header_from import HeaderFromKey, HeaderFromValue
from connect.transforms.hoist_field import HoistFieldKey, HoistFieldValue
from connect.transforms.insert_field import InsertFieldKey, InsertFieldValue
from connect.transforms.insert_header import InsertHeader
from connect.transforms.mask_field import MaskFieldKey, MaskFieldValue
from connect.transforms.predicates import HasHeaderKey, RecordIsTombstone, TopicNameMatches
from connect.transforms.regex_router import RegexRouter
from connect.transforms.replace_field import ReplaceFieldKey, ReplaceFieldValue
from connect.transforms.set_schema_metadata import SetSchemaMetadataKey, SetSchemaMetadataValue
from connect.transforms.timestamp_converter import TimestampConverterKey, TimestampConverterValue
from connect.transforms.timestamp_router import TimestampRouter
from connect.transforms.value_to_key import ValueToKey

__all__ = [
    "KAFKA_PREDICATES_PACKAGE",
    "KAFKA_TRANSFORMS_PACKAGE",
    "PREDICATES",
    "PREDICATE_ENTRY_POINT_GROUP",
    "TRANSFORMATIONS",
    "TRANSFORM_ENTRY_POINT_GROUP",
    "resolve_predicate",
    "resolve_transform",
]

TRANSFORM_ENTRY_POINT_GROUP = "ferry.transforms"
PREDICATE_ENTRY_POINT_GROUP = "ferry.predicates"
KAFKA_TRANSFORMS_PACKAGE = "org.apache.kafka.connect.transforms."
KAFKA_PREDICATES_PACKAGE = "org.apache.kafka.connect.transforms.predicates."

#: Kafka's simple class names (``$`` for nested classes) -> Ferry's built-in SMTs.
TRANSFORMATIONS: Mapping[str, type] = {
    "Cast$Key": CastKey,
    "Cast$Value": CastValue,
    "DropHeaders": DropHeaders,
    "ExtractField$Key": ExtractFieldKey,
    "ExtractField$Value": ExtractFieldValue,
    "Filter": Filter,
    "Flatten$Key": FlattenKey,
    "Flatten$Value": FlattenValue,
    "HeaderFrom$Key": HeaderFromKey,
    "HeaderFrom$Value": HeaderFromValue,
    "HoistField$Key": HoistFieldKey,
    "HoistField$Value": HoistFieldValue,
    "InsertField$Key": InsertFieldKey,
    "InsertField$Value": InsertFieldValue,
    "InsertHeader": InsertHeader,
    "MaskField$Key": MaskFieldKey,
    "MaskField$Value": MaskFieldValue,
    "RegexRouter": RegexRouter,
    "ReplaceField$Key": ReplaceFieldKey,
    "ReplaceField$Value": ReplaceFieldValue,
    "SetSchemaMetadata$Key": SetSchemaMetadataKey,
    "SetSchemaMetadata$Value": SetSchemaMetadataValue,
    "TimestampConverter$Key": TimestampConverterKey,
    "TimestampConverter$Value": TimestampConverterValue,
    "TimestampRouter": TimestampRouter,
    "ValueToKey": ValueToKey,
}

#: Kafka's simple class names -> Ferry's built-in predicates.
PREDICATES: Mapping[str, type] = {
    "HasHeaderKey": HasHeaderKey,
    "RecordIsTombstone": RecordIsTombstone,
    "TopicNameMatches": TopicNameMatches,
}


@dataclass(frozen=True)
class _Kind:
    label: str
    builtins: Mapping[str, type]
    kafka_package: str
    group: str
    protocol: Any

    def builtin(self, name: str) -> type | None:
        simple = name.removeprefix(self.kafka_package)
        # Java docs spell nested classes both ways: InsertField$Value, InsertField.Value.
        return self.builtins.get(simple) or self.builtins.get(simple.replace(".", "$"))

    def known_names(self) -> str:
        """The short names, variants folded: ``Cast$Key/$Value, DropHeaders, ...``."""
        stems: dict[str, list[str]] = {}
        for name in sorted(self.builtins):
            stem, dollar, variant = name.partition("$")
            stems.setdefault(stem, []).append(dollar + variant)
        return ", ".join(stem + "/".join(variants) for stem, variants in stems.items())


_TRANSFORMATION = _Kind(
    "transformation",
    TRANSFORMATIONS,
    KAFKA_TRANSFORMS_PACKAGE,
    TRANSFORM_ENTRY_POINT_GROUP,
    Transformation,
)
_PREDICATE = _Kind(
    "predicate", PREDICATES, KAFKA_PREDICATES_PACKAGE, PREDICATE_ENTRY_POINT_GROUP, Predicate
)


def _entry_points(group: str) -> Mapping[str, importlib.metadata.EntryPoint]:
    """The installed entry points of ``group`` by name (a seam for tests)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=group)}


def resolve_transform(name: str | type) -> type:
    """The transformation class ``name`` stands for (see the module docstring).
    ``ConfigError`` (without a key; callers add theirs) if it names nothing, or a class
    that is not a ``Transformation``."""
    return _resolve(name, _TRANSFORMATION, _PREDICATE)


def resolve_predicate(name: str | type) -> type:
    """The predicate class ``name`` stands for (see the module docstring)."""
    return _resolve(name, _PREDICATE, _TRANSFORMATION)


def _resolve(name: str | type, kind: _Kind, other: _Kind) -> type:
    if isinstance(name, type):
        # Typed configs (ConfigType.CLASS, or props built in code) may hold the class itself.
        return _checked(name, name.__qualname__, kind)
    if not isinstance(name, str) or not name.strip():
        raise ConfigError(None, f"The {kind.label} type must be a non-empty name, not {name!r}")
    text = name.strip()
    found: Any = kind.builtin(text)
    if found is not None:
        return found
    if other.builtin(text) is not None:
        raise ConfigError(
            None,
            f"{text} is a {other.label}, not a {kind.label}; {kind.label}s are "
            f"{kind.known_names()}",
        )
    # Entry point names cannot hold "$" without a warning from setuptools, so a
    # plugin's Foo$Value is registered as Foo.Value; accept either spelling.
    entry_points = _entry_points(kind.group)
    entry_point = entry_points.get(text) or entry_points.get(text.replace("$", "."))
    if entry_point is not None:
        try:
            found = entry_point.load()
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                None,
                f"The {kind.label} entry point {text!r} ({entry_point.value}) fails to load: {exc}",
            ) from exc
    else:
        found = _import(text, kind)
    return _checked(found, text, kind)


def _checked(found: Any, text: str, kind: _Kind) -> type:
    if not isinstance(found, type) or not issubclass(found, kind.protocol):
        raise ConfigError(
            None, f"{text} is not a {kind.label}: {found!r} lacks the {kind.label} methods"
        )
    if inspect.isabstract(found):
        variants = [short for short, cls in kind.builtins.items() if issubclass(cls, found)]
        hint = f"; did you mean {' or '.join(variants)}?" if variants else ""
        raise ConfigError(None, f"{text} is abstract and cannot be created{hint}")
    return found


def _import(text: str, kind: _Kind) -> Any:
    module_name, colon, attribute = text.partition(":")
    if not colon:
        module_name, _, attribute = text.rpartition(".")
    found: Any = None
    if module_name and attribute:
        try:
            found = importlib.import_module(module_name)
            for part in attribute.split("."):
                found = getattr(found, part)
        except (ImportError, AttributeError, TypeError, ValueError):  # "..x": relative/empty
            found = None
    if found is None:
        raise ConfigError(
            None,
            f"Unknown {kind.label} type {text!r}: give a built-in name "
            f"({kind.known_names()}), Kafka's class name, an entry point name or module:Class",
        )
    return found
