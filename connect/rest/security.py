"""``RestSecurity``: HTTPS and HTTP Basic authentication of a worker's REST API, by
Kafka Connect's settings, on the shared HTTP layer (``core.http``).

* **HTTPS**: ``listeners=https://HOST:PORT`` with the ``ssl.*`` keys, each of which may
  also be given as ``listeners.https.ssl.*`` (that one wins), as in Kafka. The same
  settings make this worker's own requests to other workers (forwarded requests, task
  configs sent to the leader) trust their certificates, and present the keystore when the
  other side asks for a client certificate (``ssl.client.auth``).
* **Basic auth**: ``rest.extension.classes`` naming Kafka's
  ``BasicAuthSecurityRestExtension`` turns it on, with the users of the JAAS section
  ``KafkaConnect`` (its ``PropertyFileLoginModule``'s ``file="..."``), the JAAS file
  named by ``java.security.auth.login.config`` in the worker config or, as for Kafka, in
  ``KAFKA_OPTS`` (``-Djava.security.auth.login.config=...``). Without the JAAS file,
  ``rest.basic.auth.users.file`` names the users file directly (Ferry's key; it alone
  also turns authentication on).
* **Worker-to-worker**: as Kafka's filter does, ``POST /connectors/{name}/tasks`` passes
  unauthenticated: its body is signed with the session key (KIP-507) and checked by the
  herder. Ferry lets it through only when it carries a signature (Kafka lets an unsigned
  one through too, which a group on ``connect.protocol=compatible`` then accepts from
  anyone); secured clusters keep the default ``sessioned``. A request forwarded to
  another worker carries the user's ``Authorization``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry

from connect.api.errors import ConfigError
from core.http.auth import (
    AUTH_LIMIT_KEYS,
    BasicAuth,
    FailureLimiter,
    failure_counter,
    limiter_from_props,
    tls_failure_hook,
)
from core.http.tls import HttpsListener, TlsConfigError, TlsSettings
from core.http.users import (
    JAAS_CONFIG_KEY,
    UsersFileError,
    UserStore,
    jaas_config_path,
    jaas_login_file,
)

__all__ = ["BASIC_AUTH_EXTENSION", "JAAS_CONFIG_KEY", "USERS_FILE_KEY", "RestSecurity"]

BASIC_AUTH_EXTENSION = ("org.apache.kafka.connect.rest.basic.auth.extension."
                        "BasicAuthSecurityRestExtension")
USERS_FILE_KEY = "rest.basic.auth.users.file"
#: The JAAS section Kafka's extension reads (fixed by Kafka).
JAAS_SECTION = "KafkaConnect"
REALM = "KafkaConnect"
_INTERNAL_TASKS = re.compile(r"^/?connectors/[^/]+/tasks/?$")


@dataclass(frozen=True)
class RestSecurity(HttpsListener):
    """What protects one worker's REST API; ``from_worker_config`` reads it
    (``server_context()``, ``client_context()``: see ``HttpsListener``)."""

    users: UserStore | None = None
    limiter: FailureLimiter = field(default_factory=FailureLimiter)

    @classmethod
    def from_worker_config(cls, config: Mapping[str, str] | None,
                           environ: Mapping[str, str] | None = None) -> RestSecurity:
        """``ConfigError`` names a bad key (an unreadable file, an unknown extension)."""
        config = config or {}
        environ = os.environ if environ is None else environ
        listeners = str(config.get("listeners", "")).strip()
        https = listeners.split(",")[0].strip().lower().startswith("https://")
        try:
            tls = TlsSettings.from_props(config, ("listeners.https.", ""))
        except TlsConfigError as exc:
            raise ConfigError(exc.key, str(exc)) from None
        try:
            limiter = limiter_from_props(config)
        except ValueError as exc:
            raise ConfigError(AUTH_LIMIT_KEYS[0], str(exc)) from None
        security = cls(https=https, tls=tls, users=_users(config, environ), limiter=limiter)
        security.check_files()
        return security

    def config_error(self, exc: TlsConfigError) -> Exception:
        return ConfigError(exc.key, str(exc))

    def wrap(self, app: Callable[..., Iterable[bytes]], registry: CollectorRegistry
             ) -> tuple[Callable[..., Iterable[bytes]], Callable[[Any, Exception], None]]:
        """``app`` behind authentication (if configured), and the TLS failure hook;
        failures are counted in ``registry``."""
        failures = failure_counter(registry)
        on_tls_failure = tls_failure_hook(failures, "Connect REST")
        if self.users is None:
            return app, on_tls_failure
        return BasicAuth(app, self.users, realm=REALM, service="Connect REST",
                         registry=registry, bypass=_internal_request, limiter=self.limiter,
                         failures=failures), on_tls_failure


def _internal_request(environ: dict[str, Any]) -> bool:
    """Task configs sent by another worker pass, as Kafka's filter lets them: the herder
    checks their session-key signature instead (an unsigned one must authenticate)."""
    return (environ.get("REQUEST_METHOD") == "POST"
            and bool(_INTERNAL_TASKS.match(environ.get("PATH_INFO", "")))
            and bool(environ.get("HTTP_X_CONNECT_AUTHORIZATION")))


def _users(config: Mapping[str, str], environ: Mapping[str, str]) -> UserStore | None:
    extensions = [c.strip() for c in str(config.get("rest.extension.classes", "")).split(",")
                  if c.strip()]
    unknown = [c for c in extensions if c != BASIC_AUTH_EXTENSION]
    if unknown:
        raise ConfigError("rest.extension.classes", f"Ferry runs no Java REST extensions; "
                          f"only {BASIC_AUTH_EXTENSION} is understood, not "
                          f"{', '.join(unknown)}")
    users_file = str(config.get(USERS_FILE_KEY, "")).strip()
    if not extensions and not users_file:
        return None
    jaas = jaas_config_path(str(config.get(JAAS_CONFIG_KEY, "")).strip(), environ, "KAFKA_OPTS")
    try:
        if jaas:
            return UserStore.from_file(jaas_login_file(jaas, JAAS_SECTION), with_roles=False)
        if users_file:
            return UserStore.from_file(users_file, with_roles=False)
    except UsersFileError as exc:
        raise ConfigError(JAAS_CONFIG_KEY if jaas else USERS_FILE_KEY, str(exc)) from None
    raise ConfigError("rest.extension.classes", f"the basic auth extension needs its users: "
                      f"set {JAAS_CONFIG_KEY} to a JAAS file with a {JAAS_SECTION} section, "
                      f"or {USERS_FILE_KEY} to a file of user=password lines")

