"""Avro schema nodes to the text Java's Avro library writes for the same schema.

``render`` follows Java's ``Schema.toString()``: the standard attributes in Avro's
order, then the properties in the order they were added (for Connect schemas,
``AvroData``'s order); a namespace only where it differs from the enclosing one; a named
type written in full once, then referred to by name (its simple name inside its own
namespace). The same Connect schema thus registers as the same schema text under Ferry's
and under Confluent's converters.
"""

from __future__ import annotations

from typing import Any

from connect.api.errors import DataError
from schema_registry.serde import avro_names as n
from schema_registry.serde.avro_from_connect import Node, split_name

__all__ = ["render"]

_STANDARD_KEYS = {
    "record": ("type", "name", "namespace", "doc", "fields", "aliases"),
    "error": ("type", "name", "namespace", "doc", "fields", "aliases"),
    "enum": ("type", "name", "namespace", "doc", "symbols", "default", "aliases"),
    "fixed": ("type", "name", "namespace", "doc", "size", "aliases"),
    "array": ("type", "items"),
    "map": ("type", "values"),
}
_FIELD_KEYS = ("name", "type", "doc", "default", "order", "aliases")


def render(node: Node) -> Any:
    """The JSON value Java's Avro ``Schema.toString()`` writes for ``node``; raises
    ``DataError`` if two different types share a full name (Avro's "Can't redefine")."""
    return _render(node, None, {})


def _props(node: dict[str, Any], standard: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in standard}


def _render(node: Node, space: str | None, defined: dict[str, Node]) -> Any:
    if isinstance(node, str):
        if node in n.PRIMITIVES:
            return node
        return _qualified(node, space)
    if isinstance(node, list):
        return [_render(member, space, defined) for member in node]
    kind = node["type"]
    if kind in n.NAMED_TYPES:
        full = node["name"]
        if full in defined:
            if defined[full] == node:
                return _qualified(full, space)
            raise DataError(
                f"Two different schemas have the Avro name {full!r}; give the Connect "
                "schemas distinct names"
            )
        defined[full] = node
        namespace, simple = split_name(full)
        out: dict[str, Any] = {"type": kind, "name": simple}
        if namespace is not None:
            if namespace != space:
                out["namespace"] = namespace
        elif space is not None:
            out["namespace"] = ""
        if "doc" in node:
            out["doc"] = node["doc"]
        if kind in ("record", "error"):
            out["fields"] = [_render_field(f, namespace, defined) for f in node["fields"]]
        elif kind == "enum":
            out["symbols"] = list(node["symbols"])
            if "default" in node:
                out["default"] = node["default"]
        else:
            out["size"] = node["size"]
        out.update(_props(node, _STANDARD_KEYS[kind]))
        if "aliases" in node:
            out["aliases"] = node["aliases"]
        return out
    if kind == "array":
        return {"type": "array", "items": _render(node["items"], space, defined),
                **_props(node, _STANDARD_KEYS["array"])}
    if kind == "map":
        return {"type": "map", "values": _render(node["values"], space, defined),
                **_props(node, _STANDARD_KEYS["map"])}
    props = _props(node, ("type",))
    return {"type": kind, **props} if props else kind


def _render_field(field: dict[str, Any], space: str | None,
                  defined: dict[str, Node]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": field["name"], "type": _render(field["type"], space, defined)}
    for key in ("doc", "default", "order", "aliases"):
        if key in field:
            out[key] = field[key]
    out.update(_props(field, _FIELD_KEYS))
    return out


def _qualified(full: str, space: str | None) -> str:
    namespace, simple = split_name(full)
    return simple if namespace is not None and namespace == space else full
