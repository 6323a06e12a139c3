"""ClusterConfig: Kafka's KRaft settings parsed, and every bad value one error naming its key."""

from __future__ import annotations

import pytest

from core.broker.config import parse_properties
from core.cluster.config import (
    ClusterConfig,
    ClusterConfigError,
    Endpoint,
    Voter,
    is_cluster_mode,
)

COMBINED = """
process.roles=broker,controller
node.id=2
controller.quorum.voters=1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097
listeners=PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9095
controller.listener.names=CONTROLLER
log.dirs=/var/ferry/node2
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
"""


def _settings(**changes: str | None) -> dict[str, object]:
    settings: dict[str, object] = dict(parse_properties(COMBINED))
    for key, value in changes.items():
        name = key.replace("_", ".")
        if value is None:
            settings.pop(name, None)
        else:
            settings[name] = value
    return settings


def test_a_combined_node_from_a_kafka_style_properties_file():
    config = ClusterConfig.parse(_settings())
    assert config.node_id == 2
    assert config.roles == {"broker", "controller"} and config.is_controller
    assert config.voters == (Voter(1, "127.0.0.1", 9093), Voter(2, "127.0.0.1", 9095),
                             Voter(3, "127.0.0.1", 9097))
    assert config.listener("CONTROLLER") == Endpoint("CONTROLLER", "127.0.0.1", 9095)
    # Kafka's default: the listeners less the controller's
    assert config.advertised_listeners == (Endpoint("PLAINTEXT", "127.0.0.1", 9094),)
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert (config.default_replication_factor, config.min_insync_replicas) == (3, 2)
    assert config.log_dir == "/var/ferry/node2"
    # Kafka's defaults for what the file leaves out
    assert config.unclean_leader_election_enable is False
    assert config.replica_lag_time_max_ms == 30000
    assert (config.broker_session_timeout_ms, config.broker_heartbeat_interval_ms) == (9000, 2000)
    # the replica fetcher's: 1 MiB per partition, 10 MiB per answer, answered from 1 byte
    assert (config.replica_fetch_max_bytes, config.replica_fetch_response_max_bytes,
            config.replica_fetch_min_bytes, config.replica_fetch_wait_max_ms) == (
        1048576, 10485760, 1, 500)
    tuned = ClusterConfig.parse(_settings(replica_fetch_response_max_bytes="52428800",
                                          replica_fetch_min_bytes="65536"))
    assert (tuned.replica_fetch_response_max_bytes, tuned.replica_fetch_min_bytes) == (
        52428800, 65536)


def test_cluster_mode_is_process_roles():
    assert is_cluster_mode(_settings())
    assert not is_cluster_mode({"node.id": "1", "listeners": "PLAINTEXT://:9092"})


def test_a_broker_only_node_with_bootstrap_servers():
    config = ClusterConfig.parse(_settings(
        process_roles="broker", controller_quorum_voters=None,
        controller_quorum_bootstrap_servers="127.0.0.1:9093,[::1]:9095",
        listeners="PLAINTEXT://127.0.0.1:9098", node_id="4"))
    assert config.is_broker and not config.is_controller
    assert config.bootstrap_servers == (("127.0.0.1", 9093), ("::1", 9095))


def test_aliases_json_scalars_and_advertised_listeners():
    config = ClusterConfig.parse(_settings(
        node_id=None, broker_id=2, log_dirs=None, log_dir="/d",
        unclean_leader_election_enable=True,
        advertised_listeners="PLAINTEXT://broker2.example:19094"))
    assert config.node_id == 2 and config.log_dir == "/d"
    assert config.unclean_leader_election_enable is True
    assert config.advertised_listeners == (Endpoint("PLAINTEXT", "broker2.example", 19094),)


