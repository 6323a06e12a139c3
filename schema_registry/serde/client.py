"""``RegistryClient``: the few Schema Registry calls serializers make, cached.

::

    client = RegistryClient("http://127.0.0.1:8081")
    schema_id = client.register("orders-value", SchemaText(avro_text))     # POST .../versions
    same = client.lookup("orders-value", SchemaText(avro_text))            # POST /subjects/{s}
    text = client.get_schema(schema_id)                                    # GET /schemas/ids/{id}
    latest = client.get_latest_version("orders-value")                     # .../versions/latest

Answers are cached: registrations and lookups by (subject, schema), schemas by id (an
id's schema never changes), and the latest version of a subject for ``latest_ttl_s``
(forever by default, as Confluent's serializers do). Error answers raise
``RegistryClientError`` with Confluent's ``error_code`` and ``message``; a registry that
cannot be reached within ``timeout_s`` raises ``RegistryUnavailableError``. With several
URLs, a request that cannot connect moves on to the next one. Credentials written in a URL
(``https://user:pass@host``) are taken out of it (they never appear in errors) and used
for Basic authentication unless ``basic_auth`` is given; ``verify`` and ``cert`` are
``requests``' (a CA file, a client certificate); ``client_options`` reads them all from
Confluent's client settings.

Thread-safe: the caches are guarded by one lock, and each thread has its own HTTP
session (keep-alive connections), so one client can serve every task of a worker.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import requests

from schema_registry.schemas import Reference
from schema_registry.serde.cache import LruCache
from schema_registry.serde.client_options import split_userinfo
from schema_registry.serde.errors import RegistryClientError, RegistryUnavailableError

__all__ = ["RegisteredSchema", "RegistryClient", "SchemaText"]

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ACCEPT = ("application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, "
           "application/json")
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_CACHE_CAPACITY = 1000


@dataclass(frozen=True, slots=True)
class SchemaText:
    """A schema as the registry stores it: its text, type and references."""

    schema: str
    schema_type: str = "AVRO"
    references: tuple[Reference, ...] = ()

    def to_request(self) -> dict[str, Any]:
        """The JSON body of a register or lookup request."""
        body: dict[str, Any] = {"schema": self.schema}
        if self.schema_type != "AVRO":
            body["schemaType"] = self.schema_type
        if self.references:
            body["references"] = [r.to_json() for r in self.references]
        return body

    @classmethod
    def from_response(cls, body: Mapping[str, Any]) -> SchemaText:
        refs = tuple(Reference.from_json(r) for r in body.get("references") or ())
        return cls(str(body.get("schema", "")), str(body.get("schemaType") or "AVRO").upper(),
                   refs)


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One version of a subject: the answer of a lookup or a version fetch."""

    subject: str
    version: int
    schema_id: int
    schema: SchemaText


