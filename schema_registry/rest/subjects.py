"""``/subjects``: listing, lookup, registration, versions and deletes."""

from __future__ import annotations

from flask import Blueprint, Response, request

from schema_registry.registry import parse_version
from schema_registry.rest.access import visible
from schema_registry.rest.app import context, write
from schema_registry.rest.http import (
    bool_arg,
    json_body,
    json_response,
    paginate,
    path_arg,
    response_type,
)
from schema_registry.rest.serialize import register_json, version_json

__all__ = ["bp", "raw_schema"]

bp = Blueprint("subjects", __name__)


@bp.get("/subjects")
def list_subjects() -> Response:
    prefix = request.args.get("subjectPrefix", request.args.get("subject", ""))
    names = context().registry.subjects(
        prefix=prefix, deleted=bool_arg("deleted"),
        deleted_only=bool_arg("deletedOnly", "deleted_only"))
    return json_response(paginate(n for n in names if visible(n)))


@bp.post("/subjects/<subject>")
def lookup(subject: str) -> Response:
    entry = context().registry.lookup(path_arg(subject), json_body(),
                                      normalize=bool_arg("normalize"),
                                      deleted=bool_arg("deleted"))
    return json_response(version_json(entry))


@bp.get("/subjects/<subject>/metadata")
def latest_with_metadata(subject: str) -> Response:
    """The newest version whose metadata has the given properties (``?key=k&value=v``,
    repeated, paired in order), as the client's ``use.latest.with.metadata`` asks."""
    keys, values = request.args.getlist("key"), request.args.getlist("value")
    entry = context().registry.latest_with_metadata(
        path_arg(subject), dict(zip(keys, values, strict=False)),
        deleted=bool_arg("deleted"))
    return json_response(version_json(entry))


@bp.delete("/subjects/<subject>")
def delete_subject(subject: str) -> Response:
    name, permanent = path_arg(subject), bool_arg("permanent")
    registry = context().registry
    return write(lambda: registry.delete_subject(name, permanent=permanent))


@bp.get("/subjects/<subject>/versions")
def list_versions(subject: str) -> Response:
    numbers = context().registry.version_numbers(
        path_arg(subject), deleted=bool_arg("deleted"),
        deleted_only=bool_arg("deletedOnly", "deleted_only"),
        deleted_as_negative=bool_arg("deletedAsNegative"))
    return json_response(paginate(numbers))


@bp.post("/subjects/<subject>/versions")
def register(subject: str) -> Response:
    name, body, normalize = path_arg(subject), json_body(), bool_arg("normalize")
    registry = context().registry
    return write(lambda: register_json(registry.register(name, body, normalize=normalize)))


@bp.get("/subjects/<subject>/versions/<version>")
def get_version(subject: str, version: str) -> Response:
    entry = context().registry.get_version(path_arg(subject), parse_version(path_arg(version)),
                                           deleted=bool_arg("deleted"))
    return json_response(version_json(entry))


@bp.get("/subjects/<subject>/versions/<version>/schema")
def get_version_schema(subject: str, version: str) -> Response:
    entry = context().registry.get_version(path_arg(subject), parse_version(path_arg(version)),
                                           deleted=bool_arg("deleted"))
    return raw_schema(entry.schema)


@bp.get("/subjects/<subject>/versions/<version>/referencedby")
def referenced_by(subject: str, version: str) -> Response:
    ids = context().registry.referenced_by(path_arg(subject), parse_version(path_arg(version)))
    return json_response(paginate(ids))


@bp.delete("/subjects/<subject>/versions/<version>")
def delete_version(subject: str, version: str) -> Response:
    name, number = path_arg(subject), parse_version(path_arg(version))
    permanent = bool_arg("permanent")
    registry = context().registry
    return write(lambda: registry.delete_version(name, number, permanent=permanent))


def raw_schema(text: str) -> Response:
    """A schema's text as the body (Confluent's ``.../schema`` endpoints)."""
    return Response(text.encode("utf-8"), content_type=response_type())
