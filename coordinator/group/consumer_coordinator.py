"""The KIP-848 half of the group coordinator (Kafka's GroupMetadataManager.
consumerGroupHeartbeat and friends), mixed into GroupCoordinator.

A consumer group is a `Group` whose `consumer` holds a ConsumerGroupState. Each
heartbeat computes the group's next state on a copy, appends the records that
describe the change to __consumer_offsets (Kafka's record types 3, 5, 6, 7, 8),
and only then installs the copy, so a failed append changes nothing.
"""
from __future__ import annotations

import copy
import logging
import re

from minikafka.protocol.errors import ErrorCode

from .consumer import (ASSIGNORS, LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, STABLE,
                       UNREVOKED_PARTITIONS, ConsumerGroupState, ConsumerMember, ResolvedRegex, assignment_eq,
                       copy_assignment, parse_owned, reconcile)
from .group import Group, GroupState
from .records import (CG_CURRENT, CG_MEMBER, CG_METADATA, CG_TARGET_MEMBER, CG_TARGET_META, cg_key, cg_value,
                      parse_cg_value, topic_partitions_field)
from .uniform import GroupSpec, JavaHash, member_order, replayed, string_hash, topic_id_order

log = logging.getLogger("minikafka.group")
E = ErrorCode

# DescribeGroups / ConsumerGroupDescribe authorized operations with no authorizer:
# READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS (Kafka 4.1 answers 3400)
GROUP_AUTHORIZED_OPS = (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11)


def _every_topic(topic: str) -> bool:
    return True


class HeartbeatError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.code, self.message = code, message


