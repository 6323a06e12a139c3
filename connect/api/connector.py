"""Connector and Task: the base classes of every source and sink plugin."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence

from connect.api.config import Config, ConfigDef
from connect.api.errors import IllegalWorkerStateError
from connect.api.version import Versioned

__all__ = ["Connector", "ConnectorContext", "Task"]


class ConnectorContext(ABC):
    """What the runtime gives a connector in ``initialize()``.

    Implemented by the runtime. Both methods are thread-safe and return at once, so a
    connector may call them from threads of its own, e.g. one that watches the source
    for new tables.
    """

    @abstractmethod
    def request_task_reconfiguration(self) -> None:
        """Ask the runtime to call ``task_configs()`` again and, if the configs changed,
        restart the tasks with the new ones. Call it when the set of work changes (a table
        was added). Non-blocking: the runtime acts later, on its own thread."""

    @abstractmethod
    def raise_error(self, error: BaseException) -> None:
        """Fail the connector from a background thread: the runtime records ``error`` as
        the connector's FAILED status (with its trace) and stops the connector. Errors
        raised by the connector's own methods need no call; they fail it directly."""


class Task(Versioned, ABC):
    """What source and sink tasks have in common; subclass ``SourceTask`` or ``SinkTask``.

    A task is constructed by the runtime with no arguments, so constructors must be
    cheap; open connections in ``start()``.
    """

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with ``props``, one of the maps the connector's ``task_configs()``
        returned (config-provider placeholders resolved). Called once, on the task's
        thread, after ``initialize()`` and before any other method. May block while
        connecting; raising fails the task."""

    @abstractmethod
    def stop(self) -> None:
        """Stop and release resources. See the subclass for the thread it is called on."""


class Connector(Versioned, ABC):
    """Splits a job into task configs, and watches the external system for changes.

    Lifecycle, in order:

    1. The runtime constructs the connector with no arguments. It also constructs
       throwaway instances only to call ``config()``, ``validate()`` or ``version()``, so
       constructors must be cheap and free of side effects.
    2. ``initialize(context)``: the runtime hands over the ``ConnectorContext``.
    3. ``start(props)``: the connector's config (raw strings, config-provider placeholders
       resolved). Parse and keep it; raising ``ConfigError`` or ``ConnectError`` fails
       the connector.
    4. ``task_class()`` and ``task_configs(max_tasks)``: after ``start()``, and again each
       time the connector calls ``context.request_task_reconfiguration()``.
    5. ``reconfigure(props)``: the user changed the config (default: ``stop()`` then
       ``start(props)``).
    6. ``stop()``: when the connector is deleted, paused or stopped, or its worker shuts
       down.

    Threading: the runtime calls these methods one at a time, never concurrently with
    each other, on a runtime thread (not necessarily the same one each time). Threads
    the connector starts itself may use the context at any time and must be stopped by
    ``stop()``. Methods may block briefly (e.g. to list tables); long work belongs in the
    connector's own thread.
    """

    def initialize(self, context: ConnectorContext) -> None:
        """Keep the context; called once, before ``start()``. Overrides must call super."""
        self._context = context

    @property
    def context(self) -> ConnectorContext:
        """The context given to ``initialize()``."""
        context: ConnectorContext | None = getattr(self, "_context", None)
        if context is None:
            raise IllegalWorkerStateError(
                f"{type(self).__name__}.context was read before initialize(); the runtime "
                "initializes connectors before start(), so use the context from start() on."
            )
        return context

    @abstractmethod
    def start(self, props: Mapping[str, str]) -> None:
        """Start with the connector's config (raw strings; parse them with ``config()``).

        Called once after ``initialize()``, and again after each ``stop()`` when the
        connector is resumed or reconfigured, on a runtime thread. May block briefly
        (e.g. to check credentials). Raising ``ConfigError`` or ``ConnectError`` fails
        the connector; the runtime does not retry, the user restarts it.
        """

    def reconfigure(self, props: Mapping[str, str]) -> None:
        """Apply a changed config. The default restarts the connector (``stop()`` then
        ``start(props)``), which is simple and always correct; override it only to avoid
        an expensive restart."""
        self.stop()
        self.start(props)

    @abstractmethod
    def task_class(self) -> type[Task]:
        """The ``SourceTask`` or ``SinkTask`` subclass that runs this connector's work.
        Called after ``start()`` on a runtime thread; must not block."""

    @abstractmethod
    def task_configs(self, max_tasks: int) -> Sequence[Mapping[str, str]]:
        """At most ``max_tasks`` task configs (``tasks.max``), one per task to run; each
        reaches that task's ``start()``. Returning fewer is fine (e.g. fewer tables than
        tasks); an empty list runs no tasks. Values must be strings, since they are stored
        in the config topic.

        Called after ``start()`` and after each ``request_task_reconfiguration()``, on a
        runtime thread, never concurrently with ``start()`` or ``stop()``. May block
        briefly (e.g. to list tables); raising fails the connector.
        """

    @abstractmethod
    def stop(self) -> None:
        """Stop the connector's own threads and release resources. Called once per
        ``start()``, on a runtime thread, while the connector's own threads may still be
        running (and calling the context). Must not block for long: the runtime waits
        ``task.shutdown.graceful.timeout.ms`` at most. Errors are logged, not retried."""

    def validate(self, connector_configs: Mapping[str, str]) -> Config:
        """Check a proposed config for ``PUT /connector-plugins/{plugin}/config/validate``
        and before create and update; may be called on an instance never started. The
        default checks the config against ``config()``; override it to add checks that
        span keys or reach the external system (add errors to the ``ConfigValue``s)."""
        return Config(self.config().validate(connector_configs))

    @abstractmethod
    def config(self) -> ConfigDef:
        """The connector's declared config keys. Called on any runtime thread, possibly on
        an instance never started; return a ConfigDef built once (a class attribute)."""
