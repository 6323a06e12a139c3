"""Per-connection authentication: which requests a connection may send, and who it is.

A ``ListenerSecurity`` (one per listener, built at start) holds what the listener needs:
its protocol, SASL mechanisms, PLAIN users, the SCRAM store, TLS. Each connection gets a
``ConnectionAuth``, the state machine of Kafka's ``SaslServerAuthenticator``:

1. before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are served;
   any other request closes the connection (ILLEGAL_SASL_STATE);
2. SaslHandshake v1 picks the mechanism, then SaslAuthenticate carries the tokens;
   after a v0 handshake the tokens are raw size-prefixed frames (``raw_tokens``);
3. a failure answers SASL_AUTHENTICATION_FAILED after ``connection.failed.authentication.
   delay.ms`` (so guessing passwords is slow) and closes the connection;
4. with ``connections.max.reauth.ms`` the session has a lifetime (KIP-368): SaslAuthenticate
   v1+ tells the client, which re-authenticates on the same connection before it ends;
   a request after the end closes the connection.

On a PLAINTEXT or SSL listener SaslHandshake/SaslAuthenticate answer ILLEGAL_SASL_STATE
and the connection closes.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from core.broker.security.listeners import ListenerSpec
from core.broker.security.plain import PlainServer, PlainUsers
from core.broker.security.principal import ANONYMOUS, KafkaPrincipal
from core.broker.security.sasl_errors import SaslAuthenticationError, SaslMalformedError
from core.broker.security.scram import MECHANISMS as SCRAM_MECHANISMS
from core.broker.security.scram import ScramServer
from core.broker.security.scram_store import ScramCredentialStore
from core.protocol.errors import ErrorCode

if TYPE_CHECKING:
    from core.broker.log_limit import RateLimitedLog
    from core.broker.security.tls import TlsContext

__all__ = ["SASL_API_KEYS", "AuthCounts", "AuthStep", "ConnectionAuth", "ListenerSecurity"]

log = logging.getLogger(__name__)

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
SASL_API_KEYS = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})
_BEFORE_AUTH = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)


@dataclass
class AuthCounts:
    """Kafka's socket-server-metrics per listener: successful/failed-authentication-total,
    successful-reauthentication-total."""

    successful: int = 0
    failed: int = 0
    reauthentications: int = 0


@dataclass
class ListenerSecurity:
    """What one listener's connections authenticate against."""

    spec: ListenerSpec
    mechanisms: tuple[str, ...] = ()
    plain_users: PlainUsers | None = None
    scram: ScramCredentialStore | None = None
    reauth_ms: int = 0
    failure_delay_ms: int = 100
    #: sasl.server.max.receive.size: the largest frame before authentication completes
    max_receive_before_auth: int = 524288
    tls: TlsContext | None = None  # on SSL and SASL_SSL listeners
    counts: AuthCounts = field(default_factory=AuthCounts)

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True)
class AuthStep:
    """What to answer to one token: the server's token, or an error (then close)."""

    token: bytes = b""
    error: int = ErrorCode.NONE
    message: str | None = None
    session_lifetime_ms: int = 0

    @property
    def failed(self) -> bool:
        return self.error != ErrorCode.NONE


