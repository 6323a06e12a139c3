"""Reading and modifying a connector's offsets (KIP-875), for both herders.

Source offsets are the worker's offset store (the offsets topic); sink offsets are the
committed offsets of the consumer group ``connect-<name>``, shown and taken in Kafka's
REST form (``kafka_topic``, ``kafka_partition``, ``kafka_offset``). Modifying them follows
Kafka: the connector checks (and applies externally) the change through ``alter_offsets``,
then the framework's offsets are written. Herders call these only for a STOPPED connector
(the distributed one only on the leader).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from connect.api.coordinates import TopicPartition as ApiTP
from connect.api.errors import ConnectError
from connect.runtime.errors import BadRequestError
from connect.runtime.offset_store import _canonical
from connect.runtime.plugins import connector_type
from connect.runtime.worker import Worker
from core.backends import OffsetAndMetadata as BackendOffset
from core.backends import TopicPartition as BackendTP
from core.backends import errors as be

__all__ = ["connector_offsets", "modify_offsets"]


def connector_offsets(worker: Worker, name: str, sink: bool) -> list[dict[str, Any]]:
    """``[{"partition": ..., "offset": ...}]`` of a source or sink connector."""
    if sink:
        got = worker.backend.fetch_offsets(f"connect-{name}")
        return [{"partition": {"kafka_topic": tp.topic, "kafka_partition": tp.partition},
                 "offset": {"kafka_offset": om.offset}} for tp, om in sorted(got.items())]
    return [{"partition": p, "offset": o} for p, o in worker.offsets.offsets_of(name)]


def modify_offsets(worker: Worker, name: str, config: Mapping[str, str],
                   entries: list[tuple[dict[str, Any], Any]], *, reset: bool) -> str:
    """Alter (``offset`` None: reset) the given partitions' offsets; returns Kafka's
    message. ``BadRequestError`` when the connector refuses them or they are malformed."""
    cls = worker.plugins.connector_class(config["connector.class"])
    sink = connector_type(cls) == "sink"
    sink_offsets = _sink_offsets(entries) if sink else {}
    try:
        handled = cls().alter_offsets(  # type: ignore[attr-defined]
            worker.transformer.transform(config),
            {ApiTP(tp.topic, tp.partition): o for tp, o in sink_offsets.items()}
            if sink else entries)
    except ConnectError as exc:
        raise BadRequestError(f"Failed to modify offsets for connector {name}: {exc}") from exc
    try:
        if sink:
            # A null offset deletes the group's commit, as Kafka's Worker does with
            # deleteConsumerGroupOffsets: the sink then starts per auto.offset.reset.
            group = f"connect-{name}"
            committed = {tp: BackendOffset(o) for tp, o in sink_offsets.items() if o is not None}
            if committed:
                worker.backend.commit_offsets(group, committed)
            reset_partitions = [tp for tp, o in sink_offsets.items() if o is None]
            if reset_partitions:
                worker.backend.delete_group_offsets(group, reset_partitions)
        else:
            # The herder's own write: not subject to the store's guard against tasks that
            # no longer run here (a STOPPED connector has none).
            store = getattr(worker.offsets, "unguarded", worker.offsets)
            store.write(name, {_canonical(p): (p, o) for p, o in entries})
    except be.BackendError as exc:
        raise ConnectError(f"Failed to modify offsets for connector {name}: {exc}. A sink "
                           "connector's tasks may still be leaving its consumer group; retry "
                           "in a few seconds.") from exc
    kind = "reset" if reset else "altered"
    if handled:
        return f"The offsets for this connector have been {kind} successfully"
    return (f"The Connect framework-managed offsets for this connector have been {kind} "
            "successfully. However, if this connector manages offsets externally, they "
            f"will need to be manually {kind} in the system that the connector uses.")


def _sink_offsets(entries: list[tuple[dict[str, Any], Any]]) -> dict[BackendTP, int | None]:
    """Sink offsets in Kafka's REST form (``kafka_topic``, ``kafka_partition``,
    ``kafka_offset``), checked as Kafka's SinkUtils does; ``BadRequestError`` otherwise."""
    out: dict[BackendTP, int | None] = {}
    for partition, offset in entries:
        topic, number = partition.get("kafka_topic"), partition.get("kafka_partition")
        if not isinstance(topic, str) or not topic:
            raise BadRequestError("A sink connector offset's partition must have a "
                                  "'kafka_topic' string, e.g. {\"kafka_topic\": \"orders\", "
                                  "\"kafka_partition\": 0}")
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise BadRequestError("A sink connector offset's partition must have a "
                                  "non-negative integer 'kafka_partition'")
        value = None if offset is None else offset.get("kafka_offset")
        if offset is not None and (isinstance(value, bool) or not isinstance(value, int)
                                   or value < 0):
            raise BadRequestError("A sink connector offset must be null or have a "
                                  "non-negative integer 'kafka_offset'")
        out[BackendTP(topic, number)] = value
    return out
