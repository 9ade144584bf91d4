"""`__consumer_offsets` record formats, byte-for-byte as Kafka writes them.

Keys and values are "version-prefixed": an int16 version, then the message
encoded at that version (schemas from Kafka's OffsetCommitKey/Value and
GroupMetadataKey/Value specs). The key version is the record type: 0 and 1 are
offset commits, 2 is group metadata, 3-8 are KIP-848 consumer group records
(ConsumerGroupKey); later types (share and streams groups) are skipped. A null value is a tombstone.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from minikafka.protocol import schema

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
_I16 = struct.Struct(">h")


def _encode(name: str, version: int, obj: dict) -> bytes:
    return _I16.pack(version) + schema.build(schema.data_message(name, version), obj)


def _decode(name: str, data: bytes, max_version: int):
    (version,) = _I16.unpack_from(data, 0)
    if version < 0:
        raise ValueError(f"negative {name} version {version}")
    obj, _ = schema.parse(schema.data_message(name, min(version, max_version)), data[2:])
    return version, obj


# Kafka: Utils.abs(groupId.hashCode) % offsets.topic.num.partitions (Utils.abs maps
# Integer.MIN_VALUE to 0, otherwise Math.abs); shared with the transaction coordinator.
from minikafka.coordinator.hashing import java_string_hash, partition_for  # noqa: E402,F401


# --------------------------------------------------------------- offsets

@dataclass
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1  # only written by OffsetCommit v2-4 with a retention time
    log_offset: int = -1  # where the record sits in __consumer_offsets (not serialised)

    def older_than(self, other: "OffsetValue") -> bool:
        return self.log_offset < other.log_offset


def offset_commit_key(group: str, topic: str, partition: int) -> bytes:
    return _encode("OffsetCommitKey", OFFSET_COMMIT_KEY_VERSION,
                   {"group": group, "topic": topic, "partition": partition})


def offset_commit_value(v: OffsetValue) -> bytes:
    # Kafka writes v1 when an explicit expire timestamp exists, else v3.
    version = 1 if v.expire_timestamp >= 0 else 3
    return _encode("OffsetCommitValue", version, {
        "offset": v.offset, "leader_epoch": v.leader_epoch, "metadata": v.metadata or "",
        "commit_timestamp": v.commit_timestamp, "expire_timestamp": v.expire_timestamp})


def parse_offset_value(data: bytes) -> OffsetValue:
    _, obj = _decode("OffsetCommitValue", data, 4)
    return OffsetValue(offset=obj.offset, leader_epoch=obj.leader_epoch, metadata=obj.metadata or "",
                       commit_timestamp=obj.commit_timestamp, expire_timestamp=obj.expire_timestamp)


# ---------------------------------------------------------- group metadata

@dataclass
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupRecord:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberRecord] = field(default_factory=list)


def group_metadata_key(group: str) -> bytes:
    return _encode("GroupMetadataKey", GROUP_METADATA_KEY_VERSION, {"group": group})


def group_metadata_value(g: GroupRecord) -> bytes:
    return _encode("GroupMetadataValue", 3, {
        "protocol_type": g.protocol_type or "", "generation": g.generation, "protocol": g.protocol,
        "leader": g.leader, "current_state_timestamp": g.current_state_timestamp,
        "members": [{
            "member_id": m.member_id, "group_instance_id": m.group_instance_id,
            "client_id": m.client_id, "client_host": m.client_host,
            "rebalance_timeout": m.rebalance_timeout, "session_timeout": m.session_timeout,
            "subscription": m.subscription or b"", "assignment": m.assignment or b"",
        } for m in g.members]})


def parse_group_value(data: bytes) -> GroupRecord:
    _, obj = _decode("GroupMetadataValue", data, 4)
    return GroupRecord(
        protocol_type=obj.protocol_type or "", generation=obj.generation, protocol=obj.protocol,
        leader=obj.leader, current_state_timestamp=obj.current_state_timestamp,
        members=[MemberRecord(
            member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout,
            session_timeout=m.session_timeout, subscription=m.subscription or b"",
            assignment=m.assignment or b"") for m in obj.members])


# ----------------------------------------------------------------- keys

@dataclass
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass
class GroupKey:
    group: str


def parse_key(data: bytes):
    """OffsetKey, GroupKey, or None for record types a classic coordinator ignores."""
    (version,) = _I16.unpack_from(data, 0)
    if version in (0, 1):
        obj, _ = schema.parse(schema.data_message("OffsetCommitKey", version), data[2:])
        return OffsetKey(obj.group, obj.topic, obj.partition)
    if version == 2:
        obj, _ = schema.parse(schema.data_message("GroupMetadataKey", 2), data[2:])
        return GroupKey(obj.group)
    if version in _CG_KEYS:
        obj, _ = schema.parse(schema.data_message(_CG_KEYS[version], version), data[2:])
        return ConsumerGroupKey(version, obj.group_id, getattr(obj, "member_id", None))
    return None


# ------------------------------------------------------- consumer protocol

def subscribed_topics(metadata: bytes) -> set[str] | None:
    """Topics named in a ConsumerProtocolSubscription; None if it cannot be parsed."""
    try:
        return set(parse_subscription(metadata).topics)
    except Exception:
        return None


@dataclass
class ConsumerSubscription:
    """A classic member's ConsumerProtocolSubscription, as a consumer group keeps it."""
    version: int
    topics: list[str]
    owned: dict[str, set[int]]  # topic name -> partitions (empty before v1)
    rack_id: str | None


