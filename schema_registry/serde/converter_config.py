"""The config keys of the registry converters, declared once with Confluent's names.

``AvroConverter`` and ``JsonSchemaConverter`` read these from their ``key.converter.`` /
``value.converter.`` sub-keys, so a worker config written for Confluent's converters
works unchanged. Keys Ferry does not implement are not declared (and so ignored, as any
unknown key); the two that would change the data (``generalized.sum.type.support``,
``discard.type.doc.default``) are declared and refused when set to true.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from connect.api.config import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigType,
    Importance,
    LambdaValidator,
    Range,
)
from connect.api.errors import ConfigError
from schema_registry.serde.avro_names import AvroDataConfig
from schema_registry.serde.client import RegistryClient
from schema_registry.serde.client_options import OPTION_KEYS, RegistryClientOptions
from schema_registry.serde.json_from_connect import JsonSchemaDataConfig
from schema_registry.serde.strategies import SubjectNameStrategy, resolve_strategy

__all__ = [
    "AVRO_CONVERTER_CONFIG",
    "JSON_SCHEMA_CONVERTER_CONFIG",
    "RegistrySettings",
    "avro_data_config",
    "json_schema_data_config",
]

SCHEMA_REGISTRY_URL = "schema.registry.url"
DEFAULT_STRATEGY = "io.confluent.kafka.serializers.subject.TopicNameStrategy"


def _strategy_check(name: str, value: Any) -> None:
    try:
        resolve_strategy(str(value))
    except ValueError as exc:
        raise ConfigError(name, str(exc), value=value) from None


def _unsupported(name: str, value: Any) -> None:
    if value:
        raise ConfigError(name, "Ferry's converters do not implement this option; leave it "
                          "false", value=value)


_STRATEGY = LambdaValidator.with_(_strategy_check, "a subject name strategy class")
_FALSE_ONLY = LambdaValidator.with_(_unsupported, "false (true is not supported)")


def _common_def(schemas_cache_key: str) -> ConfigDef:
    """The keys both converters declare; Confluent's converters name the size of their
    schema caches differently (``schemas_cache_key``)."""
    return (
        ConfigDef()
        .define(SCHEMA_REGISTRY_URL, ConfigType.LIST, importance=Importance.HIGH,
                documentation="Comma-separated list of URLs of the Schema Registry "
                "instances, e.g. http://127.0.0.1:8081.")
        .define("basic.auth.credentials.source", ConfigType.STRING, default="URL",
                validator=CaseInsensitiveValidString.in_("URL", "USER_INFO"),
                importance=Importance.MEDIUM,
                documentation="Where HTTP basic auth credentials come from: URL (user:pass@ "
                "in schema.registry.url) or USER_INFO (basic.auth.user.info).")
        .define("basic.auth.user.info", ConfigType.PASSWORD, default="",
                importance=Importance.MEDIUM,
                documentation="user:password for HTTP basic auth, with "
                "basic.auth.credentials.source=USER_INFO.")
        .define("schema.registry.basic.auth.user.info", ConfigType.PASSWORD, default="",
                importance=Importance.LOW,
                documentation="The same as basic.auth.user.info (Confluent's alias).")
        .define("schema.registry.ssl.truststore.location", ConfigType.STRING, default="",
                importance=Importance.MEDIUM,
                documentation="PEM file of the CA certificates that sign the registry's "
                "HTTPS certificate (default: the system's CAs).")
        .define("schema.registry.ssl.keystore.location", ConfigType.STRING, default="",
                importance=Importance.LOW,
                documentation="PEM file with the unencrypted key and certificate this "
                "client presents when the registry asks for one.")
        .define("schema.registry.ssl.keystore.certificate.location", ConfigType.STRING,
                default="", importance=Importance.LOW,
                documentation="PEM certificate chain, when the keystore holds only the key.")
        .define("schema.registry.ssl.key.password", ConfigType.PASSWORD, default="",
                importance=Importance.LOW,
                documentation="Not supported: leave empty and give the key unencrypted.")
        .define("schema.registry.ssl.truststore.type", ConfigType.STRING, default="PEM",
                importance=Importance.LOW, documentation="PEM (the only type read).")
        .define("schema.registry.ssl.keystore.type", ConfigType.STRING, default="PEM",
                importance=Importance.LOW, documentation="PEM (the only type read).")
        .define("auto.register.schemas", ConfigType.BOOLEAN, default=True,
                importance=Importance.MEDIUM,
                documentation="Register the schema of written data under its subject.")
        .define("use.latest.version", ConfigType.BOOLEAN, default=False,
                importance=Importance.LOW,
                documentation="With auto.register.schemas false, write with the latest "
                "version of the subject instead of looking the schema up.")
        .define("latest.cache.ttl.sec", ConfigType.LONG, default=-1,
                importance=Importance.LOW,
                documentation="How long the latest version of a subject is cached (-1: "
                "until restart).")
        .define("normalize.schemas", ConfigType.BOOLEAN, default=False,
                importance=Importance.LOW,
                documentation="Ask the registry to normalize schemas when registering and "
                "looking up.")
        .define("use.schema.id", ConfigType.INT, default=-1, importance=Importance.LOW,
                documentation="Write every record with this schema id (-1: off).")
        .define("key.subject.name.strategy", ConfigType.STRING, default=DEFAULT_STRATEGY,
                validator=_STRATEGY, importance=Importance.MEDIUM,
                documentation="How the subject of key schemas is named: TopicNameStrategy, "
                "RecordNameStrategy or TopicRecordNameStrategy.")
        .define("value.subject.name.strategy", ConfigType.STRING, default=DEFAULT_STRATEGY,
                validator=_STRATEGY, importance=Importance.MEDIUM,
                documentation="How the subject of value schemas is named: TopicNameStrategy, "
                "RecordNameStrategy or TopicRecordNameStrategy.")
        .define("max.schemas.per.subject", ConfigType.INT, default=1000,
                validator=Range.at_least(1), importance=Importance.LOW,
                documentation="How many schemas the registry client caches.")
        .define("http.connect.timeout.ms", ConfigType.INT, default=60000,
                validator=Range.at_least(1), importance=Importance.LOW,
                documentation="Timeout for connecting to the registry.")
        .define("http.read.timeout.ms", ConfigType.INT, default=60000,
                validator=Range.at_least(1), importance=Importance.LOW,
                documentation="Timeout for reading a registry answer.")
        .define("ignore.default.for.nullables", ConfigType.BOOLEAN, default=False,
                importance=Importance.LOW,
                documentation="Write an unset optional field as null rather than its "
                "default.")
        .define("generalized.sum.type.support", ConfigType.BOOLEAN, default=False,
                validator=_FALSE_ONLY, importance=Importance.LOW,
                documentation="Confluent's generalized unions and enums: not supported.")
        .define(schemas_cache_key, ConfigType.INT, default=1000, validator=Range.at_least(1),
                importance=Importance.LOW,
                documentation="How many converted schemas are cached in each direction.")
    )


AVRO_CONVERTER_CONFIG = (
    _common_def("schemas.cache.config")
    .define("connect.meta.data", ConfigType.BOOLEAN, default=True, importance=Importance.LOW,
            documentation="Write and read the connect.* properties of Avro schemas.")
    .define("enhanced.avro.schema.support", ConfigType.BOOLEAN, default=False,
            importance=Importance.MEDIUM,
            documentation="Keep Avro enums as enums and use full names for union members.")
    .define("scrub.invalid.names", ConfigType.BOOLEAN, default=False,
            importance=Importance.MEDIUM,
            documentation="Replace characters that Avro names may not contain.")
    .define("allow.optional.map.keys", ConfigType.BOOLEAN, default=False,
            importance=Importance.LOW,
            documentation="Write maps with optional string keys as Avro maps.")
    .define("flatten.singleton.union", ConfigType.BOOLEAN, default=True,
            importance=Importance.LOW,
            documentation="Read a one-member Avro union as that member.")
    .define("discard.type.doc.default", ConfigType.BOOLEAN, default=False,
            validator=_FALSE_ONLY, importance=Importance.LOW,
            documentation="Confluent's deprecated doc/default handling: not supported.")
)

JSON_SCHEMA_CONVERTER_CONFIG = (
    _common_def("schemas.cache.size")
    .define("json.fail.invalid.schema", ConfigType.BOOLEAN, default=False,
            importance=Importance.MEDIUM,
            documentation="Validate every document against its schema, failing on a "
            "mismatch.")
    .define("object.additional.properties", ConfigType.BOOLEAN, default=True,
            importance=Importance.MEDIUM,
            documentation="Whether the object schemas written allow additional "
            "properties.")
    .define("use.optional.for.nonrequired", ConfigType.BOOLEAN, default=False,
            importance=Importance.MEDIUM,
            documentation="Read properties missing from 'required' as optional fields.")
    .define("decimal.format", ConfigType.STRING, default="BASE64",
            validator=CaseInsensitiveValidString.in_("BASE64", "NUMERIC"),
            importance=Importance.LOW,
            documentation="How decimals are written: BASE64 (Confluent's default) or "
            "NUMERIC.")
)


@dataclass(frozen=True)
class RegistrySettings:
    """The registry-related keys, parsed."""

    urls: tuple[str, ...]
    basic_auth: tuple[str, str] | None = field(repr=False)
    auto_register: bool
    use_latest_version: bool
    latest_ttl_s: float | None
    normalize: bool
    use_schema_id: int
    key_strategy: SubjectNameStrategy
    value_strategy: SubjectNameStrategy
    cache_capacity: int
    connect_timeout_s: float
    read_timeout_s: float
    client_options: RegistryClientOptions | None = None

    @classmethod
    def parse(cls, config: AbstractConfig) -> RegistrySettings:
        urls = tuple(config.get_list(SCHEMA_REGISTRY_URL) or ())
        if not urls:
            raise ConfigError(SCHEMA_REGISTRY_URL, "Missing Schema Registry URL: set "
                              "schema.registry.url, e.g. http://127.0.0.1:8081")
        try:
            client_options = RegistryClientOptions.from_props(
                urls, {key: config.get(key) for key in OPTION_KEYS})
        except ValueError as exc:
            key, _, problem = str(exc).partition(": ")
            raise ConfigError(key, problem) from None
        ttl = int(config.get("latest.cache.ttl.sec"))
        return cls(
            urls=client_options.urls,
            basic_auth=client_options.basic_auth,
            client_options=client_options,
            auto_register=bool(config.get_boolean("auto.register.schemas")),
            use_latest_version=bool(config.get_boolean("use.latest.version")),
            latest_ttl_s=None if ttl < 0 else float(ttl),
            normalize=bool(config.get_boolean("normalize.schemas")),
            use_schema_id=int(config.get("use.schema.id")),
            key_strategy=resolve_strategy(str(config.get_string("key.subject.name.strategy"))),
            value_strategy=resolve_strategy(
                str(config.get_string("value.subject.name.strategy"))),
            cache_capacity=int(config.get_int("max.schemas.per.subject") or 1000),
            connect_timeout_s=int(config.get_int("http.connect.timeout.ms") or 0) / 1000,
            read_timeout_s=int(config.get_int("http.read.timeout.ms") or 0) / 1000,
        )

    def client(self) -> RegistryClient:
        """A registry client for these settings."""
        try:
            options = self.client_options or RegistryClientOptions(self.urls, self.basic_auth)
            client: RegistryClient = options.client(
                timeout_s=self.read_timeout_s, connect_timeout_s=self.connect_timeout_s,
                cache_capacity=self.cache_capacity, latest_ttl_s=self.latest_ttl_s)
            return client
        except ValueError as exc:
            raise ConfigError(SCHEMA_REGISTRY_URL, str(exc), value=",".join(self.urls)) \
                from None


def avro_data_config(config: AbstractConfig) -> AvroDataConfig:
    """The ``AvroData`` options of an Avro converter config."""
    return AvroDataConfig(
        connect_meta_data=bool(config.get_boolean("connect.meta.data")),
        enhanced_avro_schema_support=bool(config.get_boolean("enhanced.avro.schema.support")),
        scrub_invalid_names=bool(config.get_boolean("scrub.invalid.names")),
        allow_optional_map_keys=bool(config.get_boolean("allow.optional.map.keys")),
        flatten_singleton_union=bool(config.get_boolean("flatten.singleton.union")),
        ignore_default_for_nullables=bool(config.get_boolean("ignore.default.for.nullables")),
        schemas_cache_size=int(config.get_int("schemas.cache.config") or 1000),
    )


def json_schema_data_config(config: AbstractConfig) -> JsonSchemaDataConfig:
    """The ``JsonSchemaData`` options of a JSON Schema converter config."""
    return JsonSchemaDataConfig(
        allow_additional_properties=bool(config.get_boolean("object.additional.properties")),
        use_optional_for_non_required=bool(config.get_boolean("use.optional.for.nonrequired")),
        decimal_numeric=str(config.get_string("decimal.format")).upper() == "NUMERIC",
        ignore_default_for_nullables=bool(config.get_boolean("ignore.default.for.nullables")),
        schemas_cache_size=int(config.get_int("schemas.cache.size") or 1000),
    )

