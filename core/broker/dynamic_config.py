"""Dynamic broker configs: set by (Incremental)AlterConfigs, kept in the data directory.

Kafka keeps two levels above the static config file: DYNAMIC_BROKER_CONFIG for one broker
(resource name = its id) and DYNAMIC_DEFAULT_BROKER_CONFIG for the cluster-wide default
(resource name ""). A setting's value is the first of: per broker, cluster default,
static, Kafka's default. Ferry stores both levels in ``DATA_DIR/dynamic-broker-configs.json``
(replaced atomically, before a change is answered) and recomputes its BrokerConfig from the
static settings with both levels on top, at every change and at every start.

What takes effect: the broker-level topic defaults (``log.retention.ms``,
``message.max.bytes``, ...) reach every topic without its own override at once; settings
Ferry reads when it starts (``num.io.threads``, ``producer.id.expiration.ms``,
``log.cleaner.backoff.ms``) at the next start; listener, SASL, SSL, replication and
metrics settings are stored and described only (one PLAINTEXT node has no use for them).
Which names are dynamic is ``core.broker.dynamic_names``.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from core.broker.admin_common import AdminError
from core.broker.config import (
    BROKER_CONFIGS,
    BrokerConfig,
    BrokerConfigError,
    is_security_setting,
)
from core.broker.dynamic_names import (
    DYNAMIC_CONFIGS,
    LISTENER_PREFIXED,
    PER_BROKER_ONLY,
    PER_LISTENER_ONLY,
    VALUE_TYPES,
    is_sensitive,
)
from core.broker.meta import write_atomically
from core.log.config import BROKER_DEFAULT_NAMES
from core.protocol.errors import ErrorCode

__all__ = ["DYNAMIC_FILE", "DynamicBrokerConfigs"]

log = logging.getLogger(__name__)

DYNAMIC_FILE = "dynamic-broker-configs.json"
_VERSION = 1
#: Names BrokerConfig.parse reads; others are stored only (parsing them would log them
#: as unknown at every change).
_PARSED = (frozenset(BROKER_CONFIGS) | frozenset(BROKER_DEFAULT_NAMES)
           | {"broker.id", "log.dir", "log.retention.hours", "log.retention.minutes",
              "log.roll.hours"})


class DynamicBrokerConfigs:
    """Both dynamic levels of one broker, over its static settings.

    Thread-safe: ``change`` runs on admin threads and serialises itself.
    """

    def __init__(self, path: Path, static: Mapping[str, str], broker: dict[str, str],
                 default: dict[str, str]) -> None:
        self.path = path
        self.static = dict(static)
        self._broker = broker
        self._default = default
        self._lock = threading.Lock()

    @classmethod
    def load(cls, data_dir: Path, static: Mapping[str, str]) -> DynamicBrokerConfigs:
        """The stored levels (none if the file is missing). BrokerConfigError names the file
        if it cannot be read: starting without settings an operator made would be wrong."""
        path = data_dir / DYNAMIC_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("version") != _VERSION:
                raise ValueError(f"unknown version {data.get('version')!r}")
            broker = {str(k): str(v) for k, v in data["broker"].items()}
            default = {str(k): str(v) for k, v in data["default"].items()}
        except FileNotFoundError:
            return cls(path, static, {}, {})
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BrokerConfigError(
                f"cannot read the dynamic broker configs in {path}: {exc}; fix or remove the "
                "file (removing it drops every config set by AlterConfigs)") from None
        return cls(path, static, broker, default)

    def level(self, cluster_default: bool) -> dict[str, str]:
        """A copy of the per-broker level, or of the cluster-default level."""
        with self._lock:
            return dict(self._default if cluster_default else self._broker)

    def __bool__(self) -> bool:
        """Whether any dynamic config is set."""
        return bool(self._broker or self._default)

    def effective(self) -> BrokerConfig:
        """The BrokerConfig of the static settings with both levels on top.
        BrokerConfigError if a stored value is no longer valid."""
        with self._lock:
            return _parse(self.static, self._default, self._broker)

    def change(self, cluster_default: bool,
               update: Callable[[dict[str, str]], dict[str, str]], validate_only: bool,
               apply: Callable[[BrokerConfig], None] | None = None) -> BrokerConfig:
        """Replace one level's dynamic configs by ``update(current configs)``; returns the
        resulting BrokerConfig, which ``apply`` receives once the change is stored (under
        this object's lock, so changes are applied in the order they are stored).
        AdminError (naming the keys) if a name may not be set dynamically at this level or
        a value is invalid; nothing changes then, nor with ``validate_only``. An OSError
        writing the file is AdminError KAFKA_STORAGE_ERROR."""
        with self._lock:
            current = self._default if cluster_default else self._broker
            new = update(dict(current))
            changed = [k for k in new if current.get(k) != new[k]]
            _check_names(changed, cluster_default)
            for name in changed:
                _check_type(name, new[name])
            default = dict(new) if cluster_default else self._default
            broker = self._broker if cluster_default else dict(new)
            try:
                config = _parse(self.static, default, broker)
            except BrokerConfigError as exc:
                raise AdminError(ErrorCode.INVALID_CONFIG, str(exc)) from None
            if validate_only:
                return config
            body = json.dumps({"version": _VERSION, "broker": broker, "default": default},
                              indent=2, sort_keys=True)
            try:
                # Owner-only: listener passwords may be among the values.
                write_atomically(self.path, body + "\n", mode=0o600)
            except OSError as exc:
                log.error("cannot store dynamic broker configs in %s: %s", self.path, exc)
                raise AdminError(ErrorCode.KAFKA_STORAGE_ERROR,
                                 f"cannot store the configs in {self.path}: {exc}") from exc
            self._default, self._broker = default, broker
            if apply is not None:
                apply(config)
        log.info("dynamic broker configs (%s) are now %s",
                 "cluster default" if cluster_default else "this broker",
                 {k: "[hidden]" if is_sensitive(k) else v for k, v in new.items()})
        return config


def _parse(static: Mapping[str, str], default: Mapping[str, str],
           broker: Mapping[str, str]) -> BrokerConfig:
    merged = {}
    for level in (static, default, broker):
        # listener, TLS and SASL settings too: core.broker.security reads them from raw
        merged.update((k, v) for k, v in level.items()
                      if k in _PARSED or is_security_setting(k))
    return BrokerConfig.parse(merged)


def _check_names(names: list[str], cluster_default: bool) -> None:
    """Kafka's DynamicBrokerConfig.validateConfigs, in its order and with its wording."""
    unknown = sorted(n for n in names if n not in DYNAMIC_CONFIGS
                     and not LISTENER_PREFIXED.fullmatch(n) and n not in _KNOWN_STATIC)
    if unknown:
        raise AdminError(ErrorCode.INVALID_CONFIG,
                         f"Unknown broker config name: {', '.join(unknown)}")
    static = sorted(n for n in names if n in _KNOWN_STATIC and n not in DYNAMIC_CONFIGS)
    if static:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         f"Cannot update these configs dynamically: {static}")
    unprefixed = sorted(n for n in names if n in PER_LISTENER_ONLY)
    if unprefixed:
        raise AdminError(ErrorCode.INVALID_REQUEST,
                         "These security configs can be dynamically updated only per-listener "
                         f"using the listener prefix: {unprefixed}")
    if cluster_default:
        per_broker = sorted(n for n in names
                            if n in PER_BROKER_ONLY or LISTENER_PREFIXED.fullmatch(n))
        if per_broker:
            raise AdminError(ErrorCode.INVALID_REQUEST,
                             "Cannot update these configs at default cluster level, broker id "
                             f"must be specified: {per_broker}")


