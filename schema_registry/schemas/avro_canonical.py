"""The two textual forms of an Avro schema that decide identity.

``to_canonical``: what Confluent stores and compares by default, Java Avro's
``Schema.toString()``: compact JSON with Avro's own attribute order, so whitespace and the
key order of standard attributes do not matter, while field order, symbol order, docs,
defaults, aliases and custom properties (e.g. ``connect.name``) do. Named types print in
full the first time and as a name afterwards; a ``namespace`` is written only where it
differs from the enclosing one. Types defined by referenced schemas print as names.

``to_normalized``: the ``normalize=true`` form, modelled on Confluent's
``AvroSchemaUtils.toNormalizedString``: every name fully qualified, a fixed key order, custom
properties sorted by key, aliases sorted. A field's ``order`` is written only when it is not
"ascending" (Confluent writes it always, in upper case; ours stays re-parseable).
"""

from __future__ import annotations

import json
from typing import Any

from .avro_model import Array, AvroType, Enum, Fixed, Map, Named, Record, Union

LOGICAL_KEYS = ("logicalType", "precision", "scale")


# One encoder for every call: json.dumps with options builds a new encoder each time, which
# dominated the time spent writing a schema with many fields.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


_SORTED_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def _dumps_sorted(value: Any) -> str:
    """A property value with its object keys sorted (normalized form: Java Avro compares
    property values as JSON trees, whose key order does not count)."""
    return _SORTED_ENCODER.encode(value)


def _obj(pairs: list[tuple[str, str]]) -> str:
    return "{" + ",".join(f"{_dumps(k)}:{v}" for k, v in pairs) + "}"


def _qualified(fullname: str, space: str | None) -> str:
    """Java's Name.getQualified: the short name when in ``space`` (or in no namespace)."""
    if "." not in fullname:
        return fullname
    namespace, short = fullname.rsplit(".", 1)
    return short if namespace == space else fullname


def to_canonical(root: AvroType, known: set[str]) -> str:
    return _Canonical(set(known)).write(root, None)


def to_normalized(root: AvroType, known: set[str]) -> str:
    return _Normalized(set(known)).write(root, None)


class _Canonical:
    def __init__(self, written: set[str]) -> None:
        self.written = written

    def write(self, node: AvroType, space: str | None) -> str:
        if isinstance(node, Union):
            return "[" + ",".join(self.write(b, space) for b in node.branches) + "]"
        if isinstance(node, Named):
            if node.fullname in self.written:
                return _dumps(node.name if node.namespace in (None, space) else node.fullname)
            self.written.add(node.fullname)
            return self._named(node, space)
        props = [(k, _dumps(v)) for k, v in node.props.items()]
        if isinstance(node, Array):
            return _obj([("type", '"array"'), ("items", self.write(node.items, space)), *props])
        if isinstance(node, Map):
            return _obj([("type", '"map"'), ("values", self.write(node.values, space)), *props])
        return _obj([("type", _dumps(node.type)), *props]) if props else _dumps(node.type)

    def _named(self, node: Named, space: str | None) -> str:
        kind = "error" if isinstance(node, Record) and node.is_error else node.type
        pairs = [("type", _dumps(kind)), ("name", _dumps(node.name))]
        if node.namespace is not None and node.namespace != space:
            pairs.append(("namespace", _dumps(node.namespace)))
        elif node.namespace is None and space is not None:
            pairs.append(("namespace", '""'))
        if node.doc is not None:
            pairs.append(("doc", _dumps(node.doc)))
        if isinstance(node, Record):
            pairs.append(("fields", "[" + ",".join(
                self._field(f, node.namespace) for f in node.fields) + "]"))
        elif isinstance(node, Enum):
            pairs.append(("symbols", _dumps(list(node.symbols))))
            if node.default is not None:
                pairs.append(("default", _dumps(node.default)))
        elif isinstance(node, Fixed):
            pairs.append(("size", str(node.size)))
        pairs.extend((k, _dumps(v)) for k, v in node.props.items())
        if node.aliases:
            pairs.append(("aliases", _dumps([_qualified(a, node.namespace)
                                             for a in node.aliases])))
        return _obj(pairs)

    def _field(self, fld: Any, space: str | None) -> str:
        pairs = [("name", _dumps(fld.name)), ("type", self.write(fld.type, space))]
        if fld.doc is not None:
            pairs.append(("doc", _dumps(fld.doc)))
        if fld.has_default:
            pairs.append(("default", _dumps(fld.default)))
        if fld.order != "ascending":
            pairs.append(("order", _dumps(fld.order)))
        if fld.aliases:
            pairs.append(("aliases", _dumps(list(fld.aliases))))
        pairs.extend((k, _dumps(v)) for k, v in fld.props.items())
        return _obj(pairs)


