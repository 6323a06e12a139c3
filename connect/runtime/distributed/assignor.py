"""The leader's incremental cooperative assignor (KIP-415): a pure, deterministic function.

One call computes one rebalance round. Inputs: every member's url, config offset and the
work it runs now; the configured connectors with their task counts (the leader's config
snapshot); what the leader remembered after the last completed round (``AssignorState``,
``None`` for a fresh leader); ``scheduled.rebalance.max.delay.ms`` and the current time.
Output: per member the work it gains, the work it must stop and its full assignment after
the round, the delay after which members should rejoin, and the state to remember.

The rules, in the order they are applied:

1. Work held by a member that is not configured (a deleted connector, a task beyond the
   connector's task count) is revoked.
2. Work held by several members is kept by one (the owner the leader remembers, else the
   smallest member id) and revoked from the others (KAFKA-9841).
3. Work the leader remembers as assigned that no member holds is *lost*. A member with the
   old owner's url (a worker's id is its url, so a restarted worker) gets it back at once.
   Otherwise, if every member of the last round is still here, the members simply never
   received it and it is assigned again at once; else it stays UNASSIGNED until
   ``max_delay_ms`` after the loss, when it is assigned like new work (KIP-415; with a
   delay of 0, at once, KAFKA-15693).
4. When no lost work is held and no back-off is running, members holding more than an even
   share (per kind: connectors, tasks; shares differ by at most one) have the surplus
   revoked. Revoked work is assigned in the next round, never in the same one, so it is
   stopped before it starts elsewhere. Revoking in two rounds in a row backs off
   exponentially (40 ms, 1.6 s, 64 s ... capped at ``max_delay_ms``; KAFKA-12495).
5. New and reassignable work goes to the least loaded members: connectors by connector
   count, tasks by task count, then by how many tasks of the same connector the member
   has, then by member id. Work that does not have to move never moves.

Balance is reached in at most two rounds once nothing is held: the first revokes the
surplus and assigns what is unassigned, the second assigns the revoked work.

Config offsets are the caller's business: the leader assigns only from a snapshot at least
as new as every member's (``max_config_offset``); otherwise it answers CONFIG_MISMATCH.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from connect.runtime.distributed.protocol import EMPTY, ConnectorsAndTasks
from connect.runtime.herder import ConnectorTaskId

__all__ = [
    "AssignmentResult",
    "AssignorState",
    "MemberAssignment",
    "MemberState",
    "PreviousOwner",
    "assign",
    "configured_work",
    "max_config_offset",
    "revocation_backoff_ms",
]

log = logging.getLogger(__name__)

#: Growth factor of the back-off between consecutive revoking rounds (Kafka's constant).
_BACKOFF_MULTIPLIER = 40


@dataclass(frozen=True)
class MemberState:
    """A member as the leader sees it in JoinGroup metadata."""

    url: str
    config_offset: int = -1
    assignment: ConnectorsAndTasks = EMPTY


@dataclass(frozen=True)
class PreviousOwner:
    """Who ran some work at the end of the last round, by member id and url."""

    url: str
    work: ConnectorsAndTasks


@dataclass(frozen=True)
class AssignorState:
    """What the leader remembers between rounds; valid only for the round right after the
    one that produced it (the caller discards it otherwise, like Kafka's generation check).

    ``owners`` maps member ids to what they ran after that round, including departed
    members whose lost work is still held. ``lost_deadline_ms`` (wall clock, 0 = none) is
    when held lost work becomes reassignable; ``backoff_until_ms`` (0 = none) bars
    load-balancing revocations until then.
    """

    owners: Mapping[str, PreviousOwner] = field(default_factory=dict)
    members: frozenset[str] = frozenset()
    lost_deadline_ms: int = 0
    backoff_until_ms: int = 0
    revoked_in_previous: bool = False
    successive_revoking_rounds: int = 0


@dataclass(frozen=True)
class MemberAssignment:
    """One member's part of a round: start ``assigned``, stop ``revoked``, run ``full``."""

    assigned: ConnectorsAndTasks
    revoked: ConnectorsAndTasks
    full: ConnectorsAndTasks


@dataclass(frozen=True)
class AssignmentResult:
    """A round's outcome. ``unassigned`` is configured work on no member after the round
    (held lost work and work revoked for balance); ``delay_ms`` > 0 asks every member to
    rejoin after that long."""

    members: dict[str, MemberAssignment]
    delay_ms: int
    state: AssignorState
    unassigned: ConnectorsAndTasks


def max_config_offset(members: Mapping[str, MemberState]) -> int:
    """The newest config topic position any member has read (-1 for an empty group)."""
    return max((m.config_offset for m in members.values()), default=-1)


def configured_work(task_counts: Mapping[str, int]) -> ConnectorsAndTasks:
    """Every connector and its tasks ``0..count-1``."""
    return ConnectorsAndTasks.of(
        task_counts, (ConnectorTaskId(c, i) for c, n in task_counts.items() for i in range(n)))


def revocation_backoff_ms(successive: int, max_delay_ms: int) -> int:
    """Back-off after ``successive`` consecutive revoking rounds: 40^n ms, capped."""
    if max_delay_ms <= 0 or successive <= 0:
        return 0
    return min(max_delay_ms, _BACKOFF_MULTIPLIER ** min(successive, 8))


def _task_key(task: ConnectorTaskId) -> tuple[str, int]:
    return (task.connector, task.task)


class _Loads:
    """Mutable per-member working sets of one round."""

    def __init__(self, members: Iterable[str]) -> None:
        self.connectors: dict[str, set[str]] = {m: set() for m in members}
        self.tasks: dict[str, set[ConnectorTaskId]] = {m: set() for m in self.connectors}

    def work(self, member: str) -> ConnectorsAndTasks:
        return ConnectorsAndTasks.of(self.connectors[member], self.tasks[member])

    def add(self, member: str, work: ConnectorsAndTasks) -> None:
        self.connectors[member] |= work.connectors
        self.tasks[member] |= work.tasks

    def remove(self, member: str, work: ConnectorsAndTasks) -> None:
        self.connectors[member] -= work.connectors
        self.tasks[member] -= work.tasks

    def all(self) -> ConnectorsAndTasks:
        return ConnectorsAndTasks.of(
            (c for cs in self.connectors.values() for c in cs),
            (t for ts in self.tasks.values() for t in ts))


def _surplus(loads: Mapping[str, set], total: int, order_key: Callable[[str, object], object]
             ) -> dict[str, list]:
    """Items to take from members above an even share of ``total``.

    Shares are ``total // n`` with ``total % n`` members allowed one more; the extra slots go
    to the most loaded members first, which revokes as little as possible.
    """
    n = len(loads)
    if n == 0:
        return {}
    base, extras = divmod(total, n)
    out: dict[str, list] = {}
    for member in sorted(loads, key=lambda m: (-len(loads[m]), m)):
        held = len(loads[member])
        if held <= base:
            continue
        cap = base
        if extras > 0:
            extras -= 1
            cap = base + 1
        if held > cap:
            items = sorted(loads[member], key=lambda item, m=member: order_key(m, item))
            out[member] = items[:held - cap]
    return out


def assign(members: Mapping[str, MemberState], task_counts: Mapping[str, int],
           state: AssignorState | None, *, max_delay_ms: int, now_ms: int) -> AssignmentResult:
    """Compute one round; see the module docstring for the rules. Deterministic: the same
    inputs give the same result whatever the mappings' order."""
    state = state or AssignorState()
    names = sorted(members)
    configured = configured_work(task_counts)
    loads = _Loads(names)
    revoked = _Loads(names)

    # 1. Unconfigured work is revoked.
    for m in names:
        held = members[m].assignment
        loads.add(m, held & configured)
        revoked.add(m, held - configured)

    # 2. Duplicates: one holder keeps the work.
    remembered: dict[object, str] = {}
    for owner_id, owner in sorted(state.owners.items()):
        for c in owner.work.connectors:
            remembered[c] = owner_id
        for t in owner.work.tasks:
            remembered[t] = owner_id
    _resolve_duplicates(names, loads.connectors, remembered, revoked.connectors)
    _resolve_duplicates(names, loads.tasks, remembered, revoked.tasks)

    active = loads.all()
    before_owners = ConnectorsAndTasks()
    for owner in state.owners.values():
        before_owners = before_owners | owner.work
    lost = (before_owners & configured) - active
    created = configured - before_owners - active
    assigned = _Loads(names)

    # 3. Lost work: back to a returning worker, at once, or held until the deadline.
    returned = _return_to_same_url(lost, state, members, names)
    for m, work in returned.items():
        loads.add(m, work)
        assigned.add(m, work)
        lost = lost - work
    lost_deadline = state.lost_deadline_ms
    held = EMPTY
    reassign = EMPTY
    if not lost:
        lost_deadline = 0
    elif max_delay_ms <= 0:
        reassign, lost_deadline = lost, 0
    elif lost_deadline == 0 and state.members <= set(names):
        log.debug("work %s is on no worker although no worker left; assigning it again", lost)
        reassign = lost
    elif lost_deadline == 0:
        lost_deadline = now_ms + max_delay_ms
        held = lost
        log.debug("workers left the group; holding %s until %d ms from now", lost, max_delay_ms)
    elif now_ms >= lost_deadline:
        log.debug("scheduled rebalance delay expired; reassigning %s", lost)
        reassign, lost_deadline = lost, 0
    else:
        held = lost

    # 4. Load-balancing revocations, unless held work or a back-off is pending.
    backoff_until = state.backoff_until_ms if now_ms < state.backoff_until_ms else 0
    revoked_in_previous = state.revoked_in_previous
    successive = state.successive_revoking_rounds
    if held or backoff_until:
        revoked_in_previous = False
    else:
        surplus = _load_balancing_revocations(loads, configured)
        if surplus and revoked_in_previous:
            successive += 1
            backoff = revocation_backoff_ms(successive, max_delay_ms)
            if backoff:
                log.debug("consecutive revoking rebalances: revoking again in %d ms", backoff)
                backoff_until = now_ms + backoff
                surplus = {}
                revoked_in_previous = False
        elif surplus:
            revoked_in_previous = True
        elif revoked_in_previous:
            revoked_in_previous, successive = False, 0
        for m, work in surplus.items():
            loads.remove(m, work)
            revoked.add(m, work)

    # 5. New and reassigned work to the least loaded members.
    to_place = created | reassign
    if names:
        _place(to_place, loads, assigned, names)
        unplaced = EMPTY
    else:
        unplaced = to_place

    result: dict[str, MemberAssignment] = {
        m: MemberAssignment(assigned.work(m), revoked.work(m), loads.work(m)) for m in names}
    owners: dict[str, PreviousOwner] = {
        m: PreviousOwner(members[m].url, loads.work(m)) for m in names}
    for owner_id, owner in state.owners.items():
        kept = owner.work & held
        if kept:
            owners[owner_id] = PreviousOwner(owner.url, kept)
    delays = [d - now_ms for d in (lost_deadline, backoff_until) if d > now_ms]
    new_state = AssignorState(owners, frozenset(names), lost_deadline, backoff_until,
                              revoked_in_previous, successive)
    placed = loads.all()
    return AssignmentResult(result, min(delays, default=0), new_state,
                            (configured - placed) | unplaced)


def _resolve_duplicates(names: list[str], loads: dict[str, set], remembered: Mapping[object, str],
                        revoked: dict[str, set]) -> None:
    """Work on several members stays with the owner the leader remembers, else with the
    least loaded holder (then the smallest id), so the duplicates do not unbalance it."""
    holders: dict[object, list[str]] = {}
    for m in names:
        for item in loads[m]:
            holders.setdefault(item, []).append(m)
    for item in sorted((i for i, who in holders.items() if len(who) > 1), key=_item_key):
        who = holders[item]
        keeper = remembered.get(item)
        if keeper not in who:
            keeper = min(who, key=lambda m: (len(loads[m]), m))
        for m in who:
            if m != keeper:
                loads[m].discard(item)
                revoked[m].add(item)
        log.debug("%s ran on %s; keeping it on %s only", item, ", ".join(who), keeper)


def _item_key(item: object) -> tuple[str, int]:
    if isinstance(item, ConnectorTaskId):
        return (item.connector, item.task)
    return (str(item), -1)


def _return_to_same_url(lost: ConnectorsAndTasks, state: AssignorState,
                        members: Mapping[str, MemberState], names: list[str]
                        ) -> dict[str, ConnectorsAndTasks]:
    """Lost work whose previous owner is here again (same member id, or same url: a
    restarted worker) goes back to it."""
    by_url: dict[str, str] = {}
    for m in reversed(names):  # the smallest member id wins a shared url
        by_url[members[m].url] = m
    out: dict[str, ConnectorsAndTasks] = {}
    for owner_id, owner in sorted(state.owners.items()):
        work = owner.work & lost
        if not work:
            continue
        target = owner_id if owner_id in members else by_url.get(owner.url)
        if target is not None:
            out[target] = out.get(target, EMPTY) | work
            lost = lost - work
    return out


def _load_balancing_revocations(loads: _Loads, configured: ConnectorsAndTasks
                                ) -> dict[str, ConnectorsAndTasks]:
    if not configured or all(not loads.connectors[m] and not loads.tasks[m]
                             for m in loads.connectors):
        return {}

    def task_order(member: str, task: object) -> object:
        # Give up tasks of the connector this member runs most of first, so the tasks of
        # one connector spread out too; then the highest task ids.
        assert isinstance(task, ConnectorTaskId)
        same = sum(1 for t in loads.tasks[member] if t.connector == task.connector)
        return (-same, task.connector, -task.task)

    def connector_order(member: str, connector: object) -> object:
        return (str(connector),)

    connectors = _surplus(loads.connectors, len(configured.connectors), connector_order)
    tasks = _surplus(loads.tasks, len(configured.tasks), task_order)
    out: dict[str, ConnectorsAndTasks] = {}
    for m in sorted(set(connectors) | set(tasks)):
        out[m] = ConnectorsAndTasks.of(connectors.get(m, ()), tasks.get(m, ()))
    return out


def _place(work: ConnectorsAndTasks, loads: _Loads, assigned: _Loads, names: list[str]) -> None:
    for connector in work.sorted_connectors():
        m = min(names, key=lambda n: (len(loads.connectors[n]), n))
        loads.connectors[m].add(connector)
        assigned.connectors[m].add(connector)
    per_connector: dict[tuple[str, str], int] = {}
    for m in names:
        for t in loads.tasks[m]:
            per_connector[(m, t.connector)] = per_connector.get((m, t.connector), 0) + 1
    for task in sorted(work.tasks, key=_task_key):
        m = min(names, key=lambda n: (len(loads.tasks[n]),
                                      per_connector.get((n, task.connector), 0), n))
        loads.tasks[m].add(task)
        assigned.tasks[m].add(task)
        per_connector[(m, task.connector)] = per_connector.get((m, task.connector), 0) + 1
