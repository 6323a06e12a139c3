"""The metadata quorum (Raft + controller) in the deterministic simulation: three or five
combined nodes whose brokers heartbeat to whichever node is the active controller, topics
created all along, and crashes, partitions and loss chosen by hypothesis. Checks: no
acknowledged topic creation is lost across controller failovers; all nodes apply the same
committed metadata; every committed leader change picks a member of the ISR before it (no
unclean election), with leader epochs that only grow; a broker cut off from the controller
is fenced and loses its leaderships."""

from __future__ import annotations

import os
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raft_sim import Fault, SafetyViolation, Simulation

from core.cluster.controller import ControllerError
from core.cluster.image import MetadataImage
from core.cluster.quorum import MetadataQuorum, Outcome
from core.cluster.records import NO_LEADER, BrokerEndpoint, PartitionChange, decode_batch

SESSION_MS = 300
HEARTBEAT_MS = 50
RUN_MS = 3000


class QuorumSimulation(Simulation):
    """Simulation of MetadataQuorum nodes; each node's broker heartbeats to the controller
    when both are up and not cut off from each other."""

    unclean: bool = False

    def __post_init__(self) -> None:
        self.quorums: dict[int, MetadataQuorum] = {}
        self.epochs: dict[int, int] = {}
        self.created: dict[str, tuple[int, int, int]] = {}  # topic -> (node, index, term)
        self.acked_topics: set[str] = set()
        self._topics = 0
        super().__post_init__()

    def _start(self, node_id: int) -> None:
        quorum = MetadataQuorum(node_id, list(range(1, self.voters + 1)),
                                self.storages[node_id], now_ms=self.now,
                                rng=random.Random(self.rng.random()), election_timeout_ms=100,
                                session_timeout_ms=SESSION_MS,
                                default_replication_factor=min(3, self.voters),
                                unclean_leader_election=self.unclean)
        self.quorums[node_id] = quorum
        self.nodes[node_id] = quorum.raft
        self.epochs.pop(node_id, None)  # a restarted broker registers again

    def _deliver(self, node_id, message):
        return self.quorums[node_id].receive(message, self.now)

    def _tick(self, node_id):
        out = self.quorums[node_id].tick(self.now)
        if self.now % HEARTBEAT_MS == 0:
            self._heartbeat(node_id)
        return out

    def _controller(self, broker: int) -> MetadataQuorum | None:
        for node_id, quorum in self.quorums.items():
            if (self.nodes[node_id] is not None and quorum.controller is not None
                    and not self._cut(broker, node_id)):
                return quorum
        return None

    def active_controller(self) -> MetadataQuorum:
        return next(q for n, q in self.quorums.items()
                    if self.nodes[n] is not None and q.controller is not None)

    def _heartbeat(self, broker: int) -> None:
        quorum = self._controller(broker)
        if quorum is None:
            return
        endpoint = (BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9000 + broker),)
        try:
            if broker not in self.epochs:
                index, _, out = quorum.submit(lambda c: c.register_broker(
                    broker, f"i{broker}", endpoint, None, self.now), self.now)
                self.epochs[broker] = index
            else:
                _, _, out = quorum.submit(lambda c: c.heartbeat(
                    broker, self.epochs[broker], True, self.now), self.now)
        except ControllerError:
            self.epochs.pop(broker, None)  # stale epoch: register again
            return
        self._send(quorum.raft.node_id, out)

    def create_topic(self) -> None:
        quorum = self._controller(0)
        if quorum is None:
            return
        self._topics += 1
        name = f"t{self._topics}"
        try:
            index, term, out = quorum.submit(
                lambda c: c.create_topic(name, 2, None, {}), self.now)
        except ControllerError:
            return  # too few live brokers yet
        self.created[name] = (quorum.raft.node_id, index, term)
        self._send(quorum.raft.node_id, out)

    def propose(self, leader=None, data=None) -> None:
        """The base simulation's proposals (heal_and_settle's) are topic creations here."""
        before = dict(self.created)
        self.create_topic()
        for name in set(self.created) - set(before):
            node_id, index, term = self.created[name]
            entry = self.nodes[node_id].storage.entries(index, index + 1)[0]
            self.pending[entry.data] = (node_id, term, index)

    def check(self) -> None:
        super().check()
        for name, (node_id, index, term) in list(self.created.items()):
            if self.nodes[node_id] is None:
                continue  # its answer never reached the client: indeterminate
            outcome = self.quorums[node_id].outcome(index, term)
            if outcome == Outcome.COMMITTED:
                self.acked_topics.add(name)
            if outcome != Outcome.PENDING:
                del self.created[name]

    def check_metadata(self) -> None:
        images = [q.image for q in self.quorums.values()]
        reference = max(images, key=lambda i: i.offset)
        for image in images:
            if image.offset == reference.offset and image != reference:
                raise SafetyViolation("two nodes applied the same log into different images")
        lost = self.acked_topics - set(reference.topics)
        if lost:
            raise SafetyViolation(f"acknowledged topic creations lost: {sorted(lost)}")
        # replay the committed log: leaders come from the ISR, epochs only grow
        image = MetadataImage()
        for index in sorted(self.committed):
            entry = self.committed[index]
            if not entry.data:
                continue
            for record in decode_batch(entry.data):
                self._check_change(image, record)
                image.apply(index, record)
            for name, topic in image.topics.items():  # whole decisions only
                for p, spec in enumerate(topic.partitions):
                    if spec.leader != NO_LEADER and image.brokers[spec.leader].fenced:
                        raise SafetyViolation(f"fenced broker {spec.leader} leads {name}-{p}"
                                              f" after entry {index}")

    @staticmethod
    def _check_change(image: MetadataImage, record) -> None:
        """A committed leader change picks from the ISR before it; epochs only grow."""
        if not isinstance(record, PartitionChange):
            return
        old = image.partition(record.topic, record.partition)
        if record.leader != NO_LEADER and record.leader != old.leader \
                and record.leader not in old.isr:
            raise SafetyViolation(f"unclean election: {record} after {old}")
        if record.leader_epoch < old.leader_epoch or \
                record.partition_epoch != old.partition_epoch + 1:
            raise SafetyViolation(f"epochs went wrong: {record} after {old}")
        if not record.isr or not set(record.isr) <= set(old.replicas):
            raise SafetyViolation(f"bad ISR: {record}")

    def run_workload(self, until_ms: int, faults: list[Fault]) -> None:
        todo = sorted(faults, key=lambda f: f.at_ms)
        while self.now < until_ms:
            while todo and todo[0].at_ms <= self.now:
                self.apply(todo.pop(0))
            if self.now % 97 == 0:
                self.create_topic()
            self.step()


