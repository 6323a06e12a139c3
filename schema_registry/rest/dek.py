"""``/dek-registry/v1``: Confluent's DEK Registry API (KEKs, DEKs and their versions).

Thin views over ``DekRegistry``. Writes go through ``write()`` like schema writes (run on
the leader, forwarded from a follower), and a follower then reads the DEK topic to its end
so that its next read shows the write. Deletes and undeletes answer 204 with no body.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, request
from werkzeug.exceptions import NotFound

from schema_registry.dek import Dek, DekRegistry, Kek
from schema_registry.dek.errors import InvalidKeyError
from schema_registry.dek.registry import LATEST
from schema_registry.errors import NotReadyError, RegistryError
from schema_registry.registry import parse_version
from schema_registry.rest.app import context, write
from schema_registry.rest.http import bool_arg, json_body, json_response, paginate, path_arg

__all__ = ["bp", "dek_json", "kek_json"]

log = logging.getLogger(__name__)

bp = Blueprint("dek_registry", __name__, url_prefix="/dek-registry/v1")
_KEK = "/keks/<name>"
_DEK = "/keks/<name>/deks/<subject>"
_VERSION = "/keks/<name>/deks/<subject>/versions/<version>"


def kek_json(kek: Kek) -> dict[str, Any]:
    """Confluent's ``Kek`` entity."""
    body: dict[str, Any] = {"name": kek.name, "kmsType": kek.kms_type,
                            "kmsKeyId": kek.kms_key_id, "kmsProps": kek.kms_props}
    if kek.doc is not None:
        body["doc"] = kek.doc
    body["shared"] = kek.shared
    if kek.ts is not None:
        body["ts"] = kek.ts
    body["deleted"] = kek.deleted
    return body


def dek_json(dek: Dek) -> dict[str, Any]:
    """Confluent's ``Dek`` entity (never with ``keyMaterial``: see ``DekRegistry``)."""
    body: dict[str, Any] = {"kekName": dek.kek_name, "subject": dek.subject,
                            "version": dek.version, "algorithm": dek.algorithm}
    if dek.encrypted_key_material is not None:
        body["encryptedKeyMaterial"] = dek.encrypted_key_material
    if dek.ts is not None:
        body["ts"] = dek.ts
    body["deleted"] = dek.deleted
    return body


def _registry() -> DekRegistry:
    dek = context().dek
    if dek is None:
        raise NotFound()
    return dek


@bp.before_request
def _check_ready() -> None:
    store = _registry().store
    if not store.ready and not store.wait_ready(context().ready_wait_s):
        raise NotReadyError(f"The DEK registry is not ready: {store.problem}")


def _write(local: Callable[[], Any], serialize: Callable[[Any], Any] | None = None) -> Response:
    """``write()`` for the DEK registry: ``serialize`` the result (or answer 204 when there
    is none), and read the DEK topic to its end after a forwarded write."""
    def run() -> Any:
        result = local()
        return None if serialize is None else serialize(result)

    response = write(run)
    if 200 <= response.status_code < 300:
        try:
            _registry().store.sync()
        except RegistryError as exc:
            log.warning("a DEK registry write succeeded but could not be read back here "
                        "yet: %s", exc.message)
    if serialize is None and response.status_code == 200:
        return Response(status=204)
    return response


def _algorithm() -> str | None:
    return request.args.get("algorithm") or None


def _version(text: str) -> int:
    number = parse_version(path_arg(text))
    return LATEST if number == -1 else number


# ---------------------------------------------------------------------------------- KEKs


@bp.get("/keks")
def list_keks() -> Response:
    names = _registry().kek_names(request.args.getlist("subjectPrefix"),
                                  deleted=bool_arg("deleted"))
    return json_response(paginate(names))


@bp.post("/keks")
def create_kek() -> Response:
    _check_context()
    body, registry = json_body(), _registry()
    return _write(lambda: registry.create_kek(body), kek_json)


@bp.get(_KEK)
def get_kek(name: str) -> Response:
    return json_response(kek_json(_registry().get_kek(path_arg(name),
                                                      deleted=bool_arg("deleted"))))