class RegistryClient:
    """A cached client of one registry (or several URLs of one registry cluster)."""

    def __init__(self, urls: str | Iterable[str], *, timeout_s: float = DEFAULT_TIMEOUT_S,
                 connect_timeout_s: float | None = None,
                 basic_auth: tuple[str, str] | None = None,
                 verify: str | bool = True,
                 cert: str | tuple[str, str] | None = None,
                 headers: Mapping[str, str] | None = None,
                 cache_capacity: int = DEFAULT_CACHE_CAPACITY,
                 latest_ttl_s: float | None = None) -> None:
        """``urls``: one URL, a comma-separated list or an iterable of URLs.
        ``timeout_s`` bounds reading an answer, ``connect_timeout_s`` (default: the same)
        connecting.
        ``latest_ttl_s``: how long a subject's latest version is cached (None: forever;
        0: not cached)."""
        parts = urls.split(",") if isinstance(urls, str) else list(urls)
        stripped = [split_userinfo(u.strip().rstrip("/")) for u in parts if u.strip()]
        self.urls: tuple[str, ...] = tuple(url for url, _ in stripped)
        from_url = next((creds for _, creds in stripped if creds), None)
        if not self.urls:
            raise ValueError("RegistryClient needs at least one registry URL, "
                             "e.g. http://127.0.0.1:8081")
        for url in self.urls:
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"Schema Registry URL {url!r} must start with http:// or "
                                 "https://")
        self.timeout_s = timeout_s
        self._timeouts = (connect_timeout_s if connect_timeout_s is not None else timeout_s,
                          timeout_s)
        self._auth = basic_auth or from_url
        self._verify = verify
        self._cert = cert
        self._headers = {"Content-Type": _CONTENT_TYPE, "Accept": _ACCEPT, **(headers or {})}
        self._latest_ttl_s = latest_ttl_s
        self._lock = threading.Lock()  # guards the caches, _sessions and _next_url
        self._ids: LruCache[tuple[str, SchemaText, bool], int] = LruCache(cache_capacity)
        self._lookups: LruCache[tuple[str, SchemaText, bool, bool], RegisteredSchema] = \
            LruCache(cache_capacity)
        self._schemas: LruCache[int, SchemaText] = LruCache(cache_capacity)
        self._versions: LruCache[tuple[str, int], RegisteredSchema] = LruCache(cache_capacity)
        self._latest: LruCache[str, tuple[float, RegisteredSchema]] = LruCache(cache_capacity)
        self._local = threading.local()
        self._sessions: list[requests.Session] = []
        self._next_url = 0
        self._closed = False

    # ------------------------------------------------------------------ API

    def register(self, subject: str, schema: SchemaText, *, normalize: bool = False) -> int:
        """Register ``schema`` under ``subject`` (or find it registered) and return its
        id. Raises ``RegistryClientError`` (409 incompatible, 42201 invalid, 40401 ...)."""
        key = (subject, schema, normalize)
        with self._lock:
            cached = self._ids.get(key)
        if cached is not None:
            return cached
        body = self._request("POST", f"/subjects/{_quote(subject)}/versions",
                             body=schema.to_request(), params={"normalize": _flag(normalize)})
        schema_id = int(body["id"])
        with self._lock:
            self._ids.put(key, schema_id)
            if self._schemas.get(schema_id) is None:
                self._schemas.put(schema_id, schema)
        return schema_id

    def lookup(self, subject: str, schema: SchemaText, *, normalize: bool = False,
               deleted: bool = False) -> RegisteredSchema:
        """The version of ``subject`` holding ``schema``; raises ``RegistryClientError``
        with error_code 40401 (no such subject) or 40403 (not registered there)."""
        key = (subject, schema, normalize, deleted)
        with self._lock:
            cached = self._lookups.get(key)
        if cached is not None:
            return cached
        body = self._request("POST", f"/subjects/{_quote(subject)}", body=schema.to_request(),
                             params={"normalize": _flag(normalize), "deleted": _flag(deleted)})
        found = RegisteredSchema(str(body.get("subject", subject)), int(body["version"]),
                                 int(body["id"]), schema)
        with self._lock:
            self._lookups.put(key, found)
            self._ids.put((subject, schema, normalize), found.schema_id)
        return found

    def get_schema(self, schema_id: int, *, subject: str | None = None) -> SchemaText:
        """The schema with ``schema_id``; error_code 40403 if there is none."""
        params = {"subject": subject} if subject else None
        return self._schemas.get_or_build(schema_id, lambda: SchemaText.from_response(
            self._request("GET", f"/schemas/ids/{int(schema_id)}", params=params)), self._lock)

    def get_version(self, subject: str, version: int) -> RegisteredSchema:
        """One version of ``subject`` (deleted versions included, as resolving a
        reference needs); error_code 40401 or 40402 if missing."""
        return self._versions.get_or_build(
            (subject, version), lambda: self._version(subject, str(int(version)), deleted=True),
            self._lock)

    def get_latest_version(self, subject: str) -> RegisteredSchema:
        """The latest version of ``subject``, cached for ``latest_ttl_s``."""
        now = time.monotonic()
        ttl = self._latest_ttl_s
        if ttl != 0:
            with self._lock:
                cached = self._latest.get(subject)
            if cached is not None and (ttl is None or now - cached[0] < ttl):
                return cached[1]
        found = self._version(subject, "latest", deleted=False)
        if ttl != 0:
            with self._lock:
                self._latest.put(subject, (now, found))
        return found

    def close(self) -> None:
        """Close the HTTP sessions; the client must not be used afterwards."""
        with self._lock:
            sessions, self._sessions = self._sessions, []
            self._closed = True
        for session in sessions:
            session.close()

    def __enter__(self) -> RegistryClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RegistryClient({', '.join(self.urls)})"

    # ------------------------------------------------------------------ HTTP

    def _version(self, subject: str, version: str, *, deleted: bool) -> RegisteredSchema:
        params = {"deleted": "true"} if deleted else None
        body = self._request("GET", f"/subjects/{_quote(subject)}/versions/{version}",
                             params=params)
        return RegisteredSchema(str(body.get("subject", subject)), int(body["version"]),
                                int(body["id"]), SchemaText.from_response(body))

    def _session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = requests.Session()
            session.headers.update(self._headers)
            if self._auth is not None:
                session.auth = self._auth
            with self._lock:
                if self._closed:
                    raise RegistryUnavailableError("This RegistryClient has been closed")
                self._sessions.append(session)
            self._local.session = session
        return session

    def _request(self, method: str, path: str, *, body: Any = None,
                 params: Mapping[str, str] | None = None) -> Any:
        session = self._session()
        data = None if body is None else json.dumps(body, separators=(",", ":"))
        with self._lock:
            start = self._next_url
        failures: list[str] = []
        for attempt in range(len(self.urls)):
            index = (start + attempt) % len(self.urls)
            url = self.urls[index] + path
            try:
                # verify per request: a session's own is overridden by REQUESTS_CA_BUNDLE
                response = session.request(method, url, data=data, params=params,
                                           timeout=self._timeouts, verify=self._verify,
                                           cert=self._cert)
            except (requests.ConnectionError, requests.Timeout) as exc:
                failures.append(f"{self.urls[index]}: {type(exc).__name__}: {exc}")
                continue
            if attempt:
                with self._lock:
                    self._next_url = index
            return _answer(response, url)
        raise RegistryUnavailableError(
            f"No Schema Registry answered {method} {path} within {self.timeout_s:g} s; "
            f"check schema.registry.url and that the registry runs. Tried: "
            + "; ".join(failures))


def _answer(response: requests.Response, url: str) -> Any:
    if 200 <= response.status_code < 300:
        try:
            return response.json()
        except ValueError as exc:
            raise RegistryClientError(response.status_code, -1,
                                      f"Expected JSON from the registry, got "
                                      f"{response.text[:200]!r}", url=url) from exc
    try:
        error = response.json()
    except ValueError:
        error = None
    if isinstance(error, dict) and "error_code" in error:
        code, message = error.get("error_code"), error.get("message")
        code = code if isinstance(code, int) else response.status_code
        raise RegistryClientError(response.status_code, code, str(message), url=url)
    text = response.text.strip()[:200] or response.reason or "no details"
    raise RegistryClientError(response.status_code, response.status_code,
                              f"HTTP {response.status_code}: {text}", url=url)


def _quote(subject: str) -> str:
    return quote(subject, safe="")


def _flag(value: bool) -> str:
    return "true" if value else "false"

