"""Per-subject authorization: Karapace's authfile, an open JSON format.

::

    {
      "users": [
        {"username": "admin", "algorithm": "sha512", "salt": "...", "password_hash": "..."}
      ],
      "permissions": [
        {"username": "admin", "operation": "Write", "resource": ".*"},
        {"username": "orders-app", "operation": "Write", "resource": "Subject:orders-.*"},
        {"username": "auditor", "operation": "Read", "resource": "Subject:.*"},
        {"username": "auditor", "operation": "Read", "resource": "Config:"}
      ]
    }

``users`` (optional here, when the users come from a Confluent JAAS/password file) carry
Karapace's password hashes. Each permission grants ``operation`` (``Read``, or ``Write``,
which implies ``Read``) on the resources its ``resource`` regex matches from their start
(Python ``re.match``, as Karapace): ``Subject:<name>`` for a subject, ``Config:`` for the
global compatibility level and mode. A user with no matching permission is denied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.http.users import HASH_ALGORITHMS, UserEntry, UserStore
from schema_registry.errors import RegistryConfigError

__all__ = ["READ", "WRITE", "Authorizer", "Permission"]

READ, WRITE = "Read", "Write"
CONFIG_RESOURCE = "Config:"


@dataclass(frozen=True)
class Permission:
    username: str
    operation: str
    resource: re.Pattern[str]

    def allows(self, user: str, operation: str, resource: str) -> bool:
        return (self.username == user and (operation == READ or self.operation == WRITE)
                and self.resource.match(resource) is not None)


class Authorizer:
    """The permissions of an authfile; ``users`` are the authfile's own users."""

    def __init__(self, permissions: list[Permission], users: UserStore, source: str = ""
                 ) -> None:
        self.permissions = permissions
        self.users = users
        self.source = source

    def allowed(self, user: str | None, operation: str, resource: str) -> bool:
        return user is not None and any(p.allows(user, operation, resource)
                                        for p in self.permissions)

    def can_subject(self, user: str | None, operation: str, subject: str) -> bool:
        return self.allowed(user, operation, f"Subject:{subject}")

    @classmethod
    def from_file(cls, path: str | Path) -> Authorizer:
        """Read a Karapace authfile; ``RegistryConfigError`` says what is wrong."""
        where = f"registry_authfile {path}"
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise RegistryConfigError(f"cannot read {where}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise RegistryConfigError(f"{where} is not JSON: {exc}") from None
        if not isinstance(data, dict) or not isinstance(data.get("permissions", []), list) \
                or not isinstance(data.get("users", []), list):
            raise RegistryConfigError(f"{where}: expected an object with lists 'users' and "
                                      "'permissions'")
        users: dict[str, UserEntry] = {}
        for n, item in enumerate(data.get("users", [])):
            _require(item, ("username", "algorithm", "salt", "password_hash"), where,
                     f"users[{n}]")
            if item["algorithm"] not in HASH_ALGORITHMS:
                raise RegistryConfigError(f"{where}: users[{n}]: algorithm must be one of "
                                          f"{', '.join(HASH_ALGORITHMS)}")
            # Karapace has no roles: its users are let in by their permissions alone.
            users[item["username"]] = UserEntry(item["password_hash"], roles=("*",),
                                                algorithm=item["algorithm"],
                                                salt=item["salt"])
        permissions = []
        for n, item in enumerate(data.get("permissions", [])):
            _require(item, ("username", "operation", "resource"), where, f"permissions[{n}]")
            if item["operation"] not in (READ, WRITE):
                raise RegistryConfigError(f"{where}: permissions[{n}]: operation must be "
                                          f"Read or Write, not {item['operation']!r}")
            try:
                pattern = re.compile(item["resource"])
            except re.error as exc:
                raise RegistryConfigError(f"{where}: permissions[{n}]: resource "
                                          f"{item['resource']!r} is no regex: {exc}") from None
            permissions.append(Permission(item["username"], item["operation"], pattern))
        return cls(permissions, UserStore(users, str(path)), str(path))


def _require(item: Any, keys: tuple[str, ...], where: str, what: str) -> None:
    if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
        raise RegistryConfigError(f"{where}: {what} needs the strings {', '.join(keys)}")
