"""``RegistryConfig``: the registry's settings, by Confluent's property names.

A ``schema-registry.properties`` copied from a Confluent deployment works: the keys below
are read, every other key is ignored (logged at debug level). Durations are milliseconds.

=====================================  =============  ====================================
key                                    default        meaning
=====================================  =============  ====================================
``listeners``                          127.0.0.1:8081 where the REST API listens (first;
                                                      ``https://`` serves HTTPS)
``host.name`` / ``host.port``          listener       how other instances reach this one
``inter.instance.protocol``            http           scheme other instances use
``kafkastore.topic``                   _schemas       the compacted topic holding it all
``kafkastore.topic.replication.factor`` log default   replicas when the topic is created
``kafkastore.topic.skip.validation``   false          accept a topic that is not 1-partition
                                                      compacted
``kafkastore.timeout.ms``              10000          bound of one store write/read-back
``kafkastore.init.timeout.ms``         60000          how long start-up waits for the topic
``kafkastore.bootstrap.servers``       (none)         the log as ``kafka://...`` if no --log
``dek.registry.topic``                 (see right)    the compacted topic of the DEK Registry's
                                                      keys, ``_dek_registry_keys``
``schema.compatibility.level``         backward       the default compatibility level
``schema.registry.group.id``           schema-registry the group used to elect the leader
``leader.eligibility``                 true           may this instance become the leader
``kafkagroup.session.timeout.ms``      10000          a dead leader is replaced after this
``kafkagroup.heartbeat.interval.ms``   3000
``kafkagroup.rebalance.timeout.ms``    30000
``leader.read.timeout.ms``             10000          bound of one forwarded request
``mode.mutability``                    true           may the mode be changed
``ferry.log``                          (none)         the log URL if no --log
=====================================  =============  ====================================

HTTPS, authentication and authorization keys: see ``schema_registry.security``.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from schema_registry.errors import RegistryConfigError
from schema_registry.security import SECURITY_KEYS, RegistrySecurity

__all__ = ["DEFAULT_LISTEN", "RegistryConfig", "parse_host_port"]

log = logging.getLogger(__name__)

DEFAULT_LISTEN = "127.0.0.1:8081"
#: Confluent's compatibility levels (the schema model defines their rules).
_LEVELS = ("BACKWARD", "BACKWARD_TRANSITIVE", "FORWARD", "FORWARD_TRANSITIVE", "FULL",
           "FULL_TRANSITIVE", "NONE")

_KNOWN = frozenset((
    "listeners", "host.name", "host.port", "inter.instance.protocol",
    "schema.registry.inter.instance.protocol", "kafkastore.topic",
    "kafkastore.topic.replication.factor", "kafkastore.topic.skip.validation",
    "kafkastore.timeout.ms", "kafkastore.init.timeout.ms", "kafkastore.bootstrap.servers",
    "schema.compatibility.level", "avro.compatibility.level", "schema.registry.group.id",
    "leader.eligibility", "master.eligibility", "kafkagroup.session.timeout.ms",
    "kafkagroup.heartbeat.interval.ms", "kafkagroup.rebalance.timeout.ms",
    "leader.read.timeout.ms", "mode.mutability", "ferry.log", "port", "dek.registry.topic",
    *SECURITY_KEYS,
))


def parse_host_port(text: str, what: str = "--listen") -> tuple[str, int]:
    """``HOST:PORT``, ``[IPv6]:PORT`` or ``http(s)://HOST:PORT`` (first of a comma list)."""
    item = text.split(",")[0].strip()
    scheme, sep, rest = item.partition("://")
    if sep:
        if scheme.lower() not in ("http", "https"):
            raise RegistryConfigError(f"{what} {text!r}: only http and https listeners are "
                                      "supported")
        item = rest.rstrip("/")
    host, sep, port = item.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise RegistryConfigError(f"{what} {text!r} is not of the form HOST:PORT "
                                  "(e.g. 127.0.0.1:8081)")
    return host, int(port)


