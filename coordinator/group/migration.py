"""Groups changing kind (KIP-848 online migration, Kafka's group.consumer.migration.policy,
default bidirectional): functions from one kind of group to the other, each returning the
converted group and the records that write the conversion. The ConsumerGroupManager
decides when they apply, appends the records and installs the result.

A ConsumerGroupHeartbeat joining a classic group that has members upgrades it to a consumer
group (GroupMetadataManager.convertToConsumerGroup, ConsumerGroup.fromClassicGroup): each
classic member becomes a consumer group member at the classic generation, keeping its
assignment as its target, with its session timeout and supported protocols as classic member
metadata. Classic members then speak to the consumer group with their own APIs
(consumer_groups.py). When the last consumer-protocol member leaves (or is fenced) and
classic members remain, the group becomes a classic group again (convertToClassicGroup,
ClassicGroup.fromConsumerGroup) and rebalances. An empty consumer group a JoinGroup reaches
becomes an empty classic group.
"""
from __future__ import annotations

import logging

from minikafka.protocol.errors import ErrorCode

from .classic import group_metadata_record, join_error, sync_result
from .config import GroupConfig
from .consumer import (STABLE, ConsumerGroup, ConsumerMember, HeartbeatError, current_assignment_fields,
                       member_metadata_fields, subscription_metadata)
from .group import ClassicGroup, ClassicMember, GroupState
from .records import (CG_CURRENT, CG_MEMBER, CG_METADATA, CG_TARGET_MEMBER, CG_TARGET_META, assignment_bytes,
                      cg_key, cg_value, group_metadata_key, parse_assignment, parse_subscription,
                      topic_partitions_field)

log = logging.getLogger("minikafka.group")


def classic_assignment(subscription: bytes, assigned: dict, names: dict) -> bytes:
    """A classic member's assignment bytes: its partitions (by topic id; ``names``: id -> name)
    by topic name, at its subscription's version (ConsumerProtocol.serializeAssignment)."""
    try:
        version = parse_subscription(subscription).version
    except Exception:  # noqa: BLE001 - its JoinGroup parsed it
        version = 0
    return assignment_bytes({names[t]: ps for t, ps in assigned.items() if t in names}, version)


# ------------------------------------------------------------------ upgrade
def group_to_upgrade(g: ClassicGroup | None, config: GroupConfig) -> ClassicGroup | None:
    """The classic group a consumer-protocol join upgrades (GroupMetadataManager.
    validateOnlineUpgrade), None when there is none: no group, or an empty classic group (that
    one is replaced, GroupMetadataManager.maybeDeleteEmptyClassicGroup)."""
    if g is None or g.state in (GroupState.DEAD, GroupState.EMPTY) or not g.members:
        return None
    gid = g.group_id
    if not config.allows_upgrade():
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer "
                             "group because online upgrade is disabled.")
    if g.protocol_type != "consumer":
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer "
                             "group because the group does not use the consumer embedded protocol.")
    if len(g.members) > config.consumer_max_size:
        raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {gid} to consumer "
                             "group because the group size exceeds the consumer group maximum size.")
    return g


def upgraded_group(g: ClassicGroup, topics: dict, now_ms: int, describable=None) -> tuple[ConsumerGroup, list]:
    """ConsumerGroup.fromClassicGroup and the records that write the conversion: the classic
    group's tombstone, then the consumer group (createConsumerGroupRecords). The members are
    Stable at the classic generation, their last assignment their target; a member caught in
    a rebalance learns of it when it next heartbeats or syncs. (``describable``: as in
    consumer.regex_topics.)"""
    gid, gen = g.group_id, g.generation_id
    cg = ConsumerGroup(gid, group_epoch=gen, assignment_epoch=gen, state_timestamp_ms=g.state_timestamp_ms)
    for cm in g.members.values():
        try:
            sub = parse_subscription(cm.metadata(g.protocol_name) if g.protocol_name is not None
                                     else cm.protocols[0][1])
            by_name = parse_assignment(cm.assignment)
        except Exception:  # noqa: BLE001 - Kafka's SchemaException
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} to "
                                 "consumer group because the embedded consumer protocol is malformed.") from None
        assigned = {topics[t][0]: set(ps) for t, ps in by_name.items() if t in topics and ps}
        m = ConsumerMember(cm.member_id, instance_id=cm.group_instance_id, rack_id=sub.rack_id,
                           client_id=cm.client_id, client_host=cm.client_host,
                           subscribed_topic_names=list(sub.topics), rebalance_timeout_ms=cm.rebalance_timeout_ms,
                           member_epoch=gen, previous_member_epoch=gen, state=STABLE, assigned=assigned,
                           last_heartbeat_ms=now_ms,
                           classic={"session_timeout_ms": cm.session_timeout_ms,
                                    "supported_protocols": list(cm.protocols)})
        cg.members[m.member_id] = m
        cg.target[m.member_id] = {t: set(ps) for t, ps in assigned.items()}
        if m.instance_id is not None:
            cg.static_members[m.instance_id] = m.member_id
    cg.subscription_metadata = subscription_metadata(cg, topics, describable)
    records = [(group_metadata_key(gid), None)]
    records += [(cg_key(CG_MEMBER, gid, mid), cg_value(CG_MEMBER, member_metadata_fields(m)))
                for mid, m in cg.members.items()]
    records.append((cg_key(CG_METADATA, gid), cg_value(CG_METADATA, {"epoch": gen})))
    records += [(cg_key(CG_TARGET_MEMBER, gid, mid),
                 cg_value(CG_TARGET_MEMBER, {"topic_partitions": topic_partitions_field(cg.target[mid])}))
                for mid in cg.members]
    records.append((cg_key(CG_TARGET_META, gid), cg_value(CG_TARGET_META, {"assignment_epoch": gen})))
    records += [(cg_key(CG_CURRENT, gid, mid), cg_value(CG_CURRENT, current_assignment_fields(m)))
                for mid, m in cg.members.items()]
    return cg, records