def parse_subscription(metadata: bytes) -> ConsumerSubscription:
    """Raises on a malformed subscription (Kafka's SchemaException)."""
    version, obj = _decode("ConsumerProtocolSubscription", metadata, 3)
    owned: dict[str, set[int]] = {}
    for tp in getattr(obj, "owned_partitions", None) or []:
        owned.setdefault(tp.topic, set()).update(tp.partitions or [])
    return ConsumerSubscription(version, list(obj.topics or []), owned, getattr(obj, "rack_id", None))


def parse_assignment(data: bytes) -> dict[str, set[int]]:
    """A ConsumerProtocolAssignment by topic name; an empty one (a member that never synced) is none."""
    if not data:
        return {}
    _, obj = _decode("ConsumerProtocolAssignment", data, 3)
    out: dict[str, set[int]] = {}
    for tp in obj.assigned_partitions or []:
        out.setdefault(tp.topic, set()).update(tp.partitions or [])
    return out


def assignment_bytes(parts: dict[str, set[int]], version: int) -> bytes:
    """ConsumerProtocol.serializeAssignment at the member's subscription version (at most 3)."""
    return _encode("ConsumerProtocolAssignment", min(max(version, 0), 3), {
        "assigned_partitions": [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(parts.items()) if ps],
        "user_data": None})


# ------------------------------------------------- KIP-848 consumer groups
# Record types (the key's version): 3 group epoch, 5 member metadata, 6 target
# assignment epoch, 7 a member's target assignment, 8 a member's current assignment.
CG_METADATA, CG_MEMBER, CG_TARGET_META, CG_TARGET_MEMBER, CG_CURRENT = 3, 5, 6, 7, 8
_CG_KEYS = {CG_METADATA: "ConsumerGroupMetadataKey", CG_MEMBER: "ConsumerGroupMemberMetadataKey",
            CG_TARGET_META: "ConsumerGroupTargetAssignmentMetadataKey",
            CG_TARGET_MEMBER: "ConsumerGroupTargetAssignmentMemberKey",
            CG_CURRENT: "ConsumerGroupCurrentMemberAssignmentKey"}
_CG_VALUES = {CG_METADATA: "ConsumerGroupMetadataValue", CG_MEMBER: "ConsumerGroupMemberMetadataValue",
              CG_TARGET_META: "ConsumerGroupTargetAssignmentMetadataValue",
              CG_TARGET_MEMBER: "ConsumerGroupTargetAssignmentMemberValue",
              CG_CURRENT: "ConsumerGroupCurrentMemberAssignmentValue"}


@dataclass
class ConsumerGroupKey:
    kind: int  # CG_*
    group: str
    member: str | None = None


def cg_key(kind: int, group: str, member: str | None = None) -> bytes:
    obj = {"group_id": group}
    if member is not None:
        obj["member_id"] = member
    return _encode(_CG_KEYS[kind], kind, obj)


def cg_value(kind: int, obj: dict) -> bytes:
    return _encode(_CG_VALUES[kind], 0, obj)


def parse_cg_value(kind: int, data: bytes):
    return _decode(_CG_VALUES[kind], data, 0)[1]


def topic_partitions_field(assignment: dict) -> list[dict]:
    return [{"topic_id": tid, "partitions": sorted(ps)} for tid, ps in sorted(assignment.items(), key=lambda kv: str(kv[0]))
            if ps]
