"""Data contracts and client-side field-level encryption, through Confluent's own client.

A ``ferry registry`` subprocess (on an ``embedded:`` log in a temporary directory) is
driven by confluent-kafka's ``SchemaRegistryClient`` and its Avro and JSON serializers with
rules: CEL conditions, JSONata migrations and field-level encryption with the client's local
KMS (the KMS the client ships for tests; no cloud KMS is involved). What the tests show:
metadata and rule sets are stored, versioned, returned and part of a schema's identity;
the client's rules run (a bad record is refused, an old record is upgraded, a tagged field
is written encrypted and read back decrypted, also produced and consumed through a real
Ferry broker); DEKs live in the registry and survive a kill -9 of it; guids resolve.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from broker_process import BrokerProcess, free_port
from confluent_kafka import Consumer, DeserializingConsumer, SerializingProducer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import (
    Metadata,
    MetadataProperties,
    MetadataTags,
    Rule,
    RuleKind,
    RuleMode,
    RuleParams,
    RuleSet,
    Schema,
    SchemaRegistryClient,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.rule_registry import RuleRegistry
from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor
from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import (
    FieldEncryptionExecutor,
)
from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import (
    LocalKmsDriver,
)
from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor
from confluent_kafka.schema_registry.schema_registry_client import ServerConfig
from confluent_kafka.schema_registry.serde import RuleConditionError
from confluent_kafka.serialization import (
    MessageField,
    SerializationContext,
    SerializationError,
)

from core.backends import open_backend

pytestmark = pytest.mark.integration

START_TIMEOUT_S = 30.0
#: The local KMS derives its key from this secret; the client must be given the same one.
KMS_SECRET = {"secret": "ferry-test-secret"}

LocalKmsDriver.register()


def rules() -> RuleRegistry:
    """The client's rule executors, fresh: an executor binds to the first registry URL it
    is configured with, and every test has its own registry."""
    registry = RuleRegistry()
    for executor in (CelExecutor(), JsonataExecutor(), FieldEncryptionExecutor()):
        registry.register_executor(executor)
    return registry


class RegistryProcess:
    """``ferry registry`` on a free port over the embedded log in ``log_dir`` (or over
    ``log_url``)."""

    def __init__(self, log_dir: Path, log_url: str | None = None) -> None:
        self.log_dir = log_dir
        self.log_url = log_url or f"embedded:{log_dir}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> RegistryProcess:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "core.cli", "registry", "--log", self.log_url,
             "--listen", f"127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"ferry registry exited: {self.proc.communicate()[1]!r}")
            try:
                if requests.get(self.url + "/dek-registry/v1/keks", timeout=2).ok:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.1)
        self.stop()
        raise AssertionError(f"ferry registry did not serve within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate()

    def kill(self) -> None:
        """kill -9: no shutdown at all."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()

    def client(self) -> SchemaRegistryClient:
        """A client with empty caches, so every answer comes from the server."""
        return SchemaRegistryClient({"url": self.url})


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[RegistryProcess]:
    process = RegistryProcess(tmp_path / "log").start()
    try:
        yield process
    finally:
        process.stop()


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def avro(name: str, *fields: dict[str, Any]) -> str:
    return json.dumps({"type": "record", "name": name, "fields": list(fields)})


def rule(name: str, kind: RuleKind, mode: RuleMode, rule_type: str, *, expr: str | None = None,
         tags: list[str] | None = None, params: dict[str, str] | None = None,
         on_failure: str | None = None) -> Rule:
    return Rule(name, None, kind, mode, rule_type, tags, RuleParams(params or {}), expr, None,
                on_failure, False)


def metadata(**properties: str) -> Metadata:
    return Metadata(None, MetadataProperties(properties), None)


def error_of(call: Callable[[], Any]) -> SchemaRegistryError:
    with pytest.raises(SchemaRegistryError) as info:
        call()
    return info.value


