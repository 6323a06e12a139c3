"""The FileStream connectors' declared config keys, offset field names and version."""

from __future__ import annotations

import importlib.metadata
from functools import cache

from connect.api import ConfigDef, ConfigType, Importance, NonEmptyString, Range

__all__ = [
    "BATCH_SIZE_CONFIG",
    "DEFAULT_BATCH_SIZE",
    "FILENAME_FIELD",
    "FILE_CONFIG",
    "POSITION_FIELD",
    "SINK_CONFIG_DEF",
    "SOURCE_CONFIG_DEF",
    "STDIN_PARTITION_NAME",
    "TOPIC_CONFIG",
    "plugin_version",
]

FILE_CONFIG = "file"
TOPIC_CONFIG = "topic"
BATCH_SIZE_CONFIG = "batch.size"
DEFAULT_BATCH_SIZE = 2000

#: Source partition key: ``{"filename": <file>}``, as Kafka's FileStreamSourceTask.
FILENAME_FIELD = "filename"
#: Source offset key: ``{"position": <byte offset just after the line>}``, as Kafka's.
POSITION_FIELD = "position"
#: The ``filename`` of the source partition when reading stdin, whose offsets are never
#: read back (a pipe cannot be rewound).
STDIN_PARTITION_NAME = "stdin"

SOURCE_CONFIG_DEF = (
    ConfigDef()
    .define(
        FILE_CONFIG,
        ConfigType.STRING,
        default=None,
        importance=Importance.HIGH,
        documentation="Source filename. If not specified, the standard input will be used.",
    )
    .define(
        TOPIC_CONFIG,
        ConfigType.STRING,
        validator=NonEmptyString(),
        importance=Importance.HIGH,
        documentation="The topic to publish data to.",
    )
    .define(
        BATCH_SIZE_CONFIG,
        ConfigType.INT,
        default=DEFAULT_BATCH_SIZE,
        # Kafka declares no validator; below 1 its poll() would never fill a batch.
        validator=Range.at_least(1),
        importance=Importance.LOW,
        documentation="The maximum number of records the source task can read from the "
        "file each time it is polled.",
    )
)

SINK_CONFIG_DEF = ConfigDef().define(
    FILE_CONFIG,
    ConfigType.STRING,
    default=None,
    importance=Importance.HIGH,
    documentation="Destination filename. If not specified, the standard output will be used.",
)


@cache
def plugin_version() -> str:
    """The Ferry distribution's version, which these connectors report (Kafka's report
    Kafka's)."""
    try:
        return importlib.metadata.version("ferryman")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
