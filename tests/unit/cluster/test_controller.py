"""The controller's decisions over a metadata image: placement, fencing, elections from the
ISR only, epochs, and AlterPartition's compare-and-set. The records go through encode and
decode, as they do through the Raft log."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from core.cluster.controller import (
    ControllerError,
    ErrorCode,
    QuorumController,
    place_replicas,
)
from core.cluster.image import MetadataImage
from core.cluster.records import NO_LEADER, BrokerEndpoint, decode, encode

SESSION = 9000


class _Log:
    """The metadata log in a list, applied to the controller's image as appended."""

    def __init__(self) -> None:
        self.image = MetadataImage()
        self.records: list[bytes] = []

    def append(self, record) -> int:
        self.records.append(encode(record))
        index = len(self.records)
        self.image.apply(index, decode(self.records[-1]))
        return index


@pytest.fixture
def log() -> _Log:
    return _Log()


@pytest.fixture
def controller(log: _Log) -> QuorumController:
    return QuorumController(log.image, log.append, SESSION, default_replication_factor=3,
                            rng=random.Random(1))


def _join(controller: QuorumController, broker: int, now: int = 0) -> int:
    controller.register_broker(broker, f"inc-{broker}",
                               (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker),), None,
                               now)
    epoch = controller.image.brokers[broker].broker_epoch
    controller.heartbeat(broker, epoch, caught_up=True, now_ms=now)
    return epoch


def test_placement_spreads_leaders_and_replicas():
    placement = place_replicas([1, 2, 3, 4], 12, 3, start=0)
    assert all(len(set(r)) == 3 for r in placement)
    assert Counter(r[0] for r in placement) == {1: 3, 2: 3, 3: 3, 4: 3}
    assert Counter(b for r in placement for b in r) == {1: 9, 2: 9, 3: 9, 4: 9}
    assert place_replicas([5], 2, 1, start=0) == [(5,), (5,)]


def test_brokers_register_fenced_and_unfence_once_caught_up(controller, log):
    controller.register_broker(1, "a", (), None, 0)
    assert log.image.live_brokers() == []
    epoch = log.image.brokers[1].broker_epoch
    controller.heartbeat(1, epoch, caught_up=False, now_ms=10)
    assert log.image.live_brokers() == []
    controller.heartbeat(1, epoch, caught_up=True, now_ms=20)
    assert log.image.live_brokers() == [1]
    with pytest.raises(ControllerError) as caught:
        controller.heartbeat(1, epoch - 1, caught_up=True, now_ms=30)
    assert caught.value.code == ErrorCode.STALE_BROKER_EPOCH
    with pytest.raises(ControllerError) as caught:
        controller.heartbeat(9, 1, caught_up=True, now_ms=30)
    assert caught.value.code == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_topic_creation_places_replicas_on_live_brokers(controller, log):
    for broker in (1, 2, 3):
        _join(controller, broker)
    controller.create_topic("t", 6, None, {"cleanup.policy": "compact"})
    topic = log.image.topics["t"]
    assert topic.configs == {"cleanup.policy": "compact"}
    assert len(topic.partitions) == 6
    for spec in topic.partitions:
        assert sorted(spec.replicas) == [1, 2, 3]
        assert spec.isr == spec.replicas and spec.leader == spec.replicas[0]
    assert Counter(s.leader for s in topic.partitions) == {1: 2, 2: 2, 3: 2}
    for name, partitions, rf, code in [("t", 1, 1, ErrorCode.TOPIC_ALREADY_EXISTS),
                                       ("u", 0, 1, ErrorCode.INVALID_PARTITIONS),
                                       ("u", 1, 4, ErrorCode.INVALID_REPLICATION_FACTOR)]:
        with pytest.raises(ControllerError) as caught:
            controller.create_topic(name, partitions, rf, {})
        assert caught.value.code == code


def test_a_lapsed_lease_fences_the_broker_and_moves_leadership_within_the_isr(controller, log):
    for broker in (1, 2, 3):
        _join(controller, broker)
    controller.create_topic("t", 3, 3, {})
    before = {p: s for p, s in enumerate(log.image.topics["t"].partitions)}
    for broker in (2, 3):
        controller.heartbeat(broker, log.image.brokers[broker].broker_epoch, True, SESSION - 1)
    controller.expire_leases(SESSION)  # broker 1 said nothing for a whole session
    assert log.image.live_brokers() == [2, 3]
    for p, spec in enumerate(log.image.topics["t"].partitions):
        old = before[p]
        assert 1 not in spec.isr and spec.leader in (2, 3)
        assert spec.partition_epoch == old.partition_epoch + 1
        # a new leader bumps the leader epoch (fencing the old one); others keep it
        assert spec.leader_epoch == old.leader_epoch + (1 if old.leader == 1 else 0)


