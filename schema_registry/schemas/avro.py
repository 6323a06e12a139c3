"""Avro schemas: parsing with references, validation (ours, then fastavro's), identity.

Identity rule (what makes two registrations "the same schema"): the canonical text of
``avro_canonical.to_canonical``, i.e. Confluent's default. Confluent compares the schema
string after parsing (Java Avro ``Schema.toString()``): whitespace and the key order of the
standard attributes are ignored; field order, enum symbol order, docs, defaults, aliases and
custom properties count (Confluent issues #2754, #1348). With ``normalize=True`` the
canonical text is the normalized form (``to_normalized``: full names, sorted custom
properties and aliases) and the references are sorted and deduplicated, as Confluent's
``normalize`` does. Avro's Parsing Canonical Form is not used: it drops docs, defaults and
aliases, which would merge schemas Confluent keeps apart.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from fastavro.schema import SchemaParseException, UnknownType
from fastavro.schema import parse_schema as fastavro_parse

from .avro_canonical import to_canonical, to_normalized
from .avro_model import AvroParser, AvroType, Named
from .base import ParsedSchema, Reference, Resolve
from .errors import SchemaError
from .json_text import load_json
from .references import resolve_references

# What fastavro raises for schemas it cannot use (it reports some problems as KeyError or
# TypeError rather than its own exception types).
_FASTAVRO_ERRORS = (SchemaParseException, UnknownType, KeyError, TypeError, ValueError,
                    AttributeError)


class AvroSchema(ParsedSchema):
    """A parsed Avro schema. ``root`` is the node tree used by the compatibility checker;
    ``fastavro_schema`` (with ``fastavro_named_schemas`` for referenced types) is what
    fastavro's readers and writers take."""

    schema_type = "AVRO"

    def __init__(
        self,
        raw: str,
        references: Sequence[Reference],
        root: AvroType,
        defined: tuple[str, ...],
        canonical: str,
        fastavro_schema: Any,
        fastavro_named_schemas: dict[str, Any],
        known: frozenset[str] = frozenset(),
        normalized: str | None = None,
    ) -> None:
        super().__init__(raw, references)
        self._known = known  # named types that came from references
        self._normalized = normalized
        self.root = root
        self._defined = defined
        self._canonical = canonical
        self.fastavro_schema = fastavro_schema
        self.fastavro_named_schemas = fastavro_named_schemas

    def canonical(self) -> str:
        return self._canonical

    def equivalence_text(self) -> str:
        # Java Avro's Schema.equals (what Confluent's AvroSchema.equivalent uses) ignores
        # how names are qualified and the order of properties: the normalized form does too.
        if self._normalized is None:  # computed on demand: most parses never need it
            self._normalized = to_normalized(self.root, set(self._known))
        return self._normalized

    @property
    def name(self) -> str | None:
        """The full name of the top-level record, enum or fixed; None for other types."""
        return self.root.fullname if isinstance(self.root, Named) else None

    def record_names(self) -> tuple[str, ...]:
        """Full names of the named types this schema defines (not the referenced ones)."""
        return self._defined


def parse_avro(
    schema: str,
    references: Sequence[Reference] = (),
    resolve: Resolve | None = None,
    *,
    normalize: bool = False,
) -> AvroSchema:
    """Parse and validate an Avro schema; SchemaError names what is wrong."""
    value = load_json(schema, "Avro schema")
    parser = AvroParser()
    named_schemas: dict[str, Any] = {}
    for resolved in resolve_references(references, resolve, "AVRO"):
        ref = resolved.reference
        label = f"referenced schema '{ref.name}' (subject '{ref.subject}' version {ref.version})"
        ref_value = load_json(resolved.schema, label)
        try:
            parser.parse(ref_value)
        except SchemaError as exc:
            raise SchemaError(f"Invalid {label}: {exc}") from exc
        _fastavro(ref_value, named_schemas, label)
    known = set(parser.names)
    root = parser.parse(value)
    fastavro_schema = _fastavro(value, named_schemas, "Avro schema")
    defined = tuple(n for n in parser.names if n not in known)
    if normalize:
        canonical = normalized = to_normalized(root, known)
        references = sorted(set(references))
    else:
        canonical, normalized = to_canonical(root, known), None
    return AvroSchema(schema, references, root, defined, canonical, fastavro_schema,
                      named_schemas, frozenset(known), normalized)


def _fastavro(value: Any, named_schemas: dict[str, Any], label: str) -> Any:
    """fastavro's own parse, so that every registered schema is one its serializers take."""
    try:
        return fastavro_parse(copy.deepcopy(value), named_schemas=named_schemas)
    except _FASTAVRO_ERRORS as exc:
        raise SchemaError(f"Invalid {label}: fastavro rejects it: {exc}") from exc
