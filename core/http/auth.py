"""HTTP Basic authentication for every REST door, with failures counted and rate-limited.

``BasicAuth`` wraps a WSGI app. A request without credentials, with a malformed header or
with a wrong user or password gets ``401`` and ``WWW-Authenticate: Basic realm="..."``;
a user without one of ``allowed_roles`` gets ``403`` (a user whose roles include ``*``
passes whatever they are). An authenticated request reaches the
app with ``REMOTE_USER`` (the access log prints it) and ``ferry.auth.roles`` set.
``bypass(environ)`` lets some requests through unauthenticated: Connect's signed
worker-to-worker requests, as Kafka's extension does.

Every failure is counted (``ferry_http_authentication_failures_total{reason}`` in the
service's registry) and logged once, naming the user and the client but never the
secret. A client address with ``max_failures`` wrong credentials within ``window_s`` is
refused with ``429`` and ``Retry-After`` until the window moved on, right or wrong
credentials alike: guessing passwords costs time. A request without credentials is no
guess (challenge-response clients send one before each authenticated request): it is
counted, logged at debug level only, and not held against the address.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from core.http.users import UserStore

__all__ = [
    "AUTH_LIMIT_KEYS",
    "ROLES_ENVIRON_KEY",
    "BasicAuth",
    "FailureLimiter",
    "failure_counter",
    "limiter_from_props",
    "tls_failure_hook",
]

log = logging.getLogger(__name__)

ROLES_ENVIRON_KEY = "ferry.auth.roles"
DEFAULT_MAX_FAILURES = 10
DEFAULT_WINDOW_S = 60.0
#: Ferry's keys for the limiter, read by Connect and the registry alike.
AUTH_LIMIT_KEYS = ("ferry.http.auth.max.failures", "ferry.http.auth.failure.window.ms")
#: Addresses remembered at most (the oldest are forgotten first): bounded memory under a
#: scan from many addresses.
_MAX_TRACKED = 10_000


class FailureLimiter:
    """Counts failures per client address in a sliding window. Thread-safe."""

    def __init__(self, max_failures: int = DEFAULT_MAX_FAILURES,
                 window_s: float = DEFAULT_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = {}

    def retry_after(self, address: str) -> float:
        """Seconds until ``address`` may try again (0: now)."""
        now = self._clock()
        with self._lock:
            times = self._failures.get(address)
            if not times:
                return 0.0
            while times and times[0] <= now - self.window_s:
                times.popleft()
            if len(times) < self.max_failures:
                return 0.0
            return max(times[-self.max_failures] + self.window_s - now, 0.001)

    def record(self, address: str) -> int:
        """Note a failure; answers the failures of ``address`` within the window."""
        now = self._clock()
        with self._lock:
            times = self._failures.pop(address, None) or deque()
            self._failures[address] = times  # most recent last, for the eviction below
            times.append(now)
            while times[0] <= now - self.window_s:
                times.popleft()
            while len(times) > self.max_failures:
                times.popleft()
            if len(self._failures) > _MAX_TRACKED:
                del self._failures[next(iter(self._failures))]
            return len(times)


def limiter_from_props(props: Mapping[str, Any]) -> FailureLimiter:
    """The limiter ``AUTH_LIMIT_KEYS`` configure; ``ValueError`` names a bad key."""
    values = []
    for key, default in zip(AUTH_LIMIT_KEYS, (DEFAULT_MAX_FAILURES, DEFAULT_WINDOW_S * 1000),
                            strict=True):
        raw = props.get(key)
        if raw is None or not str(raw).strip():
            values.append(float(default))
            continue
        try:
            value = float(str(raw).strip())
        except ValueError:
            raise ValueError(f"{key}: expected a number, got {raw!r}") from None
        if value < 1:
            raise ValueError(f"{key}: must be at least 1, got {raw!r}")
        values.append(value)
    return FailureLimiter(int(values[0]), values[1] / 1000)


def failure_counter(registry: CollectorRegistry) -> Counter:
    """``ferry_http_authentication_failures_total{reason}`` in ``registry``."""
    return Counter("ferry_http_authentication_failures",
                   "REST requests and TLS handshakes refused for their credentials, by "
                   "reason", ["reason"], registry=registry)


def tls_failure_hook(failures: Counter, service: str) -> Callable[[Any, Exception], None]:
    """An ``on_tls_failure`` for ``HttpServer``: counts each failed handshake (reason
    ``tls_handshake``) and logs at most one line a minute per client address."""
    logged: dict[str, float] = {}
    lock = threading.Lock()

    def failed(address: Any, error: Exception) -> None:
        failures.labels("tls_handshake").inc()
        host = str(address[0]) if isinstance(address, tuple) else str(address)
        now = time.monotonic()
        with lock:
            if now - logged.get(host, -1e9) < DEFAULT_WINDOW_S:
                return
            if len(logged) > _MAX_TRACKED:
                logged.clear()
            logged[host] = now
        reason = getattr(error, "reason", None) or type(error).__name__
        log.warning("%s: TLS handshake with %s failed: %s", service, host, reason)

    return failed


@dataclass(frozen=True)
class _Refusal:
    status: str
    reason: str
    message: str


class BasicAuth:
    """WSGI middleware; see the module docstring. ``service`` names the door in logs."""

    def __init__(self, app: Callable[..., Iterable[bytes]], users: UserStore, *,
                 realm: str, service: str, registry: CollectorRegistry,
                 allowed_roles: Collection[str] | None = None,
                 bypass: Callable[[dict[str, Any]], bool] | None = None,
                 limiter: FailureLimiter | None = None,
                 failures: Counter | None = None) -> None:
        self._app = app
        self.users = users
        self.realm = realm.replace('"', "")
        self._service = service
        self._roles = frozenset(allowed_roles) if allowed_roles else None
        self._bypass = bypass
        self.limiter = limiter or FailureLimiter()
        self._failures = failures or failure_counter(registry)
        self._blocked_logged: dict[str, float] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        if environ.get("PATH_INFO") in ("/health/live",):  # liveness probes stay open
            return self._app(environ, start_response)
        if self._bypass is not None and self._bypass(environ):
            return self._app(environ, start_response)
        address = str(environ.get("REMOTE_ADDR", "-"))
        wait = self.limiter.retry_after(address)
        if wait:
            self._failures.labels("rate_limited").inc()
            self._log_blocked(address, wait)
            return _answer(start_response, "429 Too Many Requests",
                           "Too many failed authentication attempts; retry later",
                           [("Retry-After", str(int(wait) + 1))])
        user, refusal = self._check(environ.get("HTTP_AUTHORIZATION", ""))
        if refusal is None:
            environ["REMOTE_USER"] = user
            environ[ROLES_ENVIRON_KEY] = self._user_roles(user)
            return self._app(environ, start_response)
        self._failures.labels(refusal.reason).inc()
        if refusal.status.startswith("403"):
            log.warning("%s: user %r from %s refused: %s", self._service, user, address,
                        refusal.message)
            return _answer(start_response, refusal.status, refusal.message)
        if refusal.reason == "missing_credentials":
            # Challenge-response clients (.NET, Java's Authenticator) ask without
            # credentials first, every time: no guess, so no strike and no warning.
            log.debug("%s: a request from %s came without credentials", self._service,
                      address)
            return _answer(start_response, refusal.status, refusal.message,
                           [("WWW-Authenticate", f'Basic realm="{self.realm}"')])
        count = self.limiter.record(address)
        log.warning("%s: authentication failed for %s from %s: %s (%d failures from this "
                    "address within %.0f s)", self._service,
                    f"user {user!r}" if user else "a request", address, refusal.reason,
                    count, self.limiter.window_s)
        return _answer(start_response, refusal.status, refusal.message,
                       [("WWW-Authenticate", f'Basic realm="{self.realm}"')])

    def _check(self, header: str) -> tuple[str, _Refusal | None]:
        if not header:
            return "", _Refusal("401 Unauthorized", "missing_credentials",
                                "Authentication required")
        scheme, _, token = header.strip().partition(" ")
        if scheme.lower() != "basic":
            return "", _Refusal("401 Unauthorized", "unsupported_scheme",
                                "Only Basic authentication is accepted")
        try:
            decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return "", _Refusal("401 Unauthorized", "malformed_credentials",
                                "Malformed Basic credentials")
        user, colon, password = decoded.partition(":")
        if not colon:
            return "", _Refusal("401 Unauthorized", "malformed_credentials",
                                "Malformed Basic credentials")
        shown = user.encode("unicode_escape").decode("ascii")[:100]
        entry = self.users.authenticate(user, password)
        if entry is None:
            return shown, _Refusal("401 Unauthorized", "invalid_credentials",
                                   "Invalid user name or password")
        if self._roles is not None and "*" not in self._roles and "*" not in entry.roles \
                and not self._roles.intersection(entry.roles):
            return shown, _Refusal("403 Forbidden", "role_not_allowed",
                                   "User has no role allowed here")
        return user, None

    def _user_roles(self, user: str) -> tuple[str, ...]:
        entry = self.users.entry(user)
        return entry.roles if entry is not None else ()

    def _log_blocked(self, address: str, wait: float) -> None:
        now = time.monotonic()
        if now - self._blocked_logged.get(address, -1e9) < self.limiter.window_s:
            return
        if len(self._blocked_logged) > _MAX_TRACKED:
            self._blocked_logged.clear()
        self._blocked_logged[address] = now
        log.warning("%s: %s had %d failed authentications within %.0f s; refusing it "
                    "for %.0f s", self._service, address, self.limiter.max_failures,
                    self.limiter.window_s, wait)


def _answer(start_response: Callable[..., Any], status: str, message: str,
            headers: list[tuple[str, str]] | None = None) -> Iterable[bytes]:
    code = int(status.split(" ", 1)[0])
    body = json.dumps({"error_code": code, "message": message}).encode()
    start_response(status, [("Content-Type", "application/json"),
                            ("Content-Length", str(len(body))), *(headers or [])])
    return [body]