def _sorted_props(props: dict[str, Any], skip: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    return [(k, _dumps_sorted(props[k])) for k in sorted(props) if k not in skip]


class _Normalized:
    def __init__(self, written: set[str]) -> None:
        self.written = written

    def write(self, node: AvroType, space: str | None) -> str:
        if isinstance(node, Union):
            return "[" + ",".join(self.write(b, space) for b in node.branches) + "]"
        if isinstance(node, Named):
            if node.fullname in self.written:
                return _dumps(node.fullname)
            self.written.add(node.fullname)
            return self._named(node, space)
        if isinstance(node, Array):
            return _obj([("type", '"array"'), ("items", self.write(node.items, space)),
                         *_sorted_props(node.props)])
        if isinstance(node, Map):
            return _obj([("type", '"map"'), ("values", self.write(node.values, space)),
                         *_sorted_props(node.props)])
        if not node.props:
            return _dumps(node.type)
        return _obj([("type", _dumps(node.type)), *self._logical(node.props),
                     *_sorted_props(node.props, LOGICAL_KEYS)])

    @staticmethod
    def _logical(props: dict[str, Any]) -> list[tuple[str, str]]:
        if "logicalType" not in props:
            return [(k, _dumps(props[k])) for k in LOGICAL_KEYS[1:] if k in props]
        return [(k, _dumps(props[k])) for k in LOGICAL_KEYS
                if k in props and not (k == "scale" and props[k] == 0)]

    def _named(self, node: Named, space: str | None) -> str:
        kind = "error" if isinstance(node, Record) and node.is_error else node.type
        pairs = [("name", _dumps(node.fullname)), ("type", _dumps(kind))]
        if node.namespace is None and space is not None:  # keep it out of the enclosing one
            pairs.append(("namespace", '""'))
        if isinstance(node, Record):
            pairs.append(("fields", "[" + ",".join(
                self._field(f, node.namespace) for f in node.fields) + "]"))
        elif isinstance(node, Enum):
            pairs.append(("symbols", _dumps(list(node.symbols))))
        elif isinstance(node, Fixed):
            pairs.append(("size", str(node.size)))
            pairs.extend(self._logical(node.props))
        if node.doc:
            pairs.append(("doc", _dumps(node.doc)))
        if node.aliases:
            pairs.append(("aliases", _dumps(sorted(node.aliases))))
        if isinstance(node, Enum) and node.default is not None:
            pairs.append(("default", _dumps(node.default)))
        skip = LOGICAL_KEYS if isinstance(node, Fixed) else ()
        pairs.extend(_sorted_props(node.props, skip))
        return _obj(pairs)

    def _field(self, fld: Any, space: str | None) -> str:
        pairs = [("name", _dumps(fld.name)), ("type", self.write(fld.type, space))]
        if fld.order != "ascending":
            pairs.append(("order", _dumps(fld.order)))
        if fld.doc is not None:
            pairs.append(("doc", _dumps(fld.doc)))
        if fld.aliases:
            pairs.append(("aliases", _dumps(sorted(fld.aliases))))
        if fld.has_default:
            pairs.append(("default", _dumps(fld.default)))
        pairs.extend(_sorted_props(fld.props))
        return _obj(pairs)
