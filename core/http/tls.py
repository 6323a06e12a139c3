"""TLS settings of an HTTP door, by Kafka's ``ssl.*`` names, as Python ``ssl`` contexts.

Kafka reads keystores and truststores; Ferry reads their PEM form (Kafka's
``ssl.keystore.type=PEM``): ``ssl.keystore.location`` is a PEM file holding the private key
and the certificate chain (or ``ssl.keystore.certificate.location`` names the chain and
``ssl.keystore.location`` the key), ``ssl.key.password`` decrypts an encrypted key,
``ssl.truststore.location`` is a PEM file of trusted CA certificates. ``ssl.client.auth``
is ``none``, ``requested`` or ``required`` (client certificates, checked against the
truststore). A ``JKS`` or ``PKCS12`` store type is refused with the key named.

The same names under a prefix (Connect's ``listeners.https.``, a converter's
``schema.registry.``) win over the bare ones, as in Kafka.

``HttpsListener`` is what a REST API (Connect's, the registry's) holds of this: whether it
serves HTTPS, and the contexts of its listener and of its requests to its peers.

``ReloadingContext`` rebuilds a listener's context when one of its PEM files changes
(looked at no more than once a second, on new connections): renewed certificates are
served without a restart, and connections already open keep theirs.
"""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CLIENT_AUTH_MODES", "HttpsListener", "ReloadingContext", "TlsConfigError",
           "TlsSettings"]

log = logging.getLogger(__name__)

CLIENT_AUTH_MODES = ("none", "requested", "required")
_KEYS = ("ssl.keystore.location", "ssl.keystore.certificate.location", "ssl.key.password",
         "ssl.keystore.password", "ssl.truststore.location", "ssl.client.auth",
         "ssl.keystore.type", "ssl.truststore.type", "ssl.endpoint.identification.algorithm")


