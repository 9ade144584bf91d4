"""Groups mixing classic and consumer-protocol members (KIP-848 online migration, Kafka's
group.consumer.migration.policy=bidirectional, its default), mixed into GroupCoordinator.

A ConsumerGroupHeartbeat joining a classic group that has members upgrades it to a consumer
group (GroupMetadataManager.convertToConsumerGroup, ConsumerGroup.fromClassicGroup): each
classic member becomes a consumer group member at the classic generation, keeping its
assignment as its target, with its session timeout and supported protocols as classic member
metadata. Classic members then speak to the consumer group with their own APIs: JoinGroup
joins and reconciles (classicGroupJoinToConsumerGroup), SyncGroup hands out the member's
assignment, Heartbeat answers REBALANCE_IN_PROGRESS when the member must rejoin, LeaveGroup
removes it. When the last consumer-protocol member leaves (or is fenced) and classic members
remain, the group becomes a classic group again (convertToClassicGroup,
ClassicGroup.fromConsumerGroup) and rebalances.
"""
from __future__ import annotations

import copy
import logging

from minikafka.protocol.errors import ErrorCode

from .consumer import STABLE, UNRELEASED_PARTITIONS, UNREVOKED_PARTITIONS, ConsumerGroupState, ConsumerMember
from .consumer_coordinator import HeartbeatError, _current, _member_meta, _random_member_id
from .group import Group, GroupState, Member
from .records import (CG_CURRENT, CG_MEMBER, CG_METADATA, CG_TARGET_MEMBER, CG_TARGET_META, assignment_bytes,
                      cg_key, cg_value, group_metadata_key, parse_assignment, parse_subscription,
                      topic_partitions_field)

log = logging.getLogger("minikafka.group")
E = ErrorCode


def _join_response(member_id: str, error: ErrorCode, generation: int = -1, protocol_name: str | None = None) -> dict:
    ok = error == E.NONE
    return {"error_code": int(error), "member_id": member_id, "generation_id": generation,
            "protocol_type": "consumer" if ok else None, "protocol_name": protocol_name if ok else None,
            "leader": "", "members": [], "skip_assignment": False}


def _sync_response(error: ErrorCode, protocol_type=None, protocol_name=None, assignment: bytes = b"") -> dict:
    return {"error_code": int(error), "protocol_type": protocol_type, "protocol_name": protocol_name,
            "assignment": assignment}


def _classic_assignment(subscription: bytes, assigned: dict, names: dict) -> bytes:
    """A classic member's assignment bytes: its partitions (by topic id; ``names``: id -> name)
    by topic name, at its subscription's version (ConsumerProtocol.serializeAssignment)."""
    try:
        version = parse_subscription(subscription).version
    except Exception:  # noqa: BLE001 - its JoinGroup parsed it
        version = 0
    return assignment_bytes({names[t]: ps for t, ps in assigned.items() if t in names}, version)