def _settle(sim: QuorumSimulation) -> None:
    sim.heal_and_settle()
    sim.run_workload(sim.now + 3 * SESSION_MS, [])  # brokers re-register and unfence
    sim.heal_and_settle()
    sim.check_metadata()


@st.composite
def _scenarios(draw):
    voters = draw(st.sampled_from([3, 5]))
    fault = st.builds(Fault, at_ms=st.integers(0, RUN_MS),
                      kind=st.sampled_from(["crash", "restart", "isolate", "heal"]),
                      node=st.integers(1, voters))
    return (dict(seed=draw(st.integers(0, 2**32 - 1)), voters=voters,
                 drop=draw(st.sampled_from([0.0, 0.05])), max_delay_ms=draw(
                     st.sampled_from([2, 20]))), draw(st.lists(fault, max_size=10)))


@settings(max_examples=int(os.environ.get("FERRY_QUORUM_SIM_EXAMPLES", "60")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_scenarios())
def test_metadata_survives_controller_failovers(scenario):
    params, faults = scenario
    sim = QuorumSimulation(**params)
    sim.run_workload(RUN_MS, faults)
    sim.check_final()
    _settle(sim)


def test_killing_the_active_controller_loses_no_acknowledged_topic():
    sim = QuorumSimulation(seed=5, voters=3)
    sim.run_workload(1500, [])
    first = sim.active_controller()
    assert len(sim.acked_topics) >= 5
    acked = set(sim.acked_topics)
    sim.apply(Fault(sim.now, "crash", first.raft.node_id))
    sim.run_workload(sim.now + 1500, [])
    second = sim.active_controller()
    assert second is not first
    assert acked <= set(second.image.topics)
    assert len(sim.acked_topics) > len(acked)  # and the new controller creates more
    _settle(sim)


def test_an_isolated_broker_is_fenced_and_its_partitions_get_new_leaders():
    sim = QuorumSimulation(seed=9, voters=3)
    sim.run_workload(1500, [])
    controller = sim.active_controller()
    victim = next(n for n in sim.quorums if n != controller.raft.node_id)
    led = [(t, p) for t, s in controller.image.topics.items()
           for p, spec in enumerate(s.partitions) if spec.leader == victim]
    assert led
    sim.apply(Fault(sim.now, "isolate", victim))
    sim.run_workload(sim.now + 3 * SESSION_MS, [])
    image = controller.image
    assert image.brokers[victim].fenced
    for topic, p in led:
        spec = image.partition(topic, p)
        assert spec.leader not in (victim, NO_LEADER) and victim not in spec.isr
    _settle(sim)


def test_the_checker_catches_unclean_elections():
    """Control run: with unclean.leader.election.enable, rolling crashes leave partitions
    whose ISR members are all down, a replica outside the ISR takes over, and the checker
    says so (the simulation has no ISR expansion, so ISRs only shrink)."""
    for seed in range(30):
        sim = QuorumSimulation(seed=seed, voters=3, max_delay_ms=5)
        sim.unclean = True
        for node in sim.quorums:
            sim._start(node)
        faults = []
        for i, at in enumerate(range(400, 2800, 400)):
            node = 1 + i % 3
            faults += [Fault(at, "crash", node), Fault(at + 350, "restart", node)]
        sim.run_workload(RUN_MS, faults)
        try:
            _settle(sim)
        except SafetyViolation as exc:
            assert "unclean election" in str(exc)
            return
    raise AssertionError("no unclean election noticed")
