"""Ferry's own registry clients against a secured registry (HTTPS with required client
certificates, Basic authentication), configured with Confluent's client settings: the
Avro converter (``basic.auth.credentials.source``/``basic.auth.user.info``,
``schema.registry.ssl.*``, credentials in the URL) and the Spark data source's registry
formats. Records written by Confluent's serializer through the same registry decode."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
from certificates import CertAuthority, Issued
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from connect.api.data import Schema, SchemaBuilder, Struct
from connect.api.errors import ConfigError, ConnectError
from connectors.spark.options import FerryOptionError, SourceOptions
from connectors.spark.registry_formats import registry_decoder
from schema_registry.serde import AvroConverter
from schema_registry.service import RegistryService

pytestmark = pytest.mark.integration

ORDER = (SchemaBuilder.struct().name("shop.Order")
         .field("id", Schema.INT64_SCHEMA).field("note", Schema.STRING_SCHEMA).build())


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[tuple[RegistryService, Path, Issued]]:
    tmp = tmp_path_factory.mktemp("sr-client-security")
    ca = CertAuthority(tmp / "pki")
    server = ca.issue("registry")
    users = tmp / "users"
    users.write_text("app: app-pw,developer\n")
    service = RegistryService(f"embedded:{tmp / 'log'}", listen="127.0.0.1:0", config={
        "listeners": "https://127.0.0.1:0",
        "ssl.keystore.location": str(server.key_and_cert),
        "ssl.truststore.location": str(ca.cert),
        "ssl.client.authentication": "REQUIRED",
        "authentication.method": "BASIC",
        "authentication.roles": "developer",
        "authentication.users.file": str(users),
        "kafkagroup.heartbeat.interval.ms": "500",
    })
    service.start(wait_ready=30)
    try:
        yield service, ca.cert, ca.issue("converter")
    finally:
        service.stop()


def tls_settings(ca: Path, client: Issued) -> dict[str, str]:
    return {"schema.registry.ssl.truststore.location": str(ca),
            "schema.registry.ssl.keystore.location": str(client.key_and_cert)}


def test_converter_with_user_info_and_client_certificate(secured) -> None:
    service, ca, client = secured
    conv = AvroConverter()
    conv.configure({"schema.registry.url": service.url,
                    "basic.auth.credentials.source": "USER_INFO",
                    "basic.auth.user.info": "app:app-pw", **tls_settings(ca, client)}, False)
    data = conv.from_connect_data("orders", ORDER, Struct(ORDER).put("id", 7).put("note", "x"))
    assert conv.to_connect_data("orders", data).value.get("id") == 7

    # Credentials in the URL (the default source) work the same, and never show in errors.
    by_url = AvroConverter()
    host = service.url.split("://", 1)[1]
    by_url.configure({"schema.registry.url": f"https://app:app-pw@{host}",
                      **tls_settings(ca, client)}, False)
    assert by_url.to_connect_data("orders", data).value.get("note") == "x"
    wrong = AvroConverter()
    wrong.configure({"schema.registry.url": f"https://app:guessed-pw@{host}",
                     **tls_settings(ca, client)}, False)
    with pytest.raises(ConnectError) as info:
        wrong.from_connect_data("other", ORDER, Struct(ORDER).put("id", 1).put("note", "y"))
    assert "401" in str(info.value) and "guessed-pw" not in str(info.value)


def test_converter_settings_name_the_bad_key(secured) -> None:
    service, _, _ = secured
    for configs, key in (
            ({"basic.auth.credentials.source": "USER_INFO", "basic.auth.user.info": "nocolon"},
             "basic.auth.user.info"),
            ({"schema.registry.ssl.truststore.location": "/nonexistent/ca.pem"},
             "schema.registry.ssl.truststore.location"),
            ({"schema.registry.ssl.keystore.type": "JKS"}, "schema.registry.ssl.keystore.type"),
            ({"schema.registry.ssl.key.password": "x"}, "schema.registry.ssl.key.password")):
        with pytest.raises(ConfigError) as info:
            AvroConverter().configure({"schema.registry.url": service.url, **configs}, False)
        assert info.value.name == key


def test_spark_registry_format_reads_through_the_secured_registry(secured) -> None:
    service, ca, client = secured
    confluent = SchemaRegistryClient({"url": service.url, "ssl.ca.location": str(ca),
                                      "ssl.certificate.location": str(client.cert),
                                      "ssl.key.location": str(client.key),
                                      "basic.auth.user.info": "app:app-pw"})
    schema = {"type": "record", "name": "Pay", "fields": [{"name": "cents", "type": "long"}]}
    record = AvroSerializer(confluent, json.dumps(schema))(
        {"cents": 250}, SerializationContext("pays", MessageField.VALUE))
    options = {"log": "kafka://127.0.0.1:9", "subscribe": "pays", "valueFormat": "avro",
               "schema.registry.url": service.url,
               "basic.auth.credentials.source": "USER_INFO",
               "basic.auth.user.info": "app:app-pw", **tls_settings(ca, client)}
    opts = SourceOptions.parse(options, streaming=False)
    decoder = registry_decoder(opts, "value", "avro")
    decoded = decoder.decode(pa.array([record], pa.binary()),
                             pa.struct([("cents", pa.int64())]))
    assert decoded.to_pylist() == [{"cents": 250}]
    with pytest.raises(FerryOptionError, match=r"basic\.auth\.credentials\.source"):
        SourceOptions.parse({**options, "basic.auth.credentials.source": "SASL_INHERIT"},
                            streaming=False)
    # Without the client certificate the registry cannot be reached: a planning error.
    bare = {k: v for k, v in options.items() if "keystore" not in k}
    with pytest.raises(FerryOptionError, match="cannot be reached"):
        registry_decoder(SourceOptions.parse(bare, streaming=False), "value", "avro")
