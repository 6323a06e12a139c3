"""Avro schemas as a tree of typed nodes, parsed and validated from their JSON form.

The parser follows the Avro specification (and the Java implementation Confluent runs):
names and namespaces, aliases, named-type references, and the checks Confluent applies to
new schemas, default values included. A short name is resolved in the enclosing namespace
only: Java falls back to the null namespace, fastavro (our serializers) does not, so such a
schema would be unusable here. Named types are shared nodes, so a recursive schema is a
graph with cycles: walk it with identity-keyed memos.

Default values follow Avro 1.12: a union field's default may match any branch (Avro 1.11
required the first branch). Names follow Java's rule: a letter or ``_`` first, then letters,
digits or ``_`` (Unicode letters count, as Java's ``Character.isLetter`` does).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from .errors import SchemaError

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
# Attributes Avro itself interprets; every other key of a schema object is a custom property.
SCHEMA_RESERVED = frozenset(
    {"type", "name", "namespace", "doc", "aliases", "fields", "items", "values", "size",
     "symbols"}
)
ENUM_RESERVED = SCHEMA_RESERVED | {"default"}
FIELD_RESERVED = frozenset({"name", "type", "doc", "default", "order", "aliases"})
FIELD_ORDERS = ("ascending", "descending", "ignore")
NO_DEFAULT: Any = object()  # a field without "default" (None is the JSON null default)

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
FLOAT_SPECIALS = ("NaN", "Infinity", "-Infinity")


@dataclass(eq=False)
class AvroType:
    """A schema node. ``type`` is the Avro type name ("record" for records and errors)."""

    type: str
    props: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Primitive(AvroType):
    pass


@dataclass(eq=False)
class Named(AvroType):
    name: str = ""
    namespace: str | None = None
    doc: str | None = None
    aliases: tuple[str, ...] = ()  # full names

    @property
    def fullname(self) -> str:
        return f"{self.namespace}.{self.name}" if self.namespace else self.name


@dataclass(eq=False)
class Field:
    name: str
    type: AvroType
    doc: str | None = None
    default: Any = NO_DEFAULT
    order: str = "ascending"
    aliases: tuple[str, ...] = ()
    props: dict[str, Any] = field(default_factory=dict)

    @property
    def has_default(self) -> bool:
        return self.default is not NO_DEFAULT


@dataclass(eq=False)
class Record(Named):
    fields: list[Field] = field(default_factory=list)
    is_error: bool = False
    # Index for field_named, rebuilt when ``fields`` has grown; a scan per lookup would
    # make compatibility checks quadratic in the number of fields.
    _by_name: dict[str, Field] = field(default_factory=dict, repr=False)

    def field_named(self, name: str) -> Field | None:
        if len(self._by_name) != len(self.fields):
            self._by_name = {f.name: f for f in self.fields}
        return self._by_name.get(name)


@dataclass(eq=False)
class Enum(Named):
    symbols: tuple[str, ...] = ()
    default: str | None = None


@dataclass(eq=False)
class Fixed(Named):
    size: int = 0


@dataclass(eq=False)
class Array(AvroType):
    items: AvroType | None = None


@dataclass(eq=False)
class Map(AvroType):
    values: AvroType | None = None


@dataclass(eq=False)
class Union(AvroType):
    branches: list[AvroType] = field(default_factory=list)


def describe(node: AvroType) -> str:
    """A short name for a type, for messages."""
    if isinstance(node, Named):
        return node.fullname
    if isinstance(node, Union):
        return "[" + ", ".join(describe(b) for b in node.branches) + "]"
    return node.type


def valid_name(name: str) -> bool:
    return bool(name) and (name[0].isalpha() or name[0] == "_") and all(
        c.isalnum() or c == "_" for c in name
    )


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


class AvroParser:
    """Parses schema JSON into nodes. One parser accumulates the named types of a schema
    and of everything it references, so later schemas can use earlier names."""

    def __init__(self) -> None:
        self.names: dict[str, Named] = {}
        self._pending_defaults: list[tuple[Field, Record, str]] = []

    def parse(self, value: Any) -> AvroType:
        """Parse one complete schema (a referenced one or the main one) and check defaults."""
        node = self._parse(value, None, "")
        pending, self._pending_defaults = self._pending_defaults, []
        for fld, record, path in pending:
            if not default_is_valid(fld.type, fld.default):
                raise SchemaError(
                    f"Invalid default for field '{fld.name}' in record '{record.fullname}' at "
                    f"{path}: {_show(fld.default)} is not a valid {describe(fld.type)}"
                )
        return node

    def _parse(self, value: Any, namespace: str | None, path: str) -> AvroType:
        where = path or "/"
        if isinstance(value, str):
            return self._lookup(value, namespace, where)
        if isinstance(value, list):
            return self._union(value, namespace, path)
        if not isinstance(value, dict):
            raise SchemaError(
                f"Invalid schema at {where}: expected a type name, an object or an array, "
                f"got {_show(value)}"
            )
        kind = value.get("type")
        if kind is None:
            raise SchemaError(f"Schema object at {where} has no 'type'")
        if not isinstance(kind, str):
            raise SchemaError(
                f"'type' of the schema object at {where} must be a type name, got {_show(kind)}"
            )
        if kind in PRIMITIVES:
            return Primitive(kind, _props(value, SCHEMA_RESERVED))
        if kind in ("record", "error"):
            return self._record(value, kind, namespace, path)
        if kind == "enum":
            return self._enum(value, namespace, path)
        if kind == "fixed":
            return self._fixed(value, namespace, path)
        if kind == "array":
            if "items" not in value:
                raise SchemaError(f"Array schema at {where} has no 'items'")
            node = Array("array", _props(value, SCHEMA_RESERVED))
            node.items = self._parse(value["items"], namespace, f"{path}/items")
            return node
        if kind == "map":
            if "values" not in value:
                raise SchemaError(f"Map schema at {where} has no 'values'")
            node = Map("map", _props(value, SCHEMA_RESERVED))
            node.values = self._parse(value["values"], namespace, f"{path}/values")
            return node
        return self._lookup(kind, namespace, f"{path}/type")

    def _lookup(self, name: str, namespace: str | None, where: str) -> AvroType:
        if name in PRIMITIVES:
            return Primitive(name)
        fullname = name if "." in name or not namespace else f"{namespace}.{name}"
        if fullname in self.names:
            return self.names[fullname]
        raise SchemaError(
            f"Unknown type '{name}' at {where}: not a primitive type, not defined earlier in the "
            "schema, and not defined by a referenced schema (add a schema reference for types "
            "registered under another subject)"
        )

    def _union(self, value: list[Any], namespace: str | None, path: str) -> Union:
        node = Union("union")
        seen: set[str] = set()
        for i, item in enumerate(value):
            branch = self._parse(item, namespace, f"{path}/{i}")
            if isinstance(branch, Union):
                raise SchemaError(f"Union at {path or '/'} contains a nested union at {path}/{i}")
            key = branch.fullname if isinstance(branch, Named) else branch.type
            if key in seen:
                raise SchemaError(f"Duplicate type '{key}' in union at {path or '/'}")
            seen.add(key)
            node.branches.append(branch)
        return node

    def _define(self, node: Named, value: dict[str, Any], namespace: str | None, path: str) -> None:
        kind = node.type if not getattr(node, "is_error", False) else "error"
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"The {kind} schema at {path or '/'} has no 'name'")
        if "." in name:
            space, short = name.rsplit(".", 1)
        else:
            space, short = value.get("namespace", namespace), name
            if space is not None and not isinstance(space, str):
                raise SchemaError(f"'namespace' of '{name}' at {path or '/'} must be a string")
        if not valid_name(short):
            raise SchemaError(
                f"Invalid name '{name}' at {path or '/'}: a name starts with a letter or '_' "
                "and contains only letters, digits and '_'"
            )
        node.name, node.namespace = short, space or None
        if node.fullname in PRIMITIVES:
            raise SchemaError(f"A {kind} cannot be named after the primitive type '{name}'")
        if node.fullname in self.names:
            raise SchemaError(f"Named type '{node.fullname}' is defined twice (at {path or '/'})")
        doc = value.get("doc")
        node.doc = doc if isinstance(doc, str) else None
        node.aliases = tuple(
            dict.fromkeys(_qualify(a, node.namespace) for a in _aliases(value, path))
        )
        self.names[node.fullname] = node

    def _record(self, value: dict[str, Any], kind: str, namespace: str | None, path: str) -> Record:
        node = Record("record", _props(value, SCHEMA_RESERVED), is_error=kind == "error")
        self._define(node, value, namespace, path)
        fields = value.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"Record '{node.fullname}' at {path or '/'} has no 'fields' array")
        seen: set[str] = set()  # a set, not field_named: parsing stays linear in fields
        for i, raw in enumerate(fields):
            where = f"{path}/fields/{i}"
            if not isinstance(raw, dict):
                raise SchemaError(f"Field at {where} of '{node.fullname}' must be an object")
            name = raw.get("name")
            if not isinstance(name, str) or not valid_name(name):
                raise SchemaError(f"Field at {where} of '{node.fullname}' has an invalid name "
                                  f"{_show(name)}")
            if name in seen:
                raise SchemaError(f"Duplicate field '{name}' in record '{node.fullname}'")
            seen.add(name)
            if "type" not in raw:
                raise SchemaError(f"Field '{name}' of '{node.fullname}' has no 'type'")
            order = raw.get("order", "ascending")
            if order not in FIELD_ORDERS:
                raise SchemaError(f"Field '{name}' of '{node.fullname}' has an invalid order "
                                  f"{_show(order)}; expected one of {', '.join(FIELD_ORDERS)}")
            doc = raw.get("doc")
            fld = Field(
                name=name,
                type=self._parse(raw["type"], node.namespace, f"{where}/type"),
                doc=doc if isinstance(doc, str) else None,
                default=raw.get("default", NO_DEFAULT),
                order=order,
                aliases=tuple(dict.fromkeys(_aliases(raw, where))),
                props=_props(raw, FIELD_RESERVED),
            )
            node.fields.append(fld)
            if fld.has_default:
                self._pending_defaults.append((fld, node, f"{where}/default"))
        return node

    def _enum(self, value: dict[str, Any], namespace: str | None, path: str) -> Enum:
        node = Enum("enum", _props(value, ENUM_RESERVED))
        self._define(node, value, namespace, path)
        symbols = value.get("symbols")
        if not isinstance(symbols, list):
            raise SchemaError(f"Enum '{node.fullname}' has no 'symbols' array")
        for symbol in symbols:
            if not isinstance(symbol, str) or not valid_name(symbol):
                raise SchemaError(f"Enum '{node.fullname}' has an invalid symbol {_show(symbol)}")
        duplicates = sorted(s for s, n in Counter(symbols).items() if n > 1)
        if duplicates:
            raise SchemaError(f"Enum '{node.fullname}' has duplicate symbols: "
                              f"{', '.join(duplicates)}")
        node.symbols = tuple(symbols)
        default = value.get("default")
        if default is not None and default not in node.symbols:
            raise SchemaError(
                f"Default {_show(default)} of enum '{node.fullname}' is not one of its symbols"
            )
        node.default = default
        return node

    def _fixed(self, value: dict[str, Any], namespace: str | None, path: str) -> Fixed:
        node = Fixed("fixed", _props(value, SCHEMA_RESERVED))
        self._define(node, value, namespace, path)
        size = value.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise SchemaError(f"Fixed '{node.fullname}' needs a non-negative integer 'size', got "
                              f"{_show(size)}")
        node.size = size
        return node


def _props(value: dict[str, Any], reserved: frozenset[str]) -> dict[str, Any]:
    return {k: v for k, v in value.items() if k not in reserved}


def _aliases(value: dict[str, Any], path: str) -> list[str]:
    aliases = value.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise SchemaError(f"'aliases' at {path or '/'} must be an array of names")
    return aliases


def _qualify(name: str, namespace: str | None) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def default_is_valid(node: AvroType, value: Any) -> bool:
    """Whether ``value`` (decoded JSON) is a valid default for ``node``."""
    kind = node.type
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind in ("int", "long"):
        low, high = INT_RANGE if kind == "int" else LONG_RANGE
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if kind in ("float", "double"):
        if isinstance(value, str):
            return value in FLOAT_SPECIALS
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind in ("bytes", "string", "fixed"):
        return isinstance(value, str)
    if isinstance(node, Enum):
        return isinstance(value, str) and value in node.symbols
    if isinstance(node, Array):
        return isinstance(value, list) and all(default_is_valid(node.items, v) for v in value)
    if isinstance(node, Map):
        return isinstance(value, dict) and all(
            default_is_valid(node.values, v) for v in value.values()
        )
    if isinstance(node, Record):
        if not isinstance(value, dict):
            return False
        return all(
            default_is_valid(f.type, value[f.name]) if f.name in value
            else f.has_default
            for f in node.fields
        )
    if isinstance(node, Union):
        return any(default_is_valid(b, value) for b in node.branches)
    return False
