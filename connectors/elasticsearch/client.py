"""The ``elasticsearch`` client as the connector uses it: media types chosen per server,
requests retried on connection errors, 429 and 5xx with exponential backoff, and the
lazily created indices and data streams with their mappings.

Header styles: the client sends ``application/vnd.elasticsearch+json;
compatible-with=<client major>``, which Elasticsearch 8/9 understand but OpenSearch (and
so ``osmem-server``) and Elasticsearch 7 answer with 406. A node class rewrites the media
types of every request to the style chosen for the server (from its root endpoint, or
``elastic.compatibility.mode``): plain ``application/json`` or ``compatible-with=<server
major>``.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import urllib3
from elastic_transport import ConnectionError as TransportConnectionError
from elastic_transport import ConnectionTimeout, TransportError, Urllib3HttpNode
from elasticsearch import ApiError, AuthenticationException, AuthorizationException, Elasticsearch

from connect.api import ConnectError, Schema, Type
from connectors.elasticsearch.config import CONNECTION_URL, EsSinkConfig
from connectors.elasticsearch.mapping import conflicts, mapping_for, new_fields

__all__ = ["EsClient", "ServerInfo", "is_retriable"]

log = logging.getLogger(__name__)
T = TypeVar("T")

_VND = re.compile(r"application/vnd\.elasticsearch\+([a-z-]+); ?compatible-with=\d+")


@dataclass(frozen=True)
class ServerInfo:
    """What the root endpoint says: the distribution and its major version."""

    distribution: str  # "elasticsearch" or "opensearch"
    version: str

    @property
    def major(self) -> int:
        try:
            return int(self.version.split(".")[0])
        except ValueError:
            return 0

    @property
    def wants_compat_headers(self) -> bool:
        """Elasticsearch 8 and later accept (and their clients send) compat media types;
        OpenSearch and Elasticsearch 7 get plain JSON."""
        return self.distribution == "elasticsearch" and self.major >= 8


class _HeaderStyle:
    """The media types a client's nodes send; switched once the server is known."""

    def __init__(self) -> None:
        self.compatible_with: int | None = None  # None: plain application/json

    def rewrite(self, value: str) -> str:
        if self.compatible_with is None:
            return _VND.sub(r"application/\1", value)
        return _VND.sub(rf"application/vnd.elasticsearch+\1; compatible-with="
                        rf"{self.compatible_with}", value)


def _node_class(style: _HeaderStyle, connect_s: float, read_s: float) -> type:
    class HeaderStyleNode(Urllib3HttpNode):
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            # Confluent has separate connect and read timeouts; the client only one.
            self.pool.timeout = urllib3.Timeout(connect=connect_s, read=read_s)

        def perform_request(self, method: str, target: str, body: Any = None,
                            headers: Any = None, **kw: Any) -> Any:
            if headers is not None:
                headers = headers.copy()
                for name in ("accept", "content-type"):
                    if name in headers:
                        headers[name] = style.rewrite(headers[name])
            response = super().perform_request(method, target, body, headers, **kw)
            meta = response.meta
            if "x-elastic-product" not in meta.headers:
                # OpenSearch and Elasticsearch before 7.14 do not send this header, and
                # the client refuses 2xx answers without it. The connector identifies the
                # server itself (connect() reads the root endpoint), so it vouches here.
                patched = meta.headers.copy()
                patched["x-elastic-product"] = "Elasticsearch"
                # (a NamedTuple of meta and body)
                response = response._replace(meta=dataclasses.replace(meta, headers=patched))
            return response

    return HeaderStyleNode


def is_retriable(exc: BaseException) -> bool:
    """Connection failures, timeouts, 429 and 5xx are worth another try; 4xx are not."""
    if isinstance(exc, ApiError):
        return exc.meta.status == 429 or exc.meta.status >= 500
    return isinstance(exc, TransportConnectionError | TransportError)


