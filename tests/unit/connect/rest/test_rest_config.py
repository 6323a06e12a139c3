"""``RestConfig`` from a worker config with Kafka's keys."""

from __future__ import annotations

import socket

import pytest

from connect.api.errors import ConfigError
from connect.rest import RestConfig


def test_defaults_bind_localhost_8083():
    config = RestConfig.from_worker_config({})
    assert (config.host, config.port) == ("127.0.0.1", 8083)
    assert config.topic_tracking_enable and config.admin_enabled


def test_listeners_first_http_listener_wins():
    config = RestConfig.from_worker_config({"listeners": "http://0.0.0.0:9000,http://:1"})
    assert (config.host, config.port) == ("0.0.0.0", 9000)
    assert RestConfig.from_worker_config({"listeners": "http://:8084"}).host == "0.0.0.0"


def test_old_rest_host_and_port_keys():
    config = RestConfig.from_worker_config({"rest.host.name": "10.0.0.1", "rest.port": "90"})
    assert (config.host, config.port) == ("10.0.0.1", 90)


def test_worker_id_uses_advertised_host_and_port():
    config = RestConfig.from_worker_config({"rest.advertised.host.name": "w1",
                                            "rest.advertised.port": "1234"})
    assert config.worker_id(8083) == "w1:1234"
    assert RestConfig().worker_id(5555) == "127.0.0.1:5555"
    assert RestConfig(host="0.0.0.0").worker_id(1) == f"{socket.gethostname()}:1"


@pytest.mark.parametrize(("props", "key"), [
    ({"listeners": "ftp://:8443"}, "listeners"),
    ({"listeners": "http://host"}, "listeners"),
    ({"rest.port": "eighty"}, "rest.port"),
    ({"rest.advertised.port": "70000"}, "rest.advertised.port"),
    ({"topic.tracking.enable": "maybe"}, "topic.tracking.enable"),
])
def test_bad_values_name_the_key(props, key):
    with pytest.raises(ConfigError) as info:
        RestConfig.from_worker_config(props)
    assert info.value.name == key
