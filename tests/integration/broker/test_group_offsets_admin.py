"""OffsetDelete, DeleteGroups and DescribeGroups as Kafka answers them, through real admin
clients: kafka-python's KafkaAdminClient for OffsetDelete (confluent-kafka's Python
AdminClient does not wrap it), confluent-kafka's AdminClient for the rest."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition
from kafka.errors import (
    GroupIdNotFoundError,
    GroupSubscribedToTopicError,
    NoError,
    UnknownTopicOrPartitionError,
)

DEADLINE_S = 30.0
CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "4",
          "group.min.session.timeout.ms": "1000"}


def _topics(admin: AdminClient, *names: str) -> None:
    futures = admin.create_topics([NewTopic(name, 2, 1) for name in names])
    for future in futures.values():
        future.result(30)


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})


def _wait_assigned(consumer: Consumer) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "the consumer never got an assignment"


def _delete_offsets(bootstrap: str, group: str, partitions: list[tuple[str, int]]) -> dict:
    """OffsetDelete through kafka-python: ``{(topic, partition): error class}``."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        result = admin.delete_group_offsets(group, [KpTopicPartition(t, p)
                                                    for t, p in partitions])
    finally:
        admin.close()
    return {(tp.topic, tp.partition): error for tp, error in result.items()}


def _state(admin: AdminClient, group: str) -> ConsumerGroupState:
    return admin.describe_consumer_groups([group])[group].result(30).state


def test_offset_delete_follows_kafkas_rules_for_live_and_empty_groups(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _topics(admin, "orders", "audit")
    consumer = _consumer(broker.bootstrap, "shipping")
    try:
        consumer.subscribe(["orders"])
        _wait_assigned(consumer)
        # The member commits for its topic and for one it does not consume.
        consumer.commit(offsets=[TopicPartition("orders", 0, 3), TopicPartition("orders", 1, 4),
                                 TopicPartition("audit", 0, 7)], asynchronous=False)

        errors = _delete_offsets(broker.bootstrap, "shipping", [("orders", 0), ("audit", 0)])
        # A live consumer group keeps the offsets of what it consumes.
        assert errors == {("orders", 0): GroupSubscribedToTopicError, ("audit", 0): NoError}
        committed = consumer.committed([TopicPartition("orders", 0),
                                        TopicPartition("audit", 0)], timeout=30)
        assert [tp.offset for tp in committed] == [3, -1001]  # audit-0 deleted
    finally:
        consumer.close()  # a dynamic member leaves: the group is Empty
    assert _state(admin, "shipping") == ConsumerGroupState.EMPTY

    assert _delete_offsets(broker.bootstrap, "shipping", [("orders", 0)]) == {
        ("orders", 0): NoError}
    # Still Empty with orders-1 committed; deleting that one too removes the group.
    assert _state(admin, "shipping") == ConsumerGroupState.EMPTY
    _delete_offsets(broker.bootstrap, "shipping", [("orders", 1)])
    assert _state(admin, "shipping") == ConsumerGroupState.DEAD

    # An unknown group is GROUP_ID_NOT_FOUND for the whole request.
    with pytest.raises(GroupIdNotFoundError):
        _delete_offsets(broker.bootstrap, "nobody", [("orders", 0)])


def test_deleted_offsets_stay_deleted_after_a_restart(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _topics(admin, "events")
    consumer = _consumer(broker.bootstrap, "archiver")
    consumer.assign([TopicPartition("events", 0)])
    consumer.commit(offsets=[TopicPartition("events", 0, 5), TopicPartition("events", 1, 6)],
                    asynchronous=False)
    consumer.close()
    assert _delete_offsets(broker.bootstrap, "archiver", [("events", 0), ("nonexistent", 0)]) \
        == {("events", 0): NoError, ("nonexistent", 0): UnknownTopicOrPartitionError}

    broker.restart()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("archiver")])["archiver"].result(30)
    assert {(tp.topic, tp.partition): tp.offset for tp in offsets.topic_partitions} == {
        ("events", 1): 6}


def test_static_members_that_stop_leave_an_empty_deletable_group(broker_factory):
    """librdkafka's DescribeConsumerGroups test: static members close (sending no
    LeaveGroup), and one session timeout later the group is Empty and can be deleted."""
    broker = broker_factory(CONFIG)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    _topics(admin, "metrics")
    consumers = [_consumer(broker.bootstrap, "dashboards", **{
        "group.instance.id": f"instance-{i}", "session.timeout.ms": 2000,
        "heartbeat.interval.ms": 500, "client.id": f"client-{i}"}) for i in range(2)]
    for consumer in consumers:
        consumer.subscribe(["metrics"])
    deadline = time.monotonic() + DEADLINE_S
    while not all(c.assignment() for c in consumers) and time.monotonic() < deadline:
        for consumer in consumers:
            consumer.poll(0.1)
    described = admin.describe_consumer_groups(["dashboards"])["dashboards"].result(30)
    assert described.state == ConsumerGroupState.STABLE
    assert sorted(m.group_instance_id for m in described.members) == ["instance-0",
                                                                       "instance-1"]
    for consumer in consumers:
        consumer.close()
    closed_at = time.monotonic()
    deadline = closed_at + DEADLINE_S
    while _state(admin, "dashboards") != ConsumerGroupState.EMPTY \
            and time.monotonic() < deadline:
        time.sleep(0.1)
    # The members were removed within about one session timeout of their last request.
    assert _state(admin, "dashboards") == ConsumerGroupState.EMPTY
    assert admin.describe_consumer_groups(["dashboards"])["dashboards"].result(30).members == []
    # kafka-python's admin sees the same: Empty, no members, and deletable.
    kp_admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        described = kp_admin.describe_groups(["dashboards"])["dashboards"]
        assert (described["group_state"], described["members"]) == ("Empty", [])
        assert kp_admin.delete_groups(["dashboards"]) == {"dashboards": "OK"}
    finally:
        kp_admin.close()
    assert _state(admin, "dashboards") == ConsumerGroupState.DEAD