class EsClient:
    """One task's (or one validation's) connection; thread-safe (bulk requests run on
    several threads, ``ensure_resource`` on the task's)."""

    def __init__(self, config: EsSinkConfig, stopping: threading.Event | None = None) -> None:
        self.config = config
        self._stopping = stopping or threading.Event()
        self._style = _HeaderStyle()
        kwargs: dict[str, Any] = {}
        if config.username is not None:
            kwargs["basic_auth"] = (config.username, config.password or "")
        if config.use_ssl:
            kwargs["verify_certs"] = True
            if config.ca_certs:
                kwargs["ca_certs"] = config.ca_certs
            if config.client_cert:
                kwargs["client_cert"] = config.client_cert
            if not config.verify_hostname:
                kwargs["ssl_assert_hostname"] = False
        self.es = Elasticsearch(
            config.urls,
            node_class=_node_class(self._style, config.connection_timeout_ms / 1000,
                                   config.read_timeout_ms / 1000),
            # Enough pooled connections for every bulk request in flight plus index checks.
            connections_per_node=config.max_in_flight + 2,
            http_compress=config.compression,
            max_retries=0,  # retries are ours: with backoff, and counted per config
            **kwargs)
        self.server: ServerInfo | None = None
        self._ready: set[str] = set()
        self._checked: set[tuple[str, Schema | None]] = set()
        self._lock = threading.Lock()

    def close(self) -> None:
        self.es.close()

    # -- connecting -----------------------------------------------------------------
    def connect(self, retries: int | None = None) -> ServerInfo:
        """Read the root endpoint and choose the header style; ``ConnectError`` naming
        ``connection.url`` when no server answers (after the retries)."""
        def info(_attempt: int) -> Any:
            return self.es.options(headers={"accept": "application/json"}).info()
        try:
            body = self.call("connect to the server", info, retries).body
        except (AuthenticationException, AuthorizationException) as exc:
            raise ConnectError(f"The server at {CONNECTION_URL}={','.join(self.config.urls)} "
                               f"refused the credentials: {exc.message} (check "
                               "connection.username and connection.password)") from exc
        except Exception as exc:
            raise ConnectError(f"Could not connect to Elasticsearch at {CONNECTION_URL}="
                               f"{','.join(self.config.urls)}: {describe(exc)}") from exc
        version = body.get("version", {}) if isinstance(body, dict) else {}
        server = ServerInfo(str(version.get("distribution", "elasticsearch")),
                            str(version.get("number", "0")))
        mode = self.config.compatibility_mode
        if mode == "compatible" or (mode == "auto" and server.wants_compat_headers):
            self._style.compatible_with = server.major if server.major >= 7 else 8
        else:
            self._style.compatible_with = None
        self.server = server
        log.info("Connected to %s %s; sending %s media types", server.distribution,
                 server.version, "plain" if self._style.compatible_with is None else
                 f"compatible-with={self._style.compatible_with}")
        return server

    @property
    def header_style(self) -> str:
        return ("plain" if self._style.compatible_with is None
                else f"compatible-with={self._style.compatible_with}")

    def call(self, what: str, fn: Callable[[int], T], retries: int | None = None) -> T:
        """``fn(attempt)`` (attempt 0, 1, ...) retried on retriable failures with
        exponential backoff and jitter."""
        retries = self.config.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                return fn(attempt)
            except Exception as exc:
                if not is_retriable(exc) or attempt >= retries or self._stopping.is_set():
                    raise
                delay = backoff_s(self.config.retry_backoff_ms, attempt)
                log.warning("Failed to %s (attempt %d of %d), retrying in %.0f ms: %s",
                            what, attempt + 1, retries + 1, delay * 1000, exc)
                attempt += 1
                if self._stopping.wait(delay):
                    raise

    # -- resources ------------------------------------------------------------------
    def ensure_resource(self, name: str, schema: Schema | None, ignore_schema: bool) -> None:
        """Create the index or data stream once (unless it exists or is external), and
        check its mapping against ``schema`` once per schema."""
        with self._lock:
            if name not in self._ready:
                if self.config.resource_usage == "disabled":
                    self._create(name, None if ignore_schema else schema)
                elif not self.call(f"check whether {name} exists",
                                   lambda _attempt: self.es.indices.exists(index=name)).body:
                    # Writing would create an index of that name: refuse, as Confluent does.
                    raise ConnectError(
                        f"'{name}' in topic.to.external.resource.mapping does not exist; "
                        f"create the {self.config.resource_usage.replace('_', ' ')} first")
                self._ready.add(name)
            key = (name, schema)
            if ignore_schema or schema is None or key in self._checked:
                return
            if schema.type in (Type.STRUCT, Type.MAP):
                self._check_mapping(name, schema)
            self._checked.add(key)

    def _create(self, name: str, schema: Schema | None) -> None:
        if self.call(f"check whether {name} exists",
                     lambda _attempt: self.es.indices.exists(index=name)).body:
            return
        try:
            if self.config.data_stream_type != "none":
                log.info("Creating data stream %s", name)
                self.call(f"create data stream {name}",
                          lambda _attempt: self.es.indices.create_data_stream(name=name))
            else:
                mappings = (mapping_for(schema) if schema is not None
                            and schema.type in (Type.STRUCT, Type.MAP) else None)
                log.info("Creating index %s%s", name, " with a mapping" if mappings else "")
                self.call(f"create index {name}",
                          lambda _attempt: self.es.indices.create(index=name, mappings=mappings))
                self._checked.add((name, schema))
        except ApiError as exc:
            if exc.error != "resource_already_exists_exception":
                raise ConnectError(f"Could not create {name}: {exc}") from exc

    def _check_mapping(self, name: str, schema: Schema) -> None:
        wanted = mapping_for(schema)
        got = self.call(f"read the mapping of {name}",
                        lambda _attempt: self.es.indices.get_mapping(index=name)).body
        for index, body in got.items():
            server = body.get("mappings", {})
            for conflict in conflicts(server, wanted):
                log.warning("Mapping conflict in index %s: %s; such documents will be "
                            "rejected as malformed", index, conflict)
        server = next(iter(got.values()), {}).get("mappings", {}) if got else {}
        added = new_fields(server, wanted)
        if added:
            log.info("Adding fields %s of the record schema to the mapping of %s",
                     sorted(added), name)
            try:
                self.call(f"update the mapping of {name}",
                          lambda _attempt: self.es.indices.put_mapping(index=name,
                                                                       properties=added))
            except ApiError as exc:
                log.warning("Could not add fields to the mapping of %s: %s", name, exc)

    def field_type(self, index: str, path: str) -> str | None:
        """The server's type of ``path`` (dotted) in ``index``, or None."""
        try:
            got = self.es.indices.get_mapping(index=index).body
        except Exception:  # only used to explain an error; never fail because of it
            return None
        for body in got.values():
            node: Any = body.get("mappings", {})
            for part in path.split("."):
                node = node.get("properties", {}).get(part) if isinstance(node, dict) else None
            if isinstance(node, dict):
                return str(node.get("type", "object"))
        return None

    # -- bulk -----------------------------------------------------------------------
    def bulk(self, body: bytes,
             on_overload: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """One bulk request (retried as a whole on connection errors, 429 and 5xx);
        returns ``errors`` and per-item ``status``/``error``. ``on_overload`` is called
        when the server answered 429 or did not answer within the timeout."""
        def send(attempt: int) -> dict[str, Any]:
            try:
                return _send(attempt)
            except (ConnectionTimeout, ApiError) as exc:
                if isinstance(exc, ConnectionTimeout) or exc.meta.status == 429:
                    on_overload()
                raise

        def _send(attempt: int) -> dict[str, Any]:
            # A server too busy to answer within read.timeout.ms gets longer on each
            # retry: retrying at the same timeout only queues the same work again.
            timeout = (self.config.connection_timeout_ms
                       + self.config.read_timeout_ms * 2 ** attempt) / 1000
            return self.es.options(request_timeout=timeout).bulk(
                operations=body, filter_path="errors,items.*.status,items.*.error").body
        return self.call("send a bulk request", send)


def describe(exc: BaseException) -> str:
    """The error and its cause: the transport's own messages are terse ("TLS error")."""
    text = str(exc)
    causes = getattr(exc, "errors", ()) or ((exc.__cause__,) if exc.__cause__ else ())
    for cause in causes[:1]:
        if cause is not None and str(cause) not in text:
            text += f" ({type(cause).__name__}: {cause})"
    return text


def backoff_s(base_ms: int, attempt: int) -> float:
    """Exponential backoff with full jitter, capped at 24 h as Confluent's RetryUtil."""
    ceiling = min(base_ms * (2 ** attempt), 86_400_000)
    return random.uniform(base_ms, max(base_ms, ceiling)) / 1000 if base_ms else 0.0

