"""DatagenConnector: splits the generated record sequence among its tasks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from connect.api import (
    ConfigDef,
    ConnectError,
    ExactlyOnceSupport,
    SourceConnector,
    Task,
)
from connectors.datagen.config import (
    CONFIG_DEF,
    ITERATION_FIELD,
    TASK_COUNT_CONFIG,
    TASK_FIELD,
    TASK_INDEX_CONFIG,
    DatagenSettings,
    plugin_version,
)
from connectors.datagen.task import DatagenTask

__all__ = ["DatagenConnector"]


class DatagenConnector(SourceConnector):
    """Generates ``quickstart`` records into ``kafka.topic``; see ``connectors.datagen``.

    Runs ``tasks.max`` tasks (fewer if there are fewer records than tasks); task i of n
    makes records i, i + n, i + 2n, ... of the connector-wide sequence.
    """

    def __init__(self) -> None:
        self._props: dict[str, str] = {}
        self._settings: DatagenSettings | None = None

    def version(self) -> str:
        return plugin_version()

    def config(self) -> ConfigDef:
        return CONFIG_DEF

    def start(self, props: Mapping[str, str]) -> None:
        self._settings = DatagenSettings.parse(props)
        self._props = dict(props)

    def task_class(self) -> type[Task]:
        return DatagenTask

    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        assert self._settings is not None, "task_configs() is called after start()"
        count = max_tasks
        if self._settings.max_records is not None:
            count = max(1, min(max_tasks, self._settings.max_records))
        return [
            {**self._props, TASK_INDEX_CONFIG: str(i), TASK_COUNT_CONFIG: str(count)}
            for i in range(count)
        ]

    def stop(self) -> None:
        """Nothing to release: the connector holds only its config."""

    def exactly_once_support(
        self, connector_config: Mapping[str, str]
    ) -> ExactlyOnceSupport | None:
        # Records are a pure function of the stored offset, so a replay is identical.
        return ExactlyOnceSupport.SUPPORTED

    def alter_offsets(
        self,
        connector_config: Mapping[str, str],
        offsets: Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]],
    ) -> bool:
        """Accept ``{"task": n}`` -> ``{"iteration": i}`` (or None to start over)."""
        for partition, offset in offsets:
            task = partition.get(TASK_FIELD) if partition is not None else None
            if isinstance(task, bool) or not isinstance(task, int) or task < 0:
                raise ConnectError(
                    f'Datagen partitions look like {{"{TASK_FIELD}": 0}}, not {partition!r}'
                )
            if offset is None:
                continue
            iteration = offset.get(ITERATION_FIELD)
            if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0:
                raise ConnectError(
                    f'Datagen offsets look like {{"{ITERATION_FIELD}": 41}} (the number of '
                    f"the last record emitted), not {offset!r}"
                )
        return True
