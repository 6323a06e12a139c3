"""Per-subject authorization at the REST edge (``registry_authfile``, Karapace's model).

``authorize`` runs before every view of an app whose context has an ``Authorizer``:

* a route naming a subject needs ``Read`` on ``Subject:<name>`` (else it answers 404
  40401 as if the subject did not exist, so its existence does not leak), and ``Write``
  for a change (else 403 40301): registering, deleting, setting its config or mode;
* a schema by id or guid needs ``Read`` on one of the subjects using it (else 404 40403);
* the global config and mode are the resource ``Config:``; the DEK Registry and the
  associations without a subject need it too (Ferry's choice: key material is an
  operator's business);
* the root, ``/contexts``, ``/schemas/types`` and the metadata need only a user.

Listings (``/subjects``, ``/schemas``, the subjects and versions of an id) keep only
what ``visible`` says the user may read.
"""

from __future__ import annotations

from flask import request

from schema_registry.authorization import CONFIG_RESOURCE, READ, WRITE, Authorizer
from schema_registry.errors import ForbiddenError, SchemaNotFoundError, SubjectNotFoundError
from schema_registry.rest.http import path_arg

__all__ = ["authorize", "visible"]

#: POSTs that only read: the lookup of a schema and the compatibility checks.
_READING_POSTS = ("/subjects/<subject>", "/compatibility/")
_OPEN = ("/", "/contexts", "/schemas/types", "/v1/metadata/id", "/v1/metadata/version")


def _authorizer() -> Authorizer | None:
    from schema_registry.rest.app import context

    return context().authorizer


def _user() -> str | None:
    user = request.environ.get("REMOTE_USER")
    return str(user) if user else None


def visible(subject: str) -> bool:
    """May the requesting user read ``subject`` (always, without an authorizer)?"""
    authorizer = _authorizer()
    return authorizer is None or authorizer.can_subject(_user(), READ, subject)


def authorize() -> None:
    authorizer = _authorizer()
    rule = request.url_rule.rule if request.url_rule is not None else None
    if authorizer is None or rule is None or rule in _OPEN:
        return
    user = _user()
    reading = request.method in ("GET", "HEAD") or (
        request.method == "POST" and (rule == _READING_POSTS[0]
                                      or rule.startswith(_READING_POSTS[1])))
    args = request.view_args or {}
    if "subject" in args:
        subject = path_arg(args["subject"])
        if not authorizer.can_subject(user, READ, subject):
            raise SubjectNotFoundError(subject)
        if not reading and not authorizer.can_subject(user, WRITE, subject):
            raise ForbiddenError(f"User may not change subject '{subject}'")
        return
    if ("schema_id" in args or "guid" in args) and rule.startswith("/schemas/"):
        _check_schema(authorizer, user, args)
        return
    if rule in ("/subjects", "/schemas") and reading:
        return  # filtered by ``visible``
    if not authorizer.allowed(user, READ if reading else WRITE, CONFIG_RESOURCE):
        raise ForbiddenError()


def _check_schema(authorizer: Authorizer, user: str | None, args: dict[str, str]) -> None:
    from schema_registry.rest.app import context

    registry = context().registry
    if "guid" in args:
        schema_id = registry.schema_by_guid(path_arg(args["guid"])).id
    else:
        try:
            schema_id = int(path_arg(args["schema_id"]))
        except ValueError:
            return  # the view answers 404 itself
    subjects = {v.subject for v in registry.versions_of_id(schema_id, deleted=True)}
    if not any(authorizer.can_subject(user, READ, s) for s in subjects):
        raise SchemaNotFoundError(schema_id)
