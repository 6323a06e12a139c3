"""``ferry acls`` and ``ferry quotas`` mistakes: one line on stderr and exit 1, never a
traceback (the commands' successful paths run in tests/integration/broker/
test_acls_clients.py and test_quotas_clients.py against real brokers)."""

from __future__ import annotations

from pathlib import Path

import pytest
from broker_process import free_port

from core.cli.admin_requests import client_settings
from core.cli.main import main as ferry


@pytest.mark.parametrize("argv, message", [
    (["acls", "add", "--topic", "t", "--operation", "Read"], "principal"),
    (["acls", "add", "--allow-principal", "User:a", "--operation", "Read"], "resource"),
    (["acls", "add", "--allow-principal", "alice", "--topic", "t", "--operation", "Read"],
     "Type:name"),
    (["acls", "add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Fly"],
     "unknown operation"),
    (["acls", "add", "--allow-principal", "User:a", "--topic", "t", "--consumer"], "--group"),
    (["acls", "list"], "cannot connect"),
    (["quotas", "alter", "--add-config", "producer_byte_rate=1"], "entity"),
    (["quotas", "alter", "--user", "a"], "nothing to change"),
    (["quotas", "alter", "--user", "a", "--add-config", "producer_byte_rate"], "KEY=NUMBER"),
    (["quotas", "describe"], "cannot connect"),
])
def test_mistakes_are_one_line(argv, message, capsys):
    where = f"127.0.0.1:{free_port()}"  # nothing listens there
    assert ferry([*argv[:2], "--bootstrap-server", where, *argv[2:]]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("servers, message", [
    ("{free},{free2}", "cannot connect to"),  # a cluster's brokers, none answering
    ("{free},broker-without-port", "'broker-without-port': expected HOST:PORT"),
])
def test_several_bootstrap_brokers_are_checked_each(servers, message, capsys):
    where = servers.format(free=f"127.0.0.1:{free_port()}", free2=f"127.0.0.1:{free_port()}")
    assert ferry(["acls", "list", "--bootstrap-server", where]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_command_config_takes_kafka_client_settings(tmp_path: Path, capsys):
    settings = {"security.protocol": "sasl_plaintext", "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                    'required username="admin" password="s3cret";'}
    assert client_settings(settings) == {
        "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "admin", "sasl_plain_password": "s3cret"}
    path = tmp_path / "admin.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\n"
                    "sasl.username=a\nsasl.password=b\n")
    assert ferry(["acls", "list", "--bootstrap-server", "127.0.0.1:1",
                  "--command-config", str(path)]) == 1
    assert "sasl.mechanism" in capsys.readouterr().err