def _error(code: ErrorCode, message: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


def _validate(version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms, names,
              regex, owned_tps, assignor, assignors):
    """ConsumerGroupHeartbeatRequest validation (GroupMetadataManager.throwIfConsumerGroupHeartbeatRequestIsInvalid)."""
    if version >= 1 and not member_id:
        raise HeartbeatError(E.INVALID_REQUEST, "MemberId can't be empty.")
    if not group_id:
        raise HeartbeatError(E.INVALID_REQUEST, "GroupId can't be empty.")
    if instance_id is not None and instance_id == "":
        raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be empty.")
    if rack_id is not None and rack_id == "":
        raise HeartbeatError(E.INVALID_REQUEST, "RackId can't be empty.")
    if member_epoch == 0:
        if rebalance_timeout_ms == -1:
            raise HeartbeatError(E.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.")
        if owned_tps is None or len(owned_tps) > 0:
            raise HeartbeatError(E.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.")
        if names is None and regex is None:
            raise HeartbeatError(E.INVALID_REQUEST,
                                 "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if instance_id is None:
            raise HeartbeatError(E.INVALID_REQUEST, "InstanceId can't be null.")
    elif member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        raise HeartbeatError(E.INVALID_REQUEST, "MemberEpoch is invalid.")
    if regex is not None:
        try:
            re.compile(regex)
        except re.error as e:
            raise HeartbeatError(E.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex `{regex}` is not a valid "
                                 f"regular expression: {e}.") from None
    if assignor is not None and assignor not in assignors:
        raise HeartbeatError(E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {assignor} is not supported. "
                             f"Supported assignors: {', '.join(assignors)}.")


class ConsumerGroupMixin:
    """Needs from the host: self.groups, self.config (GroupConfig), self._append,
    self.topics() -> {name: (topic id, partitions)}, self.group_config(gid, key)."""

    # ------------------------------------------------------------- lookups
    def _consumer_group(self, group_id: str, create: bool, now_ms: int) -> Group:
        g = self.groups.get(group_id)
        if g is None or g.state == GroupState.DEAD:
            if not create:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            g = Group(group_id, state_timestamp_ms=now_ms)
            g.consumer = ConsumerGroupState()
            g.protocol_type = "consumer"
            return g
        if g.consumer is None:
            if g.members:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
            if not create:
                raise HeartbeatError(E.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            # an empty classic group becomes a consumer group (its offsets stay; member ids only
            # handed out with MEMBER_ID_REQUIRED are no members)
            g.pending_members.clear()
            g.consumer = ConsumerGroupState(group_epoch=g.generation_id, assignment_epoch=g.generation_id)
            g.protocol_type = "consumer"
        return g

    def session_timeout_of(self, group_id: str) -> int:
        return int(self.group_config(group_id, "consumer.session.timeout.ms"))

    def heartbeat_interval_of(self, group_id: str) -> int:
        return int(self.group_config(group_id, "consumer.heartbeat.interval.ms"))

    def _subscribed_topics(self, cg: ConsumerGroupState, topics: dict) -> dict[str, tuple]:
        """{name: (topic id, partitions)} of every topic some member subscribes to (names or regex)."""
        names: set[str] = set()
        for m in cg.members.values():
            names |= self._member_topics(cg, m, topics)
        used = {m.subscribed_topic_regex for m in cg.members.values()}
        for regex in [r for r in cg.resolved_regex if r not in used]:
            del cg.resolved_regex[regex]
        return {n: topics[n] for n in sorted(names)}

    def _member_topics(self, cg: ConsumerGroupState, m: ConsumerMember, topics: dict) -> set[str]:
        out = {n for n in m.subscribed_topic_names if n in topics}
        if m.subscribed_topic_regex:
            out |= self._regex_topics(cg, m.subscribed_topic_regex, topics)
        return out

    def _regex_topics(self, cg: ConsumerGroupState, regex: str, topics: dict) -> set[str]:
        """The topics a subscribed regex resolves to. As Kafka's refreshRegularExpressions, a heartbeat
        resolves the group's regexes with its own principal, keeping the topics it may DESCRIBE
        (``describable`` of consumer_heartbeat); they are resolved again when the topics change."""
        known = cg.resolved_regex.get(regex)
        describable = self._heartbeat_describable
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

    # ------------------------------------------------------------ heartbeat
    # within a heartbeat: may its principal DESCRIBE a topic (the regexes it resolves keep those)
    _heartbeat_describable = None

    def consumer_heartbeat(self, version: int, group_id: str, member_id: str, member_epoch: int,
                           instance_id: str | None, rack_id: str | None, rebalance_timeout_ms: int,
                           subscribed_topic_names, subscribed_topic_regex, server_assignor, topic_partitions,
                           client_id: str, client_host: str, now_ms: int, describable=None) -> dict:
        """``describable(topic)``: may the heartbeat's principal DESCRIBE the topic (None: no
        authorizer, every topic)."""
        self._heartbeat_describable = describable or _every_topic
        try:
            if "consumer" not in self.config.rebalance_protocols:
                raise HeartbeatError(E.UNSUPPORTED_VERSION, "The new group protocol is not enabled.")
            _validate(version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                      subscribed_topic_names, subscribed_topic_regex, topic_partitions, server_assignor,
                      self.config.consumer_assignors)
            if version == 0 and member_epoch == 0 and not member_id:
                member_id = _random_member_id()  # v0: the coordinator names new members (v1: the client)
            if member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._consumer_leave(group_id, member_id, member_epoch, instance_id, now_ms)
            return self._consumer_join_or_heartbeat(
                version, group_id, member_id, member_epoch, instance_id, rack_id, rebalance_timeout_ms,
                subscribed_topic_names, subscribed_topic_regex, server_assignor, parse_owned(topic_partitions),
                topic_partitions, client_id, client_host, now_ms)
        except HeartbeatError as e:
            return _error(e.code, e.message)
        finally:
            self._heartbeat_describable = None

    def _find_member(self, g: Group, cg: ConsumerGroupState, member_id: str, member_epoch: int,
                     instance_id: str | None, owned) -> tuple[ConsumerMember, bool, str | None]:
        """(member, is new, id of a static member it replaces)."""
        gid = g.group_id
        if instance_id is None:
            m = cg.members.get(member_id)
            if member_epoch == 0:
                return (m, False, None) if m is not None else (ConsumerMember(member_id), True, None)
            if m is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {gid}.")
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
                    raise HeartbeatError(E.UNRELEASED_INSTANCE_ID,
                                         f"Static member {old_id} with instance id {instance_id} is not released yet.")
                # the new instance takes over the old one's assignment and epoch
                m = ConsumerMember(**{**copy.deepcopy(old.__dict__), "member_id": member_id})
                m.member_epoch = old.previous_member_epoch if old.previous_member_epoch >= 0 else 0
                return m, False, old_id
            if old_id is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if old_id != member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {old_id}.")
            m = cg.members[old_id]
        # epoch checks (throwIfMemberEpochIsInvalid)
        if member_epoch > m.member_epoch:
            raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a greater member epoch "
                                 f"({member_epoch}) than the one known by the group coordinator ({m.member_epoch}). "
                                 f"The member must abandon all its partitions and rejoin.")
        if member_epoch < m.member_epoch:
            subset = owned is not None and all(ps <= m.assigned.get(t, set()) for t, ps in owned.items())
            if not (member_epoch == m.previous_member_epoch and subset):
                raise HeartbeatError(E.FENCED_MEMBER_EPOCH, f"The consumer group member has a smaller member "
                                     f"epoch ({member_epoch}) than the one known by the group coordinator "
                                     f"({m.member_epoch}). The member must abandon all its partitions and rejoin.")
        return m, False, None

    def _consumer_join_or_heartbeat(self, version, group_id, member_id, member_epoch, instance_id, rack_id,
                                    rebalance_timeout_ms, names, regex, assignor, owned, owned_raw, client_id,
                                    client_host, now_ms, classic: dict | None = None,
                                    classic_unknown: bool = False):
        """A ConsumerGroupHeartbeat join or heartbeat; with `classic` (the member's classic
        metadata), a classic member's JoinGroup to a consumer group (Kafka's
        classicGroupJoinToConsumerGroup), answered with the updated member instead."""
        upgrade = self._classic_group_to_upgrade(group_id) if member_epoch == 0 and classic is None else None
        if upgrade is not None:
            # Kafka's convertToConsumerGroup: the join upgrades a classic group with members online
            g = upgrade
            cg, records = self._upgraded_state(g, now_ms)
        else:
            g = self._consumer_group(group_id, create=member_epoch == 0, now_ms=now_ms)
            cg, records = g.consumer, []
        if classic is not None:
            member, is_new, replaced = self._find_classic_member(g, cg, member_id, instance_id, classic_unknown)
        else:
            member, is_new, replaced = self._find_member(g, cg, member_id, member_epoch, instance_id, owned)
        if is_new and len(cg.members) >= self.config.consumer_max_size:
            raise HeartbeatError(E.GROUP_MAX_SIZE_REACHED,
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
        before_meta = _member_meta(member) if not is_new and replaced is None else None
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
        meta_changed = before_meta is None or _member_meta(m) != before_meta
        if meta_changed:
            records.append((cg_key(CG_MEMBER, group_id, member_id), cg_value(CG_MEMBER, _member_meta(m))))
        subs_changed = is_new or replaced is not None or before_meta is None or \
            (before_meta["subscribed_topic_names"], before_meta["subscribed_topic_regex"]) != \
            (m.subscribed_topic_names, m.subscribed_topic_regex) or before_meta["server_assignor"] != m.server_assignor
        topics = self.topics()
        sub_meta = self._subscribed_topics(new, topics)
        bump = (is_new or (subs_changed and replaced is None)) or sub_meta != new.subscription_metadata
        if bump:
            new.group_epoch += 1
            new.subscription_metadata = sub_meta
            records.append((cg_key(CG_METADATA, group_id), cg_value(CG_METADATA, {"epoch": new.group_epoch})))
        if new.group_epoch > new.assignment_epoch:
            records += self._compute_target(g.group_id, new, topics, member_id, not is_new and replaced is None,
                                            replaced)
        # reconcile this member towards its target
        target = new.target.get(member_id, {})
        updated = reconcile(m, new.assignment_epoch, target, owned,
                            lambda t, p: new.owner_of(t, p, member_id))
        if updated.state == UNREVOKED_PARTITIONS and m.state != UNREVOKED_PARTITIONS:
            updated.revocation_deadline_ms = now_ms + max(m.rebalance_timeout_ms, 0)
        elif updated.state != UNREVOKED_PARTITIONS:
            updated.revocation_deadline_ms = None
        new.members[member_id] = updated
        if _current_changed(member if not is_new else None, updated) or replaced is not None:
            records.append((cg_key(CG_CURRENT, group_id, member_id), cg_value(CG_CURRENT, _current(updated))))
        if classic is not None and replaced is not None and self._downgrades_with_replaced(new):
            # a classic static member took the last consumer-protocol member's place
            err = self._downgrade(g, replaced, now_ms, cg=new, records=records)
            if err is not None:
                raise HeartbeatError(err)
            return updated
        if records:
            err = self._append_or_error(group_id, records, now_ms)
            if err is not None:
                raise HeartbeatError(err)
        if upgrade is not None:
            self._finish_upgrade(g)
        g.consumer = new
        self.groups[group_id] = g
        if g.state != GroupState.EMPTY:
            g.state = GroupState.EMPTY
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

    def _compute_target(self, group_id: str, cg: ConsumerGroupState, topics: dict, updated: str,
                        existed: bool, replaced: str | None) -> list:
        """TargetAssignmentBuilder.build: a new target assignment at the group epoch, computed
        from the current target (not what members own); records for the members whose target
        changed, and the epoch. `updated` is the heartbeating member (`existed`: it was a member
        before this heartbeat), `replaced` the static member it takes over from."""
        ids = {name: tid for name, (tid, _) in topics.items()}
        by_name: dict[str, int] = {}
        subscriptions, sizes = {}, {}
        for mid, m in cg.members.items():
            resolved = self._member_topics(cg, m, topics)
            names = list(dict.fromkeys(m.subscribed_topic_names))
            for n in set(names) | resolved:
                by_name.setdefault(n, 0)
            for n in names:
                by_name[n] += 1
            # TopicIds: the names in their HashSet's order, then the topics only the regex gives
            subscriptions[mid] = topic_id_order(names, ids) + [ids[n] for n in sorted(resolved - set(names))]
            sizes[mid] = len(set(names) | resolved)
        existing = [mid for mid in cg.members if existed or mid != updated]
        current = {mid: _java_ordered(cg.target.get(mid, {})) for mid in cg.members}
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

    def _append_or_error(self, group_id: str, records: list, now_ms: int) -> ErrorCode | None:
        from .coordinator import _storage_error
        try:
            self._append(group_id, records, now_ms)
        except Exception as e:  # noqa: BLE001 - mapped to a Kafka error
            return _storage_error(e)
        return None

    # ------------------------------------------------------------ leaving
    def _consumer_leave(self, group_id, member_id, member_epoch, instance_id, now_ms) -> dict:
        g = self._consumer_group(group_id, create=False, now_ms=now_ms)
        cg = g.consumer
        if instance_id is not None:
            mid = cg.static_members.get(instance_id)
            if mid is None:
                raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
            if mid != member_id:
                raise HeartbeatError(E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance_id} is fenced by existing member {mid}.")
        elif member_id not in cg.members:
            raise HeartbeatError(E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}.")
        if member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            new = copy.deepcopy(cg)
            m = new.members[member_id]
            m.previous_member_epoch = m.member_epoch
            m.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH
            err = self._append_or_error(group_id, [(cg_key(CG_CURRENT, group_id, member_id),
                                                    cg_value(CG_CURRENT, _current(m)))], now_ms)
            if err is not None:
                return _error(err)
            g.consumer = new
            log.info("group %s: static member %s (%s) leaves for now", group_id, member_id, instance_id)
        else:
            err = self._remove_consumer_member(g, member_id, now_ms, "the member left the group")
            if err is not None:
                return _error(err)
        return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": member_id,
                "member_epoch": member_epoch, "heartbeat_interval_ms": 0, "assignment": None}

    def _remove_consumer_member(self, g: Group, member_id: str, now_ms: int, why: str) -> ErrorCode | None:
        """A member leaves or is fenced (consumerGroupFenceMember): if only classic members remain,
        the group becomes a classic group again."""
        if self._downgrades_without(g.consumer, member_id):
            return self._downgrade(g, member_id, now_ms)
        return self._remove_consumer_members(g, [member_id], now_ms, why)

    def _remove_consumer_members(self, g: Group, member_ids: list, now_ms: int, why: str) -> ErrorCode | None:
        """Removes members in one write with one epoch bump (a LeaveGroup naming several: Kafka's
        classicGroupLeaveToConsumerGroup)."""
        cg = g.consumer
        gid = g.group_id
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
        new.subscription_metadata = self._subscribed_topics(new, self.topics())
        records.append((cg_key(CG_METADATA, gid), cg_value(CG_METADATA, {"epoch": new.group_epoch})))
        err = self._append_or_error(gid, records, now_ms)
        if err is not None:
            return err
        g.consumer = new
        if not new.members:
            g.state_timestamp_ms = now_ms  # offsets of an empty group expire from now (offsets.retention.minutes)
        log.info("group %s: members %s removed (%s), group epoch %d", gid, ", ".join(member_ids), why,
                 new.group_epoch)
        return None

    # -------------------------------------------------------------- timers
    def _consumer_tick(self, g: Group, now_ms: int) -> None:
        session = self.session_timeout_of(g.group_id)
        for mid, m in list(g.consumer.members.items()):
            if g.consumer is None:
                return  # a member's removal made it a classic group again
            if now_ms >= m.last_heartbeat_ms + m.session_timeout_ms(session):
                self._remove_consumer_member(g, mid, now_ms, "session timeout expired")
            elif m.revocation_deadline_ms is not None and now_ms >= m.revocation_deadline_ms:
                self._remove_consumer_member(g, mid, now_ms, "did not revoke its partitions within the rebalance timeout")
            elif m.join_deadline_ms is not None and now_ms >= m.join_deadline_ms:
                self._remove_consumer_member(g, mid, now_ms, "the classic member did not rejoin within the rebalance timeout")
            elif m.sync_deadline_ms is not None and now_ms >= m.sync_deadline_ms:
                self._remove_consumer_member(g, mid, now_ms, "the classic member did not sync within the rebalance timeout")

    def _consumer_next_deadline(self, g: Group) -> int | None:
        session = self.session_timeout_of(g.group_id)
        best = None
        for m in g.consumer.members.values():
            d = m.last_heartbeat_ms + m.session_timeout_ms(session)
            for timer in (m.revocation_deadline_ms, m.join_deadline_ms, m.sync_deadline_ms):
                if timer is not None:
                    d = min(d, timer)
            best = d if best is None else min(best, d)
        return best

    # ------------------------------------------------------- offsets checks
    def consumer_validate_commit(self, g: Group, member_id: str, member_epoch: int, transactional: bool,
                                 api_version: int) -> ErrorCode:
        """ConsumerGroup.validateOffsetCommit; TxnOffsetCommit answers a wrong epoch with
        ILLEGAL_GENERATION (as Kafka 4.1 does, v5 included)."""
        cg = g.consumer
        if member_epoch < 0 and not cg.members:
            return E.NONE
        m = cg.members.get(member_id or "")
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if not transactional and m.classic is None and api_version < 9:
            return E.UNSUPPORTED_VERSION
        if member_epoch != m.member_epoch:
            if transactional or m.classic is not None:  # a classic member's epoch is its generation
                return E.ILLEGAL_GENERATION
            return E.STALE_MEMBER_EPOCH
        return E.NONE

    def consumer_validate_fetch(self, g: Group, member_id: str | None, member_epoch: int) -> ErrorCode:
        """ConsumerGroup.validateOffsetFetch: only an admin (epoch -1, no member id) skips the checks."""
        if member_epoch < 0 and member_id is None:
            return E.NONE
        if member_id is None:
            # Kafka looks a null member id up and fails (a NullPointerException): the group
            # is answered UNKNOWN_SERVER_ERROR
            return E.UNKNOWN_SERVER_ERROR
        m = g.consumer.members.get(member_id)
        if m is None:
            return E.UNKNOWN_MEMBER_ID
        if member_epoch != m.member_epoch:
            # a classic member's epoch is its generation (Kafka's validateMemberEpoch with
            # useClassicProtocol)
            return E.ILLEGAL_GENERATION if m.classic is not None else E.STALE_MEMBER_EPOCH
        return E.NONE

    # ------------------------------------------------------------ describe
    def consumer_describe(self, group_id: str, ops: int) -> dict:
        g = self.groups.get(group_id)
        base = {"error_code": 0, "error_message": None, "group_id": group_id, "group_state": "",
                "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
                "authorized_operations": ops}
        if g is None or g.state == GroupState.DEAD:
            return dict(base, error_code=int(E.GROUP_ID_NOT_FOUND), error_message=f"Group {group_id} not found.",
                        authorized_operations=-2147483648)
        if g.consumer is None:
            return dict(base, error_code=int(E.GROUP_ID_NOT_FOUND),
                        error_message=f"Group {group_id} is not a consumer group.",
                        authorized_operations=-2147483648)
        cg = g.consumer
        names = {tid: name for name, (tid, _) in self.topics().items()}

        def tps(a):
            return [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": sorted(ps)}
                    for t, ps in sorted(a.items(), key=lambda kv: names.get(kv[0], "")) if ps]

        def target_tps(a):
            # the target as Kafka iterates it (its topics' HashMap, each partition HashSet)
            return [{"topic_id": t, "topic_name": names.get(t, ""), "partitions": list(ps)}
                    for t, ps in _java_ordered(a).items() if ps]
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

    # -------------------------------------------------------------- loading
    @staticmethod
    def load_consumer_record(states: dict, key, value) -> None:
        """Apply one KIP-848 record (ConsumerGroupKey) to `states` {group id: ConsumerGroupState}."""
        cg = states.setdefault(key.group, ConsumerGroupState())
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
                cg.target[mid] = _assignment(parse_cg_value(kind, value).topic_partitions)
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
            m.assigned = _assignment(v.assigned_partitions)
            m.pending_revocation = _assignment(v.partitions_pending_revocation)


def _random_member_id() -> str:
    """Kafka's Uuid.randomUuid().toString(): URL-safe base64 of 16 random bytes, unpadded."""
    import base64
    import uuid as _uuid
    return base64.urlsafe_b64encode(_uuid.uuid4().bytes).decode().rstrip("=")


def _assignment(tps) -> dict:
    """A target assignment record as Kafka holds it once replayed (Assignment.fromRecord)."""
    return replayed({tp.topic_id: list(tp.partitions) for tp in tps or [] if tp.partitions})


def _java_ordered(a: dict) -> dict:
    """A target assignment in Kafka's iteration order; one made here from sets (a classic
    group's upgrade, a static member's takeover) is taken as replayed from sorted lists."""
    if all(isinstance(ps, list) for ps in a.values()):
        return a
    return replayed({tid: sorted(ps) for tid, ps in a.items()})


def _member_meta(m: ConsumerMember) -> dict:
    classic = None
    if m.classic is not None:
        classic = {"session_timeout_ms": m.classic["session_timeout_ms"],
                   "supported_protocols": [{"name": n, "metadata": md} for n, md in m.classic["supported_protocols"]]}
    return {"instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_topic_names),
            "subscribed_topic_regex": m.subscribed_topic_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
            "server_assignor": m.server_assignor, "classic_member_metadata": classic}


def _current(m: ConsumerMember) -> dict:
    return {"member_epoch": m.member_epoch, "previous_member_epoch": m.previous_member_epoch, "state": m.state,
            "assigned_partitions": topic_partitions_field(m.assigned),
            "partitions_pending_revocation": topic_partitions_field(m.pending_revocation)}


def _current_changed(before: ConsumerMember | None, after: ConsumerMember) -> bool:
    if before is None:
        return True
    return (before.member_epoch, before.previous_member_epoch, before.state) != \
        (after.member_epoch, after.previous_member_epoch, after.state) \
        or not assignment_eq(before.assigned, after.assigned) \
        or not assignment_eq(before.pending_revocation, after.pending_revocation)


__all__ = ["ConsumerGroupMixin", "GROUP_AUTHORIZED_OPS", "STABLE"]
