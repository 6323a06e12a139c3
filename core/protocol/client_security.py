"""Kafka's client security settings, read once for every Ferry component that connects to a
broker (the ``kafka://`` backend under the console tools, Connect workers and the Spark
source; ``ferry users``; a cluster broker's replica fetcher). It lives in ``core.protocol``
so that both the broker and the backends use this one implementation; code outside
``core`` reaches it as ``core.backends.security``.

Settings (Kafka's names; librdkafka's spellings accepted too):

* ``security.protocol``: PLAINTEXT (default), SSL, SASL_PLAINTEXT, SASL_SSL;
* ``sasl.mechanism``: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; the user and password from
  ``sasl.username``/``sasl.password`` (librdkafka) or ``sasl.jaas.config``'s
  ``username="..." password="..."`` (Java clients);
* ``ssl.ca.location`` or ``ssl.truststore.location``: PEM CA certificates to trust
  (default: the system's); ``ssl.certificate.location``/``ssl.key.location`` or
  ``ssl.keystore.location`` (one PEM with key and chain): a client certificate;
  ``ssl.key.password``; ``ssl.endpoint.identification.algorithm`` empty turns off host
  name checking (Kafka's default, ``https``, checks it).

``ClientSecurity.authenticate`` runs SaslHandshake v1 and SaslAuthenticate over any
connection that can send one request and return its response.
"""

from __future__ import annotations

import base64
import hmac
import os
import socket
import ssl
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass
from typing import Any

from core.protocol.jaas import parse_jaas_options
from core.protocol.scram import SCRAM_HASHES, hmac_digest, salted_password, scram_keys
from core.protocol.security_protocol import SECURITY_PROTOCOLS, SecurityProtocolTraits

__all__ = ["SECURITY_CONFIG_KEYS", "ClientSecurity", "ClientSecurityError",
           "security_settings"]

_MECHANISMS: dict[str, str | None] = {"PLAIN": None, **SCRAM_HASHES}
#: The settings read here (other components pass them through unchanged).
SECURITY_CONFIG_KEYS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.mechanisms", "sasl.username",
    "sasl.password", "sasl.jaas.config", "ssl.ca.location", "ssl.truststore.location",
    "ssl.certificate.location", "ssl.key.location", "ssl.keystore.location",
    "ssl.key.password", "ssl.endpoint.identification.algorithm",
})


def security_settings(config: Mapping[str, Any]) -> dict[str, str]:
    """The client security settings among ``config`` (a worker or tool config), to pass on
    to the component that connects to the broker."""
    return {k: str(v) for k, v in config.items() if k in SECURITY_CONFIG_KEYS}


