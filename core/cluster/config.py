"""Cluster settings with Kafka's KRaft names, parsed once into a typed ClusterConfig.

A node is in cluster mode when its settings name ``process.roles``; without it the broker
stays the single node it always was and this module is not used. Every bad value is one
``ClusterConfigError`` naming the key, with the fix in its message. The checks follow
Kafka's ``KafkaConfig`` validation for KRaft (a controller must be a voter and listen on its
controller listener; a broker-only node must not; advertised listeners name real listeners
and never ``0.0.0.0``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CLUSTER_KEYS",
    "ClusterConfig",
    "ClusterConfigError",
    "Endpoint",
    "Voter",
    "is_cluster_mode",
    "parse_listeners",
    "parse_voters",
]

log = logging.getLogger(__name__)

INT_MAX = 2**31 - 1


class ClusterConfigError(Exception):
    """A cluster setting is missing or invalid; ``key`` names it."""

    def __init__(self, message: str, *, key: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Endpoint:
    """One named listener: ``NAME://HOST:PORT``."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True)
class Voter:
    """A member of the controller quorum: ``ID@HOST:PORT``."""

    node_id: int
    host: str
    port: int


# name -> (type, default, lowest allowed value for ints)
_INTS: dict[str, tuple[int, int]] = {
    "node.id": (-1, 0),
    "default.replication.factor": (1, 1),
    "min.insync.replicas": (1, 1),
    "offsets.topic.replication.factor": (3, 1),
    "replica.lag.time.max.ms": (30000, 1),
    "replica.fetch.wait.max.ms": (500, 0),
    "replica.fetch.max.bytes": (1048576, 1),
    "replica.fetch.min.bytes": (1, 0),
    "replica.fetch.response.max.bytes": (10485760, 0),
    "broker.session.timeout.ms": (9000, 1),
    "broker.heartbeat.interval.ms": (2000, 1),
    "controller.quorum.election.timeout.ms": (1000, 1),
    "controller.quorum.fetch.timeout.ms": (2000, 1),
    "controller.quorum.election.backoff.max.ms": (1000, 1),
}
_BOOLS: dict[str, bool] = {"unclean.leader.election.enable": False}
_STRS = ("process.roles", "controller.quorum.voters", "controller.quorum.bootstrap.servers",
         "listeners", "advertised.listeners", "controller.listener.names",
         "inter.broker.listener.name", "listener.security.protocol.map", "log.dirs")
#: Every setting this module reads, by Kafka name (``broker.id``/``log.dir`` are aliases).
CLUSTER_KEYS = frozenset(_INTS) | frozenset(_BOOLS) | frozenset(_STRS)
_ALIASES = {"broker.id": "node.id", "log.dir": "log.dirs"}
_ROLES = ("broker", "controller")
_LISTENER_NAME = re.compile(r"^[A-Za-z0-9_]+$")
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# Kafka's default map (each protocol to itself), and the controller's plain TCP.
_DEFAULT_PROTOCOLS = {**{p: p for p in _PROTOCOLS}, "CONTROLLER": "PLAINTEXT"}


def is_cluster_mode(settings: Mapping[str, object]) -> bool:
    """True when the settings make this node part of a cluster (they name process.roles)."""
    return "process.roles" in settings


def _bad(key: str, value: object, problem: str) -> ClusterConfigError:
    return ClusterConfigError(f"Invalid value {value!r} for configuration {key}: {problem}",
                              key=key)


