"""The Postgres CDC source's config keys (Debezium's names and defaults), parsed once.

``CONFIG_DEF`` declares every key; ``PostgresConfig.parse`` turns a connector or task
config into a frozen, typed object, so nothing below the connector reads raw strings.
"""

from __future__ import annotations

import importlib.metadata
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from connect.api import (
    AbstractConfig,
    CaseInsensitiveValidString,
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    NonEmptyString,
    Range,
    ValidList,
    ValidString,
)

__all__ = ["CONFIG_DEF", "DEBEZIUM_VERSION", "PostgresConfig", "TableId", "plugin_version"]

#: The Debezium release whose event format this connector writes (``source.version``
#: reports Ferry's own version; this is what the format follows).
DEBEZIUM_VERSION = "3.2"

SNAPSHOT_MODES = ("initial", "always", "initial_only", "no_data", "never", "when_needed")
ISOLATION_MODES = ("serializable", "repeatable_read", "read_committed", "read_uncommitted")

_G = "Postgres CDC"


def _d(cd: ConfigDef, name: str, type_: ConfigType, default: object, doc: str,
       validator: object = None, importance: Importance = Importance.MEDIUM) -> None:
    kwargs: dict[str, object] = {"importance": importance, "documentation": doc, "group": _G}
    if default is not _REQUIRED:
        kwargs["default"] = default
    if validator is not None:
        kwargs["validator"] = validator
    cd.define(name, type_, **kwargs)  # type: ignore[arg-type]


_REQUIRED = object()

CONFIG_DEF = ConfigDef()
_d(CONFIG_DEF, "database.hostname", ConfigType.STRING, _REQUIRED,
   "Resolvable hostname or IP address of the PostgreSQL server.", NonEmptyString(),
   Importance.HIGH)
_d(CONFIG_DEF, "database.port", ConfigType.INT, 5432, "Port of the PostgreSQL server.",
   Range.between(1, 65535), Importance.HIGH)
_d(CONFIG_DEF, "database.user", ConfigType.STRING, _REQUIRED,
   "Name of the PostgreSQL user (needs REPLICATION and SELECT on the captured tables).",
   NonEmptyString(), Importance.HIGH)
_d(CONFIG_DEF, "database.password", ConfigType.PASSWORD, None,
   "Password of the PostgreSQL user.", None, Importance.HIGH)
_d(CONFIG_DEF, "database.dbname", ConfigType.STRING, _REQUIRED,
   "The database to capture changes from.", NonEmptyString(), Importance.HIGH)
_d(CONFIG_DEF, "database.sslmode", ConfigType.STRING, "prefer",
   "libpq sslmode of the connections.",
   ValidString.in_("disable", "allow", "prefer", "require", "verify-ca", "verify-full"))
_d(CONFIG_DEF, "topic.prefix", ConfigType.STRING, _REQUIRED,
   "Prefix of every topic name; also the logical server name in the source block and "
   "the source partition.", NonEmptyString(), Importance.HIGH)
_d(CONFIG_DEF, "plugin.name", ConfigType.STRING, "pgoutput",
   "The logical decoding plugin; only PostgreSQL's built-in pgoutput is supported.",
   ValidString.in_("pgoutput"), Importance.HIGH)
_d(CONFIG_DEF, "slot.name", ConfigType.STRING, "debezium",
   "The logical replication slot, created if it does not exist.", NonEmptyString())
_d(CONFIG_DEF, "slot.drop.on.stop", ConfigType.BOOLEAN, False,
   "Drop the slot when the connector stops (development only: changes made while the "
   "connector is stopped are then lost).")
_d(CONFIG_DEF, "publication.name", ConfigType.STRING, "dbz_publication",
   "The publication whose tables are streamed.", NonEmptyString())
_d(CONFIG_DEF, "publication.autocreate.mode", ConfigType.STRING, "all_tables",
   "all_tables: create the publication FOR ALL TABLES (needs superuser); disabled: it "
   "must exist; filtered: create or alter it FOR the captured tables.",
   CaseInsensitiveValidString.in_("all_tables", "disabled", "filtered"))
