"""S3SinkConnector (``s3``, alias ``io.confluent.connect.s3.S3SinkConnector``): topics into
objects of an S3 bucket (or an S3-compatible store), Confluent's config and layout."""

from __future__ import annotations

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
from connectors.s3.config import BUCKET, CONFIG_DEF, S3SinkSettings, plugin_version
from connectors.s3.formats import format_for
from connectors.s3.partitioners import load_partitioner
from connectors.s3.storage import S3Storage
from connectors.s3.task import S3SinkTask

__all__ = ["S3SinkConnector"]


class S3SinkConnector(SinkConnector):
    """Tasks share the topics' partitions through the consumer group; each task config is
    the connector config."""

    def __init__(self) -> None:
        self._props: dict[str, str] = {}

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        """The declared checks, then the cross-key ones (partitioner, format), then the
        bucket itself: it must exist and be reachable with the given credentials."""
        result = super().validate(connector_configs)
        if result.error_count:
            return result
        try:
            settings = S3SinkSettings.parse(connector_configs)
            format_for(settings)
            load_partitioner(settings)
            storage = S3Storage(settings)
        except ConfigError as exc:
            result.add_error(exc.name, str(exc), BUCKET)
            return result
        try:
            storage.check_bucket()
        except ConnectError as exc:
            result.add_error(BUCKET, str(exc))
        return result

    def start(self, props: Mapping[str, str]) -> None:
        settings = S3SinkSettings.parse(props)
        format_for(settings)
        load_partitioner(settings)
        S3Storage(settings).check_bucket()  # fail the connector at once, naming the bucket
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return S3SinkTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        return [dict(self._props) for _ in range(max_tasks)]

    def stop(self) -> None:
        """Nothing to release: the connector holds only its config."""

    def alter_offsets(self, connector_config: Mapping[str, str],
                      offsets: Mapping[TopicPartition, int | None]) -> bool:
        # The consumer group's offsets are the sink's only position (unless
        # offsets.recovery.from.storage is on, which reads the bucket on assignment).
        return True
