"""The broker's settings: Kafka's broker config names, parsed once into a typed BrokerConfig.

A config file is Java ``.properties`` (so a ``server.properties`` copied from a Kafka
deployment works) or a JSON object. Every key is declared once in ``BROKER_CONFIGS`` with
its type, default and check; topic defaults (``log.retention.ms``, ``message.max.bytes``
...) are parsed by ``core.log.config.broker_defaults``. Kafka settings that mean nothing on
a single Ferry node are accepted quietly; unknown keys are logged and ignored, as Kafka
does. A bad value is one ``BrokerConfigError`` naming the key.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.broker.connection_quotas import parse_overrides
from core.log.config import BROKER_DEFAULT_NAMES, TopicConfig, broker_defaults
from core.log.errors import InvalidConfigError

__all__ = [
    "BROKER_CONFIGS",
    "BrokerConfig",
    "BrokerConfigError",
    "is_security_setting",
    "load_config_file",
    "parse_properties",
]

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1


class BrokerConfigError(Exception):
    """A broker setting is invalid or the config file unreadable; ``key`` names the key."""

    def __init__(self, message: str, *, key: str | None = None):
        super().__init__(message)
        self.key = key


def _at_least(low: int) -> Callable[[int], str | None]:
    return lambda v: f"Value must be at least {low}" if v < low else None


def _single_node_replication(value: int) -> str | None:
    if value != 1:
        return ("a Ferry broker is a single node, so every partition has exactly one "
                "replica; set it to 1")
    return None


def _positive_or_unbounded(value: int) -> str | None:
    return "Value must be -1 (unbounded) or at least 1" if value < 1 and value != -1 else None


def _connection_overrides(value: str) -> str | None:
    try:
        parse_overrides(value)
    except ValueError as exc:
        return str(exc)
    return None


def _authorizer_name(value: str) -> str | None:
    from core.broker.security.authorizer import KAFKA_AUTHORIZERS

    if value and value not in KAFKA_AUTHORIZERS:
        return ("unknown authorizer; use org.apache.kafka.metadata.authorizer."
                "StandardAuthorizer (or kafka.security.authorizer.AclAuthorizer), or leave "
                "it empty for no authorization")
    return None


def _super_users(value: str) -> str | None:
    from core.broker.security.authorizer import parse_super_users

    try:
        parse_super_users(value)
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class _Key:
    name: str
    type: str  # "int", "bool", "str"
    default: Any
    doc: str
    check: Callable[[Any], str | None] | None = None


_KEYS = (
    _Key("node.id", "int", 0, "This broker's id (broker.id is accepted too).", _at_least(0)),
    _Key("num.partitions", "int", 1, "Partitions of an auto-created topic.", _at_least(1)),
    _Key("default.replication.factor", "int", 1, "Replicas of an auto-created topic (1).",
         _single_node_replication),
    _Key("auto.create.topics.enable", "bool", False,
         "Create a topic when a client asks for its metadata (Kafka's default is true)."),
    _Key("socket.request.max.bytes", "int", 104857600,
         "Largest request accepted; a larger one closes its connection.", _at_least(64)),
    _Key("num.io.threads", "int", 8,
         "Threads for appends that fsync (flush.messages), so they never block the others.",
         _at_least(1)),
    _Key("log.dirs", "str", "", "The data directory when --data-dir is not given."),
    _Key("listeners", "str", "", "PLAINTEXT://HOST:PORT when --listen is not given."),
    _Key("advertised.listeners", "str", "",
         "PLAINTEXT://HOST:PORT given to clients when --advertised-listener is not given."),
    _Key("log.retention.check.interval.ms", "int", 300000,
         "How often retention runs.", _at_least(1)),
    _Key("log.cleaner.backoff.ms", "int", 15000, "How often compaction runs.", _at_least(0)),
    _Key("group.initial.rebalance.delay.ms", "int", 3000,
         "How long a new group waits for more members before its first rebalance.",
         _at_least(0)),
    _Key("group.min.session.timeout.ms", "int", 6000, "Smallest session timeout allowed.",
         _at_least(0)),
    _Key("group.max.session.timeout.ms", "int", 1800000, "Largest session timeout allowed.",
         _at_least(0)),
    _Key("group.max.size", "int", INT_MAX, "Most members of one group.", _at_least(1)),
    _Key("offsets.topic.num.partitions", "int", 50,
         "Partitions of __consumer_offsets when it is created.", _at_least(1)),
    _Key("offsets.retention.minutes", "int", 10080,
         "Committed offsets of an empty group are kept this long.", _at_least(1)),
    _Key("offsets.retention.check.interval.ms", "int", 600000,
         "How often expired offsets are removed.", _at_least(1)),
    _Key("offset.metadata.max.bytes", "int", 4096,
         "Largest metadata string of a committed offset.", _at_least(0)),
    _Key("producer.id.expiration.ms", "int", 86400000,
         "An idempotent producer's sequence state is forgotten after this long idle.",
         _at_least(1)),
    # Kafka's default is -1 (unbounded). Ferry bounds it: one Python process serves every
    # client, and without a bound a few clients announcing 100 MiB requests cost gigabytes.
    # 256 MiB holds two requests of the largest default size (socket.request.max.bytes)
    # besides the ordinary traffic; small requests never wait for it.
    _Key("queued.max.request.bytes", "int", 268435456,
         "Bytes of requests held in memory across all connections (-1: unbounded); a "
         "connection whose large request needs more waits for it.", _positive_or_unbounded),
    _Key("max.connections", "int", INT_MAX,
         "Most connections the broker keeps open; more are closed at once.", _at_least(0)),
    _Key("max.connections.per.ip", "int", INT_MAX,
         "Most connections from one address; more are closed at once.", _at_least(0)),
    _Key("max.connections.per.ip.overrides", "str", "",
         "HOST:COUNT,... caps for some addresses instead of max.connections.per.ip.",
         _connection_overrides),
    _Key("connections.max.idle.ms", "int", 600000,
         "A connection without traffic for this long is closed, as is one that sent part "
         "of a request and stopped.", _at_least(1)),
    # Authorization and client quotas (core.broker.security).
    _Key("authorizer.class.name", "str", "",
         "Kafka's StandardAuthorizer or AclAuthorizer class name turns ACLs on (deny by "
         "default); empty: every request is allowed.", _authorizer_name),
    _Key("super.users", "str", "",
         "Principals allowed everything, separated by semicolons (User:admin;User:ops).",
         _super_users),
    _Key("allow.everyone.if.no.acl.found", "bool", False,
         "Allow a request on a resource no ACL applies to."),
    _Key("quota.window.num", "int", 11, "Samples a client quota's rate is measured over.",
         _at_least(1)),
    _Key("quota.window.size.seconds", "int", 1, "Length of one quota sample.", _at_least(1)),
)

#: Every setting the broker reads, by Kafka name.
BROKER_CONFIGS: dict[str, _Key] = {k.name: k for k in _KEYS}
_ALIASES = {"broker.id": "node.id", "log.dir": "log.dirs"}
_TOPIC_DEFAULT_KEYS = frozenset(BROKER_DEFAULT_NAMES) | {
    "log.retention.hours", "log.retention.minutes", "log.roll.hours"}
# Kafka settings that describe a multi-node cluster, security or JVM tuning: accepted from
# a copied server.properties, with no effect on one Ferry node.
_NO_EFFECT = frozenset({
    "offsets.topic.replication.factor", "transaction.state.log.replication.factor",
    "transaction.state.log.min.isr", "num.network.threads", "num.recovery.threads.per.data.dir",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes", "process.roles",
    "controller.quorum.voters", "controller.quorum.bootstrap.servers",
    "controller.listener.names", "zookeeper.connect", "zookeeper.connection.timeout.ms",
    "log.cleaner.enable", "group.coordinator.rebalance.protocols",
})


# Listener, TLS and SASL settings: read from ``raw`` by core.broker.security (per listener
# through the ``listener.name.<name>.`` prefix).
_SECURITY_KEYS = frozenset({
    "listener.security.protocol.map", "inter.broker.listener.name",
    "sasl.enabled.mechanisms", "sasl.jaas.config", "sasl.plain.users.file",
    "connections.max.reauth.ms", "connection.failed.authentication.delay.ms",
    "sasl.server.max.receive.size", "sasl.mechanism.inter.broker.protocol",
    "security.inter.broker.protocol",
})
_SECURITY_PREFIXES = ("listener.name.", "ssl.")


def is_security_setting(key: str) -> bool:
    """A setting core.broker.security reads (listeners, TLS, SASL)."""
    return key in _SECURITY_KEYS or key.startswith(_SECURITY_PREFIXES)


@dataclass(frozen=True)
class BrokerConfig:
    """Typed, validated broker settings. Defaults are Kafka's, except
    ``auto_create_topics_enable`` (off: a typo in a topic name should not create a topic)."""

    node_id: int = 0
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = False
    socket_request_max_bytes: int = 104857600
    num_io_threads: int = 8
    log_dirs: str = ""
    listeners: str = ""
    advertised_listeners: str = ""
    log_retention_check_interval_ms: int = 300000
    log_cleaner_backoff_ms: int = 15000
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1800000
    group_max_size: int = INT_MAX
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10080
    offsets_retention_check_interval_ms: int = 600000
    offset_metadata_max_bytes: int = 4096
    producer_id_expiration_ms: int = 86400000
    queued_max_request_bytes: int = 268435456
    max_connections: int = INT_MAX
    max_connections_per_ip: int = INT_MAX
    max_connections_per_ip_overrides: str = ""
    connections_max_idle_ms: int = 600000
    authorizer_class_name: str = ""
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    topic_defaults: TopicConfig = field(default_factory=TopicConfig)
    #: The settings as given (Kafka names, string values), for DescribeConfigs.
    raw: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, settings: Mapping[str, object]) -> BrokerConfig:
        """Parse Kafka-named settings (strings, or JSON scalars). Raises BrokerConfigError
        naming the first bad key; logs each unknown key once."""
        values: dict[str, Any] = {}
        raw: dict[str, str] = {}
        for given, value in settings.items():
            name = _ALIASES.get(given, given)
            if isinstance(value, (dict, list)) or value is None:
                raise BrokerConfigError(
                    f"Invalid value {value!r} for configuration {given}: expected a single "
                    "value", key=given)
            raw[given] = _render(value)
            key = BROKER_CONFIGS.get(name)
            if key is not None:
                values[name.replace(".", "_")] = _parse(key, given, value)
            elif given in _TOPIC_DEFAULT_KEYS:
                pass  # parsed below, all together
            elif is_security_setting(given):
                pass  # read by core.broker.security when the listeners start
            elif given in _NO_EFFECT:
                log.info("config %s has no effect on a single Ferry node; ignored", given)
            else:
                log.warning("ignoring unknown config %s=%s", given, raw[given])
        try:
            defaults = broker_defaults(raw)
        except InvalidConfigError as exc:
            raise BrokerConfigError(str(exc), key=exc.key) from None
        config = cls(**values, topic_defaults=defaults, raw=raw)
        if config.group_min_session_timeout_ms > config.group_max_session_timeout_ms:
            raise BrokerConfigError(
                "group.min.session.timeout.ms must not exceed group.max.session.timeout.ms",
                key="group.min.session.timeout.ms")
        if config.max_connections_per_ip == 0 and not config.max_connections_per_ip_overrides:
            raise BrokerConfigError(
                "max.connections.per.ip can be 0 only when max.connections.per.ip.overrides "
                "lets some addresses connect", key="max.connections.per.ip")
        return config


def _render(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _parse(key: _Key, given: str, value: object) -> Any:
    text = _render(value).strip()
    if key.type == "int":
        try:
            parsed: Any = int(text)
        except ValueError:
            raise BrokerConfigError(
                f"Invalid value {text!r} for configuration {given}: expected a whole number",
                key=given) from None
    elif key.type == "bool":
        if text.lower() not in ("true", "false"):
            raise BrokerConfigError(
                f"Invalid value {text!r} for configuration {given}: expected true or false",
                key=given)
        parsed = text.lower() == "true"
    else:
        parsed = text
    problem = key.check(parsed) if key.check else None
    if problem:
        raise BrokerConfigError(f"Invalid value {text!r} for configuration {given}: {problem}",
                                key=given)
    return parsed


def load_config_file(path: str | Path) -> dict[str, object]:
    """The settings in ``path``: JSON if it is named ``*.json`` or starts with ``{`` or ``[``
    (and must then hold an object), otherwise Java ``.properties``. Raises BrokerConfigError
    if it cannot be read or parsed."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BrokerConfigError(f"cannot read config file {path}: {exc}") from None
    if path.suffix.lower() == ".json" or text.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BrokerConfigError(f"config file {path} is not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise BrokerConfigError(f"config file {path} must hold a JSON object")
        return data
    return dict(parse_properties(text))


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``#``/``!`` comments, ``=``, ``:`` or whitespace
    separators, backslash line continuations and escapes (including ``\\uXXXX``)."""
    result: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        if _continues(line):
            line = line[:-1]
        key, value = _split_property(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _continues(line: str) -> bool:
    """An odd number of trailing backslashes continues the line."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _split_property(line: str) -> tuple[str, str]:
    i, n = 0, len(line)
    while i < n:
        c = line[i]
        if c == "\\":
            i += 2
            continue
        if c in "=: \t\f":
            break
        i += 1
    key = line[:i]
    rest = line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):  # "key = value": whitespace, then one separator
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "\\" or i + 1 >= n:
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and i + 6 <= n:
            try:
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            except ValueError:
                pass
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)
