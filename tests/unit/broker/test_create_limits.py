"""CreateTopics and CreatePartitions refuse what the broker cannot hold before creating
anything, and a write that fails part way (an injected ENOSPC: the one mock here, standing
in for a full disk, which the integration suite also reaches on a small tmpfs) answers
KAFKA_STORAGE_ERROR with nothing of the request left behind."""

from __future__ import annotations

import asyncio
import errno
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka.protocol.admin.topics import CreatePartitionsRequest
from test_handlers_admin import BROKER_SETTINGS, NODE, Admin, topic

import core.broker.handlers.create_topics as create_topics
from core.broker.config import BrokerConfig
from core.broker.state import BrokerState
from core.group import GroupCoordinator, LogOffsetStore
from core.log.log import PartitionLog
from core.log.manager import LogManager
from core.protocol.errors import ErrorCode

GrowTopic = CreatePartitionsRequest.CreatePartitionsTopic


@pytest.fixture
def admin(tmp_path: Path) -> Iterator[Admin]:
    """Admin handlers over a real LogManager, as in test_handlers_admin."""
    loop = asyncio.new_event_loop()
    config = BrokerConfig.parse(BROKER_SETTINGS)
    manager = LogManager.open(tmp_path / "data", defaults=config.topic_defaults,
                              background=False)
    coordinator = GroupCoordinator(LogOffsetStore(manager, partitions=1))
    state = BrokerState(config=config, manager=manager, coordinator=coordinator,
                        producers=None, node_id=NODE, advertised_host="broker.test",
                        advertised_port=19092, cluster_id="cluster", loop=loop)
    yield Admin(state, loop)
    coordinator.close()
    manager.close()
    loop.close()


def partition_dirs(data_dir: Path, name: str) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.name.startswith(f"{name}-"))


@pytest.fixture
def disk_full_at(monkeypatch: pytest.MonkeyPatch):
    """Make the n-th partition opened from now on fail as a full disk does."""
    real_open = PartitionLog.open

    def arm(n: int) -> None:
        opened = [0]

        def open_or_fail(directory, *args, **kwargs):
            opened[0] += 1
            if opened[0] == n:
                directory.mkdir()  # the directory was made, then its files did not fit
                raise OSError(errno.ENOSPC, "No space left on device", str(directory))
            return real_open(directory, *args, **kwargs)

        monkeypatch.setattr(PartitionLog, "open", staticmethod(open_or_fail))

    yield arm
    monkeypatch.setattr(PartitionLog, "open", real_open)


def grow(admin: Admin, name: str, count: int) -> object:
    [result] = admin.call(CreatePartitionsRequest, 3, timeout_ms=1000, validate_only=False,
                          topics=[GrowTopic(name=name, count=count, assignments=None)]).results
    return result


def test_a_full_disk_while_creating_answers_storage_error_and_keeps_nothing(
        admin: Admin, disk_full_at) -> None:
    disk_full_at(3)
    result = admin.create(5, topic("orders", 8))["orders"]
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR, result.error_message
    assert "No space left on device" in result.error_message
    assert "orders" not in admin.manager.topics()
    assert partition_dirs(admin.manager.data_dir, "orders") == []
    assert not (admin.manager.data_dir / ".topics" / "orders.json").exists()


def test_a_full_disk_while_adding_partitions_leaves_the_topic_as_it_was(
        admin: Admin, disk_full_at) -> None:
    admin.create(5, topic("orders", 2))
    disk_full_at(2)
    result = grow(admin, "orders", 6)
    assert result.error_code == ErrorCode.KAFKA_STORAGE_ERROR, result.error_message
    assert admin.manager.topic("orders").partitions == 2
    assert partition_dirs(admin.manager.data_dir, "orders") == ["orders-0", "orders-1"]


def test_more_records_than_kafka_allows_in_one_operation_is_a_policy_violation(
        admin: Admin) -> None:
    result = admin.create(5, topic("huge", 10_000))["huge"]
    assert result.error_code == ErrorCode.POLICY_VIOLATION
    assert result.error_message.startswith(
        "Unable to perform excessively large batch operation.")
    assert partition_dirs(admin.manager.data_dir, "huge") == []
    admin.create(5, topic("orders", 1))
    assert grow(admin, "orders", 10_002).error_code == ErrorCode.POLICY_VIOLATION


def test_partitions_beyond_the_spare_file_descriptors_are_invalid(
        admin: Admin, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(create_topics.FileDescriptors, "headroom", lambda self: 40)
    monkeypatch.setattr(create_topics.FileDescriptors, "__init__",
                        lambda self: setattr(self, "limit", 100) or setattr(self, "reserve", 20))
    # 40 descriptors left, 10 kept for the log: 10 partitions (30 files) fit, 11 do not.
    assert admin.create(5, topic("fits", 10))["fits"].error_code == ErrorCode.NONE
    result = admin.create(5, topic("big", 11))["big"]
    assert result.error_code == ErrorCode.INVALID_PARTITIONS
    assert "ulimit -n" in result.error_message
    assert partition_dirs(admin.manager.data_dir, "big") == []
    assert grow(admin, "fits", 21).error_code == ErrorCode.INVALID_PARTITIONS
