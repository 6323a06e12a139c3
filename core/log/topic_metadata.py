"""Topic metadata: Kafka's topic-name rules, topic ids, and ``DATA_DIR/.topics/NAME.json``.

Only per-topic overrides are stored; a topic's effective config is recomputed from the broker
defaults on every load, as Kafka does, so changing a broker default reaches every topic that
does not override it. Files are replaced atomically (write a temporary file, fsync, rename,
fsync the directory): after a crash a topic's metadata is either the old or the new one.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import uuid
from dataclasses import dataclass
from pathlib import Path

from core.log.config import TopicConfig
from core.log.errors import InvalidTopicError, StorageError

__all__ = [
    "MAX_TOPIC_NAME_LENGTH",
    "TOPICS_DIR",
    "ZERO_TOPIC_ID",
    "TopicMetadata",
    "TopicMetadataStore",
    "check_partition_count",
    "fsync_dir",
    "new_topic_id",
    "validate_topic_name",
]

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH = 249
TOPICS_DIR = ".topics"
#: Kafka's ``Uuid.ZERO_UUID`` as a string; what a validate-only CreateTopics reports.
ZERO_TOPIC_ID = "A" * 22
_LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class TopicMetadata:
    """What is known of a topic.

    ``overrides`` are the per-topic configs by Kafka name in Kafka's string form; ``config`` is
    the effective config (broker defaults with the overrides applied); ``topic_id`` is rendered
    as Kafka renders a Uuid (22 characters of url-safe base64).
    """

    name: str
    partitions: int
    overrides: dict[str, str]
    config: TopicConfig
    topic_id: str
    internal: bool = False
    created_ms: int = 0


def validate_topic_name(name: object) -> str:
    """Return ``name`` if Kafka would accept it as a topic name, else InvalidTopicError."""
    if not isinstance(name, str) or not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters"
        )
    if not _LEGAL_TOPIC_NAME.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name {name!r} is illegal, it contains a character other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    return name


def check_partition_count(partitions: object) -> int:
    """Return ``partitions`` if it is a whole number >= 1, else InvalidTopicError."""
    if isinstance(partitions, bool) or not isinstance(partitions, int) or partitions < 1:
        raise InvalidTopicError(f"Number of partitions must be at least 1, got {partitions!r}")
    return partitions


def new_topic_id() -> str:
    """A random topic id in Kafka's ``Uuid.toString()`` form."""
    # Like Kafka's Uuid.randomUuid(), avoid ids starting with '-', which command-line tools
    # would take for an option.
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-") and text != ZERO_TOPIC_ID:
            return text


class TopicMetadataStore:
    """Reads and writes the ``.topics`` directory of one data directory.

    Not thread-safe: the LogManager calls it under its own lock.
    """

    def __init__(self, data_dir: Path, defaults: TopicConfig):
        self.directory = data_dir / TOPICS_DIR
        self.defaults = defaults  # the LogManager's; replaced with it

    def load_all(self) -> list[TopicMetadata]:
        """Every stored topic, sorted by name; temporary files of interrupted writes are
        removed. StorageError names a file that cannot be read."""
        try:
            self.directory.mkdir(exist_ok=True)
            for path in self.directory.glob("*.tmp"):
                log.info("removing %s left by an interrupted metadata write", path)
                path.unlink()
        except OSError as exc:
            raise StorageError(f"cannot prepare {self.directory}: {exc}") from exc
        return [self._read(path) for path in sorted(self.directory.glob("*.json"))]

    def write(self, metadata: TopicMetadata) -> None:
        """Store ``metadata``, replacing any earlier version atomically."""
        path = self._path(metadata.name)
        # Not NAME.json.tmp: a 249-character name would pass the 255-byte file name limit.
        tmp = self.directory / f"{uuid.uuid4().hex}.tmp"
        record = {
            "version": _FORMAT_VERSION,
            "name": metadata.name,
            "partitions": metadata.partitions,
            "overrides": metadata.overrides,
            "topic_id": metadata.topic_id,
            "internal": metadata.internal,
            "created_ms": metadata.created_ms,
        }
        data = json.dumps(record, indent=2, sort_keys=True).encode("utf-8")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            fsync_dir(self.directory)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()  # a full disk is no place to leave half-written files
            raise StorageError(f"cannot write topic metadata {path}: {exc}") from exc

    def remove(self, name: str) -> None:
        """Forget topic ``name`` durably (missing is fine)."""
        path = self._path(name)
        try:
            path.unlink(missing_ok=True)
            fsync_dir(self.directory)
        except OSError as exc:
            raise StorageError(f"cannot remove topic metadata {path}: {exc}") from exc

    def _path(self, name: str) -> Path:
        return self.directory / f"{name}.json"

    def _read(self, path: Path) -> TopicMetadata:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            name = validate_topic_name(record["name"])
            if f"{name}.json" != path.name:
                raise ValueError(f"it names topic {name!r}")
            overrides = {str(k): str(v) for k, v in record["overrides"].items()}
            return TopicMetadata(
                name=name,
                partitions=check_partition_count(record["partitions"]),
                overrides=overrides,
                config=self.defaults.with_overrides(overrides),
                topic_id=str(record["topic_id"]),
                internal=bool(record.get("internal", False)),
                created_ms=int(record.get("created_ms", 0)),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError, StorageError) as exc:
            raise StorageError(
                f"topic metadata file {path} is unreadable ({exc}); restore it, or remove it "
                "together with the topic's partition directories"
            ) from exc


def fsync_dir(directory: Path) -> None:
    """Make renames and unlinks in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
