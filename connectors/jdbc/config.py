"""The JDBC connectors' declared config keys, with Confluent's names and defaults.

Keys shared by source and sink (the connection) are declared once in ``_connection``;
the source and sink definitions extend it. Parsed into frozen dataclasses by
``SourceConfig.parse`` / ``SinkConfig.parse`` so that tasks never see raw strings.
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Mapping
from functools import cache
from typing import Any

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    NonEmptyString,
    Password,
    Range,
    ValidString,
)

__all__ = [
    "SINK_CONFIG_DEF",
    "SOURCE_CONFIG_DEF",
    "ConnectionConfig",
    "SinkConfig",
    "SourceConfig",
    "plugin_version",
]

CONNECTION_URL = "connection.url"
CONNECTION_USER = "connection.user"
CONNECTION_PASSWORD = "connection.password"
CONNECTION_ATTEMPTS = "connection.attempts"
CONNECTION_BACKOFF_MS = "connection.backoff.ms"
QUOTE_SQL_IDENTIFIERS = "quote.sql.identifiers"
DB_TIMEZONE = "db.timezone"

MODES = ("bulk", "incrementing", "timestamp", "timestamp+incrementing")
INSERT_MODES = ("insert", "upsert", "update")
PK_MODES = ("none", "kafka", "record_key", "record_value")
NUMERIC_MAPPINGS = ("none", "best_fit", "precision_only")
#: Confluent's ``TimestampGranularity`` values, lower case as its config takes them.
TIMESTAMP_GRANULARITIES = ("connect_logical", "micros_long", "micros_string",
                           "micros_iso_datetime_string", "nanos_long", "nanos_string",
                           "nanos_iso_datetime_string")
#: Confluent's ``TransactionIsolationMode`` names (matched exactly, as its valueOf does).
ISOLATION_MODES = ("DEFAULT", "READ_UNCOMMITTED", "READ_COMMITTED", "REPEATABLE_READ",
                   "SERIALIZABLE", "SQL_SERVER_SNAPSHOT")
TRANSACTION_ISOLATION_MODE = "transaction.isolation.mode"
CATALOG_PATTERN = "catalog.pattern"

#: The key a task config carries: the JSON list of tables the task reads.
TASK_TABLES = "tables"


def _connection(definition: ConfigDef) -> ConfigDef:
    return (
        definition
        .define(CONNECTION_URL, ConfigType.STRING, validator=NonEmptyString(),
                importance=Importance.HIGH, group="Database",
                documentation="SQLAlchemy URL (postgresql+psycopg://host/db, sqlite:///f.db"
                ") or a JDBC URL of a common database (jdbc:postgresql://host:5432/db, "
                "jdbc:sqlite:path, jdbc:mysql://host/db), which is translated.")
        .define(CONNECTION_USER, ConfigType.STRING, default=None,
                importance=Importance.HIGH, group="Database",
                documentation="Database user; overrides a user in the URL.")
        .define(CONNECTION_PASSWORD, ConfigType.PASSWORD, default=None,
                importance=Importance.HIGH, group="Database",
                documentation="Database password; overrides one in the URL.")
        .define(CONNECTION_ATTEMPTS, ConfigType.INT, default=3, validator=Range.at_least(1),
                importance=Importance.LOW, group="Database",
                documentation="How many times to try to open a connection before failing.")
        .define(CONNECTION_BACKOFF_MS, ConfigType.LONG, default=10000,
                validator=Range.at_least(0), importance=Importance.LOW, group="Database",
                documentation="Wait between connection attempts, in milliseconds.")
        .define(QUOTE_SQL_IDENTIFIERS, ConfigType.STRING, default="always",
                validator=CaseInsensitiveValidString.in_("always", "never"),
                importance=Importance.MEDIUM, group="Database",
                documentation="Whether table and column names are quoted in SQL.")
        .define(DB_TIMEZONE, ConfigType.STRING, default="UTC", validator=NonEmptyString(),
                importance=Importance.MEDIUM, group="Database",
                documentation="IANA time zone of timestamps without a zone in the "
                "database.")
    )


SOURCE_CONFIG_DEF = (
    _connection(ConfigDef())
    .define("mode", ConfigType.STRING, default="",
            validator=CaseInsensitiveValidString.in_("", *MODES),
            importance=Importance.HIGH, group="Mode",
            documentation="bulk, incrementing, timestamp or timestamp+incrementing.")
    .define("incrementing.column.name", ConfigType.STRING, default="",
            importance=Importance.MEDIUM, group="Mode",
            documentation="Strictly increasing integer column (incrementing modes).")
    .define("timestamp.column.name", ConfigType.LIST, default="",
            importance=Importance.MEDIUM, group="Mode",
            documentation="Timestamp column(s); several are COALESCEd in order.")
    .define("timestamp.delay.interval.ms", ConfigType.LONG, default=0,
            validator=Range.at_least(0), importance=Importance.HIGH, group="Mode",
            documentation="Only rows whose timestamp is older than this are read, so "
            "transactions still in flight commit first. The guard against rows committed "
            "out of order in the timestamp modes.")
    .define("timestamp.initial", ConfigType.LONG, default=None,
            importance=Importance.LOW, group="Mode",
            documentation="Epoch ms to start the timestamp modes from when there is no "
            "offset; -1 is now. Default: read everything.")
    .define("validate.non.null", ConfigType.BOOLEAN, default=True,
            importance=Importance.LOW, group="Mode",
            documentation="Refuse incrementing/timestamp columns that are nullable.")
    .define("query", ConfigType.STRING, default="", importance=Importance.MEDIUM,
            group="Mode", documentation="Custom SELECT instead of tables; it is wrapped "
            "as a subquery so the mode's WHERE applies.")
    .define("table.include.list", ConfigType.LIST, default="",
            importance=Importance.MEDIUM, group="Database",
            documentation="Tables to read (name or schema.name); empty: all.")
    .define("table.exclude.list", ConfigType.LIST, default="",
            importance=Importance.MEDIUM, group="Database",
            documentation="Tables not to read.")
    .define("table.whitelist", ConfigType.LIST, default="", importance=Importance.LOW,
            group="Database", documentation="Older name of table.include.list.")
    .define("table.blacklist", ConfigType.LIST, default="", importance=Importance.LOW,
            group="Database", documentation="Older name of table.exclude.list.")
    .define("schema.pattern", ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            group="Database", documentation="Database schema to read tables from "
            "(default: the connection's default schema).")
    .define("table.types", ConfigType.LIST, default="TABLE", importance=Importance.LOW,
            group="Database", documentation="TABLE and/or VIEW.")
    .define("table.poll.interval.ms", ConfigType.LONG, default=60000,
            validator=Range.at_least(1), importance=Importance.LOW, group="Connector",
            documentation="How often to look for added or removed tables.")
    .define("topic.prefix", ConfigType.STRING, default="", importance=Importance.HIGH,
            group="Connector", documentation="Topic = prefix + table name (the topic "
            "itself in query mode).")
    .define("poll.interval.ms", ConfigType.INT, default=5000, validator=Range.at_least(1),
            importance=Importance.HIGH, group="Connector",
            documentation="Wait between queries of one table.")
    .define("batch.max.rows", ConfigType.INT, default=100, validator=Range.at_least(1),
            importance=Importance.LOW, group="Connector",
            documentation="Rows returned per poll.")
    .define("numeric.mapping", ConfigType.STRING, default="none",
            validator=CaseInsensitiveValidString.in_(*NUMERIC_MAPPINGS),
            importance=Importance.LOW, group="Mode",
            documentation="NUMERIC columns as Decimal (none), integers when the scale is "
            "0 (precision_only), or integers/doubles when they fit (best_fit).")
    .define("timestamp.granularity", ConfigType.STRING, default="connect_logical",
            validator=CaseInsensitiveValidString.in_(*TIMESTAMP_GRANULARITIES),
            importance=Importance.LOW, group="Connector",
            documentation="How timestamp columns appear in records: connect_logical "
            "(Connect Timestamp), nanos_long / micros_long (INT64 since the epoch), "
            "nanos_string / micros_string (the same as a decimal string), "
            "nanos_iso_datetime_string / micros_iso_datetime_string "
            "(yyyy-MM-ddTHH:mm:ss with 9 or 6 fraction digits, in db.timezone).")
    .define(TRANSACTION_ISOLATION_MODE, ConfigType.STRING, default="DEFAULT",
            validator=ValidString.in_(*ISOLATION_MODES), importance=Importance.LOW,
            group="Mode", documentation="Isolation level of the source's queries: "
            "DEFAULT (the database's), READ_UNCOMMITTED, READ_COMMITTED, REPEATABLE_READ, "
            "SERIALIZABLE, or SQL_SERVER_SNAPSHOT (SQL Server only).")
    .define(CATALOG_PATTERN, ConfigType.STRING, default=None, importance=Importance.MEDIUM,
            group="Database", documentation="LIKE pattern (% and _) the catalog (the "
            "database the connection is on) must match for its tables to be read; \"\" "
            "matches databases without catalogs (SQLite); unset: any.")
    .define("query.suffix", ConfigType.STRING, default="", importance=Importance.LOW,
            group="Mode", documentation="Text appended to every generated SELECT, after "
            "its ORDER BY (e.g. LIMIT 1000, FOR UPDATE SKIP LOCKED).")
)

SINK_CONFIG_DEF = (
    _connection(ConfigDef())
    .define("insert.mode", ConfigType.STRING, default="insert",
            validator=CaseInsensitiveValidString.in_(*INSERT_MODES),
            importance=Importance.HIGH, group="Writes",
            documentation="insert, upsert (dialect-native) or update.")
    .define("batch.size", ConfigType.INT, default=3000, validator=Range.at_least(1),
            importance=Importance.MEDIUM, group="Writes",
            documentation="Records written per statement batch, in one transaction.")
    .define("delete.enabled", ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            group="Writes", documentation="Tombstones delete the row with the record's "
            "key (needs pk.mode=record_key).")
    .define("table.name.format", ConfigType.STRING, default="${topic}",
            validator=NonEmptyString(), importance=Importance.MEDIUM, group="Data Mapping",
            documentation="Destination table; ${topic} is the record's topic.")
    .define("pk.mode", ConfigType.STRING, default="none",
            validator=CaseInsensitiveValidString.in_(*PK_MODES),
            importance=Importance.HIGH, group="Data Mapping",
            documentation="none, kafka, record_key or record_value.")
    .define("pk.fields", ConfigType.LIST, default="", importance=Importance.MEDIUM,
            group="Data Mapping", documentation="Primary key column names (see pk.mode).")
    .define("fields.include.list", ConfigType.LIST, default="",
            importance=Importance.MEDIUM, group="Data Mapping",
            documentation="Value fields to write; empty: all.")
    .define("fields.whitelist", ConfigType.LIST, default="", importance=Importance.LOW,
            group="Data Mapping", documentation="Older name of fields.include.list.")
    .define("auto.create", ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            group="DDL Support", documentation="CREATE TABLE from the record schema.")
    .define("auto.evolve", ConfigType.BOOLEAN, default=False, importance=Importance.MEDIUM,
            group="DDL Support", documentation="ALTER TABLE ADD for new optional fields.")
    .define("max.retries", ConfigType.INT, default=10, validator=Range.at_least(0),
            importance=Importance.MEDIUM, group="Retries",
            documentation="Retries of a batch that failed with a database error.")
    .define("retry.backoff.ms", ConfigType.INT, default=3000, validator=Range.at_least(0),
            importance=Importance.MEDIUM, group="Retries",
            documentation="Wait before a retry, in milliseconds.")
)


@dataclasses.dataclass(frozen=True)
class ConnectionConfig:
    """Where and how to connect; the password stays a ``Password`` (hidden in repr)."""

    url: str
    user: str | None
    password: Password | None
    attempts: int
    backoff_ms: int
    quote_identifiers: bool
    timezone: str


def _connection_config(values: Mapping[str, Any]) -> ConnectionConfig:
    return ConnectionConfig(
        url=values[CONNECTION_URL], user=values[CONNECTION_USER] or None,
        password=values[CONNECTION_PASSWORD], attempts=values[CONNECTION_ATTEMPTS],
        backoff_ms=values[CONNECTION_BACKOFF_MS],
        quote_identifiers=values[QUOTE_SQL_IDENTIFIERS].lower() == "always",
        timezone=values[DB_TIMEZONE])


def _check_timezone(name: str) -> None:
    import zoneinfo

    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(DB_TIMEZONE, "not a known IANA time zone", value=name) from exc


@dataclasses.dataclass(frozen=True)
class SourceConfig:
    """The source connector's config, parsed and cross-checked."""

    connection: ConnectionConfig
    mode: str
    incrementing_column: str
    timestamp_columns: tuple[str, ...]
    delay_ms: int
    timestamp_initial: int | None
    validate_non_null: bool
    query: str
    include: tuple[str, ...]
    exclude: tuple[str, ...]
    schema: str | None
    table_types: tuple[str, ...]
    table_poll_ms: int
    topic_prefix: str
    poll_ms: int
    batch_max_rows: int
    numeric_mapping: str
    timestamp_granularity: str = "connect_logical"
    isolation_mode: str = "DEFAULT"
    catalog_pattern: str | None = None
    query_suffix: str = ""

    @staticmethod
    def parse(props: Mapping[str, str]) -> SourceConfig:
        v = AbstractConfig(SOURCE_CONFIG_DEF, props).values()
        mode = v["mode"].lower()
        if not mode:
            raise ConfigError("mode", f"Missing required configuration \"mode\"; one of "
                              f"{', '.join(MODES)}")
        inc = v["incrementing.column.name"].strip()
        ts = tuple(c.strip() for c in v["timestamp.column.name"] if c.strip())
        if "incrementing" in mode and not inc:
            raise ConfigError("incrementing.column.name",
                              f"mode {mode} needs incrementing.column.name")
        if mode.startswith("timestamp") and not ts:
            raise ConfigError("timestamp.column.name", f"mode {mode} needs "
                              "timestamp.column.name")
        include = tuple(v["table.include.list"] or v["table.whitelist"])
        exclude = tuple(v["table.exclude.list"] or v["table.blacklist"])
        if include and exclude:
            raise ConfigError("table.exclude.list", "give table.include.list or "
                              "table.exclude.list, not both")
        types = tuple(t.strip().upper() for t in v["table.types"])
        if not set(types) <= {"TABLE", "VIEW"} or not types:
            raise ConfigError("table.types", "only TABLE and VIEW are supported",
                              value=",".join(types))
        query = v["query"].strip()
        if query and (include or exclude):
            raise ConfigError("query", "query mode reads no tables; remove "
                              "table.include.list/table.exclude.list")
        _check_timezone(v[DB_TIMEZONE])
        return SourceConfig(
            connection=_connection_config(v), mode=mode, incrementing_column=inc,
            timestamp_columns=ts, delay_ms=v["timestamp.delay.interval.ms"],
            timestamp_initial=v["timestamp.initial"],
            validate_non_null=v["validate.non.null"], query=query, include=include,
            exclude=exclude, schema=v["schema.pattern"] or None, table_types=types,
            table_poll_ms=v["table.poll.interval.ms"], topic_prefix=v["topic.prefix"],
            poll_ms=v["poll.interval.ms"], batch_max_rows=v["batch.max.rows"],
            numeric_mapping=v["numeric.mapping"].lower(),
            timestamp_granularity=v["timestamp.granularity"].lower(),
            isolation_mode=v[TRANSACTION_ISOLATION_MODE],
            catalog_pattern=v[CATALOG_PATTERN], query_suffix=v["query.suffix"].strip())