USER = avro("User", {"name": "name", "type": "string"}, {"name": "age", "type": "int"})
ADULT = rule("adult", RuleKind.CONDITION, RuleMode.WRITE, "CEL", expr="message.age >= 18")


# ------------------------------------------------------------------------------ the model


def test_metadata_and_rules_are_stored_versioned_returned_and_part_of_identity(registry):
    client = registry.client()
    md = Metadata(MetadataTags({"User.name": ["PII"]}), MetadataProperties({"owner": "team-a"}),
                  ["name"])
    first = client.register_schema_full_response(
        "users-value", Schema(USER, "AVRO", [], md, RuleSet(None, [ADULT])))
    assert (first.schema_id, first.version) == (1, 1) and first.guid

    fresh = registry.client()
    latest = fresh.get_latest_version("users-value")
    assert latest.schema.metadata.properties.properties == {"owner": "team-a"}
    assert latest.schema.metadata.tags.tags == {"User.name": ["PII"]}
    assert latest.schema.metadata.sensitive == ["name"]
    assert [r.expr for r in latest.schema.rule_set.domain_rules] == ["message.age >= 18"]
    assert fresh.get_schema(1).rule_set.domain_rules[0].name == "adult"
    by_guid = registry.client().get_schema_by_guid(first.guid)
    assert by_guid.schema_str == latest.schema.schema_str
    assert by_guid.rule_set.domain_rules[0].expr == "message.age >= 18"
    hex_form = requests.get(f"{registry.url}/schemas/guids/{first.guid.replace('-', '')}",
                            timeout=10)
    assert hex_form.json()["guid"] == first.guid

    # The same schema text with another rule set is another schema: a new id and version.
    strict = rule("adult", RuleKind.CONDITION, RuleMode.WRITE, "CEL", expr="message.age >= 21")
    second = client.register_schema_full_response(
        "users-value", Schema(USER, "AVRO", [], md, RuleSet(None, [strict])))
    assert (second.schema_id, second.version) == (2, 2)
    assert second.guid != first.guid
    # Registering the bare text again inherits the latest version's contracts, as
    # Confluent's registry does: it is that version, nothing new is written.
    again = registry.client().register_schema_full_response("users-value", Schema(USER, "AVRO"))
    assert (again.schema_id, again.version) == (2, 2)
    found = registry.client().lookup_schema("users-value", Schema(USER, "AVRO"))
    assert (found.schema_id, found.version) == (2, 2)
    assert registry.client().get_versions("users-value") == [1, 2]

    assert registry.client().get_latest_with_metadata(
        "users-value", {"owner": "team-a"}).version == 2
    assert error_of(lambda: registry.client().get_latest_with_metadata(
        "users-value", {"owner": "team-b"})).error_code == 40403
    assert error_of(lambda: registry.client().get_schema_by_guid(
        "00000000-0000-0000-0000-000000000000")).error_code == 40403

    # The _schemas record carries them under Confluent's field names.
    registry.stop()
    with open_backend(f"embedded:{registry.log_dir}") as backend:
        from core.backends import TopicPartition
        records = backend.fetch({TopicPartition("_schemas", 0): 0})[
            TopicPartition("_schemas", 0)].records
    values = [json.loads(r.value) for r in records if r.value and b'"schema"' in r.value]
    assert values[0]["metadata"] == {"tags": {"User.name": ["PII"]},
                                     "properties": {"owner": "team-a"}, "sensitive": ["name"]}
    assert values[0]["ruleSet"]["domainRules"][0] == {
        "name": "adult", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
        "expr": "message.age >= 18", "disabled": False}