def _check_type(name: str, value: str) -> None:
    kind = VALUE_TYPES.get(name)
    text = value.strip()
    try:
        if kind in ("INT", "LONG"):
            number = int(text)
            if kind == "INT" and not -(2**31) <= number < 2**31:
                raise ValueError
        elif kind == "DOUBLE":
            float(text)
        elif kind == "BOOLEAN" and text.lower() not in ("true", "false"):
            raise ValueError
    except ValueError:
        raise AdminError(ErrorCode.INVALID_CONFIG,
                         f"Invalid value {value} for configuration {name}: Not a number of "
                         f"type {kind}" if kind != "BOOLEAN" else
                         f"Invalid value {value} for configuration {name}: Expected value to "
                         "be either true or false") from None


#: Kafka broker configs that exist but are read-only (set in the config file, applied at
#: start): every name Ferry's BrokerConfig reads, and the usual server.properties keys.
_KNOWN_STATIC = frozenset(BROKER_CONFIGS) | frozenset(BROKER_DEFAULT_NAMES) | {
    "broker.id", "log.dir", "process.roles", "controller.quorum.voters",
    "controller.quorum.bootstrap.servers", "controller.listener.names",
    "inter.broker.listener.name", "zookeeper.connect", "offsets.topic.replication.factor",
    "transaction.state.log.replication.factor", "transaction.state.log.min.isr",
    "log.cleaner.enable", "delete.topic.enable", "broker.rack", "authorizer.class.name",
    "socket.send.buffer.bytes", "socket.receive.buffer.bytes",
    "group.coordinator.rebalance.protocols", "log.message.format.version",
}
