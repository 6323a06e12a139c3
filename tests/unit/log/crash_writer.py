"""Crash-test writer: appends deterministic batches to a PartitionLog until it is killed.

Run as ``python crash_writer.py DIRECTORY SEED POLICY`` with POLICY ``messages``
(flush.messages=1), ``ms`` (flush.ms=20) or ``default`` (no explicit fsync). It continues an
existing log from its end, so the parent can kill and restart it. Protocol on stdout, one
line each: ``S <log end>`` once opened, ``A <log end>`` after every append returns and
``F <offset>`` whenever the flushed offset moves. The batches are a function of the seed and
their index, so the parent can regenerate exactly what was written.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

from core.log.config import TopicConfig
from core.log.log import PartitionLog
from core.log.records import encode_batch

POLICIES = {
    "messages": {"flush.messages": 1},
    "ms": {"flush.ms": 20},
    "default": {},
}
TOPIC_CONFIG = {"segment.bytes": 64 * 1024, "index.interval.bytes": 512}


def batch_records(seed: int, index: int) -> list[tuple[bytes, bytes | None, list, int]]:
    """The records of batch ``index``: 1 to 20 records of varied sizes, some tombstones."""
    rng = random.Random(seed * 1_000_003 + index)
    records = []
    for _ in range(rng.randint(1, 20)):
        key = b"key-%d" % rng.randrange(1000)
        value = None if rng.random() < 0.05 else rng.randbytes(rng.randint(0, 600))
        headers = [("n", b"%d" % index)] if rng.random() < 0.3 else []
        records.append((key, value, headers, 1_000_000 + index))
    return records


def config_for(policy: str) -> TopicConfig:
    return TopicConfig().with_overrides({**TOPIC_CONFIG, **POLICIES[policy]})


def main(directory: str, seed: str, policy: str) -> None:
    plog = PartitionLog.open(Path(directory), "crash", 0, config_for(policy))
    index, offset = 0, 0
    while offset < plog.log_end_offset:
        offset += len(batch_records(int(seed), index))
        index += 1
    if offset != plog.log_end_offset:
        raise SystemExit(f"log end {plog.log_end_offset} is not at a batch boundary")
    reported = plog.flushed_offset
    out = sys.stdout
    out.write(f"S {plog.log_end_offset}\n")
    out.flush()
    while True:
        info = plog.append(encode_batch(batch_records(int(seed), index)))
        index += 1
        if policy == "ms":
            plog.maybe_flush(int(time.time() * 1000))
        out.write(f"A {info.last_offset + 1}\n")
        if plog.flushed_offset > reported:
            reported = plog.flushed_offset
            out.write(f"F {reported}\n")
        out.flush()


if __name__ == "__main__":
    main(*sys.argv[1:])