@bp.put(_KEK)
def update_kek(name: str) -> Response:
    body, registry, kek = json_body(), _registry(), path_arg(name)
    return _write(lambda: registry.update_kek(kek, body), kek_json)


@bp.delete(_KEK)
def delete_kek(name: str) -> Response:
    registry, kek, permanent = _registry(), path_arg(name), bool_arg("permanent")
    return _write(lambda: registry.delete_kek(kek, permanent=permanent))


@bp.post(_KEK + "/undelete")
def undelete_kek(name: str) -> Response:
    registry, kek = _registry(), path_arg(name)
    return _write(lambda: registry.undelete_kek(kek))


@bp.post(_KEK + "/test")
def test_kek(name: str) -> Response:
    _registry().get_kek(path_arg(name))
    raise InvalidKeyError("kmsKeyId", "this registry has no KMS access and cannot test a "
                          "KEK; test it from a client that has")


# ---------------------------------------------------------------------------------- DEKs


@bp.get(_KEK + "/deks")
def list_dek_subjects(name: str) -> Response:
    subjects = _registry().dek_subjects(path_arg(name), deleted=bool_arg("deleted"))
    return json_response(paginate(subjects))


@bp.post(_KEK + "/deks")
def create_dek(name: str) -> Response:
    return _create_dek(name, None)


@bp.post(_DEK)
def create_dek_with_subject(name: str, subject: str) -> Response:
    return _create_dek(name, path_arg(subject))


def _create_dek(name: str, subject: str | None) -> Response:
    if bool_arg("rewrap"):
        raise InvalidKeyError("encryptedKeyMaterial", "this registry has no KMS access and "
                              "cannot rewrap DEKs")
    body, registry, kek = json_body(), _registry(), path_arg(name)
    return _write(lambda: registry.create_dek(kek, subject, body), dek_json)


@bp.get(_DEK)
def get_dek(name: str, subject: str) -> Response:
    dek = _registry().get_dek(path_arg(name), path_arg(subject), 1, _algorithm(),
                              deleted=bool_arg("deleted"))
    return json_response(dek_json(dek))


@bp.delete(_DEK)
def delete_deks(name: str, subject: str) -> Response:
    registry, kek, subj = _registry(), path_arg(name), path_arg(subject)
    algorithm, permanent = _algorithm(), bool_arg("permanent")
    return _write(lambda: registry.delete_deks(kek, subj, algorithm, permanent=permanent))


@bp.post(_DEK + "/undelete")
def undelete_deks(name: str, subject: str) -> Response:
    registry, kek, subj, algorithm = _registry(), path_arg(name), path_arg(subject), _algorithm()
    return _write(lambda: registry.undelete_deks(kek, subj, algorithm))


@bp.get(_DEK + "/versions")
def list_dek_versions(name: str, subject: str) -> Response:
    versions = _registry().dek_versions(path_arg(name), path_arg(subject), _algorithm(),
                                        deleted=bool_arg("deleted"))
    return json_response(paginate(versions))


@bp.get(_VERSION)
def get_dek_version(name: str, subject: str, version: str) -> Response:
    dek = _registry().get_dek(path_arg(name), path_arg(subject), _version(version),
                              _algorithm(), deleted=bool_arg("deleted"))
    return json_response(dek_json(dek))


@bp.delete(_VERSION)
def delete_dek_version(name: str, subject: str, version: str) -> Response:
    registry, kek, subj = _registry(), path_arg(name), path_arg(subject)
    number, algorithm, permanent = _version(version), _algorithm(), bool_arg("permanent")
    return _write(lambda: registry.delete_dek_version(kek, subj, number, algorithm,
                                                      permanent=permanent))


@bp.post(_VERSION + "/undelete")
def undelete_dek_version(name: str, subject: str, version: str) -> Response:
    registry, kek, subj = _registry(), path_arg(name), path_arg(subject)
    number, algorithm = _version(version), _algorithm()
    return _write(lambda: registry.undelete_dek_version(kek, subj, number, algorithm))


def _check_context() -> None:
    """Ferry's registry has the default context only; a KEK of another one is refused."""
    ctx = request.args.get("context")
    if ctx not in (None, "", "."):
        raise InvalidKeyError("context", f"contexts are not supported (got {ctx!r}); only "
                              "the default context exists")