class TlsConfigError(ValueError):
    """A TLS setting is missing, unreadable or not supported; ``key`` names it."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


@dataclass(frozen=True)
class TlsSettings:
    """Where the PEM files are; ``server_context()``/``client_context()`` load them."""

    keystore: str | None = None
    certificate: str | None = None
    key_password: str | None = None
    truststore: str | None = None
    client_auth: str = "none"
    check_hostname: bool = True
    prefix: str = ""

    @classmethod
    def from_props(cls, props: Mapping[str, object], prefixes: tuple[str, ...] = ("",)
                   ) -> TlsSettings:
        """The ``ssl.*`` keys of ``props``, each looked up under ``prefixes`` in order
        (first found wins). ``TlsConfigError`` names a bad value."""
        found: dict[str, tuple[str, str]] = {}
        for name in _KEYS:
            for prefix in prefixes:
                value = props.get(prefix + name)
                if value is not None and str(value).strip():
                    found[name] = (prefix + name, str(value).strip())
                    break
        for name in ("ssl.keystore.type", "ssl.truststore.type"):
            if name in found and found[name][1].upper() != "PEM":
                raise TlsConfigError(found[name][0], f"{found[name][1]!r} stores are not "
                                     "read by Ferry; convert the store to PEM files and set "
                                     "the type to PEM")
        mode = found.get("ssl.client.auth", ("", "none"))
        if mode[1].lower() not in CLIENT_AUTH_MODES:
            raise TlsConfigError(mode[0], f"expected one of {', '.join(CLIENT_AUTH_MODES)}, "
                                 f"got {mode[1]!r}")
        password = found.get("ssl.key.password") or found.get("ssl.keystore.password")
        algorithm = found.get("ssl.endpoint.identification.algorithm", ("", "https"))[1]
        return cls(keystore=found.get("ssl.keystore.location", ("", None))[1],
                   certificate=found.get("ssl.keystore.certificate.location", ("", None))[1],
                   key_password=password[1] if password else None,
                   truststore=found.get("ssl.truststore.location", ("", None))[1],
                   client_auth=mode[1].lower(),
                   check_hostname=algorithm.lower() == "https",
                   prefix=prefixes[0])

    def server_context(self) -> ssl.SSLContext:
        """The context of an HTTPS listener (TLS 1.2 or later); needs a keystore."""
        if not self.keystore:
            also = f" (or {self.prefix}ssl.keystore.location)" if self.prefix else ""
            raise TlsConfigError("ssl.keystore.location",
                                 f"an HTTPS listener needs a PEM file with its private key "
                                 f"and certificate{also}")
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        self._load_chain(context)
        if self.client_auth != "none":
            if not self.truststore:
                raise TlsConfigError("ssl.truststore.location",
                                     f"ssl.client.auth={self.client_auth} needs the CA "
                                     "certificates that sign client certificates")
            self._load_trust(context)
            context.verify_mode = (ssl.CERT_REQUIRED if self.client_auth == "required"
                                   else ssl.CERT_OPTIONAL)
        return context

    def client_context(self) -> ssl.SSLContext:
        """The context of a client of an HTTPS door: the truststore (else the system's
        CAs), and the keystore as the client certificate when one is set."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.truststore:
            self._load_trust(context)
        context.check_hostname = self.check_hostname
        if self.keystore:
            self._load_chain(context)
        return context

    @property
    def requests_verify(self) -> str | bool:
        """The ``verify`` argument of a ``requests`` call: the truststore or True."""
        return self.truststore or True

    @property
    def requests_cert(self) -> tuple[str, str] | str | None:
        """The ``cert`` argument of a ``requests`` call (unencrypted keys only)."""
        if not self.keystore:
            return None
        return (self.certificate, self.keystore) if self.certificate else self.keystore

    def _load_chain(self, context: ssl.SSLContext) -> None:
        key = self.prefix + "ssl.keystore.location"
        _readable(self.keystore, key)
        if self.certificate:
            _readable(self.certificate, self.prefix + "ssl.keystore.certificate.location")
        try:
            context.load_cert_chain(self.certificate or self.keystore,  # type: ignore[arg-type]
                                    self.keystore if self.certificate else None,
                                    # never OpenSSL's terminal prompt for a pass phrase
                                    password=self.key_password or _no_password)
        except (ssl.SSLError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise TlsConfigError(key, f"cannot load the private key and certificate from "
                                 f"{self.keystore} ({reason}); it must be PEM, and an "
                                 "encrypted key needs ssl.key.password") from None

    def _load_trust(self, context: ssl.SSLContext) -> None:
        key = self.prefix + "ssl.truststore.location"
        _readable(self.truststore, key)
        try:
            context.load_verify_locations(cafile=self.truststore)
        except ssl.SSLError as exc:
            raise TlsConfigError(key, f"cannot load CA certificates from {self.truststore} "
                                 f"({exc.reason or exc}); it must be PEM") from None


class ReloadingContext:
    """``settings.server_context()``, built again when a PEM file's size or modification
    time changed. A file caught half-written keeps the previous context (logged); the
    next look tries again. Thread-safe."""

    def __init__(self, settings: TlsSettings, *, interval_s: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self._interval_s = interval_s
        self._clock = clock
        self._lock = threading.Lock()
        self._stamp = self._files_stamp()
        self._context = settings.server_context()  # raises for a bad setting, at start
        self._checked = clock()
        self.reloads = 0

    def current(self) -> ssl.SSLContext:
        now = self._clock()
        with self._lock:
            if now - self._checked < self._interval_s:
                return self._context
            self._checked = now
            stamp = self._files_stamp()
            if stamp == self._stamp:
                return self._context
            try:
                self._context = self.settings.server_context()
            except TlsConfigError as exc:
                log.warning("TLS files changed but cannot be loaded (%s); serving the "
                            "previous certificate until they can", exc)
                return self._context
            self._stamp = stamp
            self.reloads += 1
            log.info("TLS certificate reloaded from %s", self.settings.keystore)
            return self._context

    def _files_stamp(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in (self.settings.keystore, self.settings.certificate,
                     self.settings.truststore):
            try:
                info = os.stat(path) if path else None
            except OSError:
                info = None
            stamps.append((info.st_mtime_ns, info.st_size) if info else (0, 0))
        return tuple(stamps)


@dataclass(frozen=True)
class HttpsListener:
    """A REST API's TLS: ``https`` when its listener is ``https://``. A service subclasses
    it with its other settings and overrides ``config_error`` to raise its own error type."""

    https: bool = False
    tls: TlsSettings = field(default_factory=TlsSettings)

    def config_error(self, exc: TlsConfigError) -> Exception:
        """The error a service reports for a bad TLS setting (``exc`` names the key)."""
        return exc

    def server_context(self) -> ReloadingContext | None:
        """The HTTPS listener's context, reloaded when its files change (None for
        ``http://``)."""
        if not self.https:
            return None
        try:
            return ReloadingContext(self.tls)
        except TlsConfigError as exc:
            raise self.config_error(exc) from None

    def client_context(self) -> ssl.SSLContext | None:
        """The context of requests to the other instances over HTTPS (forwarded ones);
        None: the system's CAs (also used when only the others listen on HTTPS)."""
        if not (self.https or self.tls.truststore):
            return None
        try:
            return self.tls.client_context()
        except TlsConfigError as exc:
            raise self.config_error(exc) from None

    def check_files(self) -> None:
        """Loads both contexts once, so that unreadable PEM files fail at startup, naming
        their key."""
        self.server_context()
        self.client_context()


def _no_password() -> str:
    return ""


def _readable(path: str | None, key: str) -> None:
    if not path or not Path(path).is_file():
        raise TlsConfigError(key, f"no such file: {path!r}")