@dataclasses.dataclass(frozen=True)
class SinkConfig:
    """The sink connector's config, parsed and cross-checked."""

    connection: ConnectionConfig
    insert_mode: str
    batch_size: int
    delete_enabled: bool
    table_name_format: str
    pk_mode: str
    pk_fields: tuple[str, ...]
    fields_include: tuple[str, ...]
    auto_create: bool
    auto_evolve: bool
    max_retries: int
    retry_backoff_ms: int

    @staticmethod
    def parse(props: Mapping[str, str]) -> SinkConfig:
        v = AbstractConfig(SINK_CONFIG_DEF, props).values()
        pk_mode = v["pk.mode"].lower()
        pk_fields = tuple(f.strip() for f in v["pk.fields"] if f.strip())
        insert_mode = v["insert.mode"].lower()
        if v["delete.enabled"] and pk_mode != "record_key":
            raise ConfigError("delete.enabled", "Primary key mode must be 'record_key' "
                              "when delete support is enabled", value=True)
        if insert_mode in ("upsert", "update") and pk_mode == "none":
            raise ConfigError("pk.mode", f"insert.mode={insert_mode} needs a primary key; "
                              "set pk.mode to kafka, record_key or record_value",
                              value=pk_mode)
        if pk_mode == "kafka" and pk_fields and len(pk_fields) != 3:
            raise ConfigError("pk.fields", "pk.mode=kafka takes exactly 3 names (topic, "
                              "partition, offset columns) or none",
                              value=",".join(pk_fields))
        _check_timezone(v[DB_TIMEZONE])
        return SinkConfig(
            connection=_connection_config(v), insert_mode=insert_mode,
            batch_size=v["batch.size"], delete_enabled=v["delete.enabled"],
            table_name_format=v["table.name.format"], pk_mode=pk_mode,
            pk_fields=pk_fields,
            fields_include=tuple(f.strip() for f in
                                 (v["fields.include.list"] or v["fields.whitelist"])
                                 if f.strip()),
            auto_create=v["auto.create"], auto_evolve=v["auto.evolve"],
            max_retries=v["max.retries"], retry_backoff_ms=v["retry.backoff.ms"])


@cache
def plugin_version() -> str:
    """The Ferry distribution's version, which these connectors report."""
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
