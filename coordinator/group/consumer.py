"""KIP-848 consumer groups: members, epochs, server-side assignment and
reconciliation (Kafka's ConsumerGroup, ConsumerGroupMember, CurrentAssignmentBuilder,
RangeAssignor; UniformAssignor in uniform.py). Pure data and pure functions; the
ConsumerGroupManager (consumer_groups.py) drives them and writes the records.

Partitions are kept per topic id (uuid.UUID) as sets of partition numbers; a target assignment
keeps them as lists in the order Kafka iterates them (uniform.replayed), which decides ties the
next time the uniform assignor runs.
"""
from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field

from minikafka.protocol.errors import ErrorCode

from .records import topic_partitions_field
from .uniform import GroupSpec, replayed, uniform_assign

# MemberState (Kafka's org.apache.kafka.coordinator.group.modern.consumer.MemberState)
UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS, STABLE = 0, 1, 2

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

Assignment = dict  # topic id (uuid.UUID) -> set[int]


class HeartbeatError(Exception):
    """A consumer group request refused with Kafka's error code and message."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


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


@dataclass(frozen=True)
class ResolvedRegex:
    """What a subscribed regex resolved to, and over which topics: resolved again by a heartbeat
    once the topics changed. ``authorized``: resolved in a heartbeat, with only the topics its
    principal may DESCRIBE (else outside one, with every topic, until a heartbeat resolves it)."""
    topics: frozenset
    resolved: frozenset
    authorized: bool


@dataclass
class ConsumerGroup:
    group_id: str
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
    # when the group was made or last became empty
    state_timestamp_ms: int = -1

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


def every_topic(topic: str) -> bool:
    return True


def member_topics(cg: ConsumerGroup, m: ConsumerMember, topics: dict, describable=None) -> set[str]:
    """The names of ``topics`` ({name: (topic id, partitions)}) the member subscribes to, by
    name or by its regex (resolved as regex_topics does)."""
    out = {n for n in m.subscribed_topic_names if n in topics}
    if m.subscribed_topic_regex:
        out |= regex_topics(cg, m.subscribed_topic_regex, topics, describable)
    return out


def regex_topics(cg: ConsumerGroup, regex: str, topics: dict, describable=None) -> set[str]:
    """The topics a subscribed regex resolves to. As Kafka's refreshRegularExpressions, a heartbeat
    resolves the group's regexes with its own principal, keeping the topics it may DESCRIBE
    (``describable(topic)``, given within a heartbeat only); they are resolved again when the
    topics change. Outside a heartbeat, the last resolution stands (or one over every topic)."""
    known = cg.resolved_regex.get(regex)
    current = frozenset(topics)
    if known is not None and (describable is None or (known.authorized and known.topics == current)):
        return {n for n in known.resolved if n in topics}
    try:
        rx = re.compile(regex)
    except re.error:
        return set()
    matched = {n for n in topics if not n.startswith("__") and rx.fullmatch(n)}
    if describable is not None:
        matched = {n for n in matched if describable(n)}
    cg.resolved_regex[regex] = ResolvedRegex(current, frozenset(matched), describable is not None)
    return matched


def subscription_metadata(cg: ConsumerGroup, topics: dict, describable=None) -> dict[str, tuple]:
    """{name: (topic id, partitions)} of every topic some member subscribes to (names or regex);
    the resolutions of regexes no member subscribes to any more are dropped."""
    names: set[str] = set()
    for m in cg.members.values():
        names |= member_topics(cg, m, topics, describable)
    used = {m.subscribed_topic_regex for m in cg.members.values()}
    for regex in [r for r in cg.resolved_regex if r not in used]:
        del cg.resolved_regex[regex]
    return {n: topics[n] for n in sorted(names)}


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


# ------------------------------------------------------------- record fields
def member_metadata_fields(m: ConsumerMember) -> dict:
    """A ConsumerGroupMemberMetadataValue of the member."""
    classic = None
    if m.classic is not None:
        classic = {"session_timeout_ms": m.classic["session_timeout_ms"],
                   "supported_protocols": [{"name": n, "metadata": md} for n, md in m.classic["supported_protocols"]]}
    return {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "classic_member_metadata": classic}


def current_assignment_fields(m: ConsumerMember) -> dict:
    """A ConsumerGroupCurrentMemberAssignmentValue of the member."""
    return {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch, "state": m.state,
            "assigned_partitions": topic_partitions_field(m.assigned),
            "partitions_pending_revocation": topic_partitions_field(m.pending_revocation)}


def current_assignment_changed(before: ConsumerMember | None, after: ConsumerMember) -> bool:
    if before is None:
        return True
    return (before.member_epoch, before.previous_member_epoch, before.state) != \
        (after.member_epoch, after.previous_member_epoch, after.state) \
        or not assignment_eq(before.assigned, after.assigned) \
        or not assignment_eq(before.pending_revocation, after.pending_revocation)


def replayed_assignment(tps) -> dict:
    """A target assignment record as Kafka holds it once replayed (Assignment.fromRecord)."""
    return replayed({tp.topic_id: list(tp.partitions) for tp in tps or [] if tp.partitions})


def java_ordered(a: dict) -> dict:
    """A target assignment in Kafka's iteration order; one made here from sets (a classic
    group's upgrade, a static member's takeover) is taken as replayed from sorted lists."""
    if all(isinstance(ps, list) for ps in a.values()):
        return a
    return replayed({tid: sorted(ps) for tid, ps in a.items()})


def random_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 random bytes, unpadded."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
