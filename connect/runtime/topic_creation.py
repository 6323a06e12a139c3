"""Topic creation for source connectors (KIP-158): ``topic.creation.groups`` and the
``topic.creation.<group>.*`` settings, when the worker has ``topic.creation.enable``.

A topic missing when a record is first sent to it is created with the settings of the
first group (in ``topic.creation.groups`` order) whose ``include`` regexes match it and
whose ``exclude`` regexes don't, else with ``default``'s. Keys other than
``replication.factor``, ``partitions``, ``include`` and ``exclude`` are topic configs.
Topic creation is on only when ``topic.creation.default.replication.factor`` and
``.partitions`` are given, as in Kafka.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping

from core.backends import LogBackend
from core.backends import errors as be

__all__ = ["TopicCreation"]

log = logging.getLogger(__name__)

_SPECIAL = {"replication.factor", "partitions", "include", "exclude"}


class TopicCreation:
    """Creates a source task's topics on first use; used from one task's thread."""

    def __init__(self, backend: LogBackend, worker_enabled: bool,
                 props: Mapping[str, str],
                 on_topic: Callable[[str], None] | None = None) -> None:
        self._backend = backend
        self._known: set[str] = set()
        #: Told each topic once, on first use (the herder's active-topic tracking).
        self._on_topic = on_topic
        self.enabled = worker_enabled and all(
            f"topic.creation.default.{k}" in props for k in ("replication.factor", "partitions"))
        groups = [g.strip() for g in props.get("topic.creation.groups", "").split(",")
                  if g.strip()]
        self._groups = [(g, self._settings(props, g)) for g in [*groups, "default"]]

    @staticmethod
    def _settings(props: Mapping[str, str], group: str) -> dict[str, str]:
        prefix = f"topic.creation.{group}."
        return {k[len(prefix):]: v for k, v in props.items() if k.startswith(prefix)}

    def group_for(self, topic: str) -> tuple[str, dict[str, str]]:
        for name, settings in self._groups:
            if name == "default":
                return name, settings
            inc = [p for p in settings.get("include", "").split(",") if p.strip()]
            exc = [p for p in settings.get("exclude", "").split(",") if p.strip()]
            if any(re.fullmatch(p.strip(), topic) for p in inc) and not any(
                    re.fullmatch(p.strip(), topic) for p in exc):
                return name, settings
        raise AssertionError("the default group is always last")

    def ensure(self, topic: str) -> None:
        if topic in self._known:
            return
        if topic not in self._backend.list_topics() and not self.enabled:
            # Kafka's brokers create a missing topic on produce (auto.create.topics.enable,
            # default true); the LogBackend never does, so stand in with its defaults.
            try:
                self._backend.create_topic(topic)
                log.info("created topic %s with the backend's defaults", topic)
            except be.TopicExistsError:
                pass
        elif topic not in self._backend.list_topics():
            name, s = self.group_for(topic)
            default = dict(self._groups[-1][1])
            merged = {**default, **s}
            partitions = int(merged.get("partitions", "-1"))
            rf = int(merged.get("replication.factor", "-1"))
            configs = {k: v for k, v in merged.items() if k not in _SPECIAL}
            try:
                self._backend.create_topic(topic, None if partitions < 1 else partitions,
                                           configs, replication_factor=None if rf < 1 else rf)
                log.info("created topic %s (group %s, %s partitions)", topic, name, partitions)
            except be.TopicExistsError:
                pass
        self._known.add(topic)
        if self._on_topic is not None:
            self._on_topic(topic)
