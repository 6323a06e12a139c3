"""Datagen's declared config keys, parsed once into a frozen ``DatagenSettings``."""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Mapping
from functools import cache
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConfigError,
    ConfigType,
    Importance,
    LambdaValidator,
    NonEmptyString,
    Range,
)
from connectors.datagen.quickstarts import QUICKSTARTS, Quickstart

__all__ = [
    "CONFIG_DEF",
    "ITERATION_FIELD",
    "TASK_CONFIG_DEF",
    "TASK_COUNT_CONFIG",
    "TASK_FIELD",
    "TASK_INDEX_CONFIG",
    "DatagenSettings",
    "plugin_version",
]

TOPIC_CONFIG = "kafka.topic"
QUICKSTART_CONFIG = "quickstart"
SCHEMA_CONFIG = "schema"
SEED_CONFIG = "seed"
ITERATIONS_CONFIG = "iterations"
MAX_RECORDS_CONFIG = "max.records"
MAX_INTERVAL_CONFIG = "max.interval"
RATE_CONFIG = "rate"
#: Set by the connector in each task's config: which share of the records it makes.
TASK_INDEX_CONFIG = "datagen.task.index"
TASK_COUNT_CONFIG = "datagen.task.count"

#: Source partition ``{"task": index}`` and offset ``{"iteration": i}``, i being the
#: connector-wide number of the last record the task emitted.
TASK_FIELD = "task"
ITERATION_FIELD = "iteration"


def _check_quickstart(name: str, value: Any) -> None:
    if value is not None and value not in QUICKSTARTS:
        raise ConfigError(name, f"String must be one of: {', '.join(QUICKSTARTS)}", value=value)


_QUICKSTART_NAME = LambdaValidator.with_(_check_quickstart, f"[{', '.join(QUICKSTARTS)}]")
_COUNT = Range.at_least(-1)

CONFIG_DEF = (
    ConfigDef()
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic to write to.",
    )
    .define(
        QUICKSTART_CONFIG,
        ConfigType.STRING,
        default=None,
        validator=_QUICKSTART_NAME,
        importance=Importance.HIGH,
        documentation=f"The records to generate: one of {', '.join(QUICKSTARTS)}. "
        f"Set this or '{SCHEMA_CONFIG}'.",
    )
    .define(
        SCHEMA_CONFIG,
        ConfigType.STRING,
        default=None,
        validator=_QUICKSTART_NAME,
        importance=Importance.LOW,
        documentation=f"Another name for '{QUICKSTART_CONFIG}'.",
    )
    .define(
        SEED_CONFIG,
        ConfigType.LONG,
        default=0,
        importance=Importance.MEDIUM,
        documentation="Seed of the generator: the same seed gives the same records.",
    )
    .define(
        ITERATIONS_CONFIG,
        ConfigType.LONG,
        default=-1,
        validator=_COUNT,
        importance=Importance.HIGH,
        documentation="How many records the connector generates in total, shared among its "
        "tasks; -1 for no limit. (Confluent's datagen counts per task.)",
    )
    .define(
        MAX_RECORDS_CONFIG,
        ConfigType.LONG,
        default=None,
        importance=Importance.LOW,
        documentation=f"Another name for '{ITERATIONS_CONFIG}'.",
    )
    .define(
        MAX_INTERVAL_CONFIG,
        ConfigType.LONG,
        default=None,
        importance=Importance.MEDIUM,
        documentation="Milliseconds between two records of one task; 0 or unset for no "
        "wait. Confluent's datagen waits a random time up to this; Ferry waits exactly "
        f"this, for a predictable rate. Set this or '{RATE_CONFIG}'.",
    )
    .define(
        RATE_CONFIG,
        ConfigType.DOUBLE,
        default=0.0,
        validator=Range.at_least(0),
        importance=Importance.MEDIUM,
        documentation="Records per second for the whole connector, shared evenly among its "
        "tasks; 0 for no limit.",
    )
)

