"""``/associations``: Confluent's Associations API, which Ferry's registry cannot store.

The open-source Confluent registry serves the API but has no storage for associations: its
reads answer empty lists and its writes fail (``putAssociation not implemented``, a 500).
Ferry answers the reads the same way (there never are associations) and the writes with
501 ``{"error_code": 50101, ...}`` saying so, rather than a 500 that clients retry.
"""

from __future__ import annotations

from flask import Blueprint, Response, request

from schema_registry.errors import RegistryError
from schema_registry.rest.http import json_response

__all__ = ["AssociationsNotSupportedError", "bp"]

bp = Blueprint("associations", __name__)


class AssociationsNotSupportedError(RegistryError):
    status, error_code = 501, 50101

    def __init__(self) -> None:
        super().__init__(f"{request.method} {request.path}: associations are not supported "
                         "by this registry (as in the open-source Confluent Schema Registry, "
                         "nothing can store them); no association was created or changed")


@bp.get("/associations/subjects/<subject>")
@bp.get("/associations/resources/<resource_id>")
@bp.get("/associations/resources/<namespace>/<name>")
def list_associations(**_: str) -> Response:
    return json_response([])


@bp.post("/associations:batchGet")
def batch_get() -> Response:
    return json_response({"results": []})


@bp.post("/associations")
@bp.post("/associations:batchMutate")
@bp.put("/associations/resources/<resource_id>")
@bp.delete("/associations/resources/<resource_id>")
@bp.delete("/associations/subjects/<subject>")
def write_association(**_: str) -> Response:
    raise AssociationsNotSupportedError()