@pytest.mark.parametrize(("changes", "key", "words"), [
    ({"process_roles": "broker,zookeeper"}, "process.roles", "unknown role"),
    ({"process_roles": "broker,broker"}, "process.roles", "twice"),
    ({"process_roles": " "}, "process.roles", "broker, controller"),
    ({"node_id": None}, "node.id", "required"),
    ({"node_id": "two"}, "node.id", "whole number"),
    ({"node_id": "-3"}, "node.id", "at least 0"),
    ({"node_id": "5"}, "controller.quorum.voters", "must be one of the voters"),
    ({"controller_quorum_voters": None}, "controller.quorum.voters", "required"),
    ({"controller_quorum_voters": "1@127.0.0.1:9093,1@127.0.0.1:9095"},
     "controller.quorum.voters", "appears twice"),
    ({"controller_quorum_voters": "1-127.0.0.1:9093"}, "controller.quorum.voters",
     "ID@HOST:PORT"),
    ({"controller_quorum_voters": "2@127.0.0.1:99999"}, "controller.quorum.voters", "port"),
    ({"controller_quorum_bootstrap_servers": "127.0.0.1:9093"},
     "controller.quorum.bootstrap.servers", "only one"),
    ({"controller_quorum_voters": None, "controller_quorum_bootstrap_servers": "h:9093"},
     "controller.quorum.bootstrap.servers", "controller needs controller.quorum.voters"),
    ({"listeners": None}, "listeners", "required"),
    ({"listeners": "127.0.0.1:9094"}, "listeners", "NAME://HOST:PORT"),
    ({"listeners": "PLAINTEXT://a:1,plaintext://b:2"}, "listeners", "appears twice"),
    ({"listeners": "PLAINTEXT://a:1,CONTROLLER://a:1"}, "listeners", "two listeners use"),
    ({"listeners": "PLAINTEXT://127.0.0.1:9094,INTERNAL://127.0.0.1:9095",
      "controller_listener_names": "INTERNAL"}, "listeners", "no security protocol"),
    ({"listener_security_protocol_map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
     "listener.security.protocol.map", "PLAINTEXT only"),
    ({"listener_security_protocol_map": "PLAINTEXT:KERBEROS"},
     "listener.security.protocol.map", "not one of"),
    ({"controller_listener_names": None}, "controller.listener.names", "required"),
    ({"controller_listener_names": "CTRL"}, "controller.listener.names",
     "must include CTRL"),
    ({"process_roles": "broker"}, "controller.listener.names", "must not listen"),
    ({"inter_broker_listener_name": "CONTROLLER"}, "inter.broker.listener.name",
     "controller listener"),
    ({"inter_broker_listener_name": "REPLICATION"}, "inter.broker.listener.name",
     "no REPLICATION"),
    ({"advertised_listeners": "PLAINTEXT://0.0.0.0:9094"}, "advertised.listeners",
     "not an address"),
    ({"advertised_listeners": "EXTERNAL://h:9094"}, "advertised.listeners",
     "not one of the listeners"),
    ({"listeners": "PLAINTEXT://0.0.0.0:0,CONTROLLER://127.0.0.1:9095"},
     "advertised.listeners", "not an address"),
    ({"log_dirs": None}, "log.dirs", "required"),
    ({"log_dirs": "/a,/b"}, "log.dirs", "one log directory"),
    ({"default_replication_factor": "0"}, "default.replication.factor", "at least 1"),
    ({"min_insync_replicas": "x"}, "min.insync.replicas", "whole number"),
    ({"unclean_leader_election_enable": "maybe"}, "unclean.leader.election.enable",
     "true or false"),
    ({"replica_lag_time_max_ms": "0"}, "replica.lag.time.max.ms", "at least 1"),
    ({"broker_heartbeat_interval_ms": "9000"}, "broker.heartbeat.interval.ms",
     "less than broker.session.timeout.ms"),
])
def test_each_bad_value_is_one_error_naming_its_key(changes, key, words):
    with pytest.raises(ClusterConfigError) as caught:
        ClusterConfig.parse(_settings(**changes))
    assert caught.value.key == key
    assert words in str(caught.value)


def test_min_isr_above_the_replication_factor_is_allowed_with_a_warning(caplog):
    # Kafka accepts it (acks=all writes then fail); a warning says so at start.
    config = ClusterConfig.parse(_settings(min_insync_replicas="4"))
    assert config.min_insync_replicas == 4
    assert "NOT_ENOUGH_REPLICAS" in caplog.text