for _name, _doc in (
        ("schema.include.list", "Regular expressions of the schemas to capture."),
        ("schema.exclude.list", "Regular expressions of the schemas not to capture."),
        ("table.include.list", "Regular expressions (schema.table) of the tables to "
                               "capture."),
        ("table.exclude.list", "Regular expressions (schema.table) of the tables not to "
                               "capture."),
        ("column.include.list", "Regular expressions (schema.table.column) of the "
                                "columns to emit."),
        ("column.exclude.list", "Regular expressions (schema.table.column) of the "
                                "columns not to emit."),
        ("message.prefix.include.list", "Regular expressions of the logical decoding "
                                        "message prefixes to emit (default: all)."),
        ("message.prefix.exclude.list", "Regular expressions of the logical decoding "
                                        "message prefixes not to emit.")):
    _d(CONFIG_DEF, _name, ConfigType.LIST, "", _doc)
_d(CONFIG_DEF, "message.key.columns", ConfigType.STRING, None,
   "Key columns per table instead of the primary key: "
   "'<schema>.<table>:<col>,<col>;<schema>.<table>:<col>' (the table part is a regex).")
_d(CONFIG_DEF, "snapshot.mode", ConfigType.STRING, "initial",
   "When to snapshot: initial, always, initial_only, no_data (never), when_needed.",
   CaseInsensitiveValidString.in_(*SNAPSHOT_MODES), Importance.HIGH)
_d(CONFIG_DEF, "snapshot.isolation.mode", ConfigType.STRING, "serializable",
   "Isolation level of the snapshot transaction when it cannot import the slot's "
   "exported snapshot.", CaseInsensitiveValidString.in_(*ISOLATION_MODES))
_d(CONFIG_DEF, "snapshot.fetch.size", ConfigType.INT, 10240,
   "Rows fetched at a time from the server-side cursor of the snapshot.", Range.at_least(1))
_d(CONFIG_DEF, "signal.data.collection", ConfigType.STRING, None,
   "The signal table '<schema>.<table>' (columns id, type, data) whose inserts, read "
   "from the WAL, trigger incremental snapshots (execute-snapshot, stop-snapshot) and "
   "carry their watermarks; the connector's user must be able to INSERT into it.")
_d(CONFIG_DEF, "signal.enabled.channels", ConfigType.LIST, "source",
   "Signal channels; only 'source' (the signal table) is supported.",
   ValidList.in_("source"))
_d(CONFIG_DEF, "incremental.snapshot.chunk.size", ConfigType.INT, 1024,
   "Rows read per chunk (window) of an incremental snapshot.", Range.at_least(1))
_d(CONFIG_DEF, "heartbeat.interval.ms", ConfigType.INT, 0,
   "Emit a heartbeat record this often (0 = never), so the slot advances on an idle "
   "or filtered database.", Range.at_least(0))
_d(CONFIG_DEF, "heartbeat.action.query", ConfigType.STRING, None,
   "SQL run on each heartbeat, to write WAL on an idle database.")
_d(CONFIG_DEF, "topic.heartbeat.prefix", ConfigType.STRING, "__debezium-heartbeat",
   "Prefix of the heartbeat topic: <prefix>.<topic.prefix>.", NonEmptyString())
_d(CONFIG_DEF, "tombstones.on.delete", ConfigType.BOOLEAN, True,
   "Follow each delete event with a tombstone (same key, null value).")
_d(CONFIG_DEF, "decimal.handling.mode", ConfigType.STRING, "precise",
   "numeric as precise (Connect Decimal), double or string.",
   CaseInsensitiveValidString.in_("precise", "double", "string"))
_d(CONFIG_DEF, "time.precision.mode", ConfigType.STRING, "adaptive",
   "Temporal types as adaptive, adaptive_time_microseconds or connect logical types.",
   CaseInsensitiveValidString.in_("adaptive", "adaptive_time_microseconds", "connect"))
_d(CONFIG_DEF, "interval.handling.mode", ConfigType.STRING, "numeric",
   "interval as numeric (io.debezium.time.MicroDuration, microseconds, months as 365.25/12 "
   "days) or string (io.debezium.time.Interval, ISO 8601 P..Y..M..DT..H..M..S).",
   CaseInsensitiveValidString.in_("numeric", "string"))
_d(CONFIG_DEF, "money.fraction.digits", ConfigType.INT, 2,
   "Scale of the decimal a money column becomes.", Range.at_least(0))