def finish_upgrade(g: ClassicGroup) -> None:
    """Once the conversion is written: JoinGroups and SyncGroups the classic group held are
    answered REBALANCE_IN_PROGRESS (they rejoin the consumer group); the classic group is done."""
    for m in g.members.values():
        if m.join_waiter is not None:
            w, m.join_waiter = m.join_waiter, None
            w.complete(join_error(m.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
        if m.sync_waiter is not None:
            w, m.sync_waiter = m.sync_waiter, None
            w.complete(sync_result(ErrorCode.REBALANCE_IN_PROGRESS))
    log.info("group %s: upgraded from classic to consumer group at epoch %d", g.group_id, g.generation_id)


# ---------------------------------------------------------------- downgrade
def downgrades_without(cg: ConsumerGroup, leaving_id: str, config: GroupConfig) -> bool:
    """validateOnlineDowngradeWithFencedMember: every other member speaks the classic protocol,
    at least one remains, and the policy allows it."""
    return len(cg.members) > 1 and config.allows_downgrade() \
        and all(m.classic is not None for mid, m in cg.members.items() if mid != leaving_id)


def downgrades_with_replaced(cg: ConsumerGroup, config: GroupConfig) -> bool:
    """validateOnlineDowngradeWithReplacedMemberId, on the group after the replacement: every
    member (the joining one included) speaks the classic protocol, and the policy allows it."""
    return config.allows_downgrade() and all(m.classic is not None for m in cg.members.values())


def downgraded_group(cg: ConsumerGroup, leaving_id: str, topics: dict, now_ms: int) -> tuple[ClassicGroup, list]:
    """convertToClassicGroup: the consumer group's tombstones, then the classic group
    (generation = the group epoch, each member's target assignment its assignment, the first
    member its leader), Stable, without the member ``leaving_id``."""
    gid = cg.group_id
    records = []
    for mid in cg.members:
        records += [(cg_key(CG_CURRENT, gid, mid), None), (cg_key(CG_TARGET_MEMBER, gid, mid), None),
                    (cg_key(CG_MEMBER, gid, mid), None)]
    records += [(cg_key(CG_TARGET_META, gid), None), (cg_key(CG_METADATA, gid), None)]
    classic = ClassicGroup(gid, state=GroupState.STABLE, state_timestamp_ms=now_ms, generation_id=cg.group_epoch,
                           protocol_type="consumer")
    for mid, m in cg.members.items():
        if mid != leaving_id:
            classic.add(ClassicMember(mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                      m.classic["session_timeout_ms"], "consumer",
                                      list(m.classic["supported_protocols"]), last_heartbeat_ms=now_ms))
    classic.protocol_name = classic.select_protocol()
    names = {tid: n for n, (tid, _) in topics.items()}
    for mid, cm in classic.members.items():
        cm.assignment = classic_assignment(cm.metadata(classic.protocol_name), cg.target.get(mid, {}), names)
    records.append((group_metadata_key(gid), group_metadata_record(classic)))
    return classic, records


def emptied_to_classic(cg: ConsumerGroup) -> tuple[ClassicGroup, list]:
    """An empty consumer group a classic JoinGroup reaches: an empty classic group at its group
    epoch (its offsets stay), and the tombstones of its consumer group records."""
    gid = cg.group_id
    classic = ClassicGroup(gid, state_timestamp_ms=cg.state_timestamp_ms, generation_id=cg.group_epoch)
    return classic, [(cg_key(CG_TARGET_META, gid), None), (cg_key(CG_METADATA, gid), None)]
