"""The options of ``format("ferry")``, checked on the driver before any task runs.

Names and meanings follow Spark's Kafka source (``KafkaSourceProvider``) so that a job
moves over by changing the format name: ``subscribe`` | ``subscribePattern`` | ``assign``,
``startingOffsets``/``endingOffsets`` (``earliest``, ``latest`` or
``{"topic":{"0":23,"1":-2}}`` with -2 = earliest, -1 = latest), the timestamp options,
``failOnDataLoss``, ``includeHeaders``, ``minPartitions``, ``maxRecordsPerPartition``,
``maxOffsetsPerTrigger``. ``kafka.bootstrap.servers`` stands for ``log=kafka://...``.

Spark hands a data source its options as a case-insensitive map of strings; every check
here raises ``FerryOptionError`` naming the option, which Spark reports at planning time.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.backends.security import security_settings

__all__ = [
    "EARLIEST",
    "LATEST",
    "FerryOptionError",
    "SinkOptions",
    "SourceOptions",
    "log_url",
    "parse_offsets_json",
]

log = logging.getLogger(__name__)

#: Spark's sentinel offsets in offset JSON.
EARLIEST = -2
LATEST = -1

LOG_ENV_VAR = "FERRY_LOG"

_COMMON = {"log", "kafka.bootstrap.servers", "valueformat", "keyformat",
           "schema.registry.url", "schemaregistryurl", "valueschemaversion",
           "keyschemaversion", "mode"}
_SOURCE = _COMMON | {
    "subscribe", "subscribepattern", "assign", "startingoffsets", "endingoffsets",
    "startingtimestamp", "startingoffsetsbytimestamp", "endingtimestamp",
    "endingoffsetsbytimestamp", "startingoffsetsbytimestampstrategy", "failondataloss",
    "includeheaders", "minpartitions", "maxrecordsperpartition", "maxoffsetspertrigger",
    "minoffsetspertrigger", "maxtriggerdelay", "committogroup",
    "fetch.maxbytes", "groupidprefix", "kafka.group.id", "path",
}
#: Spark hands a stream writer the query's own settings as options too.
_SINK = _COMMON | {"topic", "checkpointlocation", "path", "batchsize", "queryname"}
#: Kafka client settings that Spark's source refuses because it manages them itself.
_REFUSED = {"kafka.auto.offset.reset", "kafka.key.deserializer", "kafka.value.deserializer",
            "kafka.enable.auto.commit", "kafka.interceptor.classes", "kafka.key.serializer",
            "kafka.value.serializer"}
_FORMATS = {"raw", "binary", "avro", "json-schema", "json"}


_CAMEL = ["subscribePattern", "startingOffsets", "endingOffsets", "startingTimestamp",
          "startingOffsetsByTimestamp", "endingTimestamp", "endingOffsetsByTimestamp",
          "startingOffsetsByTimestampStrategy", "failOnDataLoss", "includeHeaders",
          "minPartitions", "maxRecordsPerPartition", "maxOffsetsPerTrigger", "valueFormat",
          "keyFormat", "schemaRegistryUrl", "valueSchemaVersion", "keySchemaVersion",
          "checkpointLocation", "batchSize", "groupIdPrefix", "minOffsetsPerTrigger",
          "maxTriggerDelay", "commitToGroup"]
#: Spark lower-cases option names; messages use the documented spelling.
_DISPLAY = {name.lower(): name for name in _CAMEL}


def _shown(name: str) -> str:
    return _DISPLAY.get(name, name)


class FerryOptionError(ValueError):
    """A bad option of ``format("ferry")``; the message names the option."""


def log_url(options: Mapping[str, str]) -> str:
    """``log``, else ``kafka.bootstrap.servers`` as ``kafka://...``, else ``$FERRY_LOG``.

    ``embedded:`` is refused: its directory is locked by one process, and Spark calls a data
    source from several (driver workers, executors)."""
    url = options.get("log") or ""
    servers = options.get("kafka.bootstrap.servers") or ""
    if url and servers:
        raise FerryOptionError("give either option 'log' or 'kafka.bootstrap.servers', not both")
    if servers:
        url = "kafka://" + servers.strip()
    url = url or os.environ.get(LOG_ENV_VAR, "")
    if not url:
        raise FerryOptionError(
            "option 'log' is required: the Ferry log URL, e.g. kafka://127.0.0.1:9092 "
            f"(or set 'kafka.bootstrap.servers' or ${LOG_ENV_VAR})")
    if url.startswith("embedded:"):
        raise FerryOptionError(
            f"option 'log': {url!r} cannot be used from Spark: an embedded log directory is "
            "locked by one process, while Spark opens the log from the driver and from every "
            "executor. Run `ferry broker` (or `ferry up`) on it and use kafka://HOST:PORT")
    return url


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items() if v is not None}


def _check_names(opts: Mapping[str, str], allowed: set[str], what: str) -> None:
    for name in opts:
        if name in _REFUSED:
            raise FerryOptionError(
                f"option {name!r} is not supported: the ferry {what} manages it itself")
        if name in allowed or name.startswith("kafka."):
            continue
        raise FerryOptionError(
            f"unknown option {name!r} for the ferry {what}; known options: "
            + ", ".join(sorted(_shown(n) for n in allowed)))


def _client_config(opts: Mapping[str, str]) -> dict[str, str]:
    """Spark's convention: ``kafka.``-prefixed options are Kafka client settings; the
    security ones reach the kafka:// backend."""
    return security_settings({k[len("kafka."):]: v for k, v in opts.items()
                              if k.startswith("kafka.")})