def test_an_invalid_rule_set_is_refused_with_42210(registry):
    client = registry.client()
    duplicate = RuleSet(None, [ADULT, ADULT])
    info = error_of(lambda: client.register_schema(
        "users-value", Schema(USER, "AVRO", [], None, duplicate)))
    assert (info.http_status_code, info.error_code) == (422, 42210)
    assert "duplicate name 'adult'" in info.error_message
    wrong_mode = RuleSet([ADULT], None)  # a WRITE rule among the migration rules
    info = error_of(lambda: client.register_schema(
        "users-value", Schema(USER, "AVRO", [], None, wrong_mode)))
    assert info.error_code == 42210 and "UPGRADE, DOWNGRADE, UPDOWN" in info.error_message
    assert error_of(lambda: client.get_versions("users-value")).error_code == 40401


def test_config_default_and_override_rule_sets_merge_into_registrations(registry):
    client = registry.client()
    audit = rule("audit", RuleKind.CONDITION, RuleMode.WRITE, "CEL", expr="true")
    client.set_config("users-value", ServerConfig(
        default_rule_set=RuleSet(None, [ADULT]), override_metadata=metadata(owner="ops")))
    client.register_schema("users-value", Schema(USER, "AVRO", [], metadata(owner="me"),
                                                 RuleSet(None, [audit])))
    stored = registry.client().get_latest_version("users-value").schema
    assert [r.name for r in stored.rule_set.domain_rules] == ["adult", "audit"]
    assert stored.metadata.properties.properties == {"owner": "ops"}  # the override wins
    config = registry.client().get_config("users-value")
    assert config.default_rule_set.domain_rules[0].name == "adult"


# ------------------------------------------------------------------------------ the rules


