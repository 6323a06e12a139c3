"""ElasticsearchSinkConnector: Confluent's ``io.confluent.connect.elasticsearch.
ElasticsearchSinkConnector`` configs, written with the official ``elasticsearch``
client to Elasticsearch 7/8/9 or OpenSearch."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from connect.api import (
    Config,
    ConfigDef,
    ConfigError,
    ConnectError,
    SinkConnector,
    Task,
    TopicPartition,
)
from connectors.elasticsearch.client import EsClient
from connectors.elasticsearch.config import (
    CONFIG_DEF,
    CONNECTION_URL,
    CONNECTION_USERNAME,
    EsSinkConfig,
    plugin_version,
)
from connectors.elasticsearch.task import ElasticsearchSinkTask

__all__ = ["ElasticsearchSinkConnector"]


class ElasticsearchSinkConnector(SinkConnector):
    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        """The declared checks, the rules that span keys, and (when those pass) a
        connection to the server: errors land on the key to fix."""
        result = super().validate(connector_configs)
        if result.error_count:
            return result
        try:
            config = EsSinkConfig.from_props(connector_configs)
        except ConfigError as exc:
            result.add_error(exc.name, str(exc), CONNECTION_URL)
            return result
        # One quick attempt: validation must answer within a REST call.
        client = EsClient(dataclasses.replace(config, max_retries=0))
        try:
            client.connect(retries=0)
        except ConnectError as exc:
            key = CONNECTION_USERNAME if "refused the credentials" in str(exc) \
                else CONNECTION_URL
            result.add_error(key, str(exc))
        finally:
            client.close()
        return result

    def start(self, props: Mapping[str, str]) -> None:
        EsSinkConfig.from_props(props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return ElasticsearchSinkTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the connector holds only its config."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[TopicPartition, int | None]) -> bool:
        # Offsets live in the consumer group only; replays are harmless (idempotent ids).
        return True