def test_the_last_isr_member_stays_and_no_unclean_leader_is_elected(controller, log):
    for broker in (1, 2):
        _join(controller, broker)
    controller.create_topic("t", 1, 2, {})
    spec = log.image.partition("t", 0)
    leader, follower = spec.leader, next(b for b in spec.replicas if b != spec.leader)
    # the follower drops out of the ISR, then the leader dies
    controller.alter_partition(leader, log.image.brokers[leader].broker_epoch, "t", 0,
                               spec.leader_epoch, spec.partition_epoch, (leader,))
    controller.heartbeat(follower, log.image.brokers[follower].broker_epoch, True, SESSION)
    controller.expire_leases(SESSION + 1)
    spec = log.image.partition("t", 0)
    assert spec.leader == NO_LEADER and spec.isr == (leader,)
    # the old leader comes back: it is the only one holding every committed record
    epoch = _join(controller, leader, now=SESSION + 2)
    spec = log.image.partition("t", 0)
    assert spec.leader == leader and log.image.brokers[leader].broker_epoch == epoch


def test_unclean_election_takes_any_live_replica_when_enabled(log):
    controller = QuorumController(log.image, log.append, SESSION, unclean_leader_election=True,
                                  rng=random.Random(2))
    for broker in (1, 2):
        _join(controller, broker)
    controller.create_topic("t", 1, 2, {})
    spec = log.image.partition("t", 0)
    leader, follower = spec.leader, next(b for b in spec.replicas if b != spec.leader)
    controller.alter_partition(leader, log.image.brokers[leader].broker_epoch, "t", 0,
                               spec.leader_epoch, spec.partition_epoch, (leader,))
    controller.heartbeat(follower, log.image.brokers[follower].broker_epoch, True, SESSION)
    controller.expire_leases(SESSION + 1)
    assert log.image.partition("t", 0).leader == follower
    assert log.image.partition("t", 0).isr == (follower,)


def test_alter_partition_is_compare_and_set(controller, log):
    for broker in (1, 2, 3):
        _join(controller, broker)
    controller.create_topic("t", 1, 3, {})
    spec = log.image.partition("t", 0)
    leader = spec.leader
    epoch = log.image.brokers[leader].broker_epoch
    others = tuple(b for b in spec.replicas if b != leader)
    shrunk = (leader, others[0])
    controller.alter_partition(leader, epoch, "t", 0, spec.leader_epoch, spec.partition_epoch,
                               shrunk)
    assert log.image.partition("t", 0).isr == shrunk
    cases = [
        # the same request again: its partition epoch is now stale
        ((leader, epoch, "t", 0, spec.leader_epoch, spec.partition_epoch, shrunk),
         ErrorCode.INVALID_UPDATE_VERSION),
        ((leader, epoch, "t", 0, spec.leader_epoch + 1, spec.partition_epoch + 1, shrunk),
         ErrorCode.FENCED_LEADER_EPOCH),
        ((others[0], log.image.brokers[others[0]].broker_epoch, "t", 0, spec.leader_epoch,
          spec.partition_epoch + 1, shrunk), ErrorCode.NOT_LEADER_OR_FOLLOWER),
        ((leader, epoch - 1, "t", 0, spec.leader_epoch, spec.partition_epoch + 1, shrunk),
         ErrorCode.STALE_BROKER_EPOCH),
        ((leader, epoch, "t", 5, 0, 0, shrunk), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ((leader, epoch, "t", 0, spec.leader_epoch, spec.partition_epoch + 1, (leader, 7)),
         ErrorCode.INELIGIBLE_REPLICA),
    ]
    for args, code in cases:
        with pytest.raises(ControllerError) as caught:
            controller.alter_partition(*args)
        assert caught.value.code == code, args
    # a fenced replica cannot rejoin the ISR
    controller.heartbeat(leader, epoch, True, SESSION - 1)
    controller.heartbeat(others[0], log.image.brokers[others[0]].broker_epoch, True,
                         SESSION - 1)
    controller.expire_leases(SESSION)  # others[1] lapsed
    spec = log.image.partition("t", 0)
    with pytest.raises(ControllerError) as caught:
        controller.alter_partition(leader, epoch, "t", 0, spec.leader_epoch,
                                   spec.partition_epoch, spec.replicas)
    assert caught.value.code == ErrorCode.INELIGIBLE_REPLICA


def test_a_restarted_broker_gets_a_higher_epoch_and_loses_its_leadership(controller, log):
    for broker in (1, 2, 3):
        _join(controller, broker)
    controller.create_topic("t", 3, 3, {})
    old_epoch = log.image.brokers[1].broker_epoch
    led = [p for p, s in enumerate(log.image.topics["t"].partitions) if s.leader == 1]
    controller.register_broker(1, "restarted", (), None, 100)
    assert log.image.brokers[1].broker_epoch > old_epoch and log.image.brokers[1].fenced
    for p in led:
        assert log.image.partition("t", p).leader != 1


def test_records_round_trip_and_garbage_is_a_clear_error():
    from core.cluster.records import (
        CreateTopic,
        PartitionChange,
        PartitionSpec,
        RecordDecodeError,
        RegisterBroker,
    )
    for record in [RegisterBroker(1, "x", (BrokerEndpoint("PLAINTEXT", "h", 1),), "r1"),
                   CreateTopic("t", "id", (PartitionSpec((1, 2), (1,), 1, 3, 4),), {"a": "b"}),
                   PartitionChange("t", 0, 2, 5, (2, 3), 9)]:
        assert decode(encode(record)) == record
    for garbage in [b"", b"{}", b'{"type":"Nope"}', b"\xff"]:
        with pytest.raises(RecordDecodeError):
            decode(garbage)
