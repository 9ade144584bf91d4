"""Consumer groups (KIP-848: Kafka's GroupMetadataManager for ConsumerGroup:
consumerGroupHeartbeat, and the classic protocol's JoinGroup, SyncGroup, Heartbeat and
LeaveGroup from classic members of a consumer group).

Each heartbeat computes the group's next state on a copy, appends the records that describe
the change to __consumer_offsets (Kafka's record types 3, 5, 6, 7, 8), and only then installs
the copy, so a failed append changes nothing. A group changes kind through migration.py's
functions: a consumer-protocol join upgrades a classic group of the ClassicGroupManager, and
a consumer group left with classic members only is handed back to it as a classic group.
"""
from __future__ import annotations

import copy
import logging
import re

from minikafka.protocol.errors import ErrorCode

from . import migration
from .classic import ClassicGroupManager
from .config import GroupConfig
from .consumer import (ASSIGNORS, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, UNRELEASED_PARTITIONS,
                       UNREVOKED_PARTITIONS, ConsumerGroup, ConsumerMember, HeartbeatError, assignment_eq,
                       copy_assignment, current_assignment_changed, current_assignment_fields, java_ordered,
                       every_topic, member_metadata_fields, member_topics, parse_owned, random_member_id, reconcile,
                       replayed_assignment, subscription_metadata)
from .group import GroupState
from .records import (CG_CURRENT, CG_MEMBER, CG_METADATA, CG_TARGET_MEMBER, CG_TARGET_META, cg_key, cg_value,
                      parse_cg_value, parse_subscription, topic_partitions_field)
from .store import GroupLog, GroupWriteError
from .uniform import GroupSpec, JavaHash, member_order, replayed, string_hash, topic_id_order

log = logging.getLogger("minikafka.group")


