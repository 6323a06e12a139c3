"""Kafka's client security settings, read in one place for Ferry's own clients: parsing
(errors name the key), the client side of PLAIN and SCRAM against the broker's mechanism
code, and their path into the kafka:// backend, Connect workers and the Spark options."""

from __future__ import annotations

import pytest

from core.backends.errors import InvalidConfigError
from core.backends.kafka.config import ClientConfig
from core.backends.security import ClientSecurity, ClientSecurityError, security_settings
from core.broker.security.plain import PlainServer
from core.broker.security.scram import ScramServer, credential_from_password


class _Broker:
    """Answers SaslHandshake/SaslAuthenticate with the broker's own mechanism code."""

    def __init__(self, server) -> None:
        self.server = server

    def roundtrip(self, request, version):
        from kafka.protocol.sasl import SaslAuthenticateResponse, SaslHandshakeResponse

        from core.broker.security.sasl_errors import SaslAuthenticationError

        if request.name == "SaslHandshakeRequest":
            ok = request.mechanism == getattr(self.server, "mechanism", "PLAIN")
            return SaslHandshakeResponse(error_code=0 if ok else 33, mechanisms=["PLAIN"])
        try:
            token = self.server.evaluate(bytes(request.auth_bytes))
        except SaslAuthenticationError as exc:
            return SaslAuthenticateResponse(error_code=58, error_message=str(exc),
                                            auth_bytes=b"", session_lifetime_ms=0)
        return SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=token,
                                        session_lifetime_ms=0)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_against_the_broker_mechanism(mechanism):
    credential = credential_from_password(mechanism, "s3cret,=", 4096)
    server = ScramServer(mechanism, lambda u, m: credential if u == "al=ice," else None)
    security = ClientSecurity.parse({"security.protocol": "SASL_SSL",
                                     "sasl.mechanism": mechanism,
                                     "sasl.username": "al=ice,", "sasl.password": "s3cret,="})
    security.authenticate(_Broker(server).roundtrip)
    assert server.complete and server.user == "al=ice,"
    wrong = ClientSecurity.parse({"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
                                  "sasl.username": "al=ice,", "sasl.password": "nope"})
    with pytest.raises(ClientSecurityError, match="Invalid user credentials"):
        wrong.authenticate(_Broker(ScramServer(mechanism, lambda u, m: credential)).roundtrip)


def test_plain_client_with_a_jaas_config():
    security = ClientSecurity.parse({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
                            'required username="alice" password="pw";'})
    server = PlainServer({"alice": "pw"}.get)
    security.authenticate(_Broker(server).roundtrip)
    assert server.user == "alice"


def test_settings_errors_name_their_key():
    for config, key in (({"security.protocol": "SASL_FOO"}, "security.protocol"),
                        ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI",
                          "sasl.username": "a"}, "sasl.mechanism"),
                        ({"security.protocol": "SASL_SSL"}, "sasl.username")):
        with pytest.raises(ClientSecurityError) as failure:
            ClientSecurity.parse(config)
        assert failure.value.key == key
        with pytest.raises(InvalidConfigError) as backend:
            ClientConfig.parse("kafka://127.0.0.1:9092", config)
        assert backend.value.key == key
    assert not ClientSecurity.parse({"ssl.endpoint.identification.algorithm": ""}).check_hostname
    assert ClientSecurity.parse({}).check_hostname


def test_settings_reach_the_backend_connect_and_spark():
    props = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
             "sasl.username": "w", "sasl.password": "p", "ssl.ca.location": "/ca.pem",
             "group.id": "connect-cluster", "offset.storage.topic": "o"}
    assert security_settings(props) == {k: v for k, v in props.items()
                                        if k.startswith(("security", "sasl", "ssl"))}
    config = ClientConfig.parse("kafka://127.0.0.1:9092", security_settings(props))
    assert config.security.protocol == "SASL_SSL" and config.security.username == "w"

    from connectors.spark.options import SourceOptions

    opts = SourceOptions.parse({"kafka.bootstrap.servers": "127.0.0.1:9093",
                                "subscribe": "t", "kafka.security.protocol": "SASL_SSL",
                                "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "s",
                                "kafka.sasl.password": "p"}, streaming=False)
    assert opts.client_config == {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                  "sasl.username": "s", "sasl.password": "p"}
