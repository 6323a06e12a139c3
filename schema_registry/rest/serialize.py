"""Confluent's JSON shapes for versions and schemas (AVRO's ``schemaType`` and empty
``references`` are omitted, as Confluent does)."""

from __future__ import annotations

from typing import Any

from schema_registry.state import SchemaEntry, VersionEntry

__all__ = ["schema_json", "version_json"]


def version_json(entry: VersionEntry) -> dict[str, Any]:
    """``{"subject","version","id","schemaType"?,"references"?,"schema"}``."""
    body: dict[str, Any] = {"subject": entry.subject, "version": entry.version, "id": entry.id}
    if entry.schema_type != "AVRO":
        body["schemaType"] = entry.schema_type
    if entry.references:
        body["references"] = [r.to_json() for r in entry.references]
    body["schema"] = entry.schema
    return body


def schema_json(entry: SchemaEntry, max_id: int | None = None) -> dict[str, Any]:
    """``{"schema","schemaType"?,"references"?,"maxId"?}`` for ``/schemas/ids/{id}``."""
    body: dict[str, Any] = {"schema": entry.schema}
    if entry.schema_type != "AVRO":
        body["schemaType"] = entry.schema_type
    if entry.references:
        body["references"] = [r.to_json() for r in entry.references]
    if max_id is not None:
        body["maxId"] = max_id
    return body
