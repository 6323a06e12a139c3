"""JdbcSinkConnector: writes topics into tables of any SQLAlchemy database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from connect.api import Config, ConfigDef, SinkConnector, Task, TopicPartition
from connectors.jdbc.config import SINK_CONFIG_DEF, SinkConfig, plugin_version
from connectors.jdbc.database import to_sqlalchemy_url
from connectors.jdbc.sink_task import JdbcSinkTask
from connectors.jdbc.validation import validate_connector

__all__ = ["JdbcSinkConnector"]


class JdbcSinkConnector(SinkConnector):
    """Confluent's ``JdbcSinkConnector`` on SQLAlchemy (``jdbc-sink``): every task gets
    the same config; the runtime spreads the topic partitions over them."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return SINK_CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        return validate_connector(SINK_CONFIG_DEF, connector_configs, SinkConfig.parse)

    def start(self, props: Mapping[str, str]) -> None:
        # Fail the connector, not each task, on a URL that names no known database.
        to_sqlalchemy_url(SinkConfig.parse(props).connection.url)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return JdbcSinkTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: tasks hold the connections."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[TopicPartition, int | None]) -> bool:
        # Consumer offsets are all this sink tracks; the runtime may set them freely.
        return True
