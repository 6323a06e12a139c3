"""The Raft quorum in the deterministic simulation: hypothesis picks seeds, loss, delays
and fault schedules; every run checks election safety, committed-entry safety and that no
acknowledged proposal is lost, then heals and requires progress (a proposal commits on
every node in bounded simulated time)."""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from raft_sim import ELECTION_TIMEOUT_MS, Fault, SafetyViolation, Simulation

from core.cluster.raft import MemoryRaftStorage, Role

RUN_MS = 3000


def _faults(voters: int) -> st.SearchStrategy[list[Fault]]:
    fault = st.builds(Fault, at_ms=st.integers(0, RUN_MS),
                      kind=st.sampled_from(["crash", "restart", "isolate", "heal"]),
                      node=st.integers(1, voters))
    return st.lists(fault, max_size=12)


@st.composite
def _scenarios(draw):
    voters = draw(st.sampled_from([1, 3, 5]))
    return dict(seed=draw(st.integers(0, 2**32 - 1)), voters=voters,
                drop=draw(st.sampled_from([0.0, 0.05, 0.2])),
                duplicate=draw(st.sampled_from([0.0, 0.1])),
                max_delay_ms=draw(st.sampled_from([2, 10, 60]))), draw(_faults(voters))


# FERRY_RAFT_SIM_EXAMPLES=5000 for a longer search than CI's.
@settings(max_examples=int(os.environ.get("FERRY_RAFT_SIM_EXAMPLES", "300")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(_scenarios())
def test_safety_under_loss_delay_partitions_and_crashes(scenario):
    params, faults = scenario
    sim = Simulation(**params)
    sim.run(RUN_MS, faults, propose_every_ms=7)
    sim.check_final()
    sim.heal_and_settle()


def test_a_quorum_elects_one_leader_and_commits_in_order():
    sim = Simulation(seed=1, voters=3)
    sim.run(1000, propose_every_ms=10)
    leader = sim.leader()
    assert leader is not None and leader.role is Role.LEADER
    assert len(sim.acked) > 50
    sim.heal_and_settle()
    payloads = [sim.committed[i].data for i in sorted(sim.committed)]
    acked_in_order = sorted(sim.acked, key=sim.acked.get)
    assert [p for p in payloads if p in sim.acked] == acked_in_order


def test_a_new_leader_is_elected_after_the_leader_crashes_and_keeps_every_acked_entry():
    sim = Simulation(seed=7, voters=3, max_delay_ms=5)
    sim.run(1000, propose_every_ms=10)
    old = sim.leader()
    assert old is not None
    acked_before = dict(sim.acked)
    sim.apply(Fault(sim.now, "crash", old.node_id))
    sim.run(sim.now + 6 * ELECTION_TIMEOUT_MS, propose_every_ms=10)
    new = sim.leader()
    assert new is not None and new.node_id != old.node_id and new.term > old.term
    assert len(sim.acked) > len(acked_before)
    sim.check_final()
    assert all(sim.committed[i].data == d for d, i in acked_before.items())


def test_a_minority_cannot_commit():
    sim = Simulation(seed=3, voters=5, max_delay_ms=3)
    sim.run(800)
    leader = sim.leader()
    assert leader is not None
    others = [n for n in range(1, 6) if n != leader.node_id]
    for node in others[:3]:  # the leader keeps one follower: 2 of 5
        sim.apply(Fault(sim.now, "isolate", node))
    sim.propose(leader, b"minority")
    assert b"minority" in sim.pending
    sim.run(sim.now + 10 * ELECTION_TIMEOUT_MS)
    assert b"minority" not in sim.acked
    assert leader.role is not Role.LEADER  # CheckQuorum: it stepped down
    assert all(entry.data != b"minority" for entry in sim.committed.values())


class _LogNotSynced(MemoryRaftStorage):
    """Storage whose appends never reach the disk: a crash loses the whole log."""

    def load_state(self):
        self._log.clear()
        return super().load_state()


class _VoteNotSynced(MemoryRaftStorage):
    """Storage whose term and vote never reach the disk: a crash forgets the vote."""

    def load_state(self):
        return 0, None


@pytest.mark.parametrize("storage", [_LogNotSynced, _VoteNotSynced])
def test_the_checker_catches_a_quorum_that_does_not_fsync(storage):
    """Control runs: without durable logs or votes, crash-restart schedules break safety,
    and the checks say so (the lost log breaks committed entries; the lost vote elects
    two leaders in one term)."""
    for seed in range(200):
        sim = Simulation(seed=seed, voters=3, max_delay_ms=5, storage_factory=storage)
        rng = random.Random(seed)
        faults = []
        for at in range(200, 2800, 120):
            node = rng.randint(1, 3)
            faults += [Fault(at, "crash", node), Fault(at + rng.randint(1, 60), "restart", node)]
        try:
            sim.run(3000, faults, propose_every_ms=5)
            sim.check_final()
        except SafetyViolation:
            return
    pytest.fail("the simulation never noticed the lost log or votes")


@pytest.mark.parametrize("voters", [3, 5])
def test_progress_after_every_node_restarts(voters):
    sim = Simulation(seed=11, voters=voters, drop=0.1)
    sim.run(1000, propose_every_ms=10)
    for node in range(1, voters + 1):
        sim.apply(Fault(sim.now, "crash", node))
    sim.run(sim.now + 50)
    settle = sim.heal_and_settle()
    assert settle < 5000
    assert sim.acked
