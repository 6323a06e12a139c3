"""``/schemas``: schemas by id, their subjects and versions, the types, and the listing."""

from __future__ import annotations

from flask import Blueprint, Response, request
from werkzeug.exceptions import NotFound

from schema_registry.rest.access import visible
from schema_registry.rest.app import context
from schema_registry.rest.http import bool_arg, json_response, paginate, path_arg
from schema_registry.rest.serialize import schema_json, version_json
from schema_registry.rest.subjects import raw_schema
from schema_registry.schemas import SCHEMA_TYPES

__all__ = ["bp"]

bp = Blueprint("schemas", __name__)


def _schema_id(text: str) -> int:
    """A path's schema id; not an integer answers 404 as Confluent's router does."""
    try:
        return int(path_arg(text))
    except ValueError:
        raise NotFound() from None


@bp.get("/schemas")
def list_schemas() -> Response:
    entries = context().registry.schemas(
        prefix=request.args.get("subjectPrefix", ""), deleted=bool_arg("deleted"),
        latest_only=bool_arg("latestOnly"))
    return json_response(paginate(version_json(e) for e in entries if visible(e.subject)))


@bp.get("/schemas/types")
def schema_types() -> Response:
    """The types this registry parses, in Confluent's order (JSON, PROTOBUF, AVRO)."""
    order = ("JSON", "PROTOBUF", "AVRO")
    return json_response(sorted(SCHEMA_TYPES, key=lambda t: (t not in order,
                                                             order.index(t) if t in order
                                                             else 0, t)))


@bp.get("/schemas/ids/<schema_id>")
def get_schema(schema_id: str) -> Response:
    registry = context().registry
    entry = registry.schema_by_id(_schema_id(schema_id))
    max_id = registry.state.max_id if bool_arg("fetchMaxId") else None
    return json_response(schema_json(entry, max_id))


@bp.get("/schemas/guids/<guid>")
def get_schema_by_guid(guid: str) -> Response:
    return json_response(schema_json(context().registry.schema_by_guid(path_arg(guid))))


@bp.get("/schemas/guids/<guid>/ids")
def get_ids_by_guid(guid: str) -> Response:
    """Confluent's ``[{"context": ".", "id": N}]`` (Ferry has the default context only)."""
    entry = context().registry.schema_by_guid(path_arg(guid))
    return json_response([{"context": ".", "id": entry.id}])


@bp.get("/schemas/ids/<schema_id>/schema")
def get_schema_text(schema_id: str) -> Response:
    return raw_schema(context().registry.schema_by_id(_schema_id(schema_id)).schema)


@bp.get("/schemas/ids/<schema_id>/subjects")
def schema_subjects(schema_id: str) -> Response:
    versions = context().registry.versions_of_id(
        _schema_id(schema_id), deleted=bool_arg("deleted"),
        subject=request.args.get("subject") or None)
    return json_response(paginate(sorted({v.subject for v in versions if visible(v.subject)})))


@bp.get("/schemas/ids/<schema_id>/versions")
def schema_versions(schema_id: str) -> Response:
    versions = context().registry.versions_of_id(
        _schema_id(schema_id), deleted=bool_arg("deleted"),
        subject=request.args.get("subject") or None)
    return json_response(paginate({"subject": v.subject, "version": v.version}
                                  for v in versions if visible(v.subject)))