class ConnectionAuth:
    """The authentication state of one connection (event loop thread only)."""

    def __init__(self, listener: ListenerSecurity, peer: str,
                 warnings: RateLimitedLog | None = None) -> None:
        """``warnings``: where failures are logged (rate-limited: a flood of failed
        logins is summarised, not written line by line)."""
        self.listener = listener
        self.peer = peer
        self._warnings = warnings
        self.principal: KafkaPrincipal = ANONYMOUS
        self.authenticated = not listener.spec.uses_sasl
        self.raw_tokens = False  # after a v0 handshake: tokens are raw frames
        self.close_after_response = False
        self._server: PlainServer | ScramServer | None = None
        self._mechanism: str | None = None
        self._expires_at: float | None = None  # time.monotonic() when the session ends
        self._reauthenticating = False

    # ------------------------------------------------------------------ gatekeeping

    def refusal(self, api_key: int) -> str | None:
        """Why a request of ``api_key`` cannot be served now (the connection is then
        closed), or None."""
        if not self.listener.spec.uses_sasl:
            return None
        if not self.authenticated or self.raw_tokens:
            if api_key in _BEFORE_AUTH and not self.raw_tokens:
                return None
            self._failed()
            return (f"ILLEGAL_SASL_STATE: request with API key {api_key} before SASL "
                    "authentication completed")
        if api_key in SASL_API_KEYS:
            return None  # a re-authentication (or an illegal one, answered by its handler)
        if self._expires_at is not None and time.monotonic() > self._expires_at:
            return (f"the SASL session of {self.principal} expired "
                    "(connections.max.reauth.ms) without re-authentication")
        return None

    # ------------------------------------------------------------------ SASL exchange

    def handshake(self, mechanism: str, version: int) -> tuple[int, list[str]]:
        """Answer SaslHandshake: (error code, enabled mechanisms)."""
        enabled = list(self.listener.mechanisms)
        if not self.listener.spec.uses_sasl:
            self.close_after_response = True
            self._log_failure(None, f"SaslHandshake on a {self.listener.spec.protocol} "
                                    "listener, which does not use SASL")
            return ErrorCode.ILLEGAL_SASL_STATE, enabled
        if self.authenticated:
            if self.listener.reauth_ms <= 0 or version < 1 or mechanism != self._mechanism:
                self.close_after_response = True
                return ErrorCode.ILLEGAL_SASL_STATE, enabled
            self._reauthenticating = True
        elif self._server is not None:  # a second handshake
            self.close_after_response = True
            self._failed()
            return ErrorCode.ILLEGAL_SASL_STATE, enabled
        if mechanism not in enabled:
            self.close_after_response = True
            self._failed()
            self._log_failure(None, f"unsupported SASL mechanism {mechanism[:64]!r}")
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM, enabled
        self._mechanism = mechanism
        if mechanism == "PLAIN":
            users = self.listener.plain_users
            self._server = PlainServer(users.password if users else (lambda _u: None))
        else:
            store = self.listener.scram
            self._server = ScramServer(
                mechanism, store.get if store is not None else (lambda _u, _m: None))
        self.raw_tokens = version == 0
        return ErrorCode.NONE, enabled

    def authenticate(self, token: bytes) -> AuthStep:
        """Evaluate one client token (SaslAuthenticate, or a raw frame after v0)."""
        server = self._server
        if server is None or (self.authenticated and not self._reauthenticating):
            self.close_after_response = True
            if not self._reauthenticating and self.listener.spec.uses_sasl \
                    and not self.authenticated:
                self._failed()
            return AuthStep(error=ErrorCode.ILLEGAL_SASL_STATE,
                            message="SaslAuthenticate before a SaslHandshake, or after "
                                    "authentication")
        try:
            challenge = server.evaluate(token)
        except SaslAuthenticationError as exc:
            self._server = None
            self.close_after_response = True
            self._failed()
            kind = "malformed SASL message" if isinstance(exc, SaslMalformedError) \
                else "authentication failed"
            self._log_failure(exc.user or server.user, f"{kind}: {exc}")
            return AuthStep(error=ErrorCode.SASL_AUTHENTICATION_FAILED, message=str(exc))
        if not server.complete:
            return AuthStep(token=challenge)
        principal = KafkaPrincipal("User", server.user or "")
        if self._reauthenticating and principal != self.principal:
            self.close_after_response = True
            self._failed()
            self._log_failure(server.user, "re-authentication as a different principal")
            return AuthStep(error=ErrorCode.SASL_AUTHENTICATION_FAILED,
                            message="Cannot change principals during re-authentication")
        counts = self.listener.counts
        if self._reauthenticating:
            counts.reauthentications += 1
        else:
            counts.successful += 1
        self.principal = principal
        self.authenticated = True
        self.raw_tokens = False
        self._server = None
        self._reauthenticating = False
        lifetime = self.listener.reauth_ms
        self._expires_at = time.monotonic() + lifetime / 1000 if lifetime > 0 else None
        log.debug("%s authenticated as %s with %s on listener %s", self.peer, principal,
                  self._mechanism, self.listener.name)
        return AuthStep(token=challenge, session_lifetime_ms=max(lifetime, 0))

    @property
    def failure_delay_s(self) -> float:
        return max(self.listener.failure_delay_ms, 0) / 1000

    def _failed(self) -> None:
        self.listener.counts.failed += 1

    def _log_failure(self, user: str | None, reason: str) -> None:
        # One line, never a password: the user name the client claimed and why.
        message = "Failed authentication with %s (user %r, listener %s, mechanism %s): %s"
        args = (self.peer, user, self.listener.name, self._mechanism, reason)
        if self._warnings is not None:
            self._warnings.warning("authentication", message, *args)
        else:
            log.warning(message, *args)
