"""FileStreamSinkTask: appends each record's value, one per line, to a file or stdout."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from connect.api import (
    AbstractConfig,
    ConnectError,
    OffsetAndMetadata,
    SinkRecord,
    SinkTask,
    TopicPartition,
)
from connectors.file.config import FILE_CONFIG, SINK_CONFIG_DEF, plugin_version

__all__ = ["FileStreamSinkTask"]

log = logging.getLogger(__name__)


class FileStreamSinkTask(SinkTask):
    """Writes ``str(record.value)`` and a newline per record (``null`` for a null value,
    as Java's ``println`` prints it). ``flush()`` flushes and, for a file, fsyncs, so the
    default ``pre_commit()`` commits only offsets of lines that are on disk.

    All methods run on the task's thread (see ``SinkTask``); no locking needed.
    """

    def __init__(self) -> None:
        self._filename: str | None = None
        self._out: TextIO | None = None

    def version(self) -> str:
        return plugin_version()

    def start(self, props: Mapping[str, str]) -> None:
        self._filename = AbstractConfig(SINK_CONFIG_DEF, props).get_string(FILE_CONFIG) or None
        if self._filename is None:
            self._out = sys.stdout
            return
        try:
            # Append, as Kafka does: a restarted task redelivers from the committed offset
            # and must not wipe what earlier runs wrote.
            self._out = open(self._filename, "a", encoding="utf-8", newline="\n")  # noqa: SIM115
            if _ends_mid_line(self._filename):
                # A process killed inside a write, or a file written by something else: end
                # that line, or the first record appended would be glued onto it.
                log.warning("%s ends without a newline; ending its last line before "
                            "appending records", self._filename)
                self._out.write("\n")
        except OSError as exc:
            raise ConnectError(
                f"Couldn't find or create file '{self._filename}' for FileStreamSinkTask: {exc}"
            ) from exc
        log.info("Writing records to %s", self._filename)

    def put(self, records: Sequence[SinkRecord]) -> None:
        out = self._require_open()
        try:
            out.writelines(("null" if r.value is None else str(r.value)) + "\n" for r in records)
        except OSError as exc:
            raise ConnectError(f"Couldn't write to {self._describe()}: {exc}") from exc

    def flush(self, current_offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        out = self._require_open()
        try:
            out.flush()
            if self._filename is not None:
                os.fsync(out.fileno())
        except OSError as exc:
            raise ConnectError(f"Couldn't flush {self._describe()}: {exc}") from exc

    def stop(self) -> None:
        if self._out is not None and self._filename is not None:
            self._out.close()
        self._out = None

    def _require_open(self) -> TextIO:
        if self._out is None:
            raise ConnectError(
                "FileStreamSinkTask has no open output: start() failed or stop() was called"
            )
        return self._out

    def _describe(self) -> str:
        return self._filename or "stdout"


def _ends_mid_line(path: str) -> bool:
    """Whether a non-empty file's last byte is not a newline."""
    with open(path, "rb") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"