_d(CONFIG_DEF, "binary.handling.mode", ConfigType.STRING, "bytes",
   "bytea as bytes, base64, base64-url-safe or hex.",
   CaseInsensitiveValidString.in_("bytes", "base64", "base64-url-safe", "hex"))
_d(CONFIG_DEF, "include.unknown.datatypes", ConfigType.BOOLEAN, False,
   "Emit columns of types without a mapping as bytes of their text form instead of "
   "leaving them out.")
_d(CONFIG_DEF, "unavailable.value.placeholder", ConfigType.STRING,
   "__debezium_unavailable_value",
   "Stands for an unchanged TOASTed value that the WAL does not carry.")
_d(CONFIG_DEF, "skipped.operations", ConfigType.LIST, "t",
   "Operations not emitted: c, u, d, t, or none.",
   ValidList.in_("c", "u", "d", "t", "none"))
_d(CONFIG_DEF, "provide.transaction.metadata", ConfigType.BOOLEAN, False,
   "Add the transaction block to events and BEGIN/END records to <topic.prefix>."
   "transaction.")
_d(CONFIG_DEF, "topic.transaction", ConfigType.STRING, "transaction",
   "Suffix of the transaction metadata topic.", NonEmptyString())
_d(CONFIG_DEF, "max.batch.size", ConfigType.INT, 2048,
   "Most records one poll() returns.", Range.at_least(1))
_d(CONFIG_DEF, "max.queue.size", ConfigType.INT, 8192,
   "Most change records buffered between the database and poll(); must exceed "
   "max.batch.size.", Range.at_least(1))
_d(CONFIG_DEF, "poll.interval.ms", ConfigType.LONG, 500,
   "How long poll() waits for changes before returning none.", Range.at_least(1))
_d(CONFIG_DEF, "status.update.interval.ms", ConfigType.INT, 10000,
   "How often the confirmed LSN is reported to the server.", Range.at_least(1))
_d(CONFIG_DEF, "slot.max.retries", ConfigType.INT, 6,
   "Attempts to take over a slot that is active elsewhere.", Range.at_least(0))
_d(CONFIG_DEF, "slot.retry.delay.ms", ConfigType.LONG, 10000,
   "Wait between those attempts.", Range.at_least(0))


@cache
def plugin_version() -> str:
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True, slots=True)
class TableId:
    schema: str
    table: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.table}"


def _patterns(values: list[str] | None) -> tuple[re.Pattern[str], ...]:
    return tuple(re.compile(v.strip()) for v in values or () if v.strip())


def _matches(patterns: tuple[re.Pattern[str], ...], text: str) -> bool:
    return any(p.fullmatch(text) for p in patterns)