def _host_port(key: str, whole: str, text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if host.startswith("["):
        if not host.endswith("]"):
            raise _bad(key, whole, f"{text!r} is not HOST:PORT")
        host = host[1:-1]
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise _bad(key, whole, f"{text!r} is not HOST:PORT with a port from 0 to 65535")
    return host, int(port)


def parse_listeners(key: str, text: str) -> tuple[Endpoint, ...]:
    """``NAME://HOST:PORT,...`` (an empty host means every address, as in Kafka).
    Names are upper-cased and must be unique, as must non-zero ports."""
    endpoints: list[Endpoint] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        if not sep or not _LISTENER_NAME.match(name):
            raise _bad(key, text, f"{item!r} is not NAME://HOST:PORT")
        host, port = _host_port(key, text, rest)
        endpoint = Endpoint(name.upper(), host, port)
        if any(e.name == endpoint.name for e in endpoints):
            raise _bad(key, text, f"listener name {endpoint.name} appears twice")
        if port and any(e.port == port and e.host == host for e in endpoints):
            raise _bad(key, text, f"two listeners use {host}:{port}")
        endpoints.append(endpoint)
    return tuple(endpoints)


def parse_voters(text: str) -> tuple[Voter, ...]:
    """``ID@HOST:PORT,...`` with unique ids, as ``controller.quorum.voters``."""
    key = "controller.quorum.voters"
    voters: list[Voter] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        node, sep, address = item.partition("@")
        if not sep or not node.isdigit():
            raise _bad(key, text, f"{item!r} is not ID@HOST:PORT")
        host, port = _host_port(key, text, address)
        if port == 0:
            raise _bad(key, text, f"{item!r} needs a real port")
        if any(v.node_id == int(node) for v in voters):
            raise _bad(key, text, f"voter id {node} appears twice")
        voters.append(Voter(int(node), host, port))
    if not voters:
        raise _bad(key, text, "name at least one voter, as ID@HOST:PORT")
    return tuple(voters)


def _parse_int(key: str, value: object, low: int) -> int:
    text = str(value).strip()
    try:
        number = int(text)
    except ValueError:
        raise _bad(key, text, "expected a whole number") from None
    if not low <= number <= INT_MAX:
        raise _bad(key, text, f"Value must be at least {low}")
    return number


def _parse_bool(key: str, value: object) -> bool:
    text = ("true" if value else "false") if isinstance(value, bool) else str(value).strip()
    if text.lower() not in ("true", "false"):
        raise _bad(key, text, "expected true or false")
    return text.lower() == "true"


@dataclass(frozen=True)
class ClusterConfig:
    """Typed, validated settings of one cluster node. Defaults are Kafka's."""

    node_id: int
    roles: frozenset[str]
    voters: tuple[Voter, ...]
    bootstrap_servers: tuple[tuple[str, int], ...]
    listeners: tuple[Endpoint, ...]
    advertised_listeners: tuple[Endpoint, ...]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str
    log_dir: str
    default_replication_factor: int = 1
    min_insync_replicas: int = 1
    offsets_topic_replication_factor: int = 3
    unclean_leader_election_enable: bool = False
    replica_lag_time_max_ms: int = 30000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_max_bytes: int = 1048576
    replica_fetch_min_bytes: int = 1
    replica_fetch_response_max_bytes: int = 10485760
    broker_session_timeout_ms: int = 9000
    broker_heartbeat_interval_ms: int = 2000
    controller_quorum_election_timeout_ms: int = 1000
    controller_quorum_fetch_timeout_ms: int = 2000
    controller_quorum_election_backoff_max_ms: int = 1000

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    def listener(self, name: str) -> Endpoint:
        """The listener called ``name`` (KeyError if there is none)."""
        for endpoint in self.listeners:
            if endpoint.name == name:
                return endpoint
        raise KeyError(name)

    @classmethod
    def parse(cls, settings: Mapping[str, object]) -> ClusterConfig:
        """Parse the cluster keys of ``settings`` (other keys are left to BrokerConfig).
        Raises ClusterConfigError naming the first bad or missing key."""
        given = {_ALIASES.get(k, k): v for k, v in settings.items()}
        ints = {k: _parse_int(k, given[k], low) if k in given else default
                for k, (default, low) in _INTS.items()}
        bools = {k: _parse_bool(k, given[k]) if k in given else default
                 for k, default in _BOOLS.items()}
        text = {k: str(given.get(k, "")).strip() for k in _STRS}

        roles = _parse_roles(text["process.roles"])
        if "node.id" not in given:
            raise ClusterConfigError("node.id is required when process.roles is set: give "
                                     "each node of the cluster its own id", key="node.id")
        node_id = ints["node.id"]
        voters, bootstrap = _parse_quorum(text, roles, node_id)
        listeners = _required_listeners(text["listeners"])
        controller_names = _parse_controller_names(text["controller.listener.names"])
        _check_controller_listeners(roles, listeners, controller_names)
        inter_broker = _inter_broker_name(text, roles, listeners, controller_names)
        _check_protocols(text["listener.security.protocol.map"], listeners, controller_names)
        advertised = _advertised(text["advertised.listeners"], listeners, controller_names)
        log_dir = _log_dir(text["log.dirs"])

        if ints["broker.heartbeat.interval.ms"] >= ints["broker.session.timeout.ms"]:
            raise _bad("broker.heartbeat.interval.ms", ints["broker.heartbeat.interval.ms"],
                       "must be less than broker.session.timeout.ms "
                       f"({ints['broker.session.timeout.ms']}), or every lease expires")
        for rf_key in ("default.replication.factor", "offsets.topic.replication.factor"):
            if ints["min.insync.replicas"] > ints[rf_key]:
                log.warning("min.insync.replicas=%d exceeds %s=%d: acks=all writes to such "
                            "topics fail with NOT_ENOUGH_REPLICAS", ints["min.insync.replicas"],
                            rf_key, ints[rf_key])
        return cls(
            node_id=node_id, roles=roles, voters=voters, bootstrap_servers=bootstrap,
            listeners=listeners, advertised_listeners=advertised,
            controller_listener_names=controller_names,
            inter_broker_listener_name=inter_broker, log_dir=log_dir,
            unclean_leader_election_enable=bools["unclean.leader.election.enable"],
            **{k.replace(".", "_"): v for k, v in ints.items() if k != "node.id"},
        )


def _parse_roles(text: str) -> frozenset[str]:
    key = "process.roles"
    roles = [r.strip().lower() for r in text.split(",") if r.strip()]
    if not roles:
        raise _bad(key, text, "name broker, controller or broker,controller")
    for role in roles:
        if role not in _ROLES:
            raise _bad(key, text, f"unknown role {role!r}; the roles are broker and controller")
    if len(set(roles)) != len(roles):
        raise _bad(key, text, "a role appears twice")
    return frozenset(roles)


def _parse_quorum(text: dict[str, str], roles: frozenset[str], node_id: int
                  ) -> tuple[tuple[Voter, ...], tuple[tuple[str, int], ...]]:
    voters_text = text["controller.quorum.voters"]
    bootstrap_text = text["controller.quorum.bootstrap.servers"]
    if voters_text and bootstrap_text:
        raise ClusterConfigError(
            "set only one of controller.quorum.voters and controller.quorum.bootstrap.servers",
            key="controller.quorum.bootstrap.servers")
    if not voters_text and not bootstrap_text:
        raise ClusterConfigError(
            "controller.quorum.voters is required when process.roles is set, e.g. "
            "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097",
            key="controller.quorum.voters")
    if voters_text:
        voters = parse_voters(voters_text)
        if "controller" in roles and all(v.node_id != node_id for v in voters):
            raise _bad("controller.quorum.voters", voters_text,
                       f"this node (node.id={node_id}) has the controller role, so it must "
                       "be one of the voters")
        return voters, ()
    key = "controller.quorum.bootstrap.servers"
    if "controller" in roles:
        # Ferry's quorum is static: a controller must know every voter from its config.
        raise ClusterConfigError(
            "a controller needs controller.quorum.voters (Ferry's quorum is static); "
            "controller.quorum.bootstrap.servers serves broker-only nodes", key=key)
    servers = tuple(_host_port(key, bootstrap_text, s.strip())
                    for s in bootstrap_text.split(",") if s.strip())
    return (), servers


def _required_listeners(text: str) -> tuple[Endpoint, ...]:
    if not text:
        raise ClusterConfigError(
            "listeners is required when process.roles is set, e.g. "
            "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093", key="listeners")
    return parse_listeners("listeners", text)


def _parse_controller_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip().upper() for n in text.split(",") if n.strip())
    if not names:
        raise ClusterConfigError(
            "controller.listener.names is required when process.roles is set, e.g. CONTROLLER",
            key="controller.listener.names")
    return names


