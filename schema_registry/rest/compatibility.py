"""``/compatibility``: test a schema against one version, or against the versions the
subject's compatibility level selects."""

from __future__ import annotations

from flask import Blueprint, Response

from schema_registry.registry import parse_version
from schema_registry.rest.app import context
from schema_registry.rest.http import bool_arg, json_body, json_response, path_arg

__all__ = ["bp"]

bp = Blueprint("compatibility", __name__)


@bp.post("/compatibility/subjects/<subject>/versions/<version>")
def against_version(subject: str, version: str) -> Response:
    number = parse_version(path_arg(version))
    result = context().registry.test_compatibility(
        path_arg(subject), number, json_body(), normalize=bool_arg("normalize"),
        verbose=bool_arg("verbose"))
    return json_response(result)


@bp.post("/compatibility/subjects/<subject>/versions")
def against_all(subject: str) -> Response:
    result = context().registry.test_compatibility(
        path_arg(subject), None, json_body(), normalize=bool_arg("normalize"),
        verbose=bool_arg("verbose"))
    return json_response(result)
