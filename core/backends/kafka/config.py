"""The ``kafka://`` URL and the client settings, parsed once into a frozen ``ClientConfig``."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from core.backends.errors import InvalidBackendUrlError, InvalidConfigError
from core.log.records import COMPRESSION_CODES
from core.protocol.client_security import SECURITY_CONFIG_KEYS, ClientSecurity, ClientSecurityError

__all__ = [
    "CLIENT_CONFIGS",
    "FAIL_FAST_ON_REFUSED",
    "BrokerAddress",
    "ClientConfig",
    "parse_bootstrap",
]

log = logging.getLogger(__name__)

DEFAULT_PORT = 9092
#: The client setting that makes a refused first connection fail at once (console tools).
FAIL_FAST_ON_REFUSED = "ferry.fail.fast.on.refused"


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


_HOST_PORT = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[^:/\[\]\s]+))(?::(?P<port>\d+))?$")


def parse_bootstrap(url: str) -> tuple[BrokerAddress, ...]:
    """The bootstrap brokers of ``kafka://h1:9092,h2:9092`` (port 9092 when omitted)."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep or scheme.lower() != "kafka":
        raise InvalidBackendUrlError(
            f"invalid log URL {url!r}: expected kafka://HOST:PORT[,HOST:PORT...]")
    rest = rest.rstrip("/")
    addresses = []
    for item in rest.split(","):
        match = _HOST_PORT.match(item.strip())
        if match is None:
            raise InvalidBackendUrlError(
                f"invalid log URL {url!r}: {item.strip()!r} is not HOST:PORT "
                "(e.g. kafka://127.0.0.1:9092)")
        port = int(match.group("port") or DEFAULT_PORT)
        if not 0 < port < 65536:
            raise InvalidBackendUrlError(f"invalid log URL {url!r}: port {port} is out of range")
        addresses.append(BrokerAddress(match.group("v6") or match.group("host"), port))
    return tuple(dict.fromkeys(addresses))


@dataclass(frozen=True, slots=True)
class _Key:
    """One declared client setting: Kafka's name, parser, default and documentation."""

    name: str
    parse: Callable[[str], Any]
    default: str
    doc: str
    attribute: str


def _int_at_least(lower: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw.strip())
        if value < lower:
            raise ValueError(f"Value must be at least {lower}")
        return value

    return parse


def _acks(raw: str) -> int:
    text = raw.strip().lower()
    if text == "all":
        return -1
    if text in ("-1", "0", "1"):
        return int(text)
    raise ValueError("String must be one of: all, -1, 0, 1")


def _compression(raw: str) -> int:
    text = raw.strip().lower()
    if text not in COMPRESSION_CODES:
        raise ValueError(f"String must be one of: {', '.join(COMPRESSION_CODES)}")
    return COMPRESSION_CODES[text]


def _bool(raw: str) -> bool:
    text = raw.strip().lower()
    if text not in ("true", "false"):
        raise ValueError("Value must be true or false")
    return text == "true"


def _client_id(raw: str) -> str:
    return raw.strip() or "ferry"


CLIENT_CONFIGS: dict[str, _Key] = {
    k.name: k
    for k in (
        _Key("client.id", _client_id, "ferry",
             "Sent with every request, for the broker's logs and quotas.", "client_id"),
        _Key("request.timeout.ms", _int_at_least(1), "30000",
             "How long to wait for one response before the connection is given up.",
             "request_timeout_ms"),
        _Key("default.api.timeout.ms", _int_at_least(1), "60000",
             "Upper bound of one backend call, retries included (produce uses "
             "delivery.timeout.ms).", "api_timeout_ms"),
        _Key("delivery.timeout.ms", _int_at_least(1), "120000",
             "Upper bound of one produce call, retries included.", "delivery_timeout_ms"),
        _Key("socket.connection.setup.timeout.ms", _int_at_least(1), "10000",
             "How long to wait for a TCP connection to be established.",
             "connect_timeout_ms"),
        _Key("retry.backoff.ms", _int_at_least(0), "100",
             "First pause before retrying a failed request; doubles up to the maximum.",
             "retry_backoff_ms"),
        _Key("retry.backoff.max.ms", _int_at_least(0), "1000",
             "Longest pause between retries.", "retry_backoff_max_ms"),
        _Key("metadata.max.age.ms", _int_at_least(0), "300000",
             "Refresh cached topic metadata at least this often.", "metadata_max_age_ms"),
        _Key("acks", _acks, "all",
             "Acknowledgements a produce waits for when the caller does not ask otherwise.",
             "acks"),
        _Key("compression.type", _compression, "none",
             "Codec for produced batches: none, gzip, snappy, lz4 or zstd.", "compression"),
        _Key("connections.max.idle.per.broker", _int_at_least(0), "8",
             "Idle connections kept open per broker; more are opened while calls overlap.",
             "max_idle_connections"),
        _Key(FAIL_FAST_ON_REFUSED, _bool, "false",
             "Ferry's own: fail a call at once when no broker was reached yet and the "
             "connection is refused (a wrong port, nothing running), instead of retrying "
             "for default.api.timeout.ms. The console tools turn it on.",
             "fail_fast_on_refused"),
    )
}


@dataclass(frozen=True, slots=True)
class ClientConfig:
    """Typed client settings. Keys that are not client settings (``num.partitions`` ...) are
    ignored, so one config map can serve every backend."""

    bootstrap: tuple[BrokerAddress, ...]
    client_id: str = "ferry"
    request_timeout_ms: int = 30000
    api_timeout_ms: int = 60000
    delivery_timeout_ms: int = 120000
    connect_timeout_ms: int = 10000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1000
    metadata_max_age_ms: int = 300000
    acks: int = -1
    compression: int = 0
    max_idle_connections: int = 8
    fail_fast_on_refused: bool = False
    acks_configured: bool = False
    #: security.protocol, sasl.*, ssl.* (core.backends.security)
    security: ClientSecurity = field(default_factory=ClientSecurity)

    @classmethod
    def parse(cls, url: str, config: Mapping[str, str] | None = None) -> ClientConfig:
        values: dict[str, Any] = {}
        raw_config = dict(config or {})
        for name, key in CLIENT_CONFIGS.items():
            raw = raw_config.get(name, key.default)
            try:
                values[key.attribute] = key.parse(str(raw))
            except ValueError as exc:
                detail = str(exc) if "must" in str(exc) else "expected a whole number"
                if key.parse is _bool:
                    detail = "expected true or false"
                raise InvalidConfigError(
                    f"Invalid value {raw!r} for configuration {name}: {detail}", key=name
                ) from None
        try:
            security = ClientSecurity.parse(raw_config)
        except ClientSecurityError as exc:
            raise InvalidConfigError(str(exc), key=exc.key or "security.protocol") from None
        ignored = sorted(set(raw_config) - set(CLIENT_CONFIGS) - SECURITY_CONFIG_KEYS)
        if ignored:
            log.debug("kafka backend ignores non-client settings %s", ", ".join(ignored))
        return cls(bootstrap=parse_bootstrap(url), acks_configured="acks" in raw_config,
                   security=security, **values)