class ClientSecurityError(Exception):
    """A security setting is wrong (``key`` names it) or the broker refused the login."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class ClientSecurity(SecurityProtocolTraits):
    """A client's security settings (``uses_tls``/``uses_sasl``: its protocol's)."""

    protocol: str = "PLAINTEXT"
    mechanism: str = ""
    username: str = ""
    password: str = ""
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    key_password: str = ""
    check_hostname: bool = True

    @classmethod
    def parse(cls, config: Mapping[str, Any]) -> ClientSecurity:
        """Raises ClientSecurityError naming the key."""
        def get(*keys: str) -> str:
            for key in keys:
                if config.get(key) not in (None, ""):
                    return str(config[key]).strip()
            return ""

        protocol = (get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ClientSecurityError(f"Invalid value {protocol!r} for configuration "
                                      f"security.protocol: expected one of "
                                      f"{', '.join(SECURITY_PROTOCOLS)}", key="security.protocol")
        mechanism = (get("sasl.mechanism", "sasl.mechanisms") or "PLAIN").upper()
        username, password = get("sasl.username"), get("sasl.password")
        jaas = get("sasl.jaas.config")
        if jaas and not username:
            options = parse_jaas_options(jaas)
            username, password = options.get("username", ""), options.get("password", "")
        if protocol.startswith("SASL"):
            if mechanism not in _MECHANISMS:
                raise ClientSecurityError(
                    f"Invalid value {mechanism!r} for configuration sasl.mechanism: Ferry's "
                    f"clients speak {', '.join(_MECHANISMS)}", key="sasl.mechanism")
            if not username:
                raise ClientSecurityError(
                    f"security.protocol={protocol} needs sasl.username and sasl.password "
                    "(or sasl.jaas.config with username and password)", key="sasl.username")
        keystore = get("ssl.keystore.location")
        # Kafka's default "https" checks the host name; "" (Java) or "none" (librdkafka) not
        algorithm = config.get("ssl.endpoint.identification.algorithm")
        check_hostname = algorithm is None or str(algorithm).strip().lower() not in ("", "none")
        return cls(protocol=protocol, mechanism=mechanism, username=username,
                   password=password,
                   ca_file=get("ssl.ca.location", "ssl.truststore.location"),
                   cert_file=get("ssl.certificate.location") or keystore,
                   key_file=get("ssl.key.location") or keystore,
                   key_password=get("ssl.key.password"), check_hostname=check_hostname)

    # ------------------------------------------------------------------ TLS

    def ssl_context(self) -> ssl.SSLContext:
        try:
            context = ssl.create_default_context(cafile=self.ca_file or None)
            context.check_hostname = self.check_hostname
            if self.cert_file:
                context.load_cert_chain(self.cert_file, self.key_file or None,
                                        password=self.key_password or None)
        except (OSError, ssl.SSLError) as exc:
            raise ClientSecurityError(f"cannot load the TLS settings: {exc}",
                                      key="ssl.ca.location") from None
        return context

    def wrap(self, sock: socket.socket, host: str) -> socket.socket:
        """``sock`` inside TLS when the protocol says so (the handshake happens here)."""
        if not self.uses_tls:
            return sock
        return self.ssl_context().wrap_socket(sock, server_hostname=host)

    # ------------------------------------------------------------------ SASL

    def authenticate(self, roundtrip: Callable[[Any, int], Any]) -> None:
        """Log in over a connection; ``roundtrip(request, version)`` returns the response.
        Raises ClientSecurityError when the broker refuses."""
        steps = self.login_steps()
        try:
            request, version = next(steps)
            while True:
                request, version = steps.send(roundtrip(request, version))
        except StopIteration:
            return

    def login_steps(self) -> Generator[tuple[Any, int], Any, None]:
        """The SASL login as ``(request, version)`` steps, each sent back its response:
        ``authenticate`` drives it over a blocking connection, an asyncio caller (the
        broker's replica fetcher) with ``await``. Nothing to do without SASL."""
        if not self.uses_sasl:
            return
        from kafka.protocol.sasl import SaslAuthenticateRequest, SaslHandshakeRequest

        answer = yield SaslHandshakeRequest(mechanism=self.mechanism), 1
        if answer.error_code:
            raise ClientSecurityError(
                f"the broker does not accept SASL mechanism {self.mechanism} (it offers "
                f"{', '.join(answer.mechanisms) or 'none'})", key="sasl.mechanism")
        exchange = _exchange(self.mechanism, self.username, self.password)
        token = next(exchange)
        while True:
            answer = yield SaslAuthenticateRequest(auth_bytes=token), 1
            if answer.error_code:
                raise ClientSecurityError(
                    f"SASL authentication as {self.username!r} failed: "
                    f"{answer.error_message or answer.error_code}", key="sasl.password")
            try:
                token = exchange.send(bytes(answer.auth_bytes or b""))
            except StopIteration:
                return

    def kafka_python_options(self) -> dict[str, Any]:
        """The same settings as kafka-python / aiokafka keyword arguments."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_sasl:
            options.update(sasl_mechanism=self.mechanism, sasl_plain_username=self.username,
                           sasl_plain_password=self.password)
        if self.uses_tls:
            options["ssl_context"] = self.ssl_context()
        return options


def _exchange(mechanism: str, user: str, password: str):
    """Client side of PLAIN / SCRAM (RFC 5802): yields tokens, receives the server's."""
    if mechanism == "PLAIN":
        yield f"\0{user}\0{password}".encode()
        return
    hash_name = _MECHANISMS[mechanism]
    assert hash_name is not None
    nonce = base64.b64encode(os.urandom(24)).decode("ascii")
    escaped = user.replace("=", "=3D").replace(",", "=2C")
    first_bare = f"n={escaped},r={nonce}"
    server_first = (yield f"n,,{first_bare}".encode()).decode("utf-8")
    fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
    if not fields.get("r", "").startswith(nonce):
        raise ClientSecurityError("the broker's SCRAM nonce does not extend ours")
    keys = scram_keys(hash_name, salted_password(hash_name, password,
                                                 base64.b64decode(fields["s"]), int(fields["i"])))
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{first_bare},{server_first},{without_proof}".encode()
    signature = hmac_digest(hash_name, keys.stored_key, auth_message)
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(keys.client_key, signature,
                                                         strict=True)))
    server_final = (yield f"{without_proof},p={proof.decode()}".encode()).decode("utf-8")
    expected = base64.b64encode(hmac_digest(hash_name, keys.server_key, auth_message))
    if not hmac.compare_digest(server_final.encode(), b"v=" + expected):
        raise ClientSecurityError("the broker's SCRAM signature is wrong: not the broker "
                                  "holding our credential")
