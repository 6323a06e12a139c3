"""The schema-type-independent part of the model: references and the ParsedSchema base."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import SchemaError


@dataclass(frozen=True, order=True)
class Reference:
    """A Confluent schema reference: ``{"name", "subject", "version"}``.

    ``name`` is how the referencing schema refers to the referenced one: the full name of a
    named type for Avro, the ``$ref`` URL for JSON Schema.
    """

    name: str
    subject: str
    version: int

    @classmethod
    def from_json(cls, value: Any) -> Reference:
        """Build a Reference from its REST/JSON form; SchemaError when malformed."""
        if not isinstance(value, dict):
            raise SchemaError(f"A schema reference must be an object, got {value!r}")
        name, subject, version = value.get("name"), value.get("subject"), value.get("version")
        if not isinstance(name, str) or not name:
            raise SchemaError(f"Schema reference {value!r} has no 'name'")
        if not isinstance(subject, str) or not subject:
            raise SchemaError(f"Schema reference {value!r} has no 'subject'")
        if isinstance(version, bool) or not isinstance(version, int):
            raise SchemaError(f"Schema reference {value!r} has no integer 'version'")
        return cls(name, subject, version)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


def identity_digest(schema_type: str, text: str, references: Sequence[Reference]) -> str:
    """SHA-256 hex digest of a schema's type, text and references: the exact-identity key
    (Confluent's MD5 of the stored schema string and references)."""
    payload = json.dumps([schema_type, text, [r.to_json() for r in references]],
                         separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# resolve(ref) -> (schema_type, schema_text, references of that schema). Raises SchemaError
# (typically UnresolvedReferenceError) when the subject/version does not exist.
Resolve = Callable[[Reference], tuple[str, str, Sequence[Reference]]]


class ParsedSchema:
    """A validated schema of one type, as registered under a subject.

    Instances are immutable once built by ``parse_schema``; they are safe to share between
    threads. Two schemas are "the same schema" (same schema id) exactly when their
    ``fingerprint()`` values are equal: same type, same ``canonical()`` text, same references.
    """

    schema_type: str
    raw: str
    references: tuple[Reference, ...]

    def __init__(self, raw: str, references: Sequence[Reference]) -> None:
        self.raw = raw
        self.references = tuple(references)

    def canonical(self) -> str:
        """The normalized text that decides identity (and that the registry serves back)."""
        raise NotImplementedError

    def fingerprint(self) -> str:
        """A stable SHA-256 hex digest of type, canonical text and references."""
        return identity_digest(self.schema_type, self.canonical(), self.references)

    def equivalence(self) -> str:
        """A digest equal for two schemas that mean the same, however written: Confluent's
        ``ParsedSchema.equivalent``, which a lookup (and a registration under the same
        subject) falls back to when no stored schema has the same ``fingerprint()``. Both
        ``normalize`` forms of a schema have the same value; reference order is ignored.
        Computed once (a benign race may compute it twice)."""
        cached: str | None = getattr(self, "_equivalence", None)
        if cached is None:
            cached = identity_digest(self.schema_type, self.equivalence_text(),
                                     sorted(set(self.references)))
            self._equivalence = cached
        return cached

    def equivalence_text(self) -> str:
        """The text ``equivalence()`` digests; by default the canonical text."""
        return self.canonical()

    @property
    def name(self) -> str | None:
        """The schema's name: an Avro named type's full name, a JSON schema's title."""
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.canonical()[:80]!r}>"
