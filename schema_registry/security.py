"""``RegistrySecurity``: HTTPS, HTTP Basic authentication and per-subject authorization of
the registry's REST API, by Confluent's (and Karapace's) setting names.

=================================  ===============================================
key                                meaning
=================================  ===============================================
``listeners=https://HOST:PORT``    serve HTTPS with the ``ssl.*`` keys below
``ssl.keystore.location``          PEM: private key and certificate chain
``ssl.key.password``               decrypts an encrypted key
``ssl.truststore.location``        PEM CA certificates (client certificates; and the
                                   other instances', for forwarded writes)
``ssl.client.authentication``      ``NONE``, ``REQUESTED`` or ``REQUIRED``
                                   (``ssl.client.auth=true`` means ``REQUIRED``)
``authentication.method``          ``NONE`` (default) or ``BASIC``
``authentication.realm``           the JAAS section naming the users file, and the
                                   realm of ``WWW-Authenticate`` (``SchemaRegistry``)
``authentication.roles``           roles allowed in (default ``*``: any user)
``java.security.auth.login.config`` the JAAS file (else ``-D...`` in
                                   ``SCHEMA_REGISTRY_OPTS``, as for Confluent)
``authentication.users.file``      Ferry: the ``user: password,role,...`` file itself
``registry_authfile``              Karapace's authfile: users with hashed passwords and
                                   per-subject permissions (alone, it turns BASIC on)
``authentication.skip.paths``      paths served without authentication (comma list)
=================================  ===============================================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.http.auth import AUTH_LIMIT_KEYS, FailureLimiter, limiter_from_props
from core.http.tls import HttpsListener, TlsConfigError, TlsSettings
from core.http.users import (
    JAAS_CONFIG_KEY,
    UsersFileError,
    UserStore,
    jaas_config_path,
    jaas_login_file,
)
from schema_registry.authorization import Authorizer
from schema_registry.errors import RegistryConfigError

__all__ = ["SECURITY_KEYS", "RegistrySecurity"]

USERS_FILE_KEY = "authentication.users.file"
AUTHFILE_KEY = "registry_authfile"
DEFAULT_REALM = "SchemaRegistry"
SECURITY_KEYS = frozenset((
    "authentication.method", "authentication.realm", "authentication.roles",
    "authentication.skip.paths",
    JAAS_CONFIG_KEY, USERS_FILE_KEY, AUTHFILE_KEY, "ssl.keystore.location",
    "ssl.keystore.certificate.location", "ssl.key.password", "ssl.keystore.password",
    "ssl.truststore.location", "ssl.client.auth", "ssl.client.authentication",
    "ssl.keystore.type", "ssl.truststore.type", "ssl.endpoint.identification.algorithm",
    *AUTH_LIMIT_KEYS))
_CLIENT_AUTH = {"NONE": "none", "REQUESTED": "requested", "REQUIRED": "required",
                "TRUE": "required", "FALSE": "none"}


@dataclass(frozen=True)
class RegistrySecurity(HttpsListener):
    """What protects one registry instance's REST API (``server_context()``,
    ``client_context()``: see ``HttpsListener``)."""

    users: UserStore | None = None
    realm: str = DEFAULT_REALM
    roles: tuple[str, ...] = ("*",)
    authorizer: Authorizer | None = None
    limiter: FailureLimiter = field(default_factory=FailureLimiter)
    skip_paths: frozenset[str] = frozenset()

    @classmethod
    def from_props(cls, props: Mapping[str, str], *, https: bool,
                   environ: Mapping[str, str] | None = None) -> RegistrySecurity:
        """``RegistryConfigError`` names a bad key."""
        environ = os.environ if environ is None else environ
        tls_props = dict(props)
        mode = (props.get("ssl.client.authentication") or props.get("ssl.client.auth") or "")
        if mode:
            if mode.upper() not in _CLIENT_AUTH:
                raise RegistryConfigError(f"Invalid value {mode!r} for configuration "
                                          "ssl.client.authentication: expected NONE, "
                                          "REQUESTED or REQUIRED")
            tls_props["ssl.client.auth"] = _CLIENT_AUTH[mode.upper()]
        try:
            tls = TlsSettings.from_props(tls_props)
            limiter = limiter_from_props(props)
        except (TlsConfigError, ValueError) as exc:
            raise RegistryConfigError(str(exc)) from None
        method = (props.get("authentication.method") or "NONE").upper()
        if method not in ("NONE", "BASIC"):
            raise RegistryConfigError(f"Invalid value {method!r} for configuration "
                                      "authentication.method: Ferry supports NONE and BASIC")
        realm = props.get("authentication.realm") or DEFAULT_REALM
        roles = tuple(r.strip() for r in (props.get("authentication.roles") or "*").split(",")
                      if r.strip()) or ("*",)
        authorizer = (Authorizer.from_file(props[AUTHFILE_KEY]) if props.get(AUTHFILE_KEY)
                      else None)
        users = _users(props, environ, realm) if method == "BASIC" else None
        if authorizer is not None and len(authorizer.users):
            users = authorizer.users if users is None else authorizer.users.merged(users)
        if authorizer is not None and users is None:
            raise RegistryConfigError(f"{AUTHFILE_KEY} grants permissions to users, but no "
                                      "users are defined: add 'users' to it or set "
                                      "authentication.method=BASIC with a users file")
        skip = frozenset("/" + p.strip().strip("/") for p in
                         (props.get("authentication.skip.paths") or "").split(",") if p.strip())
        security = cls(https=https, tls=tls, users=users, realm=realm, roles=roles,
                       authorizer=authorizer, limiter=limiter, skip_paths=skip)
        security.check_files()
        return security

    def config_error(self, exc: TlsConfigError) -> Exception:
        return RegistryConfigError(str(exc))

def _users(props: Mapping[str, str], environ: Mapping[str, str], realm: str) -> UserStore:
    jaas = jaas_config_path(props.get(JAAS_CONFIG_KEY) or "", environ, "SCHEMA_REGISTRY_OPTS")
    users_file = props.get(USERS_FILE_KEY)
    try:
        if users_file:
            return UserStore.from_file(users_file, with_roles=True)
        if jaas:
            return UserStore.from_file(jaas_login_file(jaas, realm), with_roles=True)
    except UsersFileError as exc:
        raise RegistryConfigError(f"{USERS_FILE_KEY if users_file else JAAS_CONFIG_KEY}: "
                                  f"{exc}") from None
    if props.get(AUTHFILE_KEY):
        return UserStore({})
    raise RegistryConfigError(f"authentication.method=BASIC needs users: set {JAAS_CONFIG_KEY}"
                              f" to a JAAS file with a {realm} section, {USERS_FILE_KEY} to a "
                              f"file of 'user: password,role' lines, or {AUTHFILE_KEY}")