def _check_controller_listeners(roles: frozenset[str], listeners: tuple[Endpoint, ...],
                                names: tuple[str, ...]) -> None:
    listed = {e.name for e in listeners}
    key = "controller.listener.names"
    if "controller" in roles and names[0] not in listed:
        raise _bad(key, ",".join(names), f"this node is a controller, so listeners must "
                   f"include {names[0]}://HOST:PORT")
    if "controller" not in roles and listed & set(names):
        raise _bad(key, ",".join(names), "a broker-only node must not listen on a "
                   "controller listener; remove it from listeners")


def _inter_broker_name(text: dict[str, str], roles: frozenset[str],
                       listeners: tuple[Endpoint, ...], controller_names: tuple[str, ...]
                       ) -> str:
    key = "inter.broker.listener.name"
    name = (text[key] or "PLAINTEXT").upper()
    if "broker" not in roles:
        return name
    if name in controller_names:
        raise _bad(key, name, "must not be a controller listener")
    if all(e.name != name for e in listeners):
        raise _bad(key, name, f"listeners has no {name}://HOST:PORT; add one or name an "
                   "existing listener")
    return name


def _check_protocols(text: str, listeners: tuple[Endpoint, ...],
                     controller_names: tuple[str, ...]) -> None:
    """Every listener has a known protocol; the controller's is PLAINTEXT (the metadata
    quorum speaks plain TCP). TLS and SASL of the others are the broker's
    (``core.broker.security``)."""
    key = "listener.security.protocol.map"
    protocols = dict(_DEFAULT_PROTOCOLS)
    for item in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, protocol = item.partition(":")
        if not sep:
            raise _bad(key, text, f"{item!r} is not NAME:PROTOCOL")
        protocols[name.strip().upper()] = protocol.strip().upper()
    for endpoint in listeners:
        protocol = protocols.get(endpoint.name)
        if protocol is None:
            raise _bad("listeners", str(endpoint), f"listener {endpoint.name} has no "
                       "security protocol; map it in listener.security.protocol.map")
        if protocol not in _PROTOCOLS:
            raise _bad(key, text, f"listener {endpoint.name} uses {protocol}, not one of "
                       f"{', '.join(_PROTOCOLS)}")
        if endpoint.name in controller_names and protocol != "PLAINTEXT":
            raise _bad(key, text, f"controller listener {endpoint.name} uses {protocol}; "
                       "Ferry's metadata quorum speaks PLAINTEXT only")