@dataclass(frozen=True, slots=True)
class RegistryConfig:
    """Typed settings; build with ``from_props`` (Confluent names) or directly."""

    host: str = "127.0.0.1"
    port: int = 8081
    advertised_host: str | None = None
    advertised_port: int | None = None
    scheme: str = "http"
    topic: str = "_schemas"
    dek_topic: str = "_dek_registry_keys"
    replication_factor: int | None = None
    skip_topic_validation: bool = False
    store_timeout_ms: int = 10000
    init_timeout_ms: int = 60000
    bootstrap_servers: str | None = None
    default_compatibility: str = "BACKWARD"
    group_id: str = "schema-registry"
    leader_eligible: bool = True
    session_timeout_ms: int = 10000
    heartbeat_interval_ms: int = 3000
    rebalance_timeout_ms: int = 30000
    forward_timeout_ms: int = 10000
    mode_mutable: bool = True
    log_url: str | None = None
    security: RegistrySecurity = field(default_factory=RegistrySecurity)

    @classmethod
    def from_props(cls, props: Mapping[str, Any]) -> RegistryConfig:
        """Parse Confluent-named properties; ``RegistryConfigError`` names a bad key."""
        p = {str(k): str(v).strip() for k, v in props.items() if v is not None}
        ignored = sorted(set(p) - _KNOWN)
        if ignored:
            log.debug("ignoring registry settings %s", ", ".join(ignored))
        values: dict[str, Any] = {}
        https = p.get("listeners", "").split(",")[0].strip().lower().startswith("https://")
        if "listeners" in p:
            values["host"], values["port"] = parse_host_port(p["listeners"], "listeners")
        values["security"] = RegistrySecurity.from_props(p, https=https)
        if https:
            values["scheme"] = "https"
        elif "port" in p:
            values["port"] = _int(p, "port", 0)
        if p.get("host.name"):
            values["advertised_host"] = p["host.name"]
        if "host.port" in p:
            values["advertised_port"] = _int(p, "host.port", 1)
        scheme = p.get("inter.instance.protocol") or p.get(
            "schema.registry.inter.instance.protocol")
        if scheme:
            values["scheme"] = scheme.lower()
        if p.get("kafkastore.topic"):
            values["topic"] = p["kafkastore.topic"]
        if p.get("dek.registry.topic"):
            values["dek_topic"] = p["dek.registry.topic"]
        if p.get("kafkastore.topic.replication.factor"):
            values["replication_factor"] = _int(p, "kafkastore.topic.replication.factor", -1)
        if "kafkastore.topic.skip.validation" in p:
            values["skip_topic_validation"] = _bool(p, "kafkastore.topic.skip.validation")
        for key, attr, lowest in (
                ("kafkastore.timeout.ms", "store_timeout_ms", 1),
                ("kafkastore.init.timeout.ms", "init_timeout_ms", 0),
                ("kafkagroup.session.timeout.ms", "session_timeout_ms", 1),
                ("kafkagroup.heartbeat.interval.ms", "heartbeat_interval_ms", 1),
                ("kafkagroup.rebalance.timeout.ms", "rebalance_timeout_ms", 1),
                ("leader.read.timeout.ms", "forward_timeout_ms", 1)):
            if key in p:
                values[attr] = _int(p, key, lowest)
        if p.get("kafkastore.bootstrap.servers"):
            values["bootstrap_servers"] = p["kafkastore.bootstrap.servers"]
        level = p.get("schema.compatibility.level") or p.get("avro.compatibility.level")
        if level:
            if level.upper() not in _LEVELS:
                raise RegistryConfigError(
                    f"Invalid value {level!r} for configuration schema.compatibility.level: "
                    f"expected one of {', '.join(lvl.lower() for lvl in _LEVELS)}")
            values["default_compatibility"] = level.upper()
        if p.get("schema.registry.group.id"):
            values["group_id"] = p["schema.registry.group.id"]
        for key in ("leader.eligibility", "master.eligibility"):
            if key in p:
                values["leader_eligible"] = _bool(p, key)
                break
        if "mode.mutability" in p:
            values["mode_mutable"] = _bool(p, "mode.mutability")
        if p.get("ferry.log"):
            values["log_url"] = p["ferry.log"]
        return cls(**values)

    def with_listener(self, host: str, port: int) -> RegistryConfig:
        return replace(self, host=host, port=port)

    def advertised(self, bound_port: int) -> tuple[str, int]:
        """How other instances reach this one, given the port actually bound."""
        host = self.advertised_host
        if not host:
            host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
        return host, self.advertised_port or bound_port

    def log_url_from_bootstrap(self) -> str | None:
        """``kafkastore.bootstrap.servers`` as a ``kafka://`` log URL (None if unset)."""
        if not self.bootstrap_servers:
            return None
        hosts = [s.strip().split("://", 1)[-1] for s in self.bootstrap_servers.split(",")
                 if s.strip()]
        return "kafka://" + ",".join(hosts)


def _int(props: Mapping[str, str], key: str, lowest: int) -> int:
    raw = props[key]
    try:
        value = int(raw)
    except ValueError:
        raise RegistryConfigError(f"Invalid value {raw!r} for configuration {key}: "
                                  "expected a whole number") from None
    if value < lowest:
        raise RegistryConfigError(f"Invalid value {raw!r} for configuration {key}: "
                                  f"must be at least {lowest}")
    return value


def _bool(props: Mapping[str, str], key: str) -> bool:
    raw = props[key].lower()
    if raw not in ("true", "false"):
        raise RegistryConfigError(f"Invalid value {props[key]!r} for configuration {key}: "
                                  "expected true or false")
    return raw == "true"