def heartbeat_error(code: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


def classic_join_response(member_id: str, error: ErrorCode, generation: int = -1,
                          protocol_name: str | None = None) -> dict:
    ok = error == ErrorCode.NONE
    return {"error_code": int(error), "member_id": member_id, "generation_id": generation,
            "protocol_type": "consumer" if ok else None, "protocol_name": protocol_name if ok else None,
            "leader": "", "members": [], "skip_assignment": False}


def classic_sync_response(error: ErrorCode, protocol_type=None, protocol_name=None, assignment: bytes = b"") -> dict:
    return {"error_code": int(error), "protocol_type": protocol_type, "protocol_name": protocol_name,
            "assignment": assignment}


def validate_heartbeat(version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                       names, regex, owned_tps, assignor, assignors):
    """ConsumerGroupHeartbeatRequest validation (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid)."""
    if version >= 1 and not member_id:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
    if not group_id:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
    if instance_id is not None and instance_id == "":
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be empty.")
    if rack_id is not None and rack_id == "":
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
    if member_epoch == 0:
        if rebalance_timeout_ms == -1:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if owned_tps is None or len(owned_tps) > 0:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if names is None and regex is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST,
                                 "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if instance_id is None:
            raise HeartbeatError(ErrorCode.INVALID_REQUEST, "InstanceId can't be null.")
    elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as e:
            raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` is not a valid "
                                 f"regular expression: {e}.") from None
    if assignor is not None and assignor not in assignors:
        raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. "
                             f"Supported assignors: {', '.join(assignors)}.")



class ConsumerGroupManager:
    """The consumer groups of this coordinator, by group id. ``topics()`` -> {name: (topic id,
    partitions)} of the assignable topics; ``group_configs(group id)`` -> its GROUP config
    overrides (KIP-848)."""

    def __init__(self, config: GroupConfig, log: GroupLog, classic: ClassicGroupManager, topics, group_configs):
        self.config = config
        self.log = log
        self.classic = classic
        self.topics = topics
        self.group_configs = group_configs
        self.groups: dict[str, ConsumerGroup] = {}

    # ------------------------------------------------------------- lookups
    def _group_for(self, group_id: str, create: bool, now_ms: int) -> ConsumerGroup:
        """The consumer group a request names; with ``create``, a new one (not installed yet),
        also in place of an empty classic group."""
        cg = self.groups.get(group_id)
        if cg is not None:
            return cg
        g = self.classic.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return ConsumerGroup(group_id, state_timestamp_ms=now_ms)
        if g.members:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        if not create:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
        # an empty classic group becomes a consumer group (its offsets stay; member ids only
        # handed out with MEMBER_ID_REQUIRED are no members)
        return ConsumerGroup(group_id, group_epoch=g.generation_id, assignment_epoch=g.generation_id,
                             state_timestamp_ms=g.state_timestamp_ms)

    def _install(self, cg: ConsumerGroup) -> None:
        """The group's new state, written: it replaces the group of either kind by that id."""
        self.groups[cg.group_id] = cg
        self.classic.groups.pop(cg.group_id, None)

    def group_config(self, group_id: str, key: str):
        """A GROUP config's value for this group: its override, else the broker's default."""
        value = self.group_configs(group_id).get(key)
        if value is not None:
            return value
        return {"consumer.session.timeout.ms": self.config.consumer_session_timeout_ms,
                "consumer.heartbeat.interval.ms": self.config.consumer_heartbeat_interval_ms}[key]

    def session_timeout_of(self, group_id: str) -> int:
        return int(self.group_config(group_id, "consumer.session.timeout.ms"))

    def heartbeat_interval_of(self, group_id: str) -> int:
        return int(self.group_config(group_id, "consumer.heartbeat.interval.ms"))

    def _try_append(self, group_id: str, records: list, now_ms: int) -> ErrorCode | None:
        """None once appended, else the error Kafka answers."""
        try:
            self.log.append(group_id, records, now_ms)
        except GroupWriteError as e:
            return e.code
        return None

    # ------------------------------------------------------------ heartbeat
    def heartbeat(self, version: int, group_id: str, member_id: str, member_epoch: int,
                  instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                  subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions,
                  client_id: str, client_host: str, now_ms: int, describable=None) -> dict:
        """ConsumerGroupHeartbeat: a join, a heartbeat or a leave. ``describable(topic)``: may the
        heartbeat's principal DESCRIBE the topic (None: no authorizer, every topic); the regexes
        it resolves keep only those."""
        describable = describable or every_topic
        try:
            validate_heartbeat(version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                               subscribed_topic_names, subscribed_topic_regex, topic_partitions, server_assignor,
                               self.config.consumer_assignors)
            if version == 0 and member_epoch == 0 and not member_id:
                member_id = random_member_id()  # v0: the coordinator names new members (v1: the client)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(group_id, member_id, member_epoch, instance_id, now_ms, describable)
            return self._join_or_heartbeat(
                version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, parse_owned(topic_partitions),
                topic_partitions, client_id, client_host, now_ms, describable=describable)
        except HeartbeatError as e:
            return heartbeat_error(e.code, e.message)

    @staticmethod
    def _find_member(cg: ConsumerGroup, member_id: str, member_epoch: int, instance_id: str | None,
                     owned) -> tuple[ConsumerMember, bool, str | None]:
        """(member, is new, id of a static member it replaces)."""
        gid = cg.group_id
        if instance_id is None:
            m = cg.members.get(member_id)
            if member_epoch == 0:
                return (m, False, None) if m is not None else (ConsumerMember(member_id), True, None)
            if m is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {gid}.")
        else:
            old_id = cg.static_members.get(instance_id)
            if member_epoch == 0:
                if old_id is None:
                    m = cg.members.get(member_id)
                    return (m, False, None) if m is not None else (ConsumerMember(member_id, instance_id), True, None)
                old = cg.members[old_id]
                if old_id == member_id:
                    return old, False, None
                if old.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                    raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                         f"Static member {old_id} with instance id {instance_id} is not released yet.")
                # the new instance takes over the old one's assignment and epoch
                m = ConsumerMember(**{**copy.deepcopy(old.__dict__), "member_id": member_id})
                m.member_epoch = old.previous_member_epoch if old.previous_member_epoch >= 0 else 0
                return m, False, old_id
            if old_id is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if old_id != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {old_id}.")
            m = cg.members[old_id]
        # epoch checks (throwIfMemberEpochIsInvalid)
        if member_epoch > m.member_epoch:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                                 f"({member_epoch}) than the one known by the group coordinator ({m.member_epoch}). "
                                 f"The member must abandon all its partitions and rejoin.")
        if member_epoch < m.member_epoch:
            subset = owned is not None and all(ps <= m.assigned.get(t, set()) for t, ps in owned.items())
            if not (member_epoch == m.previous_member_epoch and subset):
                raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member "
                                     f"epoch ({member_epoch}) than the one known by the group coordinator "
                                     f"({m.member_epoch}). The member must abandon all its partitions and rejoin.")
        return m, False, None

    def _join_or_heartbeat(self, version, group_id, member_id, member_epoch, instance_id, rack_id,
                           rebalance_timeout_ms, names, regex, assignor, owned, owned_raw, client_id,
                           client_host, now_ms, classic: dict | None = None, classic_unknown: bool = False,
                           describable=None):
        """A ConsumerGroupHeartbeat join or heartbeat; with `classic` (the member's classic
        metadata), a classic member's JoinGroup to a consumer group (Kafka's
        classicGroupJoinToConsumerGroup), answered with the updated member instead."""
        upgrade = None
        if member_epoch == 0 and classic is None:
            upgrade = migration.group_to_upgrade(self.classic.groups.get(group_id), self.config)
        if upgrade is not None:
            # Kafka's convertToConsumerGroup: the join upgrades a classic group with members online
            cg, records = migration.upgraded_group(upgrade, self.topics(), now_ms, describable)
        else:
            cg, records = self._group_for(group_id, create=member_epoch == 0, now_ms=now_ms), []
        if classic is not None:
            member, is_new, replaced = self._find_classic_member(cg, member_id, instance_id, classic_unknown)
        else:
            member, is_new, replaced = self._find_member(cg, member_id, member_epoch, instance_id, owned)
        if is_new and len(cg.members) >= self.config.consumer_max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of "
                                 f"{self.config.consumer_max_size} members.")
        new = copy.deepcopy(cg)
        if replaced is not None:
            old = new.members.pop(replaced)
            new.target[member_id] = new.target.pop(replaced, copy_assignment(old.assigned))
            records += [(cg_key(CG_CURRENT, group_id, replaced), None),
                        (cg_key(CG_TARGET_MEMBER, group_id, replaced), None),
                        (cg_key(CG_MEMBER, group_id, replaced), None),
                        (cg_key(CG_TARGET_MEMBER, group_id, member_id),
                         cg_value(CG_TARGET_MEMBER, {"topic_partitions": topic_partitions_field(new.target[member_id])}))]
        m = copy.deepcopy(member)
        before_meta = member_metadata_fields(member) if not is_new and replaced is None else None
        if instance_id is not None:
            m.instance_id = instance_id
        if rack_id is not None:
            m.rack_id = rack_id
        if rebalance_timeout_ms != -1:
            m.rebalance_timeout_ms = rebalance_timeout_ms
        if names is not None:
            m.subscribed_topic_names = list(names)
        if regex is not None:
            m.subscribed_topic_regex = regex or None
        if assignor is not None:
            m.server_assignor = assignor
        m.client_id, m.client_host = client_id, client_host
        if classic is not None:
            m.classic = classic
        m.last_heartbeat_ms = now_ms
        new.members[member_id] = m
        if m.instance_id is not None:
            new.static_members[m.instance_id] = member_id
        meta_changed = before_meta is None or member_metadata_fields(m) != before_meta
        if meta_changed:
            records.append((cg_key(CG_MEMBER, group_id, member_id), cg_value(CG_MEMBER, member_metadata_fields(m))))
        subs_changed = is_new or replaced is not None or before_meta is None or \
            (before_meta["subscribed_topic_names"], before_meta["subscribed_topic_regex"]) != \
            (m.subscribed_topic_names, m.subscribed_topic_regex) or before_meta["server_assignor"] != m.server_assignor
        topics = self.topics()
        sub_meta = subscription_metadata(new, topics, describable)
        bump = (is_new or (subs_changed and replaced is None)) or sub_meta != new.subscription_metadata
        if bump:
            new.group_epoch += 1
            new.subscription_metadata = sub_meta
            records.append((cg_key(CG_METADATA, group_id), cg_value(CG_METADATA, {"epoch": new.group_epoch})))
        if new.group_epoch > new.assignment_epoch:
            records += self._compute_target(group_id, new, topics, member_id, not is_new and replaced is None,
                                            replaced, describable)
        # reconcile this member towards its target
        target = new.target.get(member_id, {})
        updated = reconcile(m, new.assignment_epoch, target, owned,
                            lambda t, p: new.owner_of(t, p, member_id))
        if updated.state == UNREVOKED_PARTITIONS and m.state != UNREVOKED_PARTITIONS:
            updated.revocation_deadline_ms = now_ms + max(m.rebalance_timeout_ms, 0)
        elif updated.state != UNREVOKED_PARTITIONS:
            updated.revocation_deadline_ms = None
        new.members[member_id] = updated
        if current_assignment_changed(member if not is_new else None, updated) or replaced is not None:
            records.append((cg_key(CG_CURRENT, group_id, member_id), cg_value(CG_CURRENT, current_assignment_fields(updated))))
        if classic is not None and replaced is not None and migration.downgrades_with_replaced(new, self.config):
            # a classic static member took the last consumer-protocol member's place
            err = self._downgrade(new, replaced, now_ms, records, rebalance=False)
            if err is not None:
                raise HeartbeatError(err)
            return updated
        if records:
            err = self._try_append(group_id, records, now_ms)
            if err is not None:
                raise HeartbeatError(err)
        if upgrade is not None:
            migration.finish_upgrade(upgrade)
        self._install(new)
        if is_new:
            log.info("group %s: member %s joins (epoch %d)%s", group_id, member_id, new.group_epoch,
                     " with the classic protocol" if classic is not None else "")
        if classic is not None:
            return updated
        # Kafka sends the assignment only to a full request (a join, or a client that lost an
        # answer: it sends every field again) or when the assignment changed; a plain heartbeat
        # back with the previous epoch gets none, even if it owns less than its assignment
        full = member_epoch == 0 or (rebalance_timeout_ms != -1 and (names is not None or regex is not None)
                                     and owned_raw is not None)
        resp = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": updated.member_epoch, "heartbeat_interval_ms": self.heartbeat_interval_of(group_id),
                "assignment": None}
        if full or is_new or not assignment_eq(member.assigned, updated.assigned):
            resp["assignment"] = {"topic_partitions": topic_partitions_field(updated.assigned)}
        return resp

    def _compute_target(self, group_id: str, cg: ConsumerGroup, topics: dict, updated: str,
                        existed: bool, replaced: str | None, describable) -> list:
        """TargetAssignmentBuilder.build: a new target assignment at the group epoch, computed
        from the current target (not what members own); records for the members whose target
        changed, and the epoch. `updated` is the heartbeating member (`existed`: it was a member
        before this heartbeat), `replaced` the static member it takes over from."""
        ids = {name: tid for name, (tid, _) in topics.items()}
        by_name: dict[str, int] = {}
        subscriptions, sizes = {}, {}
        for mid, m in cg.members.items():
            resolved = member_topics(cg, m, topics, describable)
            names = list(dict.fromkeys(m.subscribed_topic_names))
            for n in set(names) | resolved:
                by_name.setdefault(n, 0)
            for n in names:
                by_name[n] += 1
            # TopicIds: the names in their HashSet's order, then the topics only the regex gives
            subscriptions[mid] = topic_id_order(names, ids) + [ids[n] for n in sorted(resolved - set(names))]
            sizes[mid] = len(set(names) | resolved)
        existing = [mid for mid in cg.members if existed or mid != updated]
        current = {mid: java_ordered(cg.target.get(mid, {})) for mid in cg.members}
        spec = GroupSpec(
            members=member_order(existing, None if existed else updated, replaced),
            subscriptions=subscriptions, subscription_sizes=sizes,
            # SubscriptionType: homogeneous when every subscribed name has every member by name
            homogeneous=all(c == len(cg.members) for c in by_name.values()),
            current=current,
            assigned={(tid, p) for a in cg.target.values() for tid, ps in a.items() for p in ps},
            partitions={tid: n for tid, n in topics.values()})
        result = ASSIGNORS[cg.preferred_assignor(self.config.consumer_assignors[0])](spec)
        records = []
        target = {}
        for mid in spec.members:
            a = {tid: list(ps) for tid, ps in result.get(mid, {}).items() if ps}
            old = cg.target.get(mid)
            if old is not None and assignment_eq(old, a):
                target[mid] = current[mid]  # unchanged: no record, Kafka keeps its old sets
                continue
            # the record lists the assignor's sets in their order; Kafka's state is its replay
            records.append((cg_key(CG_TARGET_MEMBER, group_id, mid),
                            cg_value(CG_TARGET_MEMBER, {"topic_partitions": [
                                {"topic_id": tid, "partitions": ps} for tid, ps in a.items()]})))
            target[mid] = replayed(a)
        cg.target = {mid: target[mid] for mid in cg.members}
        cg.assignment_epoch = cg.group_epoch
        records.append((cg_key(CG_TARGET_META, group_id),
                        cg_value(CG_TARGET_META, {"assignment_epoch": cg.assignment_epoch})))
        return records

    # ------------------------------------------------------------ leaving
    def _leave(self, group_id, member_id, member_epoch, instance_id, now_ms, describable) -> dict:
        cg = self._group_for(group_id, create=False, now_ms=now_ms)
        if instance_id is not None:
            mid = cg.static_members.get(instance_id)
            if mid is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if mid != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {mid}.")
        elif member_id not in cg.members:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                 f"Member {member_id} is not a member of group {group_id}.")
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            new = copy.deepcopy(cg)
            m = new.members[member_id]
            m.previous_member_epoch = m.member_epoch
            m.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            err = self._try_append(group_id, [(cg_key(CG_CURRENT, group_id, member_id),
                                               cg_value(CG_CURRENT, current_assignment_fields(m)))], now_ms)
            if err is not None:
                return heartbeat_error(err)
            self._install(new)
            log.info("group %s: static member %s (%s) leaves for now", group_id, member_id, instance_id)
        else:
            err = self.remove_member(cg, member_id, now_ms, "the member left the group", describable)
            if err is not None:
                return heartbeat_error(err)
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": member_epoch, "heartbeat_interval_ms": 0, "assignment": None}

    def remove_member(self, cg: ConsumerGroup, member_id: str, now_ms: int, why: str,
                      describable=None) -> ErrorCode | None:
        """A member leaves or is fenced (consumerGroupFenceMember): if only classic members remain,
        the group becomes a classic group again."""
        if migration.downgrades_without(cg, member_id, self.config):
            return self._downgrade(cg, member_id, now_ms)
        return self._remove_members(cg, [member_id], now_ms, why, describable)

    def _remove_members(self, cg: ConsumerGroup, member_ids: list, now_ms: int, why: str,
                        describable=None) -> ErrorCode | None:
        """Removes members in one write with one epoch bump (a LeaveGroup naming several: Kafka's
        classicGroupLeaveToConsumerGroup)."""
        gid = cg.group_id
        new = copy.deepcopy(cg)
        records = []
        for member_id in member_ids:
            m = new.members.pop(member_id)
            new.target.pop(member_id, None)
            if m.instance_id is not None and new.static_members.get(m.instance_id) == member_id:
                del new.static_members[m.instance_id]
            records += [(cg_key(CG_CURRENT, gid, member_id), None), (cg_key(CG_TARGET_MEMBER, gid, member_id), None),
                        (cg_key(CG_MEMBER, gid, member_id), None)]
        new.group_epoch += 1
        new.subscription_metadata = subscription_metadata(new, self.topics(), describable)
        records.append((cg_key(CG_METADATA, gid), cg_value(CG_METADATA, {"epoch": new.group_epoch})))
        err = self._try_append(gid, records, now_ms)
        if err is not None:
            return err
        if not new.members:
            new.state_timestamp_ms = now_ms  # offsets of an empty group expire from now (offsets.retention.minutes)
        self._install(new)
        log.info("group %s: members %s removed (%s), group epoch %d", gid, ", ".join(member_ids), why,
                 new.group_epoch)
        return None

    def _downgrade(self, cg: ConsumerGroup, leaving_id: str, now_ms: int, records: list = (),
                   rebalance: bool = True) -> ErrorCode | None:
        """The group becomes a classic group without member ``leaving_id``, written in one append
        after ``records`` (those of the join that triggered it). A member leaving makes the
        classic group rebalance; a classic static member replacing the last consumer-protocol
        one (``cg``: the group with it, the leaving member gone) does not."""
        gid = cg.group_id
        classic, conversion = migration.downgraded_group(cg, leaving_id, self.topics(), now_ms)
        err = self._try_append(gid, list(records) + conversion, now_ms)
        if err is not None:
            return err
        del self.groups[gid]
        self.classic.groups[gid] = classic
        if rebalance:
            self.classic.prepare_rebalance(classic, now_ms, f"Downgrade group {gid} from consumer to classic.")
        else:
            log.info("group %s: downgraded from consumer to classic group at generation %d", gid,
                     classic.generation_id)
        return None

    def emptied_to_classic(self, cg: ConsumerGroup, now_ms: int) -> ErrorCode | None:
        """An empty consumer group a classic JoinGroup reaches becomes an empty classic group."""
        classic, records = migration.emptied_to_classic(cg)
        err = self._try_append(cg.group_id, records, now_ms)
        if err is not None:
            return err
        del self.groups[cg.group_id]
        self.classic.groups[cg.group_id] = classic
        return None

    # -------------------------------------------------------------- timers
    def tick_group(self, group_id: str, now_ms: int) -> None:
        """Fence the members whose session, revocation, rejoin or sync time is over."""
        cg = self.groups[group_id]
        session = self.session_timeout_of(group_id)
        for mid, m in list(cg.members.items()):
            cg = self.groups.get(group_id)
            if cg is None:
                return  # a member's removal made it a classic group again
            if now_ms >= m.last_heartbeat_ms + m.session_timeout_ms(session):
                self.remove_member(cg, mid, now_ms, "session timeout expired")
            elif m.revocation_deadline_ms is not None and now_ms >= m.revocation_deadline_ms:
                self.remove_member(cg, mid, now_ms, "did not revoke its partitions within the rebalance timeout")
            elif m.join_deadline_ms is not None and now_ms >= m.join_deadline_ms:
                self.remove_member(cg, mid, now_ms, "the classic member did not rejoin within the rebalance timeout")
            elif m.sync_deadline_ms is not None and now_ms >= m.sync_deadline_ms:
                self.remove_member(cg, mid, now_ms, "the classic member did not sync within the rebalance timeout")

    def offset_expiry(self, cg: ConsumerGroup):
        """(the time an offset's retention counts from, given the offset; the topics whose offsets
        never expire): a consumer group's offsets expire from their commit, for every topic no
        member subscribes to."""
        topics = self.topics()
        subscribed: set[str] = set()
        for m in cg.members.values():
            subscribed |= member_topics(cg, m, topics) | set(m.subscribed_topic_names)
        return (lambda v: v.commit_timestamp), subscribed

    def subscribed_topic_names(self, cg: ConsumerGroup) -> set[str]:
        """Topics some member subscribes to, by name or regex (OffsetDelete refuses their offsets)."""
        return self.offset_expiry(cg)[1]

    # ------------------------------------------------------- offsets checks
    @staticmethod
    def validate_commit(cg: ConsumerGroup, member_id: str, member_epoch: int, transactional: bool,
                        api_version: int) -> ErrorCode:
        """ConsumerGroup.validateOffsetCommit; TxnOffsetCommit answers a wrong epoch with
        ILLEGAL_GENERATION (as Kafka 4.1 does, v5 included)."""
        if member_epoch < 0 and not cg.members:
            return ErrorCode.NONE
        m = cg.members.get(member_id or "")
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and m.classic is None and api_version < 9:
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != m.member_epoch:
            if transactional or m.classic is not None:  # a classic member's epoch is its generation
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    @staticmethod
    def validate_fetch(cg: ConsumerGroup, member_id: str | None, member_epoch: int) -> ErrorCode:
        """ConsumerGroup.validateOffsetFetch: only an admin (epoch -1, no member id) skips the checks."""
        if member_epoch < 0 and member_id is None:
            return ErrorCode.NONE
        if member_id is None:
            # Kafka looks a null member id up and fails (a NullPointerException): the group
            # is answered UNKNOWN_SERVER_ERROR
            return ErrorCode.UNKNOWN_SERVER_ERROR
        m = cg.members.get(member_id)
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != m.member_epoch:
            # a classic member's epoch is its generation (Kafka's validateMemberEpoch with
            # useClassicProtocol)
            return ErrorCode.ILLEGAL_GENERATION if m.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # ------------------------------------------------------------ describe
    def describe(self, group_id: str, ops: int) -> dict:
        """ConsumerGroupDescribe of one group; ``ops``: its authorized operations."""
        cg = self.groups.get(group_id)
        base = {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": "",
                "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                "authorized_operations": ops}
        if cg is None:
            classic = self.classic.groups.get(group_id)
            message = f"Group {group_id} not found." if classic is None or classic.state == GroupState.DEAD \
                else f"Group {group_id} is not a consumer group."
            return dict(base, error_code=int(ErrorCode.GROUP_ID_NOT_FOUND), error_message=message,
                        authorized_operations=-2147483648)
        names = {tid: name for name, (tid, _) in self.topics().items()}

        def tps(a):
            return [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
                    for t, ps in sorted(a.items(), key=lambda kv: names.get(kv[0], "")) if ps]

        def target_tps(a):
            # the target as Kafka iterates it (its topics' HashMap, each partition HashSet)
            return [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": list(ps)}
                    for t, ps in java_ordered(a).items() if ps]
        members = [{
            "member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
            "member_epoch": m.member_epoch, "client_id": m.client_id, "client_host": m.client_host,
            # ConsumerGroupMember keeps the names in a HashSet copied from the request's list
            "subscribed_topic_names": list(JavaHash.copy_of(string_hash, list(dict.fromkeys(
                m.subscribed_topic_names)))),
            "subscribed_topic_regex": m.subscribed_topic_regex or "",
            "assignment": {"topic_partitions": tps(m.assigned)},
            "target_assignment": {"topic_partitions": target_tps(cg.target.get(m.member_id, {}))},
            "member_type": 0 if m.classic is not None else 1,  # v1: 0 a classic member, 1 a consumer one
        } for m in cg.members.values()]
        return dict(base, group_state=cg.state_name(), group_epoch=cg.group_epoch,
                    assignment_epoch=cg.assignment_epoch,
                    assignor_name=cg.preferred_assignor(self.config.consumer_assignors[0]), members=members)

    def list_entry(self, cg: ConsumerGroup, states: set[str], types: set[str]) -> dict | None:
        """The group's ListGroups entry, None when the filters (lower case) leave it out."""
        state = cg.state_name()
        if (types and "consumer" not in types) or (states and state.lower() not in states):
            return None
        return {"group_id": cg.group_id, "protocol_type": "consumer", "group_state": state, "group_type": "consumer"}

    # ------------------------------------------------- classic members
    def _find_classic_member(self, cg: ConsumerGroup, member_id: str, instance_id: str | None,
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
        return self._classic_member(cg, member_id, instance_id), False, None

    @staticmethod
    def _classic_member(cg: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerMember:
        """validateConsumerGroupMember and throwIfMemberDoesNotUseClassicProtocol."""
        group_id = cg.group_id
        if instance_id is None:
            m = cg.members.get(member_id)
            if m is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        else:
            mid = cg.static_members.get(instance_id)
            if mid is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID,
                                     f"Member with instance id {instance_id} is not a member of group {group_id}.")
            if mid != member_id:
                raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {mid}.")
            m = cg.members[mid]
        if m.classic is None:
            raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {m.member_id} does not use the classic protocol.")
        return m

    def classic_join(self, cg: ConsumerGroup, member_id: str, instance_id: str | None, client_id: str,
                     client_host: str, session_timeout_ms: int, rebalance_timeout_ms: int,
                     protocol_type: str, protocols: list, require_known: bool, now_ms: int) -> dict:
        """A classic JoinGroup to a consumer group (classicGroupJoinToConsumerGroup): answered at
        once, the generation being the member's epoch after reconciling; the assignment comes
        with SyncGroup."""
        asked = member_id  # errors answer with the member id the request named
        unknown = member_id == ""
        if unknown:
            member_id = random_member_id()
        if member_id not in cg.members and len(cg.members) >= self.config.consumer_max_size:
            return classic_join_response(asked, ErrorCode.GROUP_MAX_SIZE_REACHED)
        if not self._supports_classic_protocols(cg, protocol_type, [n for n, _ in protocols]):
            return classic_join_response(asked, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if require_known and unknown and instance_id is None:
            return classic_join_response(member_id, ErrorCode.MEMBER_ID_REQUIRED)
        try:
            sub = parse_subscription(protocols[0][1])
        except Exception:  # noqa: BLE001 - Kafka's SchemaException
            return classic_join_response(asked, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        topics = self.topics()
        owned = {topics[t][0]: set(ps) for t, ps in sub.owned.items() if t in topics}
        classic = {"session_timeout_ms": session_timeout_ms, "supported_protocols": list(protocols)}
        try:
            m = self._join_or_heartbeat(
                None, cg.group_id, member_id, -1, instance_id, sub.rack_id, rebalance_timeout_ms, sub.topics, None,
                None, owned, None, client_id, client_host, now_ms, classic=classic, classic_unknown=unknown)
        except HeartbeatError as e:
            return classic_join_response(asked, e.code)
        m.join_deadline_ms, m.sync_deadline_ms = None, now_ms + rebalance_timeout_ms
        return classic_join_response(member_id, ErrorCode.NONE, m.member_epoch, protocols[0][0])

    @staticmethod
    def _supports_classic_protocols(cg: ConsumerGroup, protocol_type: str, names: list) -> bool:
        """ConsumerGroup.supportsClassicProtocols: the consumer protocol type, and a protocol
        every classic member supports."""
        if protocol_type != "consumer":
            return False
        if not cg.members:
            return bool(names)
        classic = [m for m in cg.members.values() if m.classic is not None]
        return any(all(n in {p for p, _ in m.classic["supported_protocols"]} for m in classic) for n in names)

    def classic_sync(self, cg: ConsumerGroup, generation_id: int, member_id: str, instance_id: str | None,
                     protocol_type: str | None, protocol_name: str | None, now_ms: int) -> dict:
        """classicGroupSyncToConsumerGroup: the member's assigned partitions, encoded at its
        subscription's version, once it has caught up with the group epoch."""
        try:
            m = self._classic_member(cg, member_id, instance_id)
        except HeartbeatError as e:
            return classic_sync_response(e.code)
        if generation_id != m.member_epoch:
            return classic_sync_response(ErrorCode.ILLEGAL_GENERATION)
        name = m.classic["supported_protocols"][0][0]
        if (protocol_type is not None and protocol_type != "consumer") or \
                (protocol_name is not None and protocol_name != name):
            return classic_sync_response(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if cg.group_epoch > m.member_epoch and m.state != UNREVOKED_PARTITIONS:
            self._must_rejoin(m, now_ms)
            return classic_sync_response(ErrorCode.REBALANCE_IN_PROGRESS)
        m.sync_deadline_ms, m.last_heartbeat_ms = None, now_ms
        names = {tid: n for n, (tid, _) in self.topics().items()}
        return classic_sync_response(ErrorCode.NONE, protocol_type, protocol_name, migration.classic_assignment(
            m.classic["supported_protocols"][0][1], m.assigned, names))

    def classic_heartbeat(self, cg: ConsumerGroup, generation_id: int, member_id: str, instance_id: str | None,
                          now_ms: int) -> ErrorCode:
        """classicGroupHeartbeatToConsumerGroup: REBALANCE_IN_PROGRESS when the member must rejoin
        (the group epoch moved on, it has partitions to revoke, or partitions it waited for are free)."""
        try:
            m = self._classic_member(cg, member_id, instance_id)
        except HeartbeatError as e:
            return e.code
        if generation_id != m.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        m.last_heartbeat_ms = now_ms
        if m.member_epoch < cg.group_epoch or m.state == UNREVOKED_PARTITIONS or \
                (m.state == UNRELEASED_PARTITIONS and not self._waiting_on_unreleased(cg, m)):
            self._must_rejoin(m, now_ms)
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _must_rejoin(m: ConsumerMember, now_ms: int) -> None:
        """scheduleConsumerGroupJoinTimeoutIfAbsent: the first REBALANCE_IN_PROGRESS starts the
        member's rebalance timeout to rejoin in."""
        if m.join_deadline_ms is None:
            m.join_deadline_ms = now_ms + m.rebalance_timeout_ms

    @staticmethod
    def _waiting_on_unreleased(cg: ConsumerGroup, m: ConsumerMember) -> bool:
        """ConsumerGroup.waitingOnUnreleasedPartition: a partition of its target another member still holds."""
        for tid, ps in cg.target.get(m.member_id, {}).items():
            for p in ps:
                if p not in m.assigned.get(tid, ()) and cg.owner_of(tid, p, m.member_id) is not None:
                    return True
        return False

    def classic_leave(self, cg: ConsumerGroup, members: list, now_ms: int) -> list:
        """classicGroupLeaveToConsumerGroup: [(member id, error)] per member named; the members
        that may leave go in one write that bumps the group epoch once."""
        out, leaving = [], []
        for member_id, instance_id in members:
            try:
                if instance_id is None:
                    m = self._classic_member(cg, member_id, None)
                else:
                    mid = cg.static_members.get(instance_id)
                    if mid is None:
                        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
                    # an admin removes a static member by its instance id alone
                    m = self._classic_member(cg, member_id or mid, instance_id)
            except HeartbeatError as e:
                out.append((member_id, e.code))
                continue
            leaving.append(m.member_id)
            out.append((m.member_id, ErrorCode.NONE))
        if leaving:
            err = self._remove_members(cg, leaving, now_ms, "the member left the group (LeaveGroup)")
            if err is not None:
                return [(mid, err if e == ErrorCode.NONE else e) for mid, e in out]
        return out

    # -------------------------------------------------------------- loading
    @staticmethod
    def load_record(states: dict, key, value) -> None:
        """Apply one KIP-848 record (ConsumerGroupKey) to `states` {group id: ConsumerGroup}."""
        cg = states.setdefault(key.group, ConsumerGroup(key.group))
        kind, mid = key.kind, key.member
        if kind == CG_METADATA:
            if value is None:
                states.pop(key.group, None)
            else:
                cg.group_epoch = parse_cg_value(kind, value).epoch
        elif kind == CG_TARGET_META:
            if value is not None:
                cg.assignment_epoch = parse_cg_value(kind, value).assignment_epoch
        elif kind == CG_TARGET_MEMBER:
            if value is None:
                cg.target.pop(mid, None)
            else:
                cg.target[mid] = replayed_assignment(parse_cg_value(kind, value).topic_partitions)
        elif kind == CG_MEMBER:
            if value is None:
                m = cg.members.pop(mid, None)
                if m is not None and m.instance_id is not None and cg.static_members.get(m.instance_id) == mid:
                    del cg.static_members[m.instance_id]
                return
            v = parse_cg_value(kind, value)
            m = cg.members.setdefault(mid, ConsumerMember(mid))
            m.instance_id, m.rack_id, m.client_id, m.client_host = v.instance_id, v.rack_id, v.client_id, v.client_host
            m.subscribed_topic_names = list(v.subscribed_topic_names or [])
            m.subscribed_topic_regex = v.subscribed_topic_regex or None
            m.rebalance_timeout_ms, m.server_assignor = v.rebalance_timeout_ms, v.server_assignor
            c = getattr(v, "classic_member_metadata", None)
            m.classic = None if c is None else {
                "session_timeout_ms": c.session_timeout_ms,
                "supported_protocols": [(p.name, bytes(p.metadata)) for p in c.supported_protocols or []]}
            if m.instance_id is not None:
                cg.static_members[m.instance_id] = mid
        elif kind == CG_CURRENT:
            if value is None:
                return
            v = parse_cg_value(kind, value)
            m = cg.members.setdefault(mid, ConsumerMember(mid))
            m.member_epoch, m.previous_member_epoch, m.state = v.member_epoch, v.previous_member_epoch, v.state
            m.assigned = replayed_assignment(v.assigned_partitions)
            m.pending_revocation = replayed_assignment(v.partitions_pending_revocation)

    def load_group(self, cg: ConsumerGroup, now_ms: int) -> None:
        """A group read back from its records: sessions (and a pending revocation's timeout)
        start again, as in Kafka."""
        cg.state_timestamp_ms = now_ms
        for m in cg.members.values():
            m.last_heartbeat_ms = now_ms
            if m.state == UNREVOKED_PARTITIONS:
                m.revocation_deadline_ms = now_ms + max(m.rebalance_timeout_ms, 0)
        cg.subscription_metadata = subscription_metadata(cg, self.topics())
        self.groups[cg.group_id] = cg