def _advertised(text: str, listeners: tuple[Endpoint, ...], controller_names: tuple[str, ...]
                ) -> tuple[Endpoint, ...]:
    key = "advertised.listeners"
    if not text:  # Kafka: the listeners, less the controller's, which brokers never advertise
        advertised = tuple(e for e in listeners if e.name not in controller_names)
    else:
        named = parse_listeners(key, text)
        for endpoint in named:
            if all(e.name != endpoint.name for e in listeners):
                raise _bad(key, text, f"{endpoint.name} is not one of the listeners")
        # A listener it leaves out is advertised as it listens (as the broker serves it).
        given = {e.name: e for e in named}
        advertised = tuple(given.get(e.name, e) for e in listeners
                           if e.name not in controller_names)
    for endpoint in advertised:
        if endpoint.host in ("0.0.0.0", "::") or (text and not endpoint.host):
            raise _bad(key, text or str(endpoint), f"{endpoint} is not an address a client "
                       "can reach; advertise a host name or IP")
        if endpoint.port == 0:
            raise _bad(key, text or str(endpoint), f"{endpoint} has port 0; advertise the "
                       "real port")
    return advertised


def _log_dir(text: str) -> str:
    dirs = [d.strip() for d in text.split(",") if d.strip()]
    if not dirs:
        raise ClusterConfigError("log.dirs is required when process.roles is set: the "
                                 "directory of this node's logs and metadata", key="log.dirs")
    if len(dirs) > 1:
        raise _bad("log.dirs", text, "a Ferry node keeps one log directory; name one")
    return dirs[0]
