"""Embedded-backend specifics: URLs, one runtime per directory, the cross-process lock."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from core.backends import ProducerRecord, TopicPartition, available_backends, open_backend
from core.backends import errors as be
from core.log.records import COMPRESSION_CODES, iter_batches


def test_embedded_is_registered_through_entry_points():
    assert "embedded" in available_backends()


@pytest.mark.parametrize("url", ["", "   ", "no-scheme-here", "embedded:", "embedded://"])
def test_bad_urls_are_rejected(url):
    with pytest.raises(be.InvalidBackendUrlError):
        open_backend(url)


def test_unknown_scheme_lists_the_known_ones():
    with pytest.raises(be.InvalidBackendUrlError) as info:
        open_backend("zookeeper://localhost:2181")
    assert "zookeeper" in str(info.value) and "embedded" in str(info.value)


def test_url_forms_open_the_same_directory(tmp_path):
    data = tmp_path / "data"
    with open_backend(f"embedded:{data}") as a:
        a.create_topic("shared", 1)
        with open_backend(f"embedded://{data}") as b:
            # Same process, same directory: one shared runtime, so b sees a's topic.
            assert "shared" in b.list_topics()
            b.produce("shared", [ProducerRecord(value=b"x")])
        # Closing b must not close the runtime a still uses.
        tp = TopicPartition("shared", 0)
        assert [r.value for r in a.fetch({tp: 0})[tp].records] == [b"x"]


def test_bad_broker_setting_names_the_key(tmp_path):
    with pytest.raises(be.InvalidConfigError) as info:
        open_backend(f"embedded:{tmp_path / 'd'}", {"log.retention.ms": "never"})
    assert info.value.key == "log.retention.ms"
    with pytest.raises(be.InvalidConfigError) as info:
        open_backend(f"embedded:{tmp_path / 'e'}", {"num.partitions": "0"})
    assert info.value.key == "num.partitions"


def test_compacted_topics_require_keys(tmp_path):
    with open_backend(f"embedded:{tmp_path / 'data'}") as backend:
        backend.create_topic("table", 1, {"cleanup.policy": "compact"})
        backend.produce("table", [ProducerRecord(key=b"k", value=b"v")])
        with pytest.raises(be.InvalidRecordError):
            backend.produce("table", [ProducerRecord(value=b"no key")])


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd", "producer",
                                   "uncompressed"])
def test_a_topics_compression_type_is_how_its_batches_are_stored(tmp_path, codec):
    # As a Kafka broker stores a topic's batches in its compression.type whatever the
    # producer sent ("producer" keeps what this in-process producer writes: none).
    data = tmp_path / "data"
    values = [b"change %d " % i * 40 for i in range(500)]
    with open_backend(f"embedded:{data}") as backend:
        backend.create_topic("t", 1, {"compression.type": codec})
        backend.produce("t", [ProducerRecord(key=b"k%d" % i, value=v)
                              for i, v in enumerate(values)])
        tp = TopicPartition("t", 0)
        got = backend.fetch({tp: 0}, max_partition_bytes=10 << 20)[tp].records
        assert [(r.key, r.value) for r in got] == [(b"k%d" % i, v)
                                                   for i, v in enumerate(values)]
    stored = b"".join(f.read_bytes() for f in sorted((data / "t-0").glob("*.log")))
    headers = [h for _, h in iter_batches(stored)]
    assert sum(h.records_count for h in headers) == len(values)
    assert {h.compression for h in headers} == {COMPRESSION_CODES.get(codec, 0)}
    if codec not in ("producer", "uncompressed"):
        assert len(stored) < sum(map(len, values)) // 4


def test_altering_compression_type_applies_to_later_batches(tmp_path):
    data = tmp_path / "data"
    with open_backend(f"embedded:{data}") as backend:
        backend.create_topic("t", 1)
        backend.produce("t", [ProducerRecord(value=b"a" * 1000)])
        backend.alter_topic_configs("t", {"compression.type": "lz4"})
        backend.produce("t", [ProducerRecord(value=b"b" * 1000)])
    stored = b"".join(f.read_bytes() for f in sorted((data / "t-0").glob("*.log")))
    assert [h.compression for _, h in iter_batches(stored)] == [0, COMPRESSION_CODES["lz4"]]


def test_directory_open_in_another_process_is_refused(tmp_path):
    data = tmp_path / "data"
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from core.backends.embedded import EmbeddedBackend
            b = EmbeddedBackend({str(data)!r}, owner={{"command": "ferry broker",
                                                     "listener": "127.0.0.1:19092"}})
            print("ready", flush=True)
            sys.stdin.read()
            b.close()
        """)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(be.LogDirInUseError) as info:
            open_backend(f"embedded:{data}")
        message = str(info.value)
        assert str(holder.pid) in message
        assert "kafka://127.0.0.1:19092" in message
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    # Once the holder is gone the directory opens normally.
    with open_backend(f"embedded:{data}") as backend:
        assert backend.list_topics() == []
    assert os.path.isdir(data)
