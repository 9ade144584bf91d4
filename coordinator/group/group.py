"""One classic group: its members, generation and state (Kafka's ClassicGroup,
ClassicGroupMember). Pure data plus small helpers; the transitions live in classic.py.
Its committed offsets are the OffsetManager's (offsets.py)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from minikafka.protocol.errors import ErrorCode

from .records import subscribed_topics


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


# Kafka's GroupMetadata.validPreviousStates
VALID_PREVIOUS = {
    GroupState.DEAD: {GroupState.STABLE, GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE,
                      GroupState.EMPTY, GroupState.DEAD},
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY},
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


class Waiter:
    """A response that is not ready yet (JoinGroup/SyncGroup long-polls): the coordinator
    completes it; the broker looks at ``done`` after each request and timer tick (it is never
    called back), so this module stays free of I/O."""

    __slots__ = ("result", "done")

    def __init__(self):
        self.result = None
        self.done = False

    def complete(self, result) -> None:
        if self.done:
            return
        self.result, self.done = result, True


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    last_heartbeat_ms: int = 0
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def protocol_names(self) -> list[str]:
        return [n for n, _ in self.protocols]

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member does not support any candidate protocol")


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    # KIP-394: member ids handed out with MEMBER_ID_REQUIRED -> deadline to rejoin
    pending_members: dict[str, int] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # group.instance.id -> member id
    # join phase
    join_deadline_ms: int = 0
    initial_join: bool = False  # InitialDelayedJoin (new group) rather than DelayedJoin
    initial_remaining_ms: int = 0
    new_member_added: bool = False
    # sync phase: members that got a JoinGroup response but have not synced yet
    pending_sync: set[str] = field(default_factory=set)
    sync_deadline_ms: int = 0

    # ------------------------------------------------------------ state
    def transition(self, state: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS[state]:
            raise AssertionError(f"group {self.group_id}: invalid transition {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp_ms = now_ms

    # ----------------------------------------------------------- members
    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def add(self, member: ClassicMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> ClassicMember | None:
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        if m.group_instance_id is not None and self.static_members.get(m.group_instance_id) == member_id:
            del self.static_members[m.group_instance_id]
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return m

    def static_member_id(self, instance_id: str | None) -> str | None:
        return self.static_members.get(instance_id) if instance_id is not None else None

    def is_static_member_fenced(self, member_id: str, instance_id: str | None) -> bool:
        """Kafka: an instance id is known and maps to a different member id."""
        if instance_id is None:
            return False
        known = self.static_members.get(instance_id)
        return known is not None and known != member_id

    def validate_member(self, member_id: str, instance_id: str | None) -> ErrorCode:
        """Kafka's ClassicGroup.validateMember: an instance id must be the group's and name this
        member id; the member id must be the group's."""
        if instance_id is not None:
            known = self.static_members.get(instance_id)
            if known is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if known != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        return ErrorCode.NONE if member_id in self.members else ErrorCode.UNKNOWN_MEMBER_ID

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.join_waiter is not None for m in self.members.values())

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # ---------------------------------------------------------- protocols
    def candidate_protocols(self) -> set[str]:
        members = list(self.members.values())
        if not members:
            return set()
        common = set(members[0].protocol_names())
        for m in members[1:]:
            common &= set(m.protocol_names())
        return common

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        names = [n for n, _ in protocols]
        if not self.members:
            return bool(protocol_type) and bool(names)
        cands = self.candidate_protocols()
        return protocol_type == self.protocol_type and any(n in cands for n in names)

    def select_protocol(self) -> str:
        cands = self.candidate_protocols()
        votes: dict[str, int] = {}
        order: list[str] = []
        for m in self.members.values():
            v = m.vote(cands)
            if v not in votes:
                order.append(v)
            votes[v] = votes.get(v, 0) + 1
        best = max(votes.values())
        return next(p for p in order if votes[p] == best)

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol only); None if unknown."""
        if self.protocol_type != "consumer" or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for m in self.members.values():
            try:
                t = subscribed_topics(m.metadata(self.protocol_name))
            except KeyError:
                return None
            if t is None:
                return None
            topics |= t
        return topics
