"""The Worker: runs connector instances and tasks for a herder.

Each task runs on its own thread (``WorkerTask``), so a hang or crash in one never stalls
another; ``stop_tasks`` waits at most ``task.shutdown.graceful.timeout.ms`` in total and
abandons threads still stuck (they are daemons, marked ``abandoned``). Converters are
built per task from the connector's ``key.converter``/``value.converter``/
``header.converter`` (with their ``*.converter.`` sub-keys) over the worker's defaults.
Config-provider placeholders are resolved here, when a connector or task starts.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from connect.api.connector import Connector, ConnectorContext
from connect.api.source import SourceConnector
from connect.api.storage import CONVERTER_TYPE_CONFIG
from connect.converters.aliases import resolve_converter
from connect.runtime.config_providers import ConfigTransformer, load_config_providers
from connect.runtime.connector_config import error_config
from connect.runtime.dead_letter_queue import DeadLetterQueueReporter
from connect.runtime.herder import ConnectorTaskId
from connect.runtime.offset_store import OffsetStore
from connect.runtime.plugins import Plugins
from connect.runtime.retry_with_tolerance import LogReporter
from connect.runtime.secrets import scrub, secret_values
from connect.runtime.task_metrics import TaskMetrics, TaskMetricsReporter
from connect.runtime.topic_creation import TopicCreation
from connect.runtime.worker_config import WorkerConfig
from connect.runtime.worker_sink_task import WorkerSinkTask
from connect.runtime.worker_source_task import WorkerSourceTask
from connect.runtime.worker_task import StatusListener, TaskSetup, WorkerTask
from connect.transforms.chain import build_transformation_chain
from core.backends import LogBackend

__all__ = ["Worker", "WorkerConnector"]

log = logging.getLogger(__name__)


class WorkerConnector(ConnectorContext):
    """A running connector instance and the context it was given."""

    def __init__(self, name: str, connector: Connector,
                 on_reconfigure: Callable[[str], None],
                 on_error: Callable[[str, BaseException], None]) -> None:
        self.name = name
        self.connector = connector
        self._on_reconfigure = on_reconfigure
        self._on_error = on_error

    def request_task_reconfiguration(self) -> None:
        self._on_reconfigure(self.name)

    def raise_error(self, error: BaseException) -> None:
        self._on_error(self.name, error)


class Worker:
    """One worker's connectors and tasks; thread-safe for the herder's (serialised) calls."""

    def __init__(self, backend: LogBackend, config: WorkerConfig, plugins: Plugins) -> None:
        self.backend = backend
        self.config = config
        self.plugins = plugins
        self.offsets = OffsetStore(backend, config.offset_storage_topic,
                                   config.offset_storage_partitions,
                                   config.offset_storage_replication_factor)
        providers = load_config_providers(config.config_providers, config.originals,
                                          plugins.config_provider_class)
        self.transformer = ConfigTransformer(providers)
        self.connectors: dict[str, WorkerConnector] = {}
        self.tasks: dict[ConnectorTaskId, WorkerTask] = {}

    # ------------------------------------------------------------------ connectors
    def start_connector(self, name: str, config: Mapping[str, str],
                        on_reconfigure: Callable[[str], None],
                        on_error: Callable[[str, BaseException], None]) -> WorkerConnector:
        """Instantiate, initialize and start; raises what the connector raises."""
        connector = self.plugins.new_connector(config["connector.class"])
        wc = WorkerConnector(name, connector, on_reconfigure, on_error)
        connector.initialize(wc)
        connector.start(self.transformer.transform(config))
        self.connectors[name] = wc
        log.info("started connector %s", name)
        return wc

    def stop_connector(self, name: str) -> None:
        wc = self.connectors.pop(name, None)
        if wc is None:
            return
        try:
            wc.connector.stop()
        except Exception:  # the API says stop errors are logged, not retried
            log.warning("stopping connector %s failed", name, exc_info=True)

    def task_configs(self, name: str, max_tasks: int) -> list[dict[str, str]]:
        wc = self.connectors[name]
        return [dict(c) for c in wc.connector.task_configs(max_tasks)]

    def secret_values(self, config: Mapping[str, str]) -> tuple[str, ...]:
        """The secret values of ``config`` as plugins see them (config providers
        resolved), to hide from failure traces."""
        try:
            resolved = self.transformer.transform(config)
        except Exception:  # an unresolvable reference: the literal secrets still count
            resolved = dict(config)
        return secret_values(self.plugins, resolved)

    # ------------------------------------------------------------------ tasks
    def start_task(self, task_id: ConnectorTaskId, connector_config: Mapping[str, str],
                   task_config: Mapping[str, str], status: StatusListener, *,
                   paused: bool = False,
                   on_topic: Callable[[str], None] | None = None) -> None:
        """Start a task thread (``paused``: held paused from the outset, so it never shows
        RUNNING first); errors building it are reported as FAILED. ``on_topic`` is told
        the topics the task produces to or consumes from."""
        try:
            task = self._build_task(task_id, self.transformer.transform(connector_config),
                                    self.transformer.transform(task_config), status,
                                    on_topic or (lambda topic: None))
        except Exception as exc:  # a bad converter or transform config fails the task
            status(task_id, "FAILED", scrub(
                "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)),
                self.secret_values({**connector_config, **task_config})))
            return
        self.tasks[task_id] = task
        if paused:
            task.pause()
        task.start()

    def _build_task(self, task_id: ConnectorTaskId, conn: dict[str, str],
                    task_props: dict[str, str], status: StatusListener,
                    on_topic: Callable[[str], None]) -> WorkerTask:
        cls = self.plugins.connector_class(conn["connector.class"])
        task_class = cls().task_class()
        errors = error_config(conn)
        build_pipeline = self._pipeline_factory(conn)
        build_pipeline()[3].close()  # fail fast on a bad config, on the caller's thread

        metrics = TaskMetrics()

        def reporters() -> list[Any]:
            out: list[Any] = [TaskMetricsReporter(metrics, errors.tolerance_all)]
            if errors.log_enable:
                out.append(LogReporter(str(task_id), errors.log_include_messages))
            if errors.dlq_topic:
                out.append(DeadLetterQueueReporter(
                    self.backend, errors.dlq_topic,
                    replication_factor=errors.dlq_replication_factor,
                    context_headers=errors.dlq_context_headers,
                    connector=task_id.connector, task=task_id.task, metrics=metrics))
            return out

        # Tasks see the connector's keys under their own (as Kafka adds ``topics`` for
        # sinks); the runtime reads converters, errors.* and overrides from the same map.
        props = {**conn, **task_props}
        setup = TaskSetup(task_id, props, errors, status, self.config.offset_flush_interval_ms,
                          self.backend, task_class, build_pipeline, reporters, on_topic,
                          secret_values(self.plugins, props), metrics)
        if issubclass(cls, SourceConnector):
            return WorkerSourceTask(setup, self.offsets, TopicCreation(
                self.backend, self.config.topic_creation_enable, conn, on_topic))
        return WorkerSinkTask(setup)

    def _pipeline_factory(self, conn: Mapping[str, str]) -> Callable[[], tuple[Any, ...]]:
        def converter(kind: str) -> Any:
            name = conn.get(f"{kind}.converter") or getattr(self.config, f"{kind}_converter")
            source = conn if conn.get(f"{kind}.converter") else self.config.originals
            prefix = f"{kind}.converter."
            sub = {k[len(prefix):]: v for k, v in source.items() if k.startswith(prefix)}
            instance = resolve_converter(name, config_key=f"{kind}.converter")()
            if kind == "header":
                instance.configure({**sub, CONVERTER_TYPE_CONFIG: "header"})
            else:
                instance.configure(sub, kind == "key")
            return instance

        def build() -> tuple[Any, ...]:
            return (converter("key"), converter("value"), converter("header"),
                    build_transformation_chain(conn))

        return build

    def pause_task(self, task_id: ConnectorTaskId) -> None:
        if task_id in self.tasks:
            self.tasks[task_id].pause()

    def resume_task(self, task_id: ConnectorTaskId) -> None:
        if task_id in self.tasks:
            self.tasks[task_id].resume()

    def stop_tasks(self, ids: list[ConnectorTaskId]) -> list[ConnectorTaskId]:
        """Signal every task, then wait for all within one graceful timeout; returns the
        abandoned ones."""
        tasks = [self.tasks.pop(i) for i in ids if i in self.tasks]
        for task in tasks:
            task.stop()
        deadline = time.monotonic() + self.config.task_shutdown_graceful_timeout_ms / 1000
        return [t.id for t in tasks if not t.join(max(0.0, deadline - time.monotonic()))]

    def stop(self) -> None:
        for name in list(self.connectors):
            self.stop_connector(name)
        self.stop_tasks(list(self.tasks))
        self.transformer.close()