class GroupMigrationMixin:
    """Needs the GroupCoordinator and its ConsumerGroupMixin."""

    # ------------------------------------------------------------- upgrade
    def _classic_group_to_upgrade(self, group_id: str) -> Group | None:
        """The classic group a consumer-protocol join upgrades (GroupMetadataManager.
        validateOnlineUpgrade), None when there is none: no group, a consumer group, or an empty
        classic group (that one is replaced, GroupMetadataManager.maybeDeleteEmptyClassicGroup)."""
        g = self.groups.get(group_id)
        if g is None or g.consumer is not None or g.state in (GroupState.DEAD, GroupState.EMPTY) or not g.members:
            return None
        if self.config.migration_policy not in ("upgrade", "bidirectional"):
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                 "because online upgrade is disabled.")
        if g.protocol_type != "consumer":
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                 "because the group does not use the consumer embedded protocol.")
        if len(g.members) > self.config.consumer_max_size:
            raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {group_id} to consumer group "
                                 "because the group size exceeds the consumer group maximum size.")
        return g

    def _upgraded_state(self, g: Group, now_ms: int) -> tuple[ConsumerGroupState, list]:
        """ConsumerGroup.fromClassicGroup and the records that write the conversion: the classic
        group's tombstone, then the consumer group (createConsumerGroupRecords). The members are
        Stable at the classic generation, their last assignment their target; a member caught in
        a rebalance learns of it when it next heartbeats or syncs."""
        gid, gen = g.group_id, g.generation_id
        topics = self.topics()
        cg = ConsumerGroupState(group_epoch=gen, assignment_epoch=gen)
        for cm in g.members.values():
            try:
                sub = parse_subscription(cm.metadata(g.protocol_name) if g.protocol_name is not None
                                         else cm.protocols[0][1])
                by_name = parse_assignment(cm.assignment)
            except Exception:  # noqa: BLE001 - Kafka's SchemaException
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Cannot upgrade the classic group {gid} to consumer "
                                     "group because the embedded consumer protocol is malformed.") from None
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
        cg.subscription_metadata = self._subscribed_topics(cg, topics)
        records = [(group_metadata_key(gid), None)]
        records += [(cg_key(CG_MEMBER, gid, mid), cg_value(CG_MEMBER, _member_meta(m))) for mid, m in cg.members.items()]
        records.append((cg_key(CG_METADATA, gid), cg_value(CG_METADATA, {"epoch": gen})))
        records += [(cg_key(CG_TARGET_MEMBER, gid, mid),
                     cg_value(CG_TARGET_MEMBER, {"topic_partitions": topic_partitions_field(cg.target[mid])}))
                    for mid in cg.members]
        records.append((cg_key(CG_TARGET_META, gid), cg_value(CG_TARGET_META, {"assignment_epoch": gen})))
        records += [(cg_key(CG_CURRENT, gid, mid), cg_value(CG_CURRENT, _current(m))) for mid, m in cg.members.items()]
        return cg, records

    def _finish_upgrade(self, g: Group) -> None:
        """Once the conversion is written: JoinGroups and SyncGroups the classic group held are
        answered REBALANCE_IN_PROGRESS (they rejoin the consumer group), the classic state goes."""
        for m in g.members.values():
            if m.join_waiter is not None:
                w, m.join_waiter = m.join_waiter, None
                w.complete(_join_response(m.member_id, E.REBALANCE_IN_PROGRESS))
            if m.sync_waiter is not None:
                w, m.sync_waiter = m.sync_waiter, None
                w.complete(_sync_response(E.REBALANCE_IN_PROGRESS))
        g.members.clear()
        g.pending_members.clear()
        g.static_members.clear()
        g.pending_sync.clear()
        g.leader_id = g.protocol_name = None
        g.protocol_type = "consumer"
        log.info("group %s: upgraded from classic to consumer group at epoch %d", g.group_id, g.generation_id)

    # ------------------------------------------------- classic members
    def _find_classic_member(self, g: Group, cg: ConsumerGroupState, member_id: str, instance_id: str | None,
                             unknown: bool) -> tuple[ConsumerMember, bool, str | None]:
        """(member, is new, id of a static member it replaces) for a classic JoinGroup
        (getOrMaybeSubscribe{Dynamic,Static}ConsumerGroupMember with the classic protocol)."""
        if instance_id is None:
            m = cg.members.get(member_id)
            return (m, False, None) if m is not None else (ConsumerMember(member_id), True, None)
        old_id = cg.static_members.get(instance_id)
        if unknown:
            if old_id is None:
                return ConsumerMember(member_id, instance_id), True, None
            # a classic static member replaces the instance's member whether or not it left
            m = ConsumerMember(**{**copy.deepcopy(cg.members[old_id].__dict__), "member_id": member_id})
            m.member_epoch, m.previous_member_epoch = 0, 0
            return m, False, old_id
        return self._classic_member(cg, member_id, instance_id, g.group_id), False, None

    @staticmethod
    def _classic_member(cg: ConsumerGroupState, member_id: str, instance_id: str | None,
                        group_id: str) -> ConsumerMember:
        """validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol."""
        if instance_id is None:
            m = cg.members.get(member_id)
            if m is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        else:
            mid = cg.static_members.get(instance_id)
            if mid is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID,
                                     f"Member with instance id {instance_id} is not a member of group {group_id}.")
            if mid != member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {mid}.")
            m = cg.members[mid]
        if m.classic is None:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {m.member_id} does not use the classic protocol.")
        return m

    def classic_join_to_consumer(self, g: Group, member_id: str, instance_id: str | None, client_id: str,
                                 client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int,
                                 protocol_type: str, protocols: list, require_known: bool, now_ms: int) -> dict:
        """A classic JoinGroup to a consumer group (classicGroupJoinToConsumerGroup): answered at
        once, the generation being the member's epoch after reconciling; the assignment comes
        with SyncGroup."""
        cg = g.consumer
        asked = member_id  # errors answer with the member id the request named
        unknown = member_id == ""
        if unknown:
            member_id = _random_member_id()
        if member_id not in cg.members and len(cg.members) >= self.config.consumer_max_size:
            return _join_response(asked, E.GROUP_MAX_SIZE_REACHED)
        if not self._supports_classic_protocols(cg, protocol_type, [n for n, _ in protocols]):
            return _join_response(asked, E.INCONSISTENT_GROUP_PROTOCOL)
        if require_known and unknown and instance_id is None:
            return _join_response(member_id, E.MEMBER_ID_REQUIRED)
        try:
            sub = parse_subscription(protocols[0][1])
        except Exception:  # noqa: BLE001 - Kafka's SchemaException
            return _join_response(asked, E.INCONSISTENT_GROUP_PROTOCOL)
        topics = self.topics()
        owned = {topics[t][0]: set(ps) for t, ps in sub.owned.items() if t in topics}
        classic = {"session_timeout_ms": session_timeout_ms, "supported_protocols": list(protocols)}
        try:
            m = self._consumer_join_or_heartbeat(
                None, g.group_id, member_id, -1, instance_id, sub.rack_id, rebalance_timeout_ms, sub.topics, None,
                None, owned, None, client_id, client_host, now_ms, classic=classic, classic_unknown=unknown)
        except HeartbeatError as e:
            return _join_response(asked, e.code)
        m.join_deadline_ms, m.sync_deadline_ms = None, now_ms + rebalance_timeout_ms
        return _join_response(member_id, E.NONE, m.member_epoch, protocols[0][0])

    @staticmethod
    def _supports_classic_protocols(cg: ConsumerGroupState, protocol_type: str, names: list) -> bool:
        """ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol
        every classic member supports."""
        if protocol_type != "consumer":
            return False
        if not cg.members:
            return bool(names)
        classic = [m for m in cg.members.values() if m.classic is not None]
        return any(all(n in {p for p, _ in m.classic["supported_protocols"]} for m in classic) for n in names)

    def classic_sync_to_consumer(self, g: Group, generation_id: int, member_id: str, instance_id: str | None,
                                 protocol_type: str | None, protocol_name: str | None, now_ms: int) -> dict:
        """classicGroupSyncToConsumerGroup: the member's assigned partitions, encoded at its
        subscription's version, once it has caught up with the group epoch."""
        cg = g.consumer
        try:
            m = self._classic_member(cg, member_id, instance_id, g.group_id)
        except HeartbeatError as e:
            return _sync_response(e.code)
        if generation_id != m.member_epoch:
            return _sync_response(E.ILLEGAL_GENERATION)
        name = m.classic["supported_protocols"][0][0]
        if (protocol_type is not None and protocol_type != "consumer") or \
                (protocol_name is not None and protocol_name != name):
            return _sync_response(E.INCONSISTENT_GROUP_PROTOCOL)
        if cg.group_epoch > m.member_epoch and m.state != UNREVOKED_PARTITIONS:
            self._must_rejoin(m, now_ms)
            return _sync_response(E.REBALANCE_IN_PROGRESS)
        m.sync_deadline_ms, m.last_heartbeat_ms = None, now_ms
        names = {tid: n for n, (tid, _) in self.topics().items()}
        return _sync_response(E.NONE, protocol_type, protocol_name,
                              _classic_assignment(m.classic["supported_protocols"][0][1], m.assigned, names))

    def classic_heartbeat_to_consumer(self, g: Group, generation_id: int, member_id: str,
                                      instance_id: str | None, now_ms: int) -> ErrorCode:
        """classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member must rejoin
        (the group epoch moved on, it has partitions to revoke, or partitions it waited for are free)."""
        cg = g.consumer
        try:
            m = self._classic_member(cg, member_id, instance_id, g.group_id)
        except HeartbeatError as e:
            return e.code
        if generation_id != m.member_epoch:
            return E.ILLEGAL_GENERATION
        m.last_heartbeat_ms = now_ms
        if m.member_epoch < cg.group_epoch or m.state == UNREVOKED_PARTITIONS or \
                (m.state == UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(cg, m)):
            self._must_rejoin(m, now_ms)
            return E.REBALANCE_IN_PROGRESS
        return E.NONE

    @staticmethod
    def _must_rejoin(m: ConsumerMember, now_ms: int) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: the first REBALANCE_IN_PROGRESS starts the
        member's rebalance timeout to rejoin in."""
        if m.join_deadline_ms is None:
            m.join_deadline_ms = now_ms + m.rebalance_timeout_ms

    @staticmethod
    def _waiting_on_unreleased(cg: ConsumerGroupState, m: ConsumerMember) -> bool:
        """ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target another member still holds."""
        for tid, ps in cg.target.get(m.member_id, {}).items():
            for p in ps:
                if p not in m.assigned.get(tid, ()) and cg.owner_of(tid, p, m.member_id) is not None:
                    return True
        return False

    def classic_leave_to_consumer(self, g: Group, members: list, now_ms: int) -> list:
        """classicGroupLeaveToConsumerGroup: [(member id, error)] per member named; the members
        that may leave go in one write that bumps the group epoch once."""
        cg = g.consumer
        out, leaving = [], []
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    m = self._classic_member(cg, member_id, None, g.group_id)
                else:
                    mid = cg.static_members.get(instance_id)
                    if mid is None:
                        raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    # an admin removes a static member by its instance id alone
                    m = self._classic_member(cg, member_id or mid, instance_id, g.group_id)
            except HeartbeatError as e:
                out.append((member_id, e.code))
                continue
            leaving.append(m.member_id)
            out.append((m.member_id, E.NONE))
        if leaving:
            err = self._remove_consumer_members(g, leaving, now_ms, "the member left the group (LeaveGroup)")
            if err is not None:
                return [(mid, err if e == E.NONE else e) for mid, e in out]
        return out

    # ----------------------------------------------------------- downgrade
    def _downgrades_without(self, cg: ConsumerGroupState, leaving_id: str) -> bool:
        """validateOnlineDowngradeWithFencedMember: every other member speaks the classic protocol,
        at least one remains, and the policy allows it."""
        return len(cg.members) > 1 and self.config.migration_policy in ("downgrade", "bidirectional") \
            and all(m.classic is not None for mid, m in cg.members.items() if mid != leaving_id)

    def _downgrades_with_replaced(self, cg: ConsumerGroupState) -> bool:
        """validateOnlineDowngradeWithReplacedMemberId, on the group after the replacement: every
        member (the joining one included) speaks the classic protocol, and the policy allows it."""
        return self.config.migration_policy in ("downgrade", "bidirectional") \
            and all(m.classic is not None for m in cg.members.values())

    def _downgrade(self, g: Group, leaving_id: str, now_ms: int, cg: ConsumerGroupState | None = None,
                   records: tuple = ()) -> ErrorCode | None:
        """convertToClassicGroup: the consumer group's tombstones, then the classic group
        (generation = the group epoch, each member's target assignment its assignment, the first
        member its leader) in one write, after `records` (those of the join that triggered it).
        A member leaving makes the classic group rebalance; a classic static member replacing the
        last consumer-protocol one (`cg`: the group with it, the leaving member gone) does not."""
        rebalance = cg is None
        cg, gid = cg or g.consumer, g.group_id
        records = list(records)
        for mid in cg.members:
            records += [(cg_key(CG_CURRENT, gid, mid), None), (cg_key(CG_TARGET_MEMBER, gid, mid), None),
                        (cg_key(CG_MEMBER, gid, mid), None)]
        records += [(cg_key(CG_TARGET_META, gid), None), (cg_key(CG_METADATA, gid), None)]
        classic = Group(gid, state=GroupState.STABLE, state_timestamp_ms=now_ms, generation_id=cg.group_epoch,
                        protocol_type="consumer")
        for mid, m in cg.members.items():
            if mid != leaving_id:
                classic.add(Member(mid, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                   m.classic["session_timeout_ms"], "consumer", list(m.classic["supported_protocols"]),
                                   last_heartbeat_ms=now_ms))
        classic.protocol_name = classic.select_protocol()
        names = {tid: n for n, (tid, _) in self.topics().items()}
        for mid, cm in classic.members.items():
            cm.assignment = _classic_assignment(cm.metadata(classic.protocol_name), cg.target.get(mid, {}), names)
        records.append((group_metadata_key(gid), self._group_record(classic)))
        err = self._append_or_error(gid, records, now_ms)
        if err is not None:
            return err
        g.consumer = None
        g.members, g.static_members, g.pending_members = classic.members, classic.static_members, {}
        g.generation_id, g.protocol_type, g.protocol_name = classic.generation_id, "consumer", classic.protocol_name
        g.leader_id, g.state, g.state_timestamp_ms = classic.leader_id, GroupState.STABLE, now_ms
        if rebalance:
            self._prepare_rebalance(g, now_ms, f"Downgrade group {gid} from consumer to classic.")
        else:
            log.info("group %s: downgraded from consumer to classic group at generation %d", gid, g.generation_id)
        return None