def _bool(opts: Mapping[str, str], name: str, default: bool) -> bool:
    raw = opts.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise FerryOptionError(f"option {_shown(name)!r} must be true or false, not {raw!r}")


def _int(opts: Mapping[str, str], name: str, minimum: int = 1) -> int | None:
    raw = opts.get(name)
    if raw is None:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise FerryOptionError(
            f"option {_shown(name)!r} must be an integer, not {raw!r}") from None
    if value < minimum:
        raise FerryOptionError(
            f"option {_shown(name)!r} must be at least {minimum}, not {value}")
    return value


def parse_offsets_json(name: str, raw: str) -> dict[str, dict[int, int]]:
    """``{"topic":{"0":23}}`` → ``{"topic": {0: 23}}``; errors name the option."""
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FerryOptionError(
            f"option {name!r} is not valid JSON ({exc.msg} at char {exc.pos}); expected "
            'earliest, latest or {"topic":{"0":23,"1":-2}}') from None
    if not isinstance(parsed, dict):
        raise FerryOptionError(f'option {name!r} must be a JSON object like {{"topic":{{"0":23}}}}')
    out: dict[str, dict[int, int]] = {}
    for topic, parts in parsed.items():
        if not isinstance(parts, dict):
            raise FerryOptionError(
                f"option {name!r}: topic {topic!r} must map partitions to numbers")
        try:
            out[topic] = {int(p): int(o) for p, o in parts.items()}
        except (TypeError, ValueError):
            raise FerryOptionError(
                f"option {name!r}: topic {topic!r} has a non-integer partition or value"
            ) from None
    return out


@dataclass
class OffsetBound:
    """Where a read starts or ends: ``earliest``/``latest``, per-partition offsets, or
    timestamps (global or per partition)."""

    kind: str  # "earliest" | "latest" | "offsets" | "timestamp" | "timestamps"
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    timestamp: int = -1


def _bound(opts: Mapping[str, str], prefix: str, default: str) -> OffsetBound:
    ts = opts.get(f"{prefix}timestamp")
    if ts is not None:  # Kafka's precedence: global timestamp, per partition, offsets
        try:
            return OffsetBound("timestamp", timestamp=int(ts))
        except ValueError:
            raise FerryOptionError(
                f"option {prefix}Timestamp must be milliseconds since the epoch, not {ts!r}"
            ) from None
    by_ts = opts.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        return OffsetBound("timestamps", offsets=parse_offsets_json(
            f"{prefix}OffsetsByTimestamp", by_ts))
    raw = opts.get(f"{prefix}offsets", default).strip()
    if raw.lower() in ("earliest", "latest"):
        return OffsetBound(raw.lower())
    return OffsetBound("offsets", offsets=parse_offsets_json(f"{prefix}Offsets", raw))


