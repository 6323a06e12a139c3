"""FileStreamSinkConnector: writes the records of its topics to a file or stdout."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect.api import AbstractConfig, ConfigDef, SinkConnector, Task, TopicPartition
from connectors.file.config import SINK_CONFIG_DEF, plugin_version
from connectors.file.sink_task import FileStreamSinkTask

__all__ = ["FileStreamSinkConnector"]


class FileStreamSinkConnector(SinkConnector):
    """Kafka's ``FileStreamSinkConnector``: key ``file`` (stdout when unset); ``topics`` or
    ``topics.regex`` are the runtime's. Every task appends to the same file, as in Kafka,
    so with ``tasks.max`` > 1 lines of different partitions interleave."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return SINK_CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        AbstractConfig(SINK_CONFIG_DEF, props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return FileStreamSinkTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the connector holds only its config."""

    def alter_offsets(
        self, connector_config: Mapping[str, str], offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        # Consumer offsets are all this sink has; the runtime may set them freely.
        return True