@dataclass(frozen=True)
class PostgresConfig:
    """A parsed, checked connector config."""

    hostname: str
    port: int
    user: str
    password: str | None
    dbname: str
    sslmode: str
    topic_prefix: str
    slot_name: str
    slot_drop_on_stop: bool
    publication_name: str
    publication_autocreate_mode: str
    schema_include: tuple[re.Pattern[str], ...]
    schema_exclude: tuple[re.Pattern[str], ...]
    table_include: tuple[re.Pattern[str], ...]
    table_exclude: tuple[re.Pattern[str], ...]
    column_include: tuple[re.Pattern[str], ...]
    column_exclude: tuple[re.Pattern[str], ...]
    key_columns: tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]
    snapshot_mode: str
    snapshot_isolation_mode: str
    snapshot_fetch_size: int
    heartbeat_interval_ms: int
    heartbeat_action_query: str | None
    heartbeat_topic: str
    tombstones_on_delete: bool
    decimal_handling_mode: str
    time_precision_mode: str
    binary_handling_mode: str
    include_unknown_datatypes: bool
    unavailable_value_placeholder: str
    skipped_operations: frozenset[str]
    provide_transaction_metadata: bool
    transaction_topic: str
    max_batch_size: int
    max_queue_size: int
    poll_interval_ms: int
    status_update_interval_ms: int
    slot_max_retries: int
    slot_retry_delay_ms: int
    retry_timeout_ms: int  # errors.retry.timeout; -1 = retry forever
    signal_table: TableId | None = None
    interval_handling_mode: str = "numeric"
    money_fraction_digits: int = 2
    message_prefix_include: tuple[re.Pattern[str], ...] = ()
    message_prefix_exclude: tuple[re.Pattern[str], ...] = ()
    incremental_chunk_size: int = 1024

    @staticmethod
    def parse(props: Mapping[str, str]) -> PostgresConfig:
        """Parse and check; raises ``ConfigError`` naming the key at fault."""
        c = AbstractConfig(CONFIG_DEF, props)
        s = c.get_string
        password = c.get_password("database.password")
        mode = s("snapshot.mode").lower()  # type: ignore[union-attr]
        if mode == "never":
            mode = "no_data"  # Debezium's deprecated spelling
        batch, queue = c.get_int("max.batch.size"), c.get_int("max.queue.size")
        assert batch is not None and queue is not None
        if queue <= batch:
            raise ConfigError("max.queue.size", f"max.queue.size ({queue}) must be larger "
                              f"than max.batch.size ({batch})", value=queue)
        lists = {name: _checked_patterns(name, c.get_list(name)) for name in (
            "schema.include.list", "schema.exclude.list", "table.include.list",
            "table.exclude.list", "column.include.list", "column.exclude.list",
            "message.prefix.include.list", "message.prefix.exclude.list")}
        for a, b in (("schema.include.list", "schema.exclude.list"),
                     ("message.prefix.include.list", "message.prefix.exclude.list"),
                     ("table.include.list", "table.exclude.list"),
                     ("column.include.list", "column.exclude.list")):
            if lists[a] and lists[b]:
                raise ConfigError(b, f"{a} and {b} cannot both be set", value=props.get(b))
        skipped = frozenset(c.get_list("skipped.operations") or ()) - {"none"}
        retry = props.get("errors.retry.timeout")
        try:
            retry_ms = -1 if retry is None or retry == "" else int(retry)
        except ValueError:
            raise ConfigError("errors.retry.timeout", "must be an integer (ms)",
                              value=retry) from None
        return PostgresConfig(
            hostname=s("database.hostname"),  # type: ignore[arg-type]
            port=c.get_int("database.port"),  # type: ignore[arg-type]
            user=s("database.user"),  # type: ignore[arg-type]
            password=None if password is None else password.value,
            dbname=s("database.dbname"),  # type: ignore[arg-type]
            sslmode=s("database.sslmode"),  # type: ignore[arg-type]
            topic_prefix=s("topic.prefix"),  # type: ignore[arg-type]
            slot_name=s("slot.name"),  # type: ignore[arg-type]
            slot_drop_on_stop=bool(c.get_boolean("slot.drop.on.stop")),
            publication_name=s("publication.name"),  # type: ignore[arg-type]
            publication_autocreate_mode=s("publication.autocreate.mode").lower(),  # type: ignore[union-attr]
            schema_include=lists["schema.include.list"],
            schema_exclude=lists["schema.exclude.list"],
            table_include=lists["table.include.list"],
            table_exclude=lists["table.exclude.list"],
            column_include=lists["column.include.list"],
            column_exclude=lists["column.exclude.list"],
            key_columns=_key_columns(s("message.key.columns")),
            snapshot_mode=mode,
            snapshot_isolation_mode=s("snapshot.isolation.mode").lower(),  # type: ignore[union-attr]
            snapshot_fetch_size=c.get_int("snapshot.fetch.size"),  # type: ignore[arg-type]
            heartbeat_interval_ms=c.get_int("heartbeat.interval.ms"),  # type: ignore[arg-type]
            heartbeat_action_query=s("heartbeat.action.query") or None,
            heartbeat_topic=f"{s('topic.heartbeat.prefix')}.{s('topic.prefix')}",
            tombstones_on_delete=bool(c.get_boolean("tombstones.on.delete")),
            decimal_handling_mode=s("decimal.handling.mode").lower(),  # type: ignore[union-attr]
            time_precision_mode=s("time.precision.mode").lower(),  # type: ignore[union-attr]
            binary_handling_mode=s("binary.handling.mode").lower(),  # type: ignore[union-attr]
            include_unknown_datatypes=bool(c.get_boolean("include.unknown.datatypes")),
            unavailable_value_placeholder=s("unavailable.value.placeholder"),  # type: ignore[arg-type]
            skipped_operations=skipped,
            provide_transaction_metadata=bool(c.get_boolean("provide.transaction.metadata")),
            transaction_topic=f"{s('topic.prefix')}.{s('topic.transaction')}",
            max_batch_size=batch,
            max_queue_size=queue,
            poll_interval_ms=int(c.get("poll.interval.ms")),
            status_update_interval_ms=c.get_int("status.update.interval.ms"),  # type: ignore[arg-type]
            slot_max_retries=c.get_int("slot.max.retries"),  # type: ignore[arg-type]
            slot_retry_delay_ms=int(c.get("slot.retry.delay.ms")),
            retry_timeout_ms=retry_ms,
            signal_table=_signal_table(s("signal.data.collection")),
            interval_handling_mode=s("interval.handling.mode").lower(),  # type: ignore[union-attr]
            money_fraction_digits=c.get_int("money.fraction.digits"),  # type: ignore[arg-type]
            message_prefix_include=lists["message.prefix.include.list"],
            message_prefix_exclude=lists["message.prefix.exclude.list"],
            incremental_chunk_size=c.get_int("incremental.snapshot.chunk.size"),  # type: ignore[arg-type]
        )

    def conninfo(self, *, replication: bool = False) -> str:
        """A libpq connection string; the session settings fix the text formats the
        value converters parse (ISO dates, UTC, shortest exact floats)."""
        from psycopg.conninfo import make_conninfo

        extra = {"replication": "database"} if replication else {}
        return make_conninfo(
            host=self.hostname, port=self.port, user=self.user, password=self.password,
            dbname=self.dbname, sslmode=self.sslmode, application_name="ferry-postgres-cdc",
            options="-c DateStyle=ISO -c TimeZone=UTC -c extra_float_digits=3 "
                    "-c IntervalStyle=iso_8601 -c bytea_output=hex",
            connect_timeout=10, **extra)

    def captures_table(self, table: TableId) -> bool:
        if self.schema_include and not _matches(self.schema_include, table.schema):
            return False
        if _matches(self.schema_exclude, table.schema):
            return False
        name = str(table)
        if self.table_include and not _matches(self.table_include, name):
            return False
        return not _matches(self.table_exclude, name)

    def captures_column(self, table: TableId, column: str) -> bool:
        name = f"{table}.{column}"
        if self.column_include and not _matches(self.column_include, name):
            return False
        return not _matches(self.column_exclude, name)

    def captures_message(self, prefix: str) -> bool:
        if self.message_prefix_include and not _matches(self.message_prefix_include, prefix):
            return False
        return not _matches(self.message_prefix_exclude, prefix)

    def key_columns_for(self, table: TableId) -> tuple[str, ...] | None:
        name = str(table)
        for pattern, columns in self.key_columns:
            if pattern.fullmatch(name):
                return columns
        return None