@dataclass
class SourceOptions:
    """The validated options of a read (batch or streaming)."""

    url: str
    subscribe: list[str] = field(default_factory=list)
    pattern: re.Pattern[str] | None = None
    assign: dict[str, list[int]] | None = None
    starting: OffsetBound = field(default_factory=lambda: OffsetBound("earliest"))
    ending: OffsetBound = field(default_factory=lambda: OffsetBound("latest"))
    timestamp_strategy: str = "error"
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_s: float = 900.0
    commit_to_group: str = ""
    value_format: str = "raw"
    key_format: str = "raw"
    registry_url: str = ""
    value_schema_version: str = "latest"
    key_schema_version: str = "latest"
    mode: str = "FAILFAST"
    #: kafka.security.protocol, kafka.sasl.*, kafka.ssl.* without their prefix
    client_config: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
        opts = _lower(options)
        _check_names(opts, _SOURCE, "source")
        given = [n for n in ("subscribe", "subscribepattern", "assign") if opts.get(n)]
        if len(given) != 1:
            names = {"subscribe": "subscribe", "subscribepattern": "subscribePattern",
                     "assign": "assign"}
            raise FerryOptionError(
                "exactly one of the options 'subscribe', 'subscribePattern', 'assign' is "
                "required" + (f"; got {', '.join(repr(names[n]) for n in given)}"
                              if given else ""))
        result = cls(url=log_url(opts), client_config=_client_config(opts))
        if "subscribe" in given:
            result.subscribe = [t.strip() for t in opts["subscribe"].split(",") if t.strip()]
            if not result.subscribe:
                raise FerryOptionError("option 'subscribe' names no topic")
        elif "subscribepattern" in given:
            try:
                result.pattern = re.compile(opts["subscribepattern"])
            except re.error as exc:
                raise FerryOptionError(f"option 'subscribePattern' is not a regex: {exc}") from None
        else:
            result.assign = _parse_assign(opts["assign"])
        result.starting = _bound(opts, "starting", "latest" if streaming else "earliest")
        if streaming:
            for name in ("endingoffsets", "endingtimestamp", "endingoffsetsbytimestamp"):
                if name in opts:
                    raise FerryOptionError(f"option {_shown(name)!r} is for batch queries only")
        else:
            result.ending = _bound(opts, "ending", "latest")
            if result.starting.kind == "latest":
                raise FerryOptionError(
                    "option 'startingOffsets' cannot be latest in a batch query")
            if result.ending.kind == "earliest":
                raise FerryOptionError(
                    "option 'endingOffsets' cannot be earliest in a batch query")
            _no_sentinel(result.starting, LATEST, "startingOffsets", "latest (-1)")
            _no_sentinel(result.ending, EARLIEST, "endingOffsets", "earliest (-2)")
        strategy = opts.get("startingoffsetsbytimestampstrategy", "error").lower()
        if strategy not in ("error", "latest"):
            raise FerryOptionError(
                "option 'startingOffsetsByTimestampStrategy' must be error or latest")
        result.timestamp_strategy = strategy
        result.fail_on_data_loss = _bool(opts, "failondataloss", True)
        result.include_headers = _bool(opts, "includeheaders", False)
        result.min_partitions = _int(opts, "minpartitions")
        result.max_records_per_partition = _int(opts, "maxrecordsperpartition")
        result.max_offsets_per_trigger = _int(opts, "maxoffsetspertrigger")
        result.min_offsets_per_trigger = _int(opts, "minoffsetspertrigger")
        if "maxtriggerdelay" in opts:
            result.max_trigger_delay_s = _duration(opts["maxtriggerdelay"], "maxTriggerDelay")
        if (result.min_offsets_per_trigger and result.max_offsets_per_trigger
                and result.min_offsets_per_trigger > result.max_offsets_per_trigger):
            raise FerryOptionError(
                "option 'minOffsetsPerTrigger' must not exceed 'maxOffsetsPerTrigger'")
        result.commit_to_group = opts.get("committogroup", "")
        if "kafka.group.id" in opts:
            log.warning("option kafka.group.id is ignored: the ferry source never joins a "
                        "group; offsets live in the query's checkpoint")
        _formats(result, opts)
        return result

    def matches(self, topic: str) -> bool:
        if self.subscribe:
            return topic in self.subscribe
        if self.pattern is not None:
            return self.pattern.fullmatch(topic) is not None
        return self.assign is not None and topic in self.assign


