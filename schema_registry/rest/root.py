"""``/``, ``/contexts`` and ``/v1/metadata/*``: the server-level resources."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from flask import Blueprint, Response

from schema_registry.rest.app import context
from schema_registry.rest.http import json_response, paginate

__all__ = ["bp"]

bp = Blueprint("root", __name__)


@bp.route("/", methods=["GET", "POST"])
def root() -> Response:
    return json_response({})


@bp.get("/contexts")
def contexts() -> Response:
    """One context, the default one (Ferry has no schema contexts)."""
    return json_response(paginate(["."]))


@bp.get("/v1/metadata/id")
def metadata_id() -> Response:
    ctx = context()
    return json_response({"scope": {"path": [], "clusters": {
        "schema-registry-cluster": ctx.cluster_id}}})


@bp.get("/v1/metadata/version")
def metadata_version() -> Response:
    try:
        ferry_version = version("ferryman")
    except PackageNotFoundError:
        ferry_version = "unknown"
    return json_response({"version": ferry_version, "commitId": ""})