#: What each task parses: the connector's keys plus its share of the work.
TASK_CONFIG_DEF = (
    ConfigDef(CONFIG_DEF)
    .define(
        TASK_INDEX_CONFIG,
        ConfigType.INT,
        default=0,
        validator=Range.at_least(0),
        importance=Importance.LOW,
        documentation="Set by the connector: this task's number, from 0.",
    )
    .define(
        TASK_COUNT_CONFIG,
        ConfigType.INT,
        default=1,
        validator=Range.at_least(1),
        importance=Importance.LOW,
        documentation="Set by the connector: how many tasks share the records.",
    )
)


@dataclasses.dataclass(frozen=True)
class DatagenSettings:
    """A datagen config, parsed and cross-checked. ``max_records`` None means no limit;
    ``interval_s`` is this task's seconds between records, None for no limit."""

    topic: str
    quickstart: Quickstart
    seed: int
    max_records: int | None
    interval_s: float | None
    task_index: int
    task_count: int

    @classmethod
    def parse(cls, props: Mapping[str, str], *, for_task: bool = False) -> DatagenSettings:
        """Parse and check a connector config (or, ``for_task``, a task config); raises
        ``ConfigError`` naming the offending key."""
        config = AbstractConfig(TASK_CONFIG_DEF if for_task else CONFIG_DEF, props)
        quickstart = _one_of(config, QUICKSTART_CONFIG, SCHEMA_CONFIG)
        if quickstart is None:
            raise ConfigError(
                QUICKSTART_CONFIG,
                f"Set '{QUICKSTART_CONFIG}' to one of {', '.join(QUICKSTARTS)}.",
            )
        count = _one_of(config, ITERATIONS_CONFIG, MAX_RECORDS_CONFIG, unset=-1)
        _COUNT.ensure_valid(MAX_RECORDS_CONFIG, count)
        task_index = config.get(TASK_INDEX_CONFIG) if for_task else 0
        task_count = config.get(TASK_COUNT_CONFIG) if for_task else 1
        if task_index >= task_count:
            raise ConfigError(
                TASK_INDEX_CONFIG, f"must be below {TASK_COUNT_CONFIG}", value=task_index
            )
        return cls(
            topic=config.get(TOPIC_CONFIG),
            quickstart=QUICKSTARTS[quickstart],
            seed=config.get(SEED_CONFIG),
            max_records=None if count < 0 else count,
            interval_s=_interval(config, task_count),
            task_index=task_index,
            task_count=task_count,
        )


def _one_of(config: AbstractConfig, name: str, alias: str, *, unset: Any = None) -> Any:
    """The value of ``name`` or of its alias; both given must agree."""
    value, alias_value = config.get(name), config.get(alias)
    if alias_value is None:
        return value
    if value not in (unset, alias_value):
        raise ConfigError(
            alias, f"conflicts with '{name}'={value}; set only one of them", value=alias_value
        )
    return alias_value


def _interval(config: AbstractConfig, task_count: int) -> float | None:
    max_interval_ms, rate = config.get(MAX_INTERVAL_CONFIG), config.get(RATE_CONFIG)
    if max_interval_ms is not None and rate > 0:
        raise ConfigError(
            RATE_CONFIG,
            f"conflicts with '{MAX_INTERVAL_CONFIG}'; set only one of them",
            value=rate,
        )
    if max_interval_ms is not None:
        if max_interval_ms < 0:
            raise ConfigError(MAX_INTERVAL_CONFIG, "must be 0 or more", value=max_interval_ms)
        return max_interval_ms / 1000 if max_interval_ms > 0 else None
    # Each task makes 1/task_count of the records, so it runs at rate/task_count.
    return task_count / rate if rate > 0 else None


@cache
def plugin_version() -> str:
    """The Ferry distribution's version, which datagen reports."""
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