@dataclass
class SinkOptions:
    """The validated options of a write (batch or streaming)."""

    url: str
    topic: str | None = None
    checkpoint: str = ""
    batch_size: int = 5000
    value_format: str = "raw"
    key_format: str = "raw"
    registry_url: str = ""
    value_schema_version: str = "latest"
    key_schema_version: str = "latest"
    mode: str = "FAILFAST"
    client_config: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SinkOptions:
        opts = _lower(options)
        _check_names(opts, _SINK, "sink")
        result = cls(url=log_url(opts), topic=opts.get("topic") or None,
                     checkpoint=opts.get("checkpointlocation", ""),
                     client_config=_client_config(opts))
        result.batch_size = _int(opts, "batchsize") or 5000
        _formats(result, opts)
        return result


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}


def _duration(raw: str, name: str) -> float:
    """``15m``, ``30s``, ``500ms``, ``2h`` (Spark's style) in seconds."""
    match = _DURATION.match(raw.lower())
    if match is None:
        raise FerryOptionError(f"option {name!r} must be a duration like 15m, 30s or 500ms, "
                               f"not {raw!r}")
    return float(match.group(1)) * _UNIT_S[match.group(2) or "ms"]


def _parse_assign(raw: str) -> dict[str, list[int]]:
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise FerryOptionError(
            f'option \'assign\' is not valid JSON ({exc.msg}); expected {{"topic":[0,1]}}'
        ) from None
    if not isinstance(parsed, dict) or not all(
            isinstance(v, list) and all(isinstance(p, int) for p in v) for v in parsed.values()):
        raise FerryOptionError('option \'assign\' must look like {"topic":[0,1]}')
    return {t: sorted(set(ps)) for t, ps in parsed.items()}


def _no_sentinel(bound: OffsetBound, sentinel: int, name: str, what: str) -> None:
    for topic, parts in bound.offsets.items() if bound.kind == "offsets" else ():
        for part, offset in parts.items():
            if offset == sentinel:
                raise FerryOptionError(
                    f"option {name!r}: {topic}-{part} is {what}, not allowed in a batch query")


def _formats(result: SourceOptions | SinkOptions, opts: Mapping[str, str]) -> None:
    for attr, name in (("value_format", "valueformat"), ("key_format", "keyformat")):
        fmt = opts.get(name, "raw").lower()
        if fmt not in _FORMATS:
            raise FerryOptionError(
                f"option {_shown(name)!r} must be one of {', '.join(sorted(_FORMATS))}, "
                f"not {fmt!r}")
        setattr(result, attr, "raw" if fmt == "binary" else fmt)
    result.registry_url = opts.get("schema.registry.url") or opts.get("schemaregistryurl") or ""
    formats = (result.value_format, result.key_format)
    if formats != ("raw", "raw") and not result.registry_url:
        raise FerryOptionError(
                "option 'schema.registry.url' is required with valueFormat/keyFormat "
                "avro, json-schema or json (the subject's schema types the column)")
    result.value_schema_version = opts.get("valueschemaversion", "latest")
    result.key_schema_version = opts.get("keyschemaversion", "latest")
    mode = opts.get("mode", "FAILFAST").upper()
    if mode not in ("FAILFAST", "PERMISSIVE"):
        raise FerryOptionError("option 'mode' must be FAILFAST or PERMISSIVE")
    result.mode = mode