def _signal_table(text: str | None) -> TableId | None:
    if not text or not text.strip():
        return None
    schema, dot, table = text.strip().partition(".")
    if not dot or not schema or not table or "." in table:
        raise ConfigError("signal.data.collection",
                          f"{text!r} is not '<schema>.<table>' (e.g. public.debezium_signal)",
                          value=text)
    return TableId(schema.strip('"'), table.strip('"'))


def _checked_patterns(name: str, values: list[str] | None) -> tuple[re.Pattern[str], ...]:
    try:
        return _patterns(values)
    except re.error as exc:
        raise ConfigError(name, f"invalid regular expression: {exc}",
                          value=",".join(values or ())) from exc


def _key_columns(text: str | None) -> tuple[tuple[re.Pattern[str], tuple[str, ...]], ...]:
    if not text:
        return ()
    out = []
    for part in text.split(";"):
        if not part.strip():
            continue
        table, sep, cols = part.rpartition(":")
        columns = tuple(c.strip() for c in cols.split(",") if c.strip())
        if not sep or not table.strip() or not columns:
            raise ConfigError("message.key.columns",
                              f"{part.strip()!r} is not '<schema>.<table>:<column>[,...]'",
                              value=text)
        try:
            out.append((re.compile(table.strip()), columns))
        except re.error as exc:
            raise ConfigError("message.key.columns", f"invalid regular expression: {exc}",
                              value=text) from exc
    return tuple(out)
