"""KIP-848 consumer groups: members, epochs, server-side assignment and
reconciliation (Kafka's ConsumerGroup, ConsumerGroupMember, CurrentAssignmentBuilder,
RangeAssignor; UniformAssignor in uniform.py). Pure data and pure functions; the coordinator
(consumer_coordinator.py) drives them and writes the records.

Partitions are kept per topic id (uuid.UUID) as sets of partition numbers; a target assignment
keeps them as lists in the order Kafka iterates them (uniform.replayed), which decides ties the
next time the uniform assignor runs.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from .uniform import GroupSpec, uniform_assign

# MemberState (Kafka's org.apache.kafka.coordinator.group.modern.consumer.MemberState)
UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, STABLE = 0, 1, 2

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = dict  # topic id (uuid.UUID) -> set[int]


def copy_assignment(a: Assignment) -> Assignment:
    return {t: set(ps) for t, ps in a.items() if ps}


def assignment_eq(a: Assignment, b: Assignment) -> bool:
    return copy_assignment(a) == copy_assignment(b)


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: int = STABLE
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)
    last_heartbeat_ms: int = 0
    revocation_deadline_ms: int | None = None  # rebalance timeout while partitions are being revoked
    # a member speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat) in a consumer group:
    # {"session_timeout_ms": int, "supported_protocols": [(name, subscription bytes)]}; None otherwise
    classic: dict | None = None
    # a classic member's timers (Kafka's, not written either): rejoin within its rebalance timeout
    # once told REBALANCE_IN_PROGRESS, sync within it after its JoinGroup; else it is fenced
    join_deadline_ms: int | None = None
    sync_deadline_ms: int | None = None

    def session_timeout_ms(self, consumer_session_timeout_ms: int) -> int:
        """A classic member lives by the session timeout of its JoinGroup, others by the group's."""
        return self.classic["session_timeout_ms"] if self.classic is not None else consumer_session_timeout_ms

    def owns(self) -> Assignment:
        """What the member may still hold: assigned plus pending revocation."""
        out = copy_assignment(self.assigned)
        for t, ps in self.pending_revocation.items():
            out.setdefault(t, set()).update(ps)
        return out


@dataclass(frozen=True)
class ResolvedRegex:
    """What a subscribed regex resolved to, and over which topics: resolved again by a heartbeat
    once the topics changed. ``authorized``: resolved in a heartbeat, with only the topics its
    principal may DESCRIBE (else outside one, with every topic, until a heartbeat resolves it)."""
    topics: frozenset
    resolved: frozenset
    authorized: bool


@dataclass
class ConsumerGroupState:
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)  # member id -> target assignment
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    # the subscribed topics' metadata at the last epoch bump: {name: (topic id, partitions)}
    subscription_metadata: dict[str, tuple] = field(default_factory=dict)
    # Kafka's resolved regular expressions: {regex: ResolvedRegex} (not written: resolved again
    # after a load)
    resolved_regex: dict[str, "ResolvedRegex"] = field(default_factory=dict)

    def state_name(self) -> str:
        """ConsumerGroup.maybeUpdateGroupState."""
        if not self.members:
            return "Empty"
        if self.group_epoch > self.assignment_epoch:
            return "Assigning"
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state != STABLE:
                return "Reconciling"
        return "Stable"

    def preferred_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: the default's order), else the default."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        best = max(votes.values())
        return sorted(a for a, n in votes.items() if n == best)[0]

    def owner_of(self, topic_id, partition: int, excluding: str) -> str | None:
        for mid, m in self.members.items():
            if mid == excluding:
                continue
            if partition in m.assigned.get(topic_id, ()) or partition in m.pending_revocation.get(topic_id, ()):
                return mid
        return None


# ------------------------------------------------------------------ assignors
def range_assign(spec: GroupSpec) -> dict[str, Assignment]:
    """RangeAssignor: per topic, contiguous ranges over its subscribers sorted by member id
    (the first n % k get one more)."""
    out: dict[str, Assignment] = {m: {} for m in spec.members}
    topics = {tid for subs in spec.subscriptions.values() for tid in subs}
    for tid in topics:
        n = spec.partitions[tid]
        subscribers = sorted(m for m in spec.members if tid in spec.subscriptions[m])
        quota, extra = divmod(n, len(subscribers))
        start = 0
        for i, m in enumerate(subscribers):
            size = quota + (1 if i < extra else 0)
            if size:
                out[m][tid] = set(range(start, start + size))
            start += size
    return out


# every assignor takes a GroupSpec and answers member -> {topic id: partitions}
ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}


# ------------------------------------------------------- current assignment
def reconcile(member: ConsumerMember, target_epoch: int, target: Assignment, owned: Assignment | None,
              owner_of) -> ConsumerMember:
    """CurrentAssignmentBuilder.build: the member's next state towards its target.
    `owned` is what the member says it holds (None: not sent); `owner_of(tid, p)` names
    another member still holding a partition (assigned or pending revocation)."""
    def owns_revoked(pending: Assignment) -> bool:
        if owned is None:
            return True
        return any(p in owned.get(t, ()) for t, ps in pending.items() for p in ps)

    def next_assignment(member_epoch: int, assigned: Assignment) -> ConsumerMember:
        new_assigned: Assignment = {}
        revoke: Assignment = {}
        pending_assign: Assignment = {}
        unreleased = False
        for tid in set(assigned) | set(target):
            cur = set(assigned.get(tid, ()))
            tgt = set(target.get(tid, ()))
            keep, rev, add = cur & tgt, cur - tgt, tgt - cur
            blocked = {p for p in add if owner_of(tid, p) is not None}
            if blocked:
                unreleased = True
                add -= blocked
            if keep:
                new_assigned[tid] = keep
            if rev:
                revoke[tid] = rev
            if add:
                pending_assign[tid] = add
        m = ConsumerMember(**{**member.__dict__})
        m.previous_member_epoch = member.member_epoch
        if revoke and owns_revoked(revoke):
            m.state, m.member_epoch = UNREVOKED_PARTITIONS, member_epoch
            m.assigned, m.pending_revocation = new_assigned, revoke
        else:
            for tid, ps in pending_assign.items():
                new_assigned.setdefault(tid, set()).update(ps)
            m.state = UNRELEASED_PARTITIONS if unreleased else STABLE
            m.member_epoch = target_epoch
            m.assigned, m.pending_revocation = new_assigned, {}
        if m.state == member.state and m.member_epoch == member.member_epoch \
                and assignment_eq(m.assigned, member.assigned) \
                and assignment_eq(m.pending_revocation, member.pending_revocation):
            m.previous_member_epoch = member.previous_member_epoch
        return m

    if member.state == STABLE:
        if member.member_epoch != target_epoch:
            return next_assignment(member.member_epoch, member.assigned)
        return member
    if member.state == UNREVOKED_PARTITIONS:
        if owns_revoked(member.pending_revocation):
            return member
        return next_assignment(min(member.member_epoch + 1, target_epoch), member.assigned)
    # UNRELEASED_PARTITIONS
    if member.member_epoch != target_epoch:
        return next_assignment(member.member_epoch, member.assigned)
    return next_assignment(target_epoch, member.assigned)


def parse_owned(topic_partitions) -> Assignment | None:
    if topic_partitions is None:
        return None
    out: Assignment = {}
    for tp in topic_partitions:
        out.setdefault(tp.topic_id if isinstance(tp.topic_id, uuid.UUID) else uuid.UUID(bytes=tp.topic_id),
                       set()).update(tp.partitions or [])
    return out
