"""A typed view of a JSON schema, in the shape Confluent's checker compares.

Confluent loads JSON schemas with the everit library, which turns each schema object into
one typed schema: ``StringSchema``, ``NumberSchema``, ``ObjectSchema``, ``ArraySchema``,
``EnumSchema``, ``CombinedSchema`` (allOf/anyOf/oneOf) and so on. Compatibility is decided on
that shape, so we build the same one:

- ``true`` and ``{}`` (or only annotations) are the empty schema; ``false`` is ``false``.
- ``type`` (or, without ``type``, the keywords of a type) gives the typed part; a list of
  types is an ``anyOf`` of one typed schema per type; ``integer`` is a number that requires
  integers.
- ``enum``, ``const``, ``not``, ``allOf``/``anyOf``/``oneOf`` and ``if`` add further parts;
  several parts make a synthetic ``allOf`` (``{"type": "string", "enum": [...]}`` is
  allOf[string, enum], as in everit).
- ``$ref`` is replaced by the schema it points to.

Nodes are built lazily and cached per schema object, so recursive schemas are finite graphs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

from referencing.exceptions import Unresolvable

MISSING: Any = object()

TYPE_KEYWORDS = {
    "object": ("properties", "required", "additionalProperties", "patternProperties",
               "dependencies", "dependentRequired", "dependentSchemas", "minProperties",
               "maxProperties", "propertyNames"),
    "array": ("items", "prefixItems", "additionalItems", "minItems", "maxItems", "uniqueItems",
              "contains", "minContains", "maxContains"),
    "string": ("minLength", "maxLength", "pattern", "format"),
    "number": ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"),
}
# Keywords whose value is one schema, a list of schemas, or a name -> schema map.
_ONE = ("additionalProperties", "additionalItems", "contains", "propertyNames", "not", "if",
        "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems")
_MAP = ("properties", "patternProperties", "definitions", "$defs", "dependentSchemas")


def subschemas(node: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(relative path, subschema) for every subschema directly inside ``node``."""
    for key in _ONE:
        if key in node:
            yield key, node[key]
    for key in _MANY:
        if isinstance(node.get(key), list):
            for i, item in enumerate(node[key]):
                yield f"{key}/{i}", item
    items = node.get("items")
    if isinstance(items, list):
        for i, item in enumerate(items):
            yield f"items/{i}", item
    elif items is not None:
        yield "items", items
    for key in _MAP:
        if isinstance(node.get(key), dict):
            for name, item in node[key].items():
                yield f"{key}/{name}", item
    deps = node.get("dependencies")
    if isinstance(deps, dict):
        for name, item in deps.items():
            if not isinstance(item, list):
                yield f"dependencies/{name}", item


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class JNode:
    """One typed schema. ``kind`` is one of: empty, false, string, number, boolean, null,
    object, array, enum, const, not, combined, conditional. Unused attributes stay unset."""

    def __init__(self, model: JsonModel, kind: str, raw: Any, resolver: Any) -> None:
        self.model = model
        self.kind = kind
        self.raw = raw
        self.resolver = resolver
        self.meta: dict[str, Any] = {}
        self.attrs: dict[str, Any] = {}
        self._subs: list[JNode] | None = None
        self.sub_raws: list[Any] = []
        self.criterion = ""

    def get(self, key: str) -> Any:
        """A keyword of this node's part (None when absent)."""
        return self.attrs.get(key)

    def child(self, raw: Any) -> JNode | None:
        """The node for a subschema of this one; None for a missing one."""
        if raw is MISSING or raw is None:
            return None
        return self.model.load(raw, self.resolver)

    def subschemas(self) -> list[JNode]:
        """Subschemas of a combined node, duplicates removed."""
        if self._subs is None:
            unique = {canonical_json(r): r for r in reversed(self.sub_raws)}
            ordered = [r for r in self.sub_raws if unique.get(canonical_json(r)) is r]
            subs = [self.model.load(r, self.resolver) for r in ordered]
            self._subs = subs  # idempotent: racing builders produce the same cached nodes
        return self._subs

    @property
    def has_default(self) -> bool:
        return isinstance(self.raw, dict) and "default" in self.raw


