"""TLS on SSL and SASL_SSL listeners: the server SSLContext from Kafka's ``ssl.*`` settings.

Ferry reads PEM, not Java key stores:

* ``ssl.keystore.location``: one PEM file with the private key and the certificate chain
  (``ssl.keystore.type`` must be PEM when given); ``ssl.key.password`` decrypts the key;
  or, inline, ``ssl.keystore.key`` and ``ssl.keystore.certificate.chain`` (PEM text);
* ``ssl.truststore.location``: PEM CA certificates that client certificates must chain
  to, or inline ``ssl.truststore.certificates``;
* ``ssl.client.auth``: ``none``, ``requested`` (a certificate is checked when sent) or
  ``required``;
* ``ssl.principal.mapping.rules``: see ``principal_mapping``.

Each key may be given per listener (``listener.name.<name>.ssl...``). When a keystore or
truststore file changes, ``maybe_reload`` builds a new context; new connections use it,
open ones keep theirs, and a broken file is logged and leaves the last good context.
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from collections.abc import Mapping

from core.broker.config import BrokerConfigError
from core.broker.security.listeners import listener_setting
from core.broker.security.principal import ANONYMOUS, KafkaPrincipal
from core.broker.security.principal_mapping import NoMatchingRule, PrincipalMapper

__all__ = ["TlsContext", "distinguished_name", "peer_principal"]

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT_S = 10.0
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}
# getpeercert()'s attribute names -> RFC 2253's (as Java's X500Principal prints them)
_SHORT = {"commonName": "CN", "organizationalUnitName": "OU", "organizationName": "O",
          "localityName": "L", "stateOrProvinceName": "ST", "countryName": "C",
          "streetAddress": "STREET", "domainComponent": "DC", "userId": "UID"}


class TlsContext:
    """The SSLContext of one listener, rebuilt when its PEM files change."""

    def __init__(self, settings: Mapping[str, str], listener: str) -> None:
        def get(key: str, default: str = "") -> str:
            return listener_setting(settings, listener, key, default).strip()

        self.listener = listener
        self._settings = _ssl_settings(settings, listener)
        kind = get("ssl.keystore.type", "PEM").upper()
        if kind != "PEM":
            raise BrokerConfigError(
                f"ssl.keystore.type {kind} is not supported on listener {listener}: Ferry "
                "reads PEM files (convert a JKS/PKCS12 store with openssl)",
                key="ssl.keystore.type")
        self._keystore = get("ssl.keystore.location")
        self._key_inline = get("ssl.keystore.key")
        self._chain_inline = get("ssl.keystore.certificate.chain")
        self._password = get("ssl.key.password") or None
        self._truststore = get("ssl.truststore.location")
        self._trust_inline = get("ssl.truststore.certificates")
        auth = get("ssl.client.auth", "none").lower()
        if auth not in _CLIENT_AUTH:
            raise BrokerConfigError(f"Invalid value {auth!r} for configuration "
                                    "ssl.client.auth: expected none, requested or required",
                                    key="ssl.client.auth")
        self.client_auth = auth
        try:
            self.mapper = PrincipalMapper.parse(get("ssl.principal.mapping.rules", "DEFAULT"))
        except ValueError as exc:
            raise BrokerConfigError(f"ssl.principal.mapping.rules: {exc}",
                                    key="ssl.principal.mapping.rules") from None
        if not self._keystore and not (self._key_inline and self._chain_inline):
            raise BrokerConfigError(
                f"listener {listener} uses TLS: set ssl.keystore.location to a PEM file "
                "holding its private key and certificate chain", key="ssl.keystore.location")
        if auth != "none" and not (self._truststore or self._trust_inline):
            raise BrokerConfigError(
                f"ssl.client.auth={auth} on listener {listener} needs "
                "ssl.truststore.location (PEM CA certificates)", key="ssl.truststore.location")
        self._stamp = self._file_stamp()
        try:
            self.context = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            raise BrokerConfigError(f"cannot load the TLS key or certificates of listener "
                                    f"{listener}: {exc}", key="ssl.keystore.location") from None

    def _file_stamp(self) -> tuple:
        stamps = []
        for path in (self._keystore, self._truststore):
            try:
                st = os.stat(path) if path else None
            except OSError:
                st = None
            stamps.append((st.st_mtime_ns, st.st_size, st.st_ino) if st else None)
        return tuple(stamps)

    def _build(self) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        if self._keystore:
            context.load_cert_chain(self._keystore, password=self._password)
        else:
            # load_cert_chain reads files only: the inline PEM goes through a private file
            with tempfile.NamedTemporaryFile("w", suffix=".pem") as pem:
                pem.write(self._key_inline + "\n" + self._chain_inline + "\n")
                pem.flush()
                context.load_cert_chain(pem.name, password=self._password)
        if self._truststore:
            context.load_verify_locations(cafile=self._truststore)
        if self._trust_inline:
            context.load_verify_locations(cadata=self._trust_inline)
        context.verify_mode = _CLIENT_AUTH[self.client_auth]
        return context

    def maybe_reload(self, settings: Mapping[str, str] | None = None) -> bool:
        """Rebuild the context if a PEM file changed, or if ``settings`` (the broker's
        current settings, AlterConfigs included) changed this listener's ``ssl.*`` keys;
        True when a new context is in use."""
        if settings is not None and _ssl_settings(settings, self.listener) != self._settings:
            try:
                fresh = TlsContext(settings, self.listener)
            except BrokerConfigError as exc:
                self._settings = _ssl_settings(settings, self.listener)  # logged once
                log.error("listener %s: new TLS settings refused, keeping the previous "
                          "ones: %s", self.listener, exc)
                return False
            vars(self).update(vars(fresh))  # same object: the acceptor holds this one
            log.info("listener %s: TLS settings changed; new connections use them",
                     self.listener)
            return True
        stamp = self._file_stamp()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            self.context = self._build()
        except (OSError, ssl.SSLError, ValueError) as exc:
            log.error("listener %s: reloading the TLS certificates failed, keeping the "
                      "previous ones: %s", self.listener, exc)
            return False
        log.info("listener %s: TLS certificates reloaded", self.listener)
        return True


def _ssl_settings(settings: Mapping[str, str], listener: str) -> dict[str, str]:
    prefix = f"listener.name.{listener.lower()}.ssl."
    return {k: str(v) for k, v in settings.items() if k.startswith(("ssl.", prefix))}


def distinguished_name(peercert: Mapping) -> str:
    """The RFC 2253 subject of ``SSLSocket.getpeercert()`` (most specific part first)."""
    rdns = []
    for rdn in reversed(peercert.get("subject", ())):
        parts = []
        for attr, value in rdn:
            escaped = "".join("\\" + c if c in ',+"\\<>;' else c for c in value)
            if escaped.startswith(("#", " ")):
                escaped = "\\" + escaped
            parts.append(f"{_SHORT.get(attr, attr)}={escaped}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


def peer_principal(transport: asyncio.BaseTransport, tls: TlsContext) -> KafkaPrincipal | None:
    """The principal of a TLS connection: ANONYMOUS without a client certificate, else its
    subject through the mapping rules; None when no rule matches (refuse it)."""
    peercert = transport.get_extra_info("peercert")
    if not peercert:
        return ANONYMOUS
    name = distinguished_name(peercert)
    try:
        return KafkaPrincipal("User", tls.mapper.map(name))
    except NoMatchingRule as exc:
        log.warning("listener %s: refusing a client certificate: %s", tls.listener, exc)
        return None
