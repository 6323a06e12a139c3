"""Resolving transforms.X.type and predicates.X.type: short names, Kafka class names,
entry points and module:Class; plus the package's public surface and layering."""

from __future__ import annotations

import ast
import importlib.metadata
from pathlib import Path

import pytest

import connect.transforms as transforms
from connect.api import Predicate, SourceRecord, Transformation
from connect.api.errors import ConfigError
from connect.transforms import aliases
from connect.transforms.aliases import (
    PREDICATES,
    TRANSFORMATIONS,
    resolve_predicate,
    resolve_transform,
)

KAFKA = "org.apache.kafka.connect.transforms."
KAFKA_SMTS = [
    "Cast", "DropHeaders", "ExtractField", "Filter", "Flatten", "HeaderFrom", "HoistField",
    "InsertField", "InsertHeader", "MaskField", "RegexRouter", "ReplaceField",
    "SetSchemaMetadata", "TimestampConverter", "TimestampRouter", "ValueToKey",
]  # fmt: skip
UNSIDED = {"DropHeaders", "Filter", "InsertHeader", "RegexRouter", "TimestampRouter", "ValueToKey"}


def test_all_sixteen_kafka_smts_with_their_variants():
    expected = set()
    for name in KAFKA_SMTS:
        expected |= {name} if name in UNSIDED else {f"{name}$Key", f"{name}$Value"}
    assert set(TRANSFORMATIONS) == expected
    assert set(PREDICATES) == {"TopicNameMatches", "HasHeaderKey", "RecordIsTombstone"}


@pytest.mark.parametrize("short", sorted(TRANSFORMATIONS))
def test_every_transformation_resolves_by_every_spelling(short):
    cls = TRANSFORMATIONS[short]
    dotted = short.replace("$", ".")
    for name in (short, dotted, KAFKA + short, KAFKA + dotted, f"{cls.__module__}:{cls.__name__}"):
        assert resolve_transform(name) is cls, name
    instance = cls()
    assert isinstance(instance, Transformation)
    assert instance.config() is cls.CONFIG_DEF


@pytest.mark.parametrize("short", sorted(PREDICATES))
def test_every_predicate_resolves(short):
    cls = PREDICATES[short]
    assert resolve_predicate(short) is cls
    assert resolve_predicate(KAFKA + "predicates." + short) is cls
    assert resolve_predicate(f"{cls.__module__}.{cls.__name__}") is cls
    assert isinstance(cls(), Predicate)


def test_classes_are_accepted_as_they_are():
    assert resolve_transform(transforms.Filter) is transforms.Filter
    with pytest.raises(ConfigError, match="is not a predicate"):
        resolve_predicate(transforms.Filter)


def test_entry_points_are_consulted(monkeypatch):
    entry_point = importlib.metadata.EntryPoint(
        name="my-filter", value="connect.transforms.filter:Filter", group="ferry.transforms"
    )
    broken = importlib.metadata.EntryPoint(
        name="broken", value="no.such.module:X", group="ferry.transforms"
    )
    monkeypatch.setattr(
        aliases, "_entry_points", lambda group: {"my-filter": entry_point, "broken": broken}
    )
    assert resolve_transform("my-filter") is transforms.Filter
    with pytest.raises(ConfigError, match="entry point 'broken'"):
        resolve_transform("broken")
    dotted = importlib.metadata.EntryPoint(
        name="Mine.Value", value="connect.transforms.cast:CastValue", group="ferry.transforms"
    )
    monkeypatch.setattr(aliases, "_entry_points", lambda group: {"Mine.Value": dotted})
    assert resolve_transform("Mine$Value") is transforms.CastValue


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "non-empty"),
        ("io.confluent.connect.transforms.Drop$Value", "Unknown transformation type"),
        ("connect.transforms.no_such:Thing", "Unknown transformation type"),
        ("connect.transforms.predicates:HasHeaderKey", "is not a transformation"),
        (KAFKA + "predicates.HasHeaderKey", "is a predicate, not a transformation"),
        (
            "connect.transforms.insert_field:InsertField",
            r"abstract .*InsertField\$Key or InsertField\$Value",
        ),
    ],
)
def test_unresolvable_names(name, message):
    with pytest.raises(ConfigError, match=message):
        resolve_transform(name)


def test_package_exports_every_builtin():
    exported = [getattr(transforms, name) for name in transforms.__all__]
    classes = {item for item in exported if isinstance(item, type)}
    assert set(TRANSFORMATIONS.values()) <= classes
    assert set(PREDICATES.values()) <= classes
    assert sorted(transforms.__all__) == sorted(set(transforms.__all__))


def test_transforms_import_only_the_plugin_api():
    root = Path(transforms.__file__).parent
    offenders = []
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            modules = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules = [node.module]
            elif isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            for module in modules:
                top = module.split(".")[0]
                allowed = module.startswith(("connect.api", "connect.transforms"))
                if top in ("core", "connect", "connectors", "schema_registry") and not allowed:
                    offenders.append(f"{path.name} imports {module}")
    assert offenders == []


SIDED_CONFIGS = {
    "Cast": {"spec": "a:string"},
    "ExtractField": {"field": "a"},
    "Flatten": {"delimiter": "_"},
    "HeaderFrom": {"fields": "a", "headers": "h", "operation": "move"},
    "HoistField": {"field": "wrapped"},
    "InsertField": {"static.field": "s", "static.value": "v"},
    "MaskField": {"fields": "a"},
    "ReplaceField": {"exclude": "a"},
    "TimestampConverter": {"field": "ts", "target.type": "string", "format": "yyyy"},
}


@pytest.mark.parametrize("name", sorted(SIDED_CONFIGS))
def test_key_and_value_variants_change_only_their_side(name):
    original = {"a": 1, "ts": 0, "nested": {"b": 2}}
    for side, other in (("Key", "value"), ("Value", "key")):
        xform = TRANSFORMATIONS[f"{name}${side}"]()
        xform.configure(SIDED_CONFIGS[name])
        record = SourceRecord(topic="t", key=dict(original), value=dict(original))
        out = xform.apply(record)
        assert getattr(out, other) == original, side
        assert getattr(out, side.lower()) != original, side
