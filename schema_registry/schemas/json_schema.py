"""JSON Schema: parsing, metaschema validation, references, identity.

A schema is checked against the metaschema its ``$schema`` names (drafts 4, 6, 7, 2019-09,
2020-12); without one, or with one we do not know, draft 7 applies, as in Confluent.
References are registered in a ``referencing`` registry under their ``name`` (and under
that name resolved against the root ``$id``), so ``{"$ref": "<reference name>"}`` reaches
the referenced schema; every ``$ref`` must resolve when the schema is parsed.

Identity rule: the canonical text is the schema as compact JSON with its key order kept,
as Confluent stores it (whitespace does not matter, key order does). With
``normalize=True`` the keys of every object are sorted as well and the references sorted
and deduplicated.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urljoin

import jsonschema.exceptions
from jsonschema import validators
from referencing import Registry, Resource
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT7, Specification, specification_with

from .base import ParsedSchema, Reference, Resolve
from .errors import SchemaError
from .json_model import JsonModel, subschemas
from .json_text import load_json
from .references import resolve_references

DRAFTS: tuple[type[Any], ...] = (
    validators.Draft4Validator,
    validators.Draft6Validator,
    validators.Draft7Validator,
    validators.Draft201909Validator,
    validators.Draft202012Validator,
)


def _dialect_key(uri: str) -> str:
    return uri.split("://", 1)[-1].rstrip("#")


_BY_DIALECT = {_dialect_key(cls.META_SCHEMA["$schema"]): cls for cls in DRAFTS}


def validator_class(schema: Any) -> type[Any]:
    """The validator class for the schema's ``$schema``; draft 7 when absent or unknown."""
    if isinstance(schema, dict) and isinstance(schema.get("$schema"), str):
        return _BY_DIALECT.get(_dialect_key(schema["$schema"]), validators.Draft7Validator)
    return validators.Draft7Validator


def _specification(schema: Any) -> Specification[Any]:
    return specification_with(validator_class(schema).META_SCHEMA["$schema"], default=DRAFT7)


class JsonSchema(ParsedSchema):
    """A parsed JSON schema. ``schema`` is the decoded document, ``registry`` the referencing
    registry holding it and its references (``validator()`` builds a ready validator)."""

    schema_type = "JSON"

    def __init__(self, raw: str, references: Sequence[Reference], schema: Any,
                 registry: Registry[Any], base_uri: str, canonical: str) -> None:
        super().__init__(raw, references)
        self.schema = schema
        self.registry = registry
        self.base_uri = base_uri
        self._canonical = canonical
        self._model: JsonModel | None = None
        self._model_lock = threading.Lock()

    def canonical(self) -> str:
        return self._canonical

    def equivalence_text(self) -> str:
        # Object key order carries no meaning in JSON Schema (and Jackson's ObjectNode
        # equality, behind Confluent's JsonSchema hash, ignores it): compare sorted keys.
        return _sorted_text(self.schema)

    @property
    def name(self) -> str | None:
        title = self.schema.get("title") if isinstance(self.schema, dict) else None
        return title if isinstance(title, str) else None

    def validator(self) -> Any:
        """A jsonschema validator for documents, with the references resolvable."""
        return validator_class(self.schema)(self.schema, registry=self.registry)

    def model(self) -> JsonModel:
        """The lazily built schema model the compatibility checker walks."""
        with self._model_lock:
            if self._model is None:
                self._model = JsonModel(self.schema,
                                        self.registry.resolver(base_uri=self.base_uri),
                                        _specification(self.schema))
            return self._model


def _load(text: str, what: str) -> Any:
    value = load_json(text, what)
    if not isinstance(value, dict | bool):
        raise SchemaError(f"Invalid {what}: a JSON schema is an object or a boolean, got "
                          f"{type(value).__name__}")
    return value


def _check_against_metaschema(schema: Any, what: str) -> None:
    cls = validator_class(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        where = "/" + "/".join(str(p) for p in exc.path)
        raise SchemaError(f"Invalid {what} at {where}: {exc.message}") from exc


def _base_uri(schema: Any) -> str:
    if isinstance(schema, dict):
        for key in ("$id", "id"):
            if isinstance(schema.get(key), str):
                return schema[key]
    return ""


def parse_json_schema(
    schema: str,
    references: Sequence[Reference] = (),
    resolve: Resolve | None = None,
    *,
    normalize: bool = False,
) -> JsonSchema:
    """Parse and validate a JSON schema; SchemaError names what is wrong."""
    value = _load(schema, "JSON schema")
    _check_against_metaschema(value, "JSON schema")
    base = _base_uri(value)
    resources: list[tuple[str, Resource[Any]]] = [
        (base, Resource.from_contents(value, default_specification=_specification(value)))
    ]
    for resolved in resolve_references(references, resolve, "JSON"):
        ref = resolved.reference
        label = f"referenced schema '{ref.name}' (subject '{ref.subject}' version {ref.version})"
        ref_value = _load(resolved.schema, label)
        resource = Resource.from_contents(ref_value,
                                          default_specification=_specification(ref_value))
        for uri in dict.fromkeys([ref.name, urljoin(base, ref.name) if base else ref.name]):
            resources.append((uri, resource))
    registry: Registry[Any] = Registry().with_resources(resources)
    _check_refs(value, registry.resolver(base_uri=base), _specification(value), references)
    if normalize:
        canonical = _sorted_text(value)
        references = sorted(set(references))
    else:
        canonical = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return JsonSchema(schema, references, value, registry, base, canonical)


def _sorted_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _check_refs(root: Any, resolver: Any, spec: Specification[Any],
                references: Sequence[Reference]) -> None:
    """Every ``$ref`` in the document must resolve (locally or to a reference)."""
    for node, node_resolver, path in _walk(root, resolver, spec, ""):
        ref = node.get("$ref")
        if not isinstance(ref, str):
            continue
        try:
            node_resolver.lookup(ref)
        except Unresolvable as exc:
            names = [r.name for r in references]
            hint = (f"; the schema's references are {names}" if names
                    else "; a schema registered under another subject must be listed in the "
                         "schema's references")
            raise SchemaError(f"Unresolvable $ref '{ref}' at {path or '/'}{hint}") from exc


def _walk(node: Any, resolver: Any, spec: Specification[Any],
          path: str) -> Iterator[tuple[dict[str, Any], Any, str]]:
    if not isinstance(node, dict):
        return
    resolver = resolver.in_subresource(spec.create_resource(node))
    yield node, resolver, path
    for child_path, child in subschemas(node):
        yield from _walk(child, resolver, spec, f"{path}/{child_path}")