class JsonModel:
    """Builds and caches the typed nodes of one schema document (and its references)."""

    def __init__(self, root: Any, resolver: Any, specification: Any) -> None:
        self.specification = specification
        self._cache: dict[int, JNode] = {}
        self._deref: set[int] = set()
        # guards _cache and _deref: checks on shared schemas may walk one model concurrently,
        # and every walk must see one node per schema object
        self._lock = threading.RLock()
        self.root = self.load(root, resolver)

    def load(self, raw: Any, resolver: Any) -> JNode:
        with self._lock:
            return self._load(raw, resolver)

    def _load(self, raw: Any, resolver: Any) -> JNode:
        if isinstance(raw, bool) or not isinstance(raw, dict):
            return JNode(self, "false" if raw is False else "empty", raw, resolver)
        key = id(raw)
        if key in self._cache:
            return self._cache[key]
        ref = raw.get("$ref")
        if isinstance(ref, str):
            if key in self._deref:  # a $ref chain that loops: constrains nothing
                return JNode(self, "empty", raw, resolver)
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable:  # rejected at parse time; be safe anyway
                return JNode(self, "empty", raw, resolver)
            self._deref.add(key)
            try:
                node = self._load(resolved.contents, resolved.resolver)
            finally:
                self._deref.discard(key)
            self._cache[key] = node
            return node
        resolver = resolver.in_subresource(self.specification.create_resource(raw))
        node = self._build(raw, resolver)
        self._cache[key] = node
        return node

    def _build(self, raw: dict[str, Any], resolver: Any) -> JNode:
        parts: list[JNode] = []
        declared = raw.get("type")
        if isinstance(declared, str):
            types = [declared]
        elif isinstance(declared, list):
            types = list(dict.fromkeys(t for t in declared if isinstance(t, str)))
        else:
            types = [t for t, words in TYPE_KEYWORDS.items() if any(w in raw for w in words)]
        typed = [self._typed(raw, t, resolver) for t in types]
        if len(typed) == 1:
            parts.append(typed[0])
        elif typed:
            parts.append(self._synthetic("anyOf", typed, raw, resolver))
        if "enum" in raw:
            parts.append(self._part("enum", raw, resolver, values=raw["enum"]))
        if "const" in raw:
            parts.append(self._part("const", raw, resolver, value=raw["const"]))
        if "not" in raw:
            parts.append(self._part("not", raw, resolver, schema=raw["not"]))
        for criterion in ("allOf", "anyOf", "oneOf"):
            if isinstance(raw.get(criterion), list):
                node = self._part("combined", raw, resolver)
                node.criterion, node.sub_raws = criterion, list(raw[criterion])
                parts.append(node)
        if "if" in raw:
            parts.append(self._part("conditional", raw, resolver))
        if not parts:
            node = JNode(self, "empty", raw, resolver)
        elif len(parts) == 1:
            node = parts[0]
        else:
            node = self._synthetic("allOf", parts, raw, resolver)
        node.meta = {k: raw[k] for k in ("$id", "id", "title", "description", "default")
                     if k in raw}
        return node

    def _part(self, kind: str, raw: dict[str, Any], resolver: Any, **attrs: Any) -> JNode:
        node = JNode(self, kind, raw, resolver)
        node.attrs = attrs
        return node

    def _synthetic(self, criterion: str, subs: list[JNode], raw: Any, resolver: Any) -> JNode:
        node = JNode(self, "combined", raw, resolver)
        node.criterion = criterion
        node._subs = subs
        return node

    def _typed(self, raw: dict[str, Any], kind: str, resolver: Any) -> JNode:
        if kind == "integer":
            return self._part("number", raw, resolver, **_pick(raw, "number"), integer=True)
        if kind == "number":
            return self._part("number", raw, resolver, **_pick(raw, "number"), integer=False)
        if kind == "object":
            deps = raw.get("dependencies", {})
            dep_arrays = {k: v for k, v in deps.items() if isinstance(v, list)}
            dep_arrays.update(raw.get("dependentRequired", {}))
            dep_schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
            dep_schemas.update(raw.get("dependentSchemas", {}))
            return self._part(
                "object", raw, resolver,
                properties=raw.get("properties", {}),
                required=set(raw.get("required", [])),
                additional=raw.get("additionalProperties", MISSING),
                pattern_properties=raw.get("patternProperties", {}),
                dep_arrays=dep_arrays, dep_schemas=dep_schemas,
                minProperties=raw.get("minProperties"), maxProperties=raw.get("maxProperties"),
            )
        if kind == "array":
            items = raw.get("items", MISSING)
            if "prefixItems" in raw:  # 2020-12: items applies after the prefix
                item_list, all_items, additional = raw["prefixItems"], MISSING, items
            elif isinstance(items, list):
                item_list, all_items = items, MISSING
                additional = raw.get("additionalItems", MISSING)
            else:
                item_list, all_items = [], items
                additional = raw.get("additionalItems", MISSING)
            return self._part(
                "array", raw, resolver, item_list=item_list, all_items=all_items,
                additional=additional, uniqueItems=bool(raw.get("uniqueItems", False)),
                **{k: raw.get(k) for k in ("minItems", "maxItems", "minContains", "maxContains")},
            )
        if kind == "string":
            return self._part("string", raw, resolver, **_pick(raw, "string"))
        return self._part(kind, raw, resolver)  # boolean, null


def _pick(raw: dict[str, Any], kind: str) -> dict[str, Any]:
    picked = {k: raw.get(k) for k in TYPE_KEYWORDS[kind]}
    for key in ("exclusiveMinimum", "exclusiveMaximum"):  # draft 4 booleans are flags
        if isinstance(picked.get(key), bool):
            picked[key] = None
    return picked
