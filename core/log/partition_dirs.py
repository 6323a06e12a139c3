"""Partition directories in a data directory: naming them aside, and cleaning up after
interrupted topic creation and deletion.

A partition lives in ``DATA_DIR/NAME-P``. A deleted topic's directories are renamed
``NAME-P.<hex>-delete`` and removed in the background. A stray (a partition directory
without topic metadata) is left alone on open, and renamed ``NAME-P.<hex>-stray``, kept,
when a topic of its name is created.
"""

from __future__ import annotations

import logging
import re
import shutil
import uuid
from collections.abc import Collection
from pathlib import Path

from core.log.errors import StorageError
from core.log.topic_metadata import fsync_dir

__all__ = [
    "remove_deleted_topics",
    "remove_new_partitions",
    "rename_aside",
    "set_aside_strays",
    "warn_strays",
]

log = logging.getLogger(__name__)

_PARTITION_DIR = re.compile(r".+-\d+")
_DELETED_DIR = re.compile(r".+-\d+\.[0-9a-f]+-delete")
_MAX_FILE_NAME = 255  # bytes, on every common file system


def rename_aside(data_dir: Path, topic: str, partition: int, kind: str) -> Path | None:
    """Rename ``topic``-``partition``'s directory to ``NAME-P.<hex>-<kind>`` (None if
    it does not exist), shortening the topic as Kafka does to fit 255 bytes."""
    directory = data_dir / f"{topic}-{partition}"
    suffix = f"-{partition}.{uuid.uuid4().hex}-{kind}"
    target = data_dir / f"{topic[:_MAX_FILE_NAME - len(suffix)]}{suffix}"
    try:
        directory.rename(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot rename {directory} to {target}: {exc}") from exc
    fsync_dir(data_dir)
    return target


def set_aside_strays(data_dir: Path, name: str, partitions: range) -> None:
    """Rename the existing directories of ``name``'s ``partitions`` to ``-stray`` ones."""
    # Directories without metadata (an interrupted delete, a copied-in directory) must not
    # leak their data into a new topic; like Kafka's stray logs they are kept, renamed.
    for p in partitions:
        moved = rename_aside(data_dir, name, p, "stray")
        if moved is not None:
            log.warning("partition directory %s-%d had no topic metadata; moved to %s "
                        "(remove it if its data is not needed)", name, p, moved)


def remove_new_partitions(data_dir: Path, name: str, partitions: range) -> None:
    """Remove the directories a failed create made (strays were set aside before it, so
    each ``name-p`` in ``partitions`` is new): nothing of the topic stays behind."""
    for p in partitions:
        shutil.rmtree(data_dir / f"{name}-{p}", ignore_errors=True)


def remove_deleted_topics(data_dir: Path) -> None:
    """Remove the directories a topic deletion renamed but did not get to remove."""
    for path in data_dir.iterdir():
        if path.is_dir() and _DELETED_DIR.fullmatch(path.name):
            log.info("removing %s left by an earlier topic deletion", path)
            shutil.rmtree(path, ignore_errors=True)


def warn_strays(data_dir: Path, expected: Collection[str]) -> None:
    """Log every partition directory no topic owns (``expected``: the owned names); such
    directories are left alone."""
    for path in data_dir.iterdir():
        if path.is_dir() and path.name not in expected and _PARTITION_DIR.fullmatch(path.name):
            log.warning("partition directory %s has no topic metadata; leaving it alone",
                        path)