def test_a_cel_condition_rule_refuses_a_bad_record(registry):
    client = registry.client()
    client.register_schema("users-value", Schema(USER, "AVRO", [], None, RuleSet(None, [ADULT])))
    serializer = AvroSerializer(registry.client(), USER, rule_registry=rules(),
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    good = serializer({"name": "ann", "age": 30}, ctx("users"))
    reader = AvroDeserializer(registry.client(), rule_registry=rules())
    assert reader(good, ctx("users")) == {"name": "ann", "age": 30}
    with pytest.raises(SerializationError) as info:
        serializer({"name": "bob", "age": 12}, ctx("users"))
    assert isinstance(info.value.__cause__, RuleConditionError)
    assert "message.age >= 18" in str(info.value.__cause__)


def test_a_migration_rule_upgrades_old_records_across_compatibility_groups(registry):
    client = registry.client()
    client.set_config("shoes-value",
                      ServerConfig(compatibility_group="application.major.version"))
    v1 = avro("Shoe", {"name": "size", "type": "int"})
    v2 = avro("Shoe", {"name": "height", "type": "int"})
    client.register_schema("shoes-value", Schema(v1, "AVRO", [],
                                                 metadata(**{"application.major.version": "1"})))
    # Renaming a field is incompatible within one group ...
    info = error_of(lambda: client.register_schema(
        "shoes-value", Schema(v2, "AVRO", [], metadata(**{"application.major.version": "1"}))))
    assert info.error_code == 409
    assert not client.test_compatibility(
        "shoes-value", Schema(v2, "AVRO", [], metadata(**{"application.major.version": "1"})))
    assert client.test_compatibility(
        "shoes-value", Schema(v2, "AVRO", [], metadata(**{"application.major.version": "2"})))
    # ... and allowed as the first version of the next group, with rules to migrate.
    upgrade = rule("sizeToHeight", RuleKind.TRANSFORM, RuleMode.UPGRADE, "JSONATA",
                   expr="$merge([$sift($, function($v, $k) {$k != 'size'}), "
                        "{'height': $.'size'}])")
    downgrade = rule("heightToSize", RuleKind.TRANSFORM, RuleMode.DOWNGRADE, "JSONATA",
                     expr="$merge([$sift($, function($v, $k) {$k != 'height'}), "
                          "{'size': $.'height'}])")
    client.register_schema("shoes-value", Schema(
        v2, "AVRO", [], metadata(**{"application.major.version": "2"}),
        RuleSet([upgrade, downgrade], None)))

    old_writer = AvroSerializer(registry.client(), v1, rule_registry=rules(), conf={
        "auto.register.schemas": False,
        "use.latest.with.metadata": {"application.major.version": "1"}})
    data = old_writer({"size": 42}, ctx("shoes"))
    assert data[1:5] == (1).to_bytes(4, "big")  # written with version 1's id
    new_reader = AvroDeserializer(registry.client(), rule_registry=rules(),
                                  conf={"use.latest.version": True})
    assert new_reader(data, ctx("shoes")) == {"height": 42}


# ------------------------------------------------------------------------------ encryption


def _encrypted_user_schema() -> Schema:
    text = avro("Person", {"name": "name", "type": "string"},
                {"name": "ssn", "type": "string", "confluent:tags": ["PII"]})
    encrypt = rule("encryptPII", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT",
                   tags=["PII"], on_failure="ERROR,NONE",
                   params={"encrypt.kek.name": "kek1", "encrypt.kms.type": "local-kms",
                           "encrypt.kms.key.id": "mykey"})
    return Schema(text, "AVRO", [], None, RuleSet(None, [encrypt]))


def test_field_level_encryption_writes_ciphertext_and_deks_survive_a_kill(registry):
    schema = _encrypted_user_schema()
    registry.client().register_schema("people-value", schema)
    serializer = AvroSerializer(registry.client(), schema.schema_str,
                                conf={"auto.register.schemas": False, "use.latest.version": True},
                                rule_conf=KMS_SECRET, rule_registry=rules())
    data = serializer({"name": "ann", "ssn": "123-45-6789"}, ctx("people"))
    assert b"ann" in data and b"123-45-6789" not in data

    deks = requests.get(f"{registry.url}/dek-registry/v1/keks/kek1/deks/people-value"
                        "/versions/latest", timeout=10).json()
    assert (deks["kekName"], deks["subject"], deks["version"]) == ("kek1", "people-value", 1)
    assert deks["algorithm"] == "AES256_GCM" and deks["encryptedKeyMaterial"]
    assert "keyMaterial" not in deks  # the registry never sees a usable key

    registry.kill()  # the DEK was acknowledged: it must survive even a kill -9
    registry.start()
    reader = AvroDeserializer(registry.client(), rule_conf=KMS_SECRET, rule_registry=rules())
    assert reader(data, ctx("people")) == {"name": "ann", "ssn": "123-45-6789"}
    # A reader without the encryption executor sees the stored ciphertext ("ERROR,NONE":
    # a failed decryption leaves the value as it is).
    plain = AvroDeserializer(registry.client(), rule_registry=RuleRegistry())
    stored = plain(data, ctx("people"))
    assert stored["name"] == "ann" and stored["ssn"] != "123-45-6789"


def test_json_schema_rules_encrypt_and_check_fields(registry):
    text = json.dumps({"type": "object", "title": "Card", "properties": {
        "holder": {"type": "string"},
        "number": {"type": "string", "confluent:tags": ["PII"]}}})
    encrypt = rule("encryptPII", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT",
                   tags=["PII"], params={"encrypt.kek.name": "kek-json",
                                         "encrypt.kms.type": "local-kms",
                                         "encrypt.kms.key.id": "mykey"})
    named = rule("named", RuleKind.CONDITION, RuleMode.WRITE, "CEL", expr="message.holder != ''")
    registry.client().register_schema("cards-value", Schema(text, "JSON", [], None,
                                                            RuleSet(None, [named, encrypt])))
    serializer = JSONSerializer(text, registry.client(), rule_conf=KMS_SECRET,
                                rule_registry=rules(),
                                conf={"auto.register.schemas": False, "use.latest.version": True})
    data = serializer({"holder": "ann", "number": "4111-1111"}, ctx("cards"))
    assert b"ann" in data and b"4111-1111" not in data
    with pytest.raises(SerializationError):
        serializer({"holder": "", "number": "4111-1111"}, ctx("cards"))
    reader = JSONDeserializer(None, schema_registry_client=registry.client(),
                              rule_conf=KMS_SECRET, rule_registry=rules())
    assert reader(data, ctx("cards")) == {"holder": "ann", "number": "4111-1111"}


def test_records_through_a_broker_hold_ciphertext_and_a_consumer_decrypts(tmp_path: Path):
    """Producer and consumer through a real Ferry broker; the registry keeps its topics on
    that broker too (``kafka://``) and is killed between producing and consuming."""
    broker = BrokerProcess(tmp_path / "broker-data", {"group.initial.rebalance.delay.ms": "0"},
                           tmp_path / "broker.log")
    broker.start()
    registry = RegistryProcess(tmp_path, f"kafka://{broker.bootstrap}")
    try:
        registry.start()
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("people", 1, 1)])["people"].result(30)
        schema = _encrypted_user_schema()
        registry.client().register_schema("people-value", schema)
        producer = SerializingProducer({
            "bootstrap.servers": broker.bootstrap,
            "value.serializer": AvroSerializer(
                registry.client(), schema.schema_str, rule_conf=KMS_SECRET,
                rule_registry=rules(),
                conf={"auto.register.schemas": False, "use.latest.version": True})})
        producer.produce("people", value={"name": "ann", "ssn": "123-45-6789"})
        assert producer.flush(30) == 0

        raw = _consume_one(Consumer, {"group.id": "raw"}, broker.bootstrap)
        assert b"ann" in raw and b"123-45-6789" not in raw

        registry.kill()
        registry.start()
        value = _consume_one(DeserializingConsumer, {
            "group.id": "decrypting",
            "value.deserializer": AvroDeserializer(registry.client(), rule_conf=KMS_SECRET,
                                                   rule_registry=rules())}, broker.bootstrap)
        assert value == {"name": "ann", "ssn": "123-45-6789"}
    finally:
        registry.stop()
        broker.stop()


