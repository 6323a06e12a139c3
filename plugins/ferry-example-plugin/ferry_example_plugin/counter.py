"""CounterSource: a one-task source emitting "count-0", "count-1", ... into a topic."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigType,
    ConnectError,
    Importance,
    NonEmptyString,
    Range,
    Schema,
    SourceConnector,
    SourceRecord,
    SourceTask,
    Task,
)

__all__ = ["CONFIG_DEF", "CounterSourceConnector", "CounterSourceTask"]

VERSION = "0.1.0"
TOPIC_CONFIG = "topic"
INTERVAL_CONFIG = "interval.ms"

CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic to write the counts to.",
    )
    .define(
        INTERVAL_CONFIG,
        ConfigType.LONG,
        default=1000,
        validator=Range.at_least(0),
        importance=Importance.MEDIUM,
        documentation="Milliseconds between two counts; 0 emits one count per poll.",
    )
)


class CounterSourceTask(SourceTask):
    """Emits one count per poll, ``interval.ms`` apart (the first at once).

    Threading: ``poll()`` on the task's thread; ``stop()`` from another sets ``_stopping``,
    which also wakes a poll that is waiting out the interval.
    """

    def __init__(self) -> None:
        self._stopping = threading.Event()
        self._topic = ""
        self._interval_s = 0.0
        self._next = 0
        self._due = 0.0  # time.monotonic() of the next count; the first is due at once

    def version(self) -> str:
        return VERSION

    def start(self, props: Mapping[str, str]) -> None:
        config = AbstractConfig(CONFIG_DEF, props)
        self._topic = config.get_string(TOPIC_CONFIG) or ""
        self._interval_s = (config.get_int(INTERVAL_CONFIG) or 0) / 1000
        stored = self.context.offset_storage_reader().offset(self._partition())
        last = None if stored is None else stored.get("count")
        if last is not None and (isinstance(last, bool) or not isinstance(last, int)):
            raise ConnectError(f"Stored counter offset {stored!r} has no integer 'count'")
        self._next = 0 if last is None else last + 1

    def poll(self) -> Sequence[SourceRecord] | None:
        wait_s = self._due - time.monotonic()
        if wait_s > 0:
            # Wait for the next count, but return within a second (the SourceTask contract).
            self._stopping.wait(min(wait_s, 1.0))
            if time.monotonic() < self._due:
                return None
        if self._stopping.is_set():
            return None
        self._due = time.monotonic() + self._interval_s
        count = self._next
        self._next += 1
        return [
            SourceRecord(
                topic=self._topic,
                value_schema=Schema.STRING_SCHEMA,
                value=f"count-{count}",
                source_partition=self._partition(),
                source_offset={"count": count},
            )
        ]

    def stop(self) -> None:
        self._stopping.set()

    def _partition(self) -> dict[str, str]:
        return {"counter": self._topic}


class CounterSourceConnector(SourceConnector):
    """Runs one ``CounterSourceTask`` with the connector's config."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return VERSION

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return CounterSourceTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        # One counter: more tasks would emit the same numbers.
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to release."""
