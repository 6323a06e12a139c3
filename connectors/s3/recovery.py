"""``offsets.recovery.from.storage``: the offset to resume a partition from, read from the
object names in the bucket, for a consumer group whose committed offsets were lost.

Objects are committed in batches (every open object of a partition at a rotation), and
each carries the batch's first offset in its metadata. Replaying from the first offset
of the newest batch rewrites that batch's objects under the same keys with the same
content (whether or not the crash left it complete) and rewrites nothing older, so the
final object set neither repeats nor skips a record. Objects without the metadata
(written by another tool) count as batches of one object starting at their own offset,
which holds for the DefaultPartitioner.
"""

from __future__ import annotations

import logging
import re

from connect.api import TopicPartition
from connectors.s3.config import S3SinkSettings
from connectors.s3.partitioners import Partitioner
from connectors.s3.storage import S3Storage
from connectors.s3.topic_partition_writer import BATCH_START_METADATA

__all__ = ["recover_offset"]

log = logging.getLogger(__name__)


def recover_offset(storage: S3Storage, settings: S3SinkSettings, partitioner: Partitioner,
                   extension: str, tp: TopicPartition) -> int | None:
    """The offset to consume ``tp`` from, or None when the bucket has no object of it."""
    s = settings
    prefix = (f"{s.topics_dir}{s.directory_delim}"
              f"{partitioner.generate_partitioned_path(tp.topic, '')}")
    name = re.compile(re.escape(f"{tp.topic}{s.file_delim}{tp.partition}{s.file_delim}")
                      + r"(\d+)" + re.escape(extension) + "$")
    newest: tuple[int, str] | None = None
    for key in storage.list_keys(prefix):
        m = name.match(key.rsplit(s.directory_delim, 1)[-1])
        if m and (newest is None or int(m.group(1)) > newest[0]):
            newest = (int(m.group(1)), key)
    if newest is None:
        return None
    start, key = newest
    meta = storage.metadata(key)
    batch = meta.get(BATCH_START_METADATA)
    offset = int(batch) if batch is not None and batch.isdigit() else start
    log.info("%s: recovered position %d from s3://%s/%s", tp, offset, storage.bucket, key)
    return offset