def _consume_one(kind: Any, conf: dict[str, Any], bootstrap: str) -> Any:
    consumer = kind({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", **conf})
    try:
        consumer.subscribe(["people"])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message.value()
        raise AssertionError("no record consumed within 30 s")
    finally:
        consumer.close()


# ------------------------------------------------------------------------------ DEK API


def test_dek_registry_lifecycle_and_error_codes(registry):
    api = f"{registry.url}/dek-registry/v1"

    def call(method: str, path: str, body: Any = None, **params: str) -> requests.Response:
        return requests.request(method, api + path, json=body, params=params, timeout=10)

    def code(response: requests.Response) -> tuple[int, int]:
        return response.status_code, response.json()["error_code"]

    kek = {"name": "k1", "kmsType": "aws-kms", "kmsKeyId": "arn:aws:kms:k", "doc": "d"}
    created = call("POST", "/keks", kek)
    assert created.status_code == 200 and created.json()["kmsType"] == "aws-kms"
    assert code(call("POST", "/keks", {**kek, "doc": "other"})) == (409, 40971)
    assert code(call("POST", "/keks", {"name": "k2", "kmsType": "x"})) == (422, 42271)
    assert code(call("GET", "/keks/missing")) == (404, 40470)
    assert call("PUT", "/keks/k1", {"doc": "new"}).json()["doc"] == "new"

    assert code(call("POST", "/keks/k1/deks/s", {"version": 1})) == (422, 42271)
    dek = {"version": 1, "encryptedKeyMaterial": "AAAA"}
    assert call("POST", "/keks/k1/deks/s", dek).json()["version"] == 1
    assert call("POST", "/keks/k1/deks/s", {**dek, "version": 2}).status_code == 200
    assert code(call("POST", "/keks/k1/deks/s", dek)) == (409, 40971)
    assert call("GET", "/keks/k1/deks").json() == ["s"]
    assert call("GET", "/keks/k1/deks/s/versions").json() == [1, 2]
    assert call("GET", "/keks/k1/deks/s/versions/latest").json()["version"] == 2
    assert call("GET", "/keks/k1/deks/s").json()["version"] == 1

    assert code(call("DELETE", "/keks/k1")) == (422, 42272)  # DEKs still use it
    assert code(call("DELETE", "/keks/k1/deks/s/versions/2", permanent="true")) == (404, 40471)
    assert call("DELETE", "/keks/k1/deks/s/versions/2").status_code == 204
    assert call("GET", "/keks/k1/deks/s/versions").json() == [1]
    assert call("POST", "/keks/k1/deks/s/versions/2/undelete").status_code == 204
    assert call("DELETE", "/keks/k1/deks/s").status_code == 204
    assert code(call("GET", "/keks/k1/deks/s/versions/1")) == (404, 40470)
    assert call("GET", "/keks/k1/deks/s/versions/1", deleted="true").json()["deleted"] is True
    assert call("DELETE", "/keks/k1").status_code == 204
    assert code(call("GET", "/keks/k1")) == (404, 40470)
    assert code(call("DELETE", "/keks/k1", permanent="true")) == (422, 42272)
    assert call("DELETE", "/keks/k1/deks/s", permanent="true").status_code == 204
    assert call("GET", "/keks/k1/deks/s/versions", deleted="true").json() == []
    assert call("DELETE", "/keks/k1", permanent="true").status_code == 204
    assert code(call("GET", "/keks/k1", deleted="true")) == (404, 40470)
    assert call("GET", "/keks", deleted="true").json() == []

    # A shared KEK would ask the registry to make the DEK with a KMS it does not have.
    call("POST", "/keks", {**kek, "name": "shared", "shared": True})
    refused = call("POST", "/keks/shared/deks/s", {})
    assert code(refused) == (422, 42271) and "no KMS access" in refused.json()["message"]


def test_associations_are_read_as_empty_and_cannot_be_written(registry):
    assert requests.get(f"{registry.url}/associations/subjects/s", timeout=10).json() == []
    response = requests.post(f"{registry.url}/associations", json={"subject": "s"}, timeout=10)
    assert response.status_code == 501 and response.json()["error_code"] == 50101
    assert "not supported" in response.json()["message"]


def test_a_schema_sent_without_its_confluent_version_is_that_version(registry):
    client = registry.client()
    versioned = Schema(USER, "AVRO", [], metadata(**{"confluent:version": "1"}))
    first = client.register_schema_full_response("users-value", versioned)
    assert first.version == 1
    again = registry.client().register_schema_full_response("users-value", Schema(USER, "AVRO"))
    assert (again.schema_id, again.version) == (first.schema_id, 1)
    found = registry.client().lookup_schema("users-value", Schema(USER, "AVRO"))
    assert found.version == 1
    assert registry.client().get_versions("users-value") == [1]


def test_a_rule_set_alone_makes_a_new_version_of_the_latest_schema(registry):
    registry.client().register_schema("users-value", Schema(USER, "AVRO"))
    body = {"ruleSet": {"domainRules": [{"name": "adult", "kind": "CONDITION", "mode": "WRITE",
                                          "type": "CEL", "expr": "message.age >= 18"}]}}
    response = requests.post(f"{registry.url}/subjects/users-value/versions", json=body,
                             timeout=10)
    assert response.status_code == 200, response.text
    assert (response.json()["id"], response.json()["version"]) == (2, 2)
    latest = registry.client().get_latest_version("users-value")
    assert json.loads(latest.schema.schema_str) == json.loads(USER)
    assert latest.schema.rule_set.domain_rules[0].name == "adult"
    empty = requests.post(f"{registry.url}/subjects/nobody-value/versions", json=body,
                          timeout=10)
    assert empty.status_code == 422 and empty.json()["error_code"] == 42201
