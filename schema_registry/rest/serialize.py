"""Confluent's JSON shapes for versions and schemas (AVRO's ``schemaType`` and empty
``references`` are omitted, as Confluent does; ``metadata`` and ``ruleSet`` appear when the
schema has them, ``guid`` always)."""

from __future__ import annotations

from typing import Any

from schema_registry.state import SchemaEntry, VersionEntry

__all__ = ["register_json", "schema_json", "version_json"]


def version_json(entry: VersionEntry) -> dict[str, Any]:
    """``{"subject","version","id","guid","schemaType"?,"references"?,"metadata"?,
    "ruleSet"?,"schema"}``."""
    body: dict[str, Any] = {"subject": entry.subject, "version": entry.version, "id": entry.id,
                            "guid": entry.guid}
    _common(body, entry)
    body["schema"] = entry.schema
    return body


def register_json(entry: VersionEntry) -> dict[str, Any]:
    """The answer to a registration (Confluent's ``RegisterSchemaResponse``): ``{"id",
    "version","guid","schemaType"?,"references"?,"metadata"?,"ruleSet"?,"schema"}``."""
    body: dict[str, Any] = {"id": entry.id, "version": entry.version, "guid": entry.guid}
    _common(body, entry)
    body["schema"] = entry.schema
    return body


def schema_json(entry: SchemaEntry, max_id: int | None = None) -> dict[str, Any]:
    """``{"schema","schemaType"?,"references"?,"metadata"?,"ruleSet"?,"guid","maxId"?}``
    for ``/schemas/ids/{id}`` and ``/schemas/guids/{guid}``."""
    body: dict[str, Any] = {"schema": entry.schema}
    _common(body, entry)
    body["guid"] = entry.guid
    if max_id is not None:
        body["maxId"] = max_id
    return body


def _common(body: dict[str, Any], entry: SchemaEntry | VersionEntry) -> None:
    if entry.schema_type != "AVRO":
        body["schemaType"] = entry.schema_type
    if entry.references:
        body["references"] = [r.to_json() for r in entry.references]
    if entry.metadata is not None:
        body["metadata"] = entry.metadata
    if entry.rule_set is not None:
        body["ruleSet"] = entry.rule_set
