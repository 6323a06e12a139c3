"""FileStreamSourceConnector: one task that reads a file (or stdin) into a topic."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    AbstractConfig,
    ConfigDef,
    ConnectError,
    ExactlyOnceSupport,
    SourceConnector,
    Task,
)
from connectors.file.config import (
    FILE_CONFIG,
    FILENAME_FIELD,
    POSITION_FIELD,
    SOURCE_CONFIG_DEF,
    plugin_version,
)
from connectors.file.source_task import FileStreamSourceTask

__all__ = ["FileStreamSourceConnector"]

log = logging.getLogger(__name__)


class FileStreamSourceConnector(SourceConnector):
    """Kafka's ``FileStreamSourceConnector``: keys ``file`` (stdin when unset), ``topic``
    and ``batch.size``. A file is one stream, so there is always exactly one task whatever
    ``tasks.max`` says. Meant for demos and tests, as Kafka's is."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return SOURCE_CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        # Parse now so a bad config fails the connector rather than its task.
        AbstractConfig(SOURCE_CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSourceTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        if max_tasks > 1:
            log.info("FileStreamSource reads one file with one task; tasks.max=%d", max_tasks)
        return [dict(self._props)]

    def stop(self) -> None:
        """Nothing to release: the connector holds only its config."""

    def exactly_once_support(
        self, connector_config: Mapping[str, str]
    ) -> ExactlyOnceSupport | None:
        # A file can be re-read from a stored offset; stdin cannot.
        filename = AbstractConfig(SOURCE_CONFIG_DEF, connector_config).get_string(FILE_CONFIG)
        return ExactlyOnceSupport.SUPPORTED if filename else ExactlyOnceSupport.UNSUPPORTED

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    ) -> bool:
        """Check offsets a user writes have Kafka's shape; whether the position fits the
        file is checked by the task when it opens the file."""
        filename = AbstractConfig(SOURCE_CONFIG_DEF, connector_config).get_string(FILE_CONFIG)
        if not filename:
            raise ConnectError(
                f"Offsets cannot be modified if the '{FILE_CONFIG}' configuration is "
                "unspecified. This is because stdin is used for input and offsets are not "
                "tracked."
            )
        for partition, offset in offsets:
            if offset is None:
                # Tombstones are always allowed, so stale offsets can be cleaned up.
                continue
            if POSITION_FIELD not in offset:
                raise ConnectError(
                    f"Offset objects should either be null or contain the key '{POSITION_FIELD}'"
                )
            position = offset[POSITION_FIELD]
            if isinstance(position, bool) or not isinstance(position, int):
                raise ConnectError(
                    f"The value for the '{POSITION_FIELD}' key in the offset is expected to "
                    "be an integer"
                )
            if position < 0:
                raise ConnectError(
                    f"The value for the '{POSITION_FIELD}' key in the offset should be a "
                    "non-negative value"
                )
            if partition is None:
                raise ConnectError("Partition objects cannot be null")
            if FILENAME_FIELD not in partition:
                raise ConnectError(f"Partition objects should contain the key '{FILENAME_FIELD}'")
        return True
