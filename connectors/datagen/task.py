"""DatagenTask: emits its share of the generated records, paced, resuming after restarts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

from connect.api import ConnectError, SourceRecord, SourceTask
from connectors.datagen.config import (
    ITERATION_FIELD,
    TASK_FIELD,
    DatagenSettings,
    plugin_version,
)
from connectors.datagen.pacing import Pacer

__all__ = ["DatagenTask"]

log = logging.getLogger(__name__)

#: Records per poll when unpaced: big enough for throughput, small enough that the
#: runtime gets control back often.
MAX_BATCH = 1000
#: The longest a poll waits before returning None, per the SourceTask contract.
_MAX_WAIT_S = 1.0


class DatagenTask(SourceTask):
    """Makes records number ``task_index``, ``task_index + task_count``, ... of the
    connector-wide sequence (up to ``max_records``). Record N depends only on the seed
    and N, so any split of the sequence over tasks gives the same records.

    The source partition is ``{"task": task_index}`` and the offset
    ``{"iteration": N}``; on start the task continues after the stored N. When its share
    is done the task idles (polls return None) rather than failing.

    Threading: ``poll()`` on the task's thread; ``stop()`` from another, which sets
    ``_stopping`` and so wakes a poll waiting for the next record's time.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] | None = None,
    ) -> None:
        """The runtime constructs tasks without arguments; tests inject a fake ``clock``
        and a ``sleep`` that advances it."""
        self._stopping = threading.Event()
        self._clock = clock
        self._sleep: Callable[[float], object] = sleep or self._stopping.wait
        self._settings: DatagenSettings | None = None
        self._pacer: Pacer | None = None
        self._next = 0  # connector-wide number of the next record to emit
        self._announced_done = False

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        settings = DatagenSettings.parse(props, for_task=True)
        self._settings = settings
        self._next = self._resume_point(settings)
        self._pacer = Pacer(settings.interval_s, self._clock) if settings.interval_s else None
        log.info(
            "Datagen task %d/%d generating %s records into %s from record %d",
            settings.task_index,
            settings.task_count,
            settings.quickstart.name,
            settings.topic,
            self._next,
        )

    def poll(self) -> Sequence[SourceRecord] | None:
        settings = self._settings
        if settings is None or self._stopping.is_set():
            return None
        remaining = self._remaining()
        if remaining == 0:
            if not self._announced_done:
                log.info("Datagen task %d has generated its share", settings.task_index)
                self._announced_done = True
            self._sleep(_MAX_WAIT_S)
            return None
        count = MAX_BATCH if remaining is None else min(MAX_BATCH, remaining)
        if self._pacer is not None:
            allowed = self._pacer.allowance()
            if allowed == 0:
                self._sleep(min(self._pacer.seconds_until_next(), _MAX_WAIT_S))
                if self._stopping.is_set():
                    return None
                allowed = self._pacer.allowance()
            count = min(count, allowed)
            self._pacer.emitted(count)
        if count == 0:
            return None
        records = [
            self._record(settings, self._next + k * settings.task_count) for k in range(count)
        ]
        self._next += count * settings.task_count
        return records

    def stop(self) -> None:
        self._stopping.set()

    def _remaining(self) -> int | None:
        """Records of this task's share not yet emitted; None when unlimited."""
        settings = self._settings
        assert settings is not None
        if settings.max_records is None:
            return None
        if self._next >= settings.max_records:
            return 0
        return -(-(settings.max_records - self._next) // settings.task_count)

    def _resume_point(self, settings: DatagenSettings) -> int:
        """The first record of this task's share after its stored offset."""
        reader = self.context.offset_storage_reader()
        offset = reader.offset({TASK_FIELD: settings.task_index})
        last = None if offset is None else offset.get(ITERATION_FIELD)
        if last is None:
            return settings.task_index
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise ConnectError(
                f"Stored datagen offset {ITERATION_FIELD}={last!r} for task "
                f"{settings.task_index} is not a record number; reset the connector's offsets."
            )
        # The smallest number after `last` in this task's share. If tasks.max changed
        # since the offset was stored, the share changed too and this is the nearest fit.
        after = last + 1
        return after + (settings.task_index - after) % settings.task_count

    def _record(self, settings: DatagenSettings, iteration: int) -> SourceRecord:
        quickstart = settings.quickstart
        key, value = quickstart.record(settings.seed, iteration)
        return SourceRecord(
            topic=settings.topic,
            key_schema=quickstart.key_schema,
            key=key,
            value_schema=quickstart.value_schema,
            value=value,
            source_partition={TASK_FIELD: settings.task_index},
            source_offset={ITERATION_FIELD: iteration},
        )
