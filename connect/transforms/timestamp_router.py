"""TimestampRouter: rename the topic from the original topic and the record timestamp
(Kafka's ``TimestampRouter``), e.g. ``orders`` to ``orders-20240101``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.config import ConfigDef, ConfigType, Importance
from connect.api.errors import ConfigError, DataError
from connect.transforms.base import BuiltinTransformation, R
from connect.transforms.java_date_format import SimpleDateFormat

__all__ = ["TimestampRouter"]

TOPIC_FORMAT = "topic.format"
TIMESTAMP_FORMAT = "timestamp.format"

_CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_FORMAT,
        ConfigType.STRING,
        default="${topic}-${timestamp}",
        importance=Importance.HIGH,
        documentation="Format of the new topic name; ${topic} and ${timestamp} stand for the "
        "original topic and the formatted timestamp.",
    )
    .define(
        TIMESTAMP_FORMAT,
        ConfigType.STRING,
        default="yyyyMMdd",
        importance=Importance.HIGH,
        documentation="java.text.SimpleDateFormat pattern for the timestamp, in UTC.",
    )
)


class TimestampRouter(BuiltinTransformation):
    """Mostly for sink connectors, whose destination table or index is often named after
    the topic. A record without a timestamp is a ``DataError``."""

    CONFIG_DEF = _CONFIG_DEF

    def __init__(self) -> None:
        self._topic_format = "${topic}-${timestamp}"
        self._timestamp_format = SimpleDateFormat("yyyyMMdd")
        # Consecutive records mostly fall in the same day (or hour), so the last
        # formatted timestamp is reused while the record stays within its resolution.
        self._last: tuple[int, str] | None = None

    def configure(self, configs: Mapping[str, Any]) -> None:
        parsed = self.CONFIG_DEF.parse(configs)
        self._topic_format = parsed[TOPIC_FORMAT]
        pattern = parsed[TIMESTAMP_FORMAT]
        try:
            self._timestamp_format = SimpleDateFormat(pattern)
        except ValueError as exc:
            raise ConfigError(TIMESTAMP_FORMAT, str(exc), value=pattern) from None
        self._last = None

    def apply(self, record: R) -> R:
        if record.timestamp is None:
            raise DataError(f"Timestamp missing on record: {record!r}")
        formatted = self._formatted(record.timestamp)
        # Same order as Kafka: ${timestamp} inside a topic name is replaced too.
        topic = self._topic_format.replace("${topic}", record.topic)
        return record.new_record(topic=topic.replace("${timestamp}", formatted))

    def _formatted(self, timestamp: int) -> str:
        period = timestamp // self._timestamp_format.resolution_ms
        if self._last is not None and self._last[0] == period:
            return self._last[1]
        try:
            formatted = self._timestamp_format.format(timestamp)
        except ValueError as exc:
            raise DataError(f"Cannot format the timestamp of the record: {exc}") from None
        self._last = (period, formatted)
        return formatted
