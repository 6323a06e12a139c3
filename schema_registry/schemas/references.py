"""Resolving a schema's references, transitively, into dependency order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .base import Reference, Resolve
from .errors import SchemaError, UnresolvedReferenceError


@dataclass(frozen=True)
class ResolvedReference:
    """A referenced schema's text, with the references it has itself."""

    reference: Reference
    schema_type: str
    schema: str
    references: tuple[Reference, ...]


def resolve_references(
    references: Sequence[Reference], resolve: Resolve | None, schema_type: str
) -> list[ResolvedReference]:
    """Every schema reachable through ``references``, dependencies first.

    A schema reached twice (a diamond) appears once, at its first position; a cycle is an
    error. Each referenced schema must have ``schema_type``, as Confluent requires.
    """
    if references and resolve is None:
        raise UnresolvedReferenceError(
            f"Schema has references {[r.name for r in references]} but no way to resolve them"
        )
    ordered: list[ResolvedReference] = []
    done: set[tuple[str, int]] = set()
    in_progress: list[tuple[str, int]] = []

    def visit(ref: Reference) -> None:
        key = (ref.subject, ref.version)
        if key in done:
            return
        if key in in_progress:
            chain = " -> ".join(f"{s}/{v}" for s, v in [*in_progress, key])
            raise SchemaError(f"Circular schema references: {chain}")
        in_progress.append(key)
        assert resolve is not None
        ref_type, text, its_refs = resolve(ref)
        if (ref_type or "AVRO").upper() != schema_type:
            raise SchemaError(
                f"Reference '{ref.name}' (subject '{ref.subject}' version {ref.version}) is "
                f"of type {ref_type}; a {schema_type} schema can only reference {schema_type} "
                "schemas"
            )
        for child in its_refs:
            visit(child)
        in_progress.pop()
        done.add(key)
        ordered.append(ResolvedReference(ref, schema_type, text, tuple(its_refs)))

    for ref in references:
        visit(ref)
    return ordered
